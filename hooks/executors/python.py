"""The python executor: `.py` hooks run in warm, long-lived launcher processes that import the module once and call its `run(payload)`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from hooks import children, dispositions
from hooks.executors._capture import Capture
from hooks.executors.command import KILL_GRACE_S, hook_env
from hooks.executors.leftovers import MARKER_VAR, describe, new_marker, reap
from hooks.interpret import coerce_output, parse_stdout
from hooks.payload import encode_payload
from hooks.types import ExecutionReport, HookCall, no_progress

CHILD_SCRIPT = Path(__file__).resolve().parent.parent / "launcher" / "child.py"
MAX_LAUNCHERS = 4  # advisory events run hooks concurrently; one launcher runs one hook at a time
_REPLY_LIMIT = 16 * 1024 * 1024


def launcher_python() -> str:
    """`ORION_HOOK_PYTHON` when set (e.g. a project venv's interpreter), else the sidecar's own interpreter."""
    return os.environ.get("ORION_HOOK_PYTHON") or sys.executable


class LauncherDied(Exception):
    """The launcher process exited (crash, os._exit, segfault) while running a hook."""


class _Launcher:
    """One child process speaking line-delimited JSON on its stdin/stdout, in its own process group."""

    __slots__ = ("proc", "next_id")

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def spawn(cls, python: str) -> _Launcher:
        return await cls.start(_launcher_argv(python))

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str] | None = None) -> _Launcher:
        if env is None:  # the sidecar's environment without Orion's own configuration (hooks/executors/command.py)
            from hooks.executors.command import _BaseEnv

            env = _BaseEnv().copy()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=_REPLY_LIMIT,
            env=env,
            preexec_fn=dispositions.child_setup(),  # what its hooks start gets SIGHUP at its default, even under nohup
        )
        children.started(proc.pid, own_group=True)
        return cls(proc)

    @classmethod
    async def spawn_boxed(cls, python: str, box: Any, cwd: Path) -> _Launcher:
        """A launcher inside the session's hook box (sidecar/hook_box.py): a project's Python runs there, with the
        box's environment; kept warm in the box for the session's next boxed python hook, and ended with it."""
        boxed = await box.start(_launcher_argv(python), cwd, dict(os.environ), b"")
        return cls(await _BoxedLauncherProcess.wrap(boxed))  # type: ignore[arg-type]

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def request(self, head: dict[str, Any], payload_json: bytes) -> dict[str, Any]:
        self.next_id += 1
        head = {"id": self.next_id, **head}
        line = json.dumps(head)[:-1].encode() + b',"payload":' + payload_json + b"}\n"
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(line)
            await self.proc.stdin.drain()
            reply = await self.proc.stdout.readline()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise LauncherDied(f"python launcher pipe broke: {exc}") from None
        except ValueError:  # the reader's line limit: the rest of that reply would desync the channel
            await self.kill()
            raise LauncherDied(
                f"python hook's reply is larger than {_REPLY_LIMIT >> 20} MiB; launcher killed (respawned on next use)"
            ) from None
        if not reply:
            code = await self._reap(1.0)
            raise LauncherDied(f"python launcher exited (code {code}) while running the hook; it will be respawned")
        return json.loads(reply)

    async def kill(self, grace: float = 0.0) -> None:
        self._signal(signal.SIGTERM if grace else signal.SIGKILL)
        if grace:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await self.proc.wait()
            self._signal(signal.SIGKILL)
        await self._reap(grace or 1.0)

    async def close(self) -> None:
        """Polite stop: EOF on stdin ends the child's loop."""
        if self.proc.stdin and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await self.proc.wait()
                return
        await self.kill()

    def _signal(self, sig: int) -> None:
        if isinstance(self.proc, _BoxedLauncherProcess):
            self.proc.signal(sig)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    async def _reap(self, timeout: float) -> int | None:
        self._signal(signal.SIGKILL)  # whatever the hook started dies with the launcher
        if self.proc.stdin and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                return await self.proc.wait()
        return self.proc.returncode


def _launcher_argv(python: str) -> list[str]:
    """The launcher script under `python`, or in the self-contained build its own executable in the launcher role
    (sidecar/frozen.py), unless ORION_HOOK_PYTHON names another interpreter."""
    from hooks.launcher.frozen import helper_argv

    if python != sys.executable:
        return [python, "-u", str(CHILD_SCRIPT)]
    return helper_argv("hook-launcher", CHILD_SCRIPT, unbuffered=True)


def _idle_boxed(box: Any) -> _Launcher | None:
    """A warm launcher in the session's hook box, if one is idle (each serves one hook at a time)."""
    idle: list[_Launcher] = box.python_launchers
    while idle:
        launcher = idle.pop()
        if launcher.alive:
            return launcher
    return None


class _BoxedLauncherProcess:
    """A launcher inside the hook box, shaped as the asyncio process _Launcher drives: streams over its pipes, its
    exit as the box reports it, signals through the box."""

    def __init__(self, boxed: Any, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader) -> None:
        self._boxed = boxed
        self.stdin = stdin
        self.stdout = stdout
        self.pid = boxed.pid

    @classmethod
    async def wrap(cls, boxed: Any) -> _BoxedLauncherProcess:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_REPLY_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(boxed.stdout_fd, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                            os.fdopen(boxed.stdin_fd, "wb", 0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        # The launcher answers on stdout and child.py catches each hook's stderr; what it writes there itself is
        # read and dropped (closing the pipe would kill it with SIGPIPE at its first warning).
        err = boxed.stderr_fd
        os.set_blocking(err, False)

        def drain() -> None:
            try:
                if os.read(err, 65536):
                    return
            except BlockingIOError:
                return
            except OSError:
                pass
            loop.remove_reader(err)
            os.close(err)

        loop.add_reader(err, drain)
        return cls(boxed, writer, reader)

    @property
    def returncode(self) -> int | None:
        return self._boxed.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._boxed.exited)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            self._boxed.signal(sig)


class PythonExecutor:
    """Runs `type: "python"` hooks through a small pool of warm launchers (spawned lazily)."""

    def __init__(self, *, python: str | None = None, max_launchers: int = MAX_LAUNCHERS, kill_grace_s: float = KILL_GRACE_S) -> None:
        self.python = python or launcher_python()
        self.kill_grace_s = kill_grace_s
        self._idle: list[_Launcher] = []
        self._slots = asyncio.Semaphore(max_launchers)
        self._all: set[_Launcher] = set()

    async def warm(self) -> None:
        """Start one launcher ahead of the first Python hook."""
        if not self._idle:
            launcher = await _Launcher.spawn(self.python)
            self._all.add(launcher)
            self._idle.append(launcher)

    async def _acquire(self) -> _Launcher:
        await self._slots.acquire()
        try:
            while self._idle:
                launcher = self._idle.pop()
                if launcher.alive:
                    return launcher
                self._all.discard(launcher)
            launcher = await _Launcher.spawn(self.python)
            self._all.add(launcher)
            return launcher
        except BaseException:
            self._slots.release()
            raise

    def _release(self, launcher: _Launcher, healthy: bool) -> None:
        if healthy and launcher.alive:
            self._idle.append(launcher)
        else:
            self._all.discard(launcher)
        self._slots.release()

    async def run(self, call: HookCall) -> ExecutionReport:
        spec = call.hook
        script = Path(spec.script) if spec.script else Path(spec.config.script)
        if not script.is_file():
            return ExecutionReport(status="error", error=f"python hook script {script} does not exist")
        head = {
            "script": str(script),
            "cwd": str(spec.cwd or call.context.project_dir),
            "env": {**hook_env(call), MARKER_VAR: new_marker()},
        }
        data = encode_payload(call.payload)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + call.timeout_s
        launcher: _Launcher | None = None
        healthy = False
        leftovers: list[str] = []
        box = call.context.session.box
        boxed = box is not None and box.covers(spec)
        try:
            async with asyncio.timeout_at(deadline):
                if boxed:
                    launcher = _idle_boxed(box)
                    if launcher is None:
                        launcher = await _Launcher.spawn_boxed(self.python, box, Path(head["cwd"]))
                else:
                    launcher = await self._acquire()
                reply = await launcher.request(head, data)
            healthy = True
        except TimeoutError:
            if launcher is None:
                return ExecutionReport(status="timeout", error=f"no python launcher became free within {call.timeout_s:g} s")
            await launcher.kill(self.kill_grace_s)
            return ExecutionReport(
                status="timeout", error=f"timed out after {call.timeout_s:g} s; python launcher killed (respawned on next use)"
            )
        except LauncherDied as exc:
            return ExecutionReport(status="error", error=str(exc))
        except (OSError, RuntimeError) as exc:
            return ExecutionReport(status="error", error=f"could not start python launcher {self.python}: {exc}")
        except BaseException:
            if launcher is not None:
                await asyncio.shield(launcher.kill())
            raise
        finally:
            if launcher is not None and boxed:
                # Warm for the session's next boxed python hook (the box ends with the session, and it with it);
                # what this hook detached stays in the box until then, as a command hook's does.
                if healthy and launcher.alive:
                    box.python_launchers.append(launcher)  # type: ignore[union-attr]
                else:
                    await asyncio.shield(launcher.kill())
            elif launcher is not None:
                # The launcher lives on, but nothing this hook started may outlive the hook.
                pid = launcher.proc.pid
                leftovers = reap(head["env"][MARKER_VAR], pid, call.context.log, spec.name, spare=frozenset({pid}))
                self._release(launcher, healthy)
                if leftovers:
                    call.context.log.warning("hook %r: %s", spec.name, describe(leftovers))
        await _stream(call, reply)
        if leftovers:
            with contextlib.suppress(Exception):
                await call.progress("stderr", describe(leftovers))
        return _report(reply)

    async def aclose(self) -> None:
        launchers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(l.close() for l in launchers), return_exceptions=True)


def _report(reply: dict[str, Any]) -> ExecutionReport:
    common: dict[str, Any] = dict(
        stdout=reply.get("stdout") or "",
        stderr=reply.get("stderr") or "",
        stdout_dropped=int(reply.get("stdout_dropped") or 0),
        stderr_dropped=int(reply.get("stderr_dropped") or 0),
    )
    if not reply.get("ok"):
        return ExecutionReport(status="error", error=reply.get("error") or "hook failed", traceback=reply.get("traceback"), **common)
    code = int(reply.get("exit_code") or 0)
    if code == 2:
        return ExecutionReport(status="ok", exit_code=2, blocking_error=True, **common)
    if code != 0:
        return ExecutionReport(status="ok", exit_code=code, **common)
    result = reply.get("result")
    # run() may return its answer or print it, exactly as a command hook would
    output, text, error = coerce_output(result) if result is not None else parse_stdout(common["stdout"])
    if error:
        return ExecutionReport(status="error", exit_code=0, error=error, **common)
    return ExecutionReport(status="ok", exit_code=0, output=output, text=text, **common)


async def _stream(call: HookCall, reply: dict[str, Any]) -> None:
    if call.progress is no_progress:
        return
    for name in ("stdout", "stderr"):
        cap = Capture(True)
        cap.feed((reply.get(name) or "").encode())
        cap.finish()
        for line in cap.take_lines():
            with contextlib.suppress(Exception):
                await call.progress(name, line)  # type: ignore[arg-type]
