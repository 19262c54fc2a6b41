"""The command executor: the exec form's argv as written (no shell), else `/bin/sh -c` (or PowerShell), in its own process group, payload on stdin, capped concurrent output draining, timeout with a group kill."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hooks import children, dispositions
from hooks.executors._capture import Capture
from hooks.executors.leftovers import MARKER_VAR, Helpers, describe, new_marker
from hooks.interpret import parse_stdout
from hooks.payload import MAX_ENV_PAYLOAD_BYTES, encode_payload
from hooks.types import ExecutionReport, HookCall, no_progress

KILL_GRACE_S = 2.0
# After the shell exits, how long leftovers may keep our output pipes open before we give them up (as Claude Code).
PIPE_LINGER_S = 0.5
_READ = 65536


def hook_env(call: HookCall) -> dict[str, str]:
    """The variables every hook child gets on top of the parent environment: Claude Code's own, then ours."""
    session = call.context.session
    payload = call.payload
    session_id = payload.get("session_id") if isinstance(payload.get("session_id"), str) else session.session_id
    env = {
        # What the CLI's settings files put in its environment, as Claude Code's hooks inherit it (hooks/settings_env.py).
        **session.state.get(SETTINGS_ENV, {}),
        "CLAUDECODE": "1",
        "CLAUDE_PROJECT_DIR": str(session.project_dir),
        "CLAUDE_CODE_SESSION_ID": session_id,
        "SESSION_ID": session.session_id,
        "HOOK_EVENT": call.event,
        "HOOK_TIMEOUT": str(int(call.timeout_s * 1000)),
    }
    # A plugin's hook: CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA, as Claude Code sets them (hooks/plugins.py).
    env.update(getattr(call.hook, "env", None) or {})
    effort = payload.get("effort")
    if isinstance(effort, dict) and isinstance(effort.get("level"), str):
        env["CLAUDE_EFFORT"] = effort["level"]
    if call.event in ENV_FILE_EVENTS and session.cli_config_dir is not None:
        env["CLAUDE_ENV_FILE"] = str(session_env_file(session.cli_config_dir, session_id, session.state, call.event))
    return env


# session.state key: the settings files' env for hook processes (set by the sidecar at session start).
SETTINGS_ENV = "_settings_env"
# session.state key: the CLAUDE_CODE_SHELL_PREFIX that Claude Code would run shell-form hooks through (the user's own,
# or an organization's managed one; set by the sidecar at session start, sidecar/shell_isolation.py).
SHELL_PREFIX = "_shell_prefix"
# session.state key: whether that prefix can run inside the session's hook box (False: boxed hooks run without it).
SHELL_PREFIX_IN_BOX = "_shell_prefix_in_box"
# Events whose hooks may export variables for the agent's later Bash commands through CLAUDE_ENV_FILE.
ENV_FILE_EVENTS = frozenset({"SessionStart", "Setup", "CwdChanged", "FileChanged"})


def session_env_file(config_dir: Path, session_id: str, state: Any, event: str = "SessionStart") -> Path:
    """Where such a hook's `export` lines go: a file the CLI reads before each later Bash command.

    The CLI's own layout (2.1.330): `<config>/session-env/<session id>/<event lowercased>-hook-<n>.sh`, one per hook.
    """
    counters = state.setdefault("_session_env_files", {})
    n = counters.get(event, 0)
    counters[event] = n + 1
    directory = Path(config_dir) / "session-env" / session_id
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory / f"{event.lower()}-hook-{n}.sh"


def run_cwd(spec: Any, payload: dict[str, Any], project_dir: Path) -> Path:
    """Where a command hook runs: as in Claude Code, the agent's current directory (after its `cd sub`, the next
    hook runs in `sub`); a legacy entry keeps its `.claude/hooks`; the project when the input names no directory."""
    if spec.cwd is not None:
        return Path(spec.cwd)
    cwd = payload.get("cwd")
    if cwd == str(project_dir):
        return project_dir  # the common case: the agent has not moved; no stat
    if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd):
        return Path(cwd)
    return Path(project_dir)


_last_pid_fd: int | None = None


def nothing_started_since(pid: int) -> bool:
    """True when `pid` is still the newest pid of this pid namespace: no process, so no descendant of it, was created after it."""
    global _last_pid_fd
    try:
        if _last_pid_fd is None:
            # Kept open: a pread is a tenth of an open/read/close, and this runs after every command hook.
            _last_pid_fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(_last_pid_fd, 32, 0)) == pid
    except (OSError, ValueError):
        return False


