"""The command executor: `/bin/sh -c` in its own process group, payload on stdin, capped concurrent output draining, timeout with a group kill."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hooks.executors._capture import Capture
from hooks.interpret import parse_stdout
from hooks.payload import MAX_ENV_PAYLOAD_BYTES, encode_payload
from hooks.types import ExecutionReport, HookCall, no_progress

KILL_GRACE_S = 2.0
# After the shell exits, how long leftovers may keep our output pipes open before the group is killed.
PIPE_LINGER_S = 0.5
_READ = 65536


def hook_env(call: HookCall) -> dict[str, str]:
    """The variables every hook child gets on top of the parent environment."""
    session = call.context.session
    return {
        "CLAUDE_PROJECT_DIR": str(session.project_dir),
        "CLAUDE_SESSION_ID": session.session_id,
        "SESSION_ID": session.session_id,
        "HOOK_EVENT": call.event,
        "HOOK_TIMEOUT": str(int(call.timeout_s * 1000)),
    }


class CommandExecutor:
    """Runs `type: "command"` hooks; exit codes and stdout are interpreted by the runner."""

    __slots__ = ("kill_grace_s",)

    def __init__(self, *, kill_grace_s: float = KILL_GRACE_S) -> None:
        self.kill_grace_s = kill_grace_s

    async def run(self, call: HookCall) -> ExecutionReport:
        spec = call.hook
        command = spec.command or spec.config.command
        data = encode_payload(call.payload)
        env = dict(os.environ)
        env.update(hook_env(call))
        payload_file: str | None = None
        if len(data) < MAX_ENV_PAYLOAD_BYTES:
            env["HOOK_PAYLOAD"] = data.decode()
        else:
            fd, payload_file = tempfile.mkstemp(prefix="orion-hook-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            env["HOOK_PAYLOAD_FILE"] = payload_file
        try:
            return await _Run(call, command, Path(spec.cwd or call.context.project_dir), env, data, self.kill_grace_s).go()
        finally:
            if payload_file:
                with contextlib.suppress(OSError):
                    os.unlink(payload_file)


class _Run:
    """One child process: spawn, feed stdin, drain both pipes, wait for exit via a pidfd, kill the group on timeout."""

    def __init__(self, call: HookCall, command: str, cwd: Path, env: dict[str, str], data: bytes, grace: float) -> None:
        self.call = call
        self.command = command
        self.cwd = cwd
        self.env = env
        self.data = memoryview(data)
        self.grace = grace
        self.loop = asyncio.get_running_loop()
        streaming = call.progress is not no_progress
        self.out = Capture(streaming)
        self.err = Capture(streaming)
        self.pending: collections.deque[tuple[str, str]] = collections.deque()
        self.wake = asyncio.Event()
        self.open_pipes = 2
        self.pipes_closed = self.loop.create_future()
        self.exited = self.loop.create_future()
        self.proc: subprocess.Popen[bytes] | None = None
        self.fds: list[int] = []
        self.writing = False

    async def go(self) -> ExecutionReport:
        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", self.command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
                bufsize=0,
            )
        except OSError as exc:
            return ExecutionReport(status="error", error=f"could not start hook command (cwd {self.cwd}): {exc}")
        proc = self.proc
        pump = None
        try:
            self._watch(proc)
            if self.out.stream:
                pump = self.loop.create_task(self._pump())
            timed_out = False
            try:
                async with asyncio.timeout(self.call.timeout_s):
                    await self.exited
            except TimeoutError:
                timed_out = True
                await self._kill_group()
            await self._await_pipes()
            self.out.finish()
            self.err.finish()
            self._queue_lines()
            if pump is not None:
                self.open_pipes = -1
                self.wake.set()
                await pump
            return self._report(timed_out)
        finally:
            if pump is not None and not pump.done():
                pump.cancel()
            self._cleanup()

    # ------------------------------------------------------------------ plumbing

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        pidfd = os.pidfd_open(proc.pid)
        self.fds.append(pidfd)
        self.loop.add_reader(pidfd, self._on_exit, pidfd)
        for pipe, cap in ((proc.stdout, self.out), (proc.stderr, self.err)):
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            self.loop.add_reader(fd, self._on_readable, fd, cap)
        sfd = proc.stdin.fileno()
        os.set_blocking(sfd, False)
        if self.data:
            self._on_writable(sfd)
        else:
            self._close_stdin()

    def _on_exit(self, pidfd: int) -> None:
        self.loop.remove_reader(pidfd)
        if not self.exited.done():
            self.exited.set_result(None)

    def _on_readable(self, fd: int, cap: Capture) -> None:
        try:
            chunk = os.read(fd, _READ)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            cap.feed(chunk)
            if cap.lines:
                self._queue_lines()
            return
        self.loop.remove_reader(fd)
        self.open_pipes -= 1
        if self.open_pipes == 0 and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def _on_writable(self, fd: int) -> None:
        try:
            while self.data:
                n = os.write(fd, self.data[:_READ])
                self.data = self.data[n:]
        except BlockingIOError:
            if not self.writing:
                self.writing = True
                self.loop.add_writer(fd, self._on_writable, fd)
            return
        except OSError:
            pass  # the hook closed stdin without reading it all: its choice, not an error
        self._close_stdin()

    def _close_stdin(self) -> None:
        proc = self.proc
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            if self.writing:
                self.writing = False
                self.loop.remove_writer(proc.stdin.fileno())
            proc.stdin.close()

    def _queue_lines(self) -> None:
        for name, cap in (("stdout", self.out), ("stderr", self.err)):
            for line in cap.take_lines():
                self.pending.append((name, line))
        if self.pending:
            self.wake.set()

    async def _pump(self) -> None:
        # One consumer keeps lines in arrival order however slow the observer is.
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                stream, line = self.pending.popleft()
                try:
                    await self.call.progress(stream, line)  # type: ignore[arg-type]
                except Exception:  # an observer bug must not fail the hook
                    pass
            if self.open_pipes < 0:
                return

    async def _kill_group(self) -> None:
        self._signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(self.grace):
                await asyncio.shield(self.exited)
        except TimeoutError:
            pass
        self._signal(signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.grace):
                await asyncio.shield(self.exited)

    async def _await_pipes(self) -> None:
        if self.pipes_closed.done():
            return
        try:
            async with asyncio.timeout(PIPE_LINGER_S):
                await asyncio.shield(self.pipes_closed)
            return
        except TimeoutError:
            pass
        # Something the hook started still holds our pipes: it dies with the group.
        self._signal(signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.grace):
                await asyncio.shield(self.pipes_closed)

    def _signal(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _report(self, timed_out: bool) -> ExecutionReport:
        proc = self.proc
        assert proc is not None
        code = proc.wait()
        stdout, stderr = self.out.text(), self.err.text()
        common: dict[str, Any] = dict(
            stdout=stdout, stderr=stderr, stdout_dropped=self.out.dropped, stderr_dropped=self.err.dropped
        )
        if timed_out:
            return ExecutionReport(status="timeout", error=f"timed out after {self.call.timeout_s:g} s; process group killed", **common)
        if code == 2:
            return ExecutionReport(status="ok", exit_code=2, blocking_error=True, **common)
        report = ExecutionReport(status="ok", exit_code=code, **common)
        if code == 0:
            report.output, report.text, error = parse_stdout(stdout)
            if error:
                report.status, report.error = "error", error
        elif code < 0:
            report.error = f"hook killed by signal {-code}"
        return report

    def _cleanup(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None and not self.exited.done():
            # cancelled mid-run: nothing of the hook may outlive us
            self._signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(Exception):
                    self.loop.remove_reader(pipe.fileno())
                pipe.close()
        self._close_stdin()
        for fd in self.fds:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(fd)
            os.close(fd)
        if proc.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
