"""Warm Python hook launcher (child side): imports hook modules and calls run(payload), one line-delimited JSON request at a time.

Stdlib only: it may run under another interpreter than the sidecar's. The real
stdout is kept on a private descriptor for replies; fd 1 points at stderr so a
hook's print() or its subprocesses cannot corrupt the protocol. Requests come
in on a private copy of stdin, and fd 0 is /dev/null, so a hook that reads or
closes its stdin cannot take the launcher's request channel with it.
"""

import sys

# The script's own directory must not shadow anything a hook imports. (Imported instead, by the self-contained
# build's executable in its hook-launcher role, sidecar/frozen.py, there is no script directory on the path.)
if __name__ == "__main__":
    del sys.path[0]

import asyncio  # noqa: E402
import contextlib
import importlib.util
import inspect
import io
import json
import os
import traceback

CAP = 1024 * 1024

_reply_fd = os.dup(1)
os.dup2(2, 1)
_request_fd = os.dup(0)
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.close(_devnull)
_modules = {}  # path -> (mtime_ns, size, module)
_loop = asyncio.new_event_loop()


def _load(path):
    st = os.stat(path)
    cached = _modules.get(path)
    if cached and cached[0] == st.st_mtime_ns and cached[1] == st.st_size:
        return cached[2]
    name = "orion_hook_" + str(abs(hash(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _modules[path] = (st.st_mtime_ns, st.st_size, module)
    return module


def _cap(buf):
    text = buf.getvalue()
    raw = text.encode(errors="replace")
    if len(raw) <= CAP:
        return text, 0
    return raw[:CAP].decode(errors="ignore"), len(raw) - CAP


def _jsonable(value):
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic HookOutput
        return dump(by_alias=True, exclude_none=True)
    return value


def _handle(req):
    out, err = io.StringIO(), io.StringIO()
    reply = {"id": req.get("id"), "ok": True, "exit_code": 0, "result": None}
    os.environ.update(req.get("env") or {})
    try:
        os.chdir(req.get("cwd") or ".")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            module = _load(req["script"])
            run = getattr(module, "run", None)
            if not callable(run):
                raise AttributeError(f"{req['script']} defines no run(payload) function")
            value = run(req.get("payload"))
            if inspect.isawaitable(value):
                value = _loop.run_until_complete(value)
        reply["result"] = _jsonable(value)
        json.dumps(reply["result"])
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, str):
            err.write(code)
            code = 1
        reply["exit_code"] = 0 if code is None else int(code)
    except BaseException as exc:  # noqa: BLE001 - everything a hook raises is reported, the launcher lives on
        reply.update(ok=False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(), result=None)
    reply["stdout"], reply["stdout_dropped"] = _cap(out)
    reply["stderr"], reply["stderr_dropped"] = _cap(err)
    return reply


def main():
    stdin = os.fdopen(_request_fd, "rb")
    while True:
        line = stdin.readline()
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError as exc:
            reply = {"id": None, "ok": False, "error": f"bad request: {exc}"}
        else:
            reply = _handle(req)
        data = (json.dumps(reply, default=str) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(_reply_fd, view):]


if __name__ == "__main__":
    main()