# Orion's own configuration (a database URL with its password, tokens) never reaches a hook process; the run token
# the process supervisor finds leftovers by does (it holds nothing).
_ORION_PREFIX = "ORION_"
_ORION_KEPT = frozenset({"ORION_SIDECAR_RUN"})


def _without_orion(environ: Any) -> dict[str, str]:
    return {k: v for k, v in environ.items() if not k.startswith(_ORION_PREFIX) or k in _ORION_KEPT}


class _BaseEnv:
    """os.environ as a plain dict, without Orion's own variables, copied again only when the environment changed
    (names or values)."""

    __slots__ = ("_raw", "_env")

    def __init__(self) -> None:
        self._raw: dict[Any, Any] | None = None
        self._env: dict[str, str] = {}

    def copy(self) -> dict[str, str]:
        # Decoding every variable through os.environ per spawn cost more than the rest of the env handling;
        # CPython's encoded store compares in one C-level dict comparison.
        raw = getattr(os.environ, "_data", None)
        if raw is None:
            return _without_orion(os.environ)
        if raw != self._raw:
            self._env = _without_orion(os.environ)
            self._raw = dict(raw)
        return self._env.copy()


_base_env = _BaseEnv()


def shell_prefix_line(prefix: str) -> str:
    """The shell line that runs a `CLAUDE_CODE_SHELL_PREFIX` with a command line (the line's `$1`) as Claude Code does
    (2.1.330, read in its code): the part before the last " -" is the program, quoted, what follows it the
    program's options as written, then the command as one word."""
    cut = prefix.rfind(" -")
    if cut > 0:
        return f'{shlex.quote(prefix[:cut])} {prefix[cut + 1:]} "$1"'
    return f'{shlex.quote(prefix)} "$1"'


def command_argv(spec: Any, prefix: str | None = None) -> list[str] | str:
    """What a command hook starts, or (a str) why it cannot start.

    Exec form (`args` given): the program and its arguments exactly as the hook set expanded them, with no shell in
    between, so nothing in them is ever parsed as shell syntax. Shell form: `/bin/sh -c <command>`, which is what
    Claude Code runs for the default and for `shell: "bash"` on Linux and macOS; `shell: "powershell"` needs pwsh.
    `prefix`: the user's own `CLAUDE_CODE_SHELL_PREFIX` (the session's SHELL_PREFIX), through which Claude Code runs
    a shell-form hook that is not PowerShell; the exec form and PowerShell never go through it, as there.
    """
    argv = getattr(spec, "argv", None)
    if argv is not None:
        return list(argv)
    command = spec.command or spec.config.command
    if getattr(spec, "shell", None) == "powershell":
        pwsh = shutil.which("pwsh") or shutil.which("powershell")
        if pwsh is None:
            return ("shell is \"powershell\" and no PowerShell (pwsh or powershell) is on PATH; the hook did not run "
                    "(install PowerShell, or drop \"shell\" to run the command with /bin/sh)")
        # PowerShell reads $NAME as its own variable: the placeholders are the environment's.
        for var in ("CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA"):
            command = command.replace("${" + var + "}", "${env:" + var + "}")
        return [pwsh, "-NoProfile", "-NonInteractive", "-Command", command]
    if prefix and prefix.strip():
        return ["/bin/sh", "-c", shell_prefix_line(prefix), "/bin/sh", command]
    return ["/bin/sh", "-c", command]


