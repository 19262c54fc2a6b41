"""The answer to ACP's `initialize` before the heavy imports: the first thing a client waits for, at interpreter speed.

A client launches the sidecar and sends `initialize`; answering it through the full server means importing
asyncio, anyio, pydantic and the protocol models first (~130 ms of a ~175 ms start on a quiet machine, 2-3× that on
a loaded one). The answer itself depends on nothing of the client's but the request id: every field is fixed by
this build (agent info, capabilities, auth methods, the Orion methods and events it serves). So `python -m
sidecar` reads its first line with the standard library alone and, when it is a plain ACP `initialize`, writes the
answer at once; then it imports the server, which takes the same request as if it had come in (state, dialect,
the client's capabilities and opt-ins: `adopt`) and serves everything after it.

What counts as plain is narrow on purpose: a JSON object with exactly `jsonrpc`, `id` (integer or string),
`method: "initialize"` and `params` holding an integer `protocolVersion` and, optionally, `clientCapabilities` (an
object), `clientInfo` (`name` and `version` strings, optional `title` string) and `_meta` (an object). Anything else
(another method first, a batch, Orion's date-string dialect, a malformed or unusual handshake, a line over 64 KiB)
goes to the full server byte for byte, which answers it as it always did: the early path can only ever give the
answer the full server gives (tests/sidecar/test_early_handshake.py compares the two on every kind of first line).

The fixed result is generated from the full server's own answer (`python -m sidecar.handshake --write` rewrites
sidecar/_handshake_result.py) and checked against it by the tests, and by `adopt` at run time: a difference is
logged as an error, never silently served. `ORION_EARLY_HANDSHAKE=0` turns the early path off. Standard library only:
this module runs before anything else is imported.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any

READ_LIMIT = 64 * 1024  # a plain handshake is a few hundred bytes; past this, the full server reads on
_PARAM_KEYS = frozenset({"protocolVersion", "clientCapabilities", "clientInfo", "_meta"})
_INFO_KEYS = frozenset({"name", "version", "title"})


class FirstContact:
    """What the early path read and did: `rest` is for the full server (everything after an answered
    `initialize`, or every byte read when it was not answered); `params`/`result` are set when it answered.
    (A plain class: `dataclasses` imports `inspect`, ~7 ms this module must not spend before its answer.)"""

    __slots__ = ("rest", "params", "result")

    def __init__(self, rest: bytes, params: dict[str, Any] | None = None, result: dict[str, Any] | None = None) -> None:
        self.rest, self.params, self.result = rest, params, result


def enabled(fd: int = 0) -> bool:
    """On unless turned off, and only for a pipe or socket (a file or a terminal gets the full server at once)."""
    if os.environ.get("ORION_EARLY_HANDSHAKE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def plain_initialize(line: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """(id, params) when `line` is a plain ACP `initialize` (see the module's docstring), else None."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.startswith(b"{"):
        return None
    try:
        message = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize" or not isinstance(params, dict):
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or not params.keys() <= _PARAM_KEYS:
        return None
    if not isinstance(params.get("clientCapabilities", {}), dict) or not isinstance(params.get("_meta", {}), dict):
        return None
    info = params.get("clientInfo")
    if info is not None:
        if not isinstance(info, dict) or not info.keys() <= _INFO_KEYS:
            return None
        if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
            return None
        if not isinstance(info.get("title", ""), (str, type(None))):
            return None
    return request_id, params


def read_first_line(fd: int = 0, limit: int = READ_LIMIT) -> bytes:
    """Bytes from `fd` up to and including the first newline (and whatever came with it), or up to EOF or `limit`
    (the server then reads on and sees the EOF itself)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            break
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return False  # the client is gone: the full server sees it too and stops
        view = view[written:]
    return True


def answer_early(in_fd: int = 0, out_fd: int = 1, max_line: int = READ_LIMIT) -> FirstContact:
    """Read the first line; answer it here when it is a plain ACP `initialize` no longer than `max_line` (the
    server's own line limit: a longer one is the server's to refuse). Returns what the full server needs."""
    data = read_first_line(in_fd)
    newline = data.find(b"\n")
    plain = plain_initialize(data[:newline]) if 0 <= newline <= max_line else None
    if plain is None:
        return FirstContact(rest=data)
    from sidecar._handshake_result import RESULT

    request_id, params = plain
    result = json.loads(RESULT)
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    try:
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a string id: \u escapes, as the full server sends it
        line = json.dumps(message, separators=(",", ":")).encode("ascii")
    _write_all(out_fd, line + b"\n")
    return FirstContact(rest=data[newline + 1:], params=params, result=result)


def adopt(app: Any, first: FirstContact) -> None:
    """The full server takes the early-answered `initialize` as if it had come in (inside the event loop, before
    anything else is read): the connection's state, dialect and the client's capabilities, the log line and the
    background pre-import. A result that differs from the one sent is logged as an error."""
    import logging

    from ipc import protocol as p
    from ipc.peer import wire_form
    from sidecar.methods.core import accept_handshake

    log = logging.getLogger("sidecar.handshake")
    try:
        result = accept_handshake(app, p.HandshakeParams.model_validate(first.params))
    except Exception:
        log.exception("the early answer to initialize was sent, but the server refuses the request; later requests "
                      "will be answered 'not initialized'")
        return
    live = wire_form(result)
    if live != first.result:
        log.error("the early answer to initialize differs from the server's (regenerate sidecar/_handshake_result.py "
                  "with `python -m sidecar.handshake --write`): sent %s, server %s", first.result, live)


def live_result(python: str = sys.executable) -> dict[str, Any]:
    """The full server's answer to a plain `initialize` (the early path off), from a real `python -m sidecar`."""
    import subprocess

    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}
    env = {**os.environ, "ORION_EARLY_HANDSHAKE": "0"}
    done = subprocess.run([python, "-m", "sidecar"], input=json.dumps(request).encode() + b"\n", env=env,
                          capture_output=True, timeout=60, check=False)
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("id") == 1:
            return message["result"]
    raise RuntimeError(f"no answer to initialize; stderr: {done.stderr.decode(errors='replace')[-2000:]}")


def render(result: dict[str, Any]) -> str:
    body = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ('"""Generated by `python -m sidecar.handshake --write` from the full server\'s answer to `initialize`: '
            'do not edit.\n\nsidecar/handshake.py sends it before the server is imported; the tests and '
            '`handshake.adopt` check it against the server."""\n\n'
            f"RESULT = {body!r}\n")


def main(argv: list[str]) -> int:
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_handshake_result.py")
    text = render(live_result())
    if argv[1:] == ["--write"]:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {target}")
        return 0
    with open(target, encoding="utf-8") as fh:
        current = fh.read()
    if current != text:
        print(f"{target} is stale: run `python -m sidecar.handshake --write`", file=sys.stderr)
        return 1
    print(f"{target} matches the server's answer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