class CommandExecutor:
    """Runs `type: "command"` hooks; exit codes and stdout are interpreted by the runner."""

    __slots__ = ("kill_grace_s", "helpers")

    def __init__(self, *, kill_grace_s: float = KILL_GRACE_S) -> None:
        self.kill_grace_s = kill_grace_s
        self.helpers = Helpers()  # what this session's hooks started to outlive them (hooks/executors/leftovers.py)

    async def aclose(self) -> None:
        """The session ends, and with it the helpers its hooks left running."""
        await self.helpers.end()

    async def run(self, call: HookCall) -> ExecutionReport:
        spec = call.hook
        state = call.context.session.state
        box = call.context.session.box
        boxed = box is not None and box.covers(spec)
        prefix = state.get(SHELL_PREFIX) if not boxed or state.get(SHELL_PREFIX_IN_BOX, True) else None
        argv = command_argv(spec, prefix)
        if isinstance(argv, str):
            return ExecutionReport(status="error", error=argv)
        data = encode_payload(call.payload)
        env = _base_env.copy()
        env.update(hook_env(call))
        env[MARKER_VAR] = new_marker()
        cwd = run_cwd(spec, call.payload, call.context.project_dir)
        payload_file: str | None = None
        if len(data) < MAX_ENV_PAYLOAD_BYTES:
            env["HOOK_PAYLOAD"] = data.decode()
        elif boxed:
            env["HOOK_PAYLOAD_FILE"] = ""  # the box writes it where the hook can see it (sidecar/hook_box.py)
        else:
            fd, payload_file = tempfile.mkstemp(prefix="orion-hook-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            env["HOOK_PAYLOAD_FILE"] = payload_file
        try:
            # A project's hook (or a user's settings hook while the project is untrusted) starts in the hook box.
            return await _Run(call, argv, cwd, env, data, self.kill_grace_s, self.helpers,
                              box if boxed else None).go()
        finally:
            if payload_file:
                with contextlib.suppress(OSError):
                    os.unlink(payload_file)


class _Run:
    """One child process, driven by loop callbacks: spawn, feed stdin, drain both pipes, see the exit via a pidfd, kill the group on timeout.

    Everything settles one future (exit seen and both pipes closed), so a fast
    hook costs one wake-up of the awaiting task.
    """

    def __init__(self, call: HookCall, argv: list[str], cwd: Path, env: dict[str, str], data: bytes, grace: float,
                 helpers: Helpers, box: Any = None) -> None:
        self.call = call
        # The session's hook box (sidecar/hook_box.py) when the hook runs inside it: the process is the box's
        # (a BoxedProcess: its exit is reported, signals go through the box), and what it leaves stays in the box
        # until the session ends.
        self.box = box
        self.helpers = helpers
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.data = memoryview(data)
        self.grace = grace
        self.loop = asyncio.get_running_loop()
        streaming = call.progress is not no_progress
        self.out = Capture(streaming)
        self.err = Capture(streaming)
        self.pending: collections.deque[tuple[str, str]] = collections.deque()
        self.wake: asyncio.Event | None = asyncio.Event() if streaming else None
        self.open_pipes = 2
        self.exited = False
        self.timed_out = False
        self.settled = self.loop.create_future()
        self.timers: list[asyncio.TimerHandle] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.fds: list[int] = []
        self.watching: set[int] = set()  # fds with a reader on the loop; cleanup removes only what is left
        self.writing = False
        self.streams_done = False
        self.leftovers: list[str] = []

    async def go(self) -> ExecutionReport:
        if self.box is not None:
            return await self._go_boxed()
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
                bufsize=0,
                # SIGHUP and SIGTERM at their defaults in the hook, even under nohup (leftovers.py relies on them)
                preexec_fn=dispositions.child_setup(),
            )
        except OSError as exc:
            what = "program" if getattr(self.call.hook, "argv", None) is not None else "command"
            return ExecutionReport(status="error", error=f"could not start hook {what} (cwd {self.cwd}): {exc}")
        self.run = self.helpers.started(self.proc.pid, self.env[MARKER_VAR], self.call.context.log, self.call.hook.name)
        children.started(self.proc.pid, own_group=True)
        pump = None
        try:
            self._watch(self.proc)
            self.timers.append(self.loop.call_later(self.call.timeout_s, self._on_timeout))
            if self.wake is not None:
                pump = self.loop.create_task(self._pump())
            await self.settled
            self._sweep(False)
            await self._drain(pump)
            report = self._report(self.timed_out)
            if self.leftovers:
                await self._tell_leftovers()
            return report
        finally:
            if pump is not None and not pump.done():
                pump.cancel()
            self._cleanup()

    async def _go_boxed(self) -> ExecutionReport:
        try:
            self.proc = await self.box.start(self.argv, self.cwd, self.env, bytes(self.data))  # type: ignore[assignment]
        except (OSError, RuntimeError) as exc:
            what = "program" if getattr(self.call.hook, "argv", None) is not None else "command"
            return ExecutionReport(status="error", error=f"could not start hook {what} in its box (cwd {self.cwd}): "
                                                         f"{exc}")
        proc: Any = self.proc
        pump = None
        try:
            for fd, cap in ((proc.stdout_fd, self.out), (proc.stderr_fd, self.err)):
                os.set_blocking(fd, False)
                self.loop.add_reader(fd, self._on_readable, fd, cap)
                self.watching.add(fd)
            os.set_blocking(proc.stdin_fd, False)
            proc.exited.add_done_callback(lambda _f: self._on_exit(None))
            if self.data:
                self._on_writable(proc.stdin_fd)
            else:
                self._close_stdin()
            self.timers.append(self.loop.call_later(self.call.timeout_s, self._on_timeout))
            if self.wake is not None:
                pump = self.loop.create_task(self._pump())
            await self.settled
            if self.timed_out:
                self._sweep(True)  # the group's SIGTERM ended the shell: what it started goes too
            await self._drain(pump)
            return self._report(self.timed_out)
        finally:
            if pump is not None and not pump.done():
                pump.cancel()
            self._cleanup()

    async def _drain(self, pump: asyncio.Task[None] | None) -> None:
        """The output is all in: the last partial lines become lines, and the observer has seen every one."""
        self.out.finish()
        self.err.finish()
        self._queue_lines()
        if pump is not None:
            self.streams_done = True
            self.wake.set()  # type: ignore[union-attr]
            await pump

    # ------------------------------------------------------------------ loop callbacks

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin and proc.stdout and proc.stderr
        pidfd = os.pidfd_open(proc.pid)
        self.fds.append(pidfd)
        self.loop.add_reader(pidfd, self._on_exit, pidfd)
        self.watching.add(pidfd)
        for pipe, cap in ((proc.stdout, self.out), (proc.stderr, self.err)):
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            self.loop.add_reader(fd, self._on_readable, fd, cap)
            self.watching.add(fd)
        sfd = proc.stdin.fileno()
        os.set_blocking(sfd, False)
        if self.data:
            self._on_writable(sfd)
        else:
            self._close_stdin()

    def _on_exit(self, pidfd: int | None) -> None:
        if self.exited:
            return
        if pidfd is not None:
            self.loop.remove_reader(pidfd)
            self.watching.discard(pidfd)
        self.exited = True
        if self.open_pipes:
            # Something the hook started still holds our pipes: give it a moment, then give them up (_let_go).
            self.timers.append(self.loop.call_later(PIPE_LINGER_S, self._let_go))
        self._maybe_settle()

    def _on_timeout(self) -> None:
        if self.exited and not self.open_pipes:
            return
        self.timed_out = True
        self._signal(signal.SIGTERM)
        self.timers.append(self.loop.call_later(self.grace, self._sweep, True))
        # Last resort: if even SIGKILL cannot close the pipes (a process escaped the group), stop waiting.
        self.timers.append(self.loop.call_later(2 * self.grace + 1.0, self._give_up))

    def _give_up(self) -> None:
        if not self.settled.done():
            self.settled.set_result(None)

    def _maybe_settle(self) -> None:
        if self.exited and not self.open_pipes and not self.settled.done():
            self.settled.set_result(None)

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
        self.watching.discard(fd)
        self.open_pipes -= 1
        self._maybe_settle()

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
        if self.box is not None:
            fd = getattr(proc, "stdin_fd", -1)
            if fd >= 0:
                if self.writing:
                    self.writing = False
                    self.loop.remove_writer(fd)
                os.close(fd)
                proc.stdin_fd = -1  # type: ignore[union-attr]
            return
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            if self.writing:
                self.writing = False
                self.loop.remove_writer(proc.stdin.fileno())
            proc.stdin.close()

    def _queue_lines(self) -> None:
        for name, cap in (("stdout", self.out), ("stderr", self.err)):
            for line in cap.take_lines():
                self.pending.append((name, line))
        if self.pending and self.wake is not None:
            self.wake.set()

    async def _pump(self) -> None:
        # One consumer keeps lines in arrival order however slow the observer is.
        assert self.wake is not None
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.pending:
                stream, line = self.pending.popleft()
                try:
                    await self.call.progress(stream, line)  # type: ignore[arg-type]
                except Exception:  # an observer bug must not fail the hook
                    pass
            if self.streams_done:
                return

    def _sweep(self, kill_group: bool) -> None:
        # What the hook left: a stray still attached to it dies, a helper it detached lives until the session ends
        # (hooks/executors/leftovers.py); on a timeout or a cancel all of it dies, its group first.
        assert self.proc is not None
        if self.box is not None:  # in the hook box, what it left lives until the box ends with the session
            if kill_group:  # a timeout: all it started dies, as Claude Code kills the whole tree
                with contextlib.suppress(OSError):
                    self.proc.signal(signal.SIGKILL, f"{MARKER_VAR}={self.env[MARKER_VAR]}")  # type: ignore[union-attr]
            return
        if kill_group:
            self._signal(signal.SIGKILL)
        elif self.exited and nothing_started_since(self.proc.pid):
            self.run.finish()
            return  # the shell is gone and no process was created after it: it left nothing
        self.leftovers += self.run.after(kill=kill_group)

    def _let_go(self) -> None:
        # Half a second after the exit, as Claude Code, the output is what was read: a stray still holding the pipes
        # dies, a helper that detached keeps them (its later writes fail) and we stop reading. (In the hook box the
        # stray lives on in the box, as Claude Code leaves it.)
        assert self.proc is not None
        if self.box is not None:
            out_fds = [self.proc.stdout_fd, self.proc.stderr_fd]  # type: ignore[attr-defined]
        else:
            assert self.proc.stdout is not None and self.proc.stderr is not None
            out_fds = [self.proc.stdout.fileno(), self.proc.stderr.fileno()]
            pipes = (os.fstat(out_fds[0]).st_ino, os.fstat(out_fds[1]).st_ino)
            self.leftovers += self.run.after(kill=self.timed_out, pipes=pipes)
        for fd, cap in zip(out_fds, (self.out, self.err)):
            if fd not in self.watching:
                continue
            with contextlib.suppress(OSError):
                for _ in range(16):  # what is already in the pipe, bounded: a helper may write on
                    if not (chunk := os.read(fd, _READ)):
                        break
                    cap.feed(chunk)
            self.loop.remove_reader(fd)
            self.watching.discard(fd)
            self.open_pipes -= 1
        self._queue_lines()
        self._maybe_settle()

    async def _tell_leftovers(self) -> None:
        note = describe(self.leftovers)
        self.call.context.log.warning("hook %r: %s", self.call.hook.name, note)
        with contextlib.suppress(Exception):
            await self.call.progress("stderr", note)

    def _signal(self, sig: int) -> None:
        if self.proc is None:
            return
        if self.box is not None:
            with contextlib.suppress(OSError):
                self.proc.signal(sig)  # type: ignore[attr-defined]  # to its group, through the box
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _report(self, timed_out: bool) -> ExecutionReport:
        proc = self.proc
        assert proc is not None
        try:
            code = proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:  # only after _give_up: the shell itself could not be reaped
            code = None
        stdout, stderr = self.out.text(), self.err.text()
        common: dict[str, Any] = dict(
            stdout=stdout, stderr=stderr, stdout_dropped=self.out.dropped, stderr_dropped=self.err.dropped
        )
        if timed_out:
            return ExecutionReport(status="timeout", error=f"timed out after {self.call.timeout_s:g} s; process group killed", **common)
        if code is None:
            return ExecutionReport(status="error", error="hook process could not be reaped", **common)
        if code == 2:
            return ExecutionReport(status="ok", exit_code=2, blocking_error=True, **common)
        report = ExecutionReport(status="ok", exit_code=code, **common)
        if code == 0:
            # As Claude Code reads a command hook: `{` that does not parse is plain output. Not for a fail-closed gate,
            # nor for output cut at the cap: what it meant to say is unknown, so it is an error there.
            strict = bool(getattr(self.call.hook, "fail_closed", False)) or self.out.dropped > 0
            report.output, report.text, error = parse_stdout(stdout, lenient=not strict)
            if error:
                if self.out.dropped:
                    error += f" (stdout went past the {self.out.cap >> 20} MiB cap; {self.out.dropped} bytes dropped)"
                report.status, report.error = "error", error
        elif code < 0:
            report.error = f"hook killed by signal {-code}"
        return report

    def _cleanup(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if self.box is not None:
            self._cleanup_boxed()
            return
        for timer in self.timers:
            timer.cancel()
        if not self.exited or self.open_pipes:
            # cancelled mid-run: nothing of the hook may outlive us
            self._signal(signal.SIGKILL)
            self.leftovers += self.run.after(kill=True)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for fd in self.watching:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(fd)
        self.watching.clear()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self._close_stdin()
        for fd in self.fds:
            os.close(fd)
        if proc.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def _cleanup_boxed(self) -> None:
        for timer in self.timers:
            timer.cancel()
        if not self.exited or self.open_pipes:  # cancelled mid-run: nothing of the hook may outlive it
            with contextlib.suppress(OSError):
                self.proc.signal(signal.SIGKILL, f"{MARKER_VAR}={self.env[MARKER_VAR]}")  # type: ignore[union-attr]
        for fd in self.watching:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(fd)
        self.watching.clear()
        self._close_stdin()
        proc: Any = self.proc
        for fd in (proc.stdout_fd, proc.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
