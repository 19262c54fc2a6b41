"""Command hooks that run a project's code start inside a box of the session's own (Linux), built from the session's
boundary plan: the hook box.

A hook is a program, and a program can run anything in the project: `tools/gate`, `npm run lint`, a module a pinned
script imports. Trust reviews what a project brings when the user trusts it; the agent can change the project's
files after that (they are writable in its box), and a hook run outside any boundary would run those changes with
everything the user's account can reach. So the hooks that run a project's code run inside the same boundary the
agent has (sidecar/boundary.py: the project writable, the rest read-only, secrets and Orion's state hidden, network
only through Orion's proxy), in a box of their own:

- which hooks: every `command` and `python` hook from a project's sources (its settings files, its local settings,
  its vault, the plugins it enables: hooks/hookset.py TRUST_SOURCES), and, while the project is not trusted, those
  of the user's own settings files (a user's `npx prettier --check .` runs an untrusted project's code). The user's
  settings hooks in a project the user trusted, and the plugins the user installed (their own pinned files, their
  data and workers in the user's home), run outside, as before;
- one box per session, a sibling of the agent's: the agent's commands can neither see nor signal a hook's
  processes (another PID namespace), nor change what it answers. It starts with the session's first boxed hook and
  ends with the session; what a hook starts to outlive it (a worker) lives in it until then, as Claude Code keeps
  it, and dies with it;
- inside, the box's first process is sidecar/box_spawner.py: the sidecar hands it each hook's program, environment,
  working directory and three pipe ends over a socket pair only the two of them hold, and it reports the start and
  the exit. One bubblewrap start per session, not per hook;
- the environment is allow-listed as the CLI's (sidecar/sdk_env.py), without the model's credential: the hook's
  own variables (CLAUDE_PROJECT_DIR, the settings' env, a plugin's root), the payload, the locale and the paths;
- `/tmp` is a folder of the session's, shared by its boxed hooks from one run to the next, seen by nothing else.

docs/SECURITY.md "Hooks inside the boundary"; cost in bench/RESULTS.md (bench/bench_hook_box.py).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hooks.executors.leftovers import MARKER_VAR
from sidecar import boundary as box_mod
from sidecar.sdk_env import CLI_ENV_NAMES, PASS_VAR, RUN_TOKEN_VAR

log = logging.getLogger("sidecar.hook_box")

SPAWNER = Path(__file__).resolve().parent / "box_spawner.py"
# The hook's own variables (hooks/executors/command.py) pass; the model's credential and Orion's never do.
_HOOK_PREFIXES = ("LC_", "CLAUDE_")
_NEVER = ("ANTHROPIC_", "ORION_", "CLAUDE_CODE_OAUTH_TOKEN")
_HOOK_NAMES = frozenset({"HOOK_PAYLOAD", "HOOK_PAYLOAD_FILE", "HOOK_EVENT", "HOOK_TIMEOUT", "SESSION_ID"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TMP_INSIDE = "/tmp"
# A payload bigger than this goes to the hook as a file in the box's /tmp (HOOK_PAYLOAD_FILE), not in the message.
_INLINE_PAYLOAD = 48 * 1024
_START_TIMEOUT_S = 30.0


class BoxGone(RuntimeError):
    """The hook box is not running (closed with the session, or it died); the message says which."""


class BoxedProcess:
    """A hook's process inside the box, as the executors drive it: its pipes (ours are plain file descriptors),
    its exit status once the spawner reports it, and signals to its process group through the spawner."""

    def __init__(self, spawner: _Spawner, ident: int, stdin: int, stdout: int, stderr: int) -> None:
        self._spawner = spawner
        self.ident = ident
        self.stdin_fd, self.stdout_fd, self.stderr_fd = stdin, stdout, stderr
        self.pid = 0  # inside the box
        self.returncode: int | None = None
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def signal(self, sig: int, marker: str | None = None) -> None:
        """`sig` to the hook's process group while it runs; with `marker` (the run's NAME=VALUE) also to everything
        in the box the run started, whether the hook is still running or not."""
        if (self.returncode is None or marker) and self._spawner.dead is None:
            self._spawner.post({"op": "signal", "id": self.ident, "sig": int(sig), "marker": marker or ""})

    def wait(self, timeout: float | None = None) -> int:
        """The exit code once it is known (the executors ask only after the exit was reported)."""
        if self.returncode is None:
            raise subprocess.TimeoutExpired("boxed hook", timeout or 0.0)
        return self.returncode


class _Spawner:
    """The sidecar's end of the socket pair to box_spawner.py, on the event loop."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        self.sock = sock
        self.proc = proc
        self.next_id = 0
        self.running: dict[int, BoxedProcess] = {}
        self.starting: dict[int, asyncio.Future[None]] = {}
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(sock.fileno(), self._on_message)
        self.dead: str | None = None
        self._send_lock = asyncio.Lock()
        self._posting: set[asyncio.Task[None]] = set()

    def send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        """A packet now (a signal: small); raises BlockingIOError when the socket's buffer is full."""
        data = json.dumps(message).encode()
        if fds:
            self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.sock.send(data)

    async def send_when_ready(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        """A packet, waiting for room in the socket's buffer (a burst of hooks with large payloads fills it); one
        waiter at a time, in order."""
        async with self._send_lock:
            while True:
                try:
                    self.send(message, fds)
                    return
                except BlockingIOError:
                    ready = self.loop.create_future()
                    self.loop.add_writer(self.sock.fileno(), lambda: ready.done() or ready.set_result(None))
                    try:
                        async with asyncio.timeout(_START_TIMEOUT_S):
                            await ready
                    finally:
                        self.loop.remove_writer(self.sock.fileno())

    def post(self, message: dict[str, Any]) -> None:
        """A packet without waiting: now if there is room, else as soon as there is (a signal is never lost)."""
        try:
            if self._send_lock.locked():
                raise BlockingIOError
            self.send(message)
        except BlockingIOError:
            task = self.loop.create_task(self.send_when_ready(message))
            self._posting.add(task)
            task.add_done_callback(self._posting.discard)

    async def start(self, argv: list[str], env: Mapping[str, str], cwd: str) -> BoxedProcess:
        if self.dead is not None:
            raise BoxGone(self.dead)
        self.next_id += 1
        ident = self.next_id
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        proc = BoxedProcess(self, ident, in_w, out_r, err_r)
        started: asyncio.Future[None] = self.loop.create_future()
        self.starting[ident] = started
        self.running[ident] = proc
        try:
            await self.send_when_ready({"op": "run", "id": ident, "argv": argv, "env": dict(env), "cwd": cwd},
                                       [in_r, out_w, err_w])
        except (OSError, TimeoutError) as exc:
            self._forget(ident)
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            raise BoxGone(f"the hook box did not take the hook: {exc}") from None
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        try:
            async with asyncio.timeout(_START_TIMEOUT_S):
                await started
        except BaseException as exc:
            self._forget(ident)
            for fd in (in_w, out_r, err_r):
                os.close(fd)
            if isinstance(exc, TimeoutError):
                raise BoxGone(f"the hook box did not report the hook's start within {_START_TIMEOUT_S:.0f} s") from None
            raise
        return proc

    def _forget(self, ident: int) -> None:
        self.starting.pop(ident, None)
        self.running.pop(ident, None)

    def _on_message(self) -> None:
        """Every packet waiting (a burst of hooks sends two each): the spawner holds what does not fit meanwhile."""
        while self.dead is None:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._gone("the hook box ended")
                return
            try:
                message = json.loads(data)
            except ValueError:
                continue
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        started = self.starting.pop(ident, None)
        proc = self.running.get(ident)
        if "error" in message:
            self.running.pop(ident, None)
            if started is not None and not started.done():
                started.set_exception(BoxGone(f"the hook did not start in its box: {message['error']}"))
        elif "pid" in message:
            if proc is not None:
                proc.pid = int(message["pid"])
            if started is not None and not started.done():
                started.set_result(None)
        elif "status" in message and proc is not None:
            self.running.pop(ident, None)
            proc.returncode = int(message["status"])
            if not proc.exited.done():
                proc.exited.set_result(proc.returncode)

    def _gone(self, why: str) -> None:
        if self.dead is not None:
            return
        self.dead = why
        with contextlib.suppress(OSError, ValueError):
            self.loop.remove_reader(self.sock.fileno())
        for started in self.starting.values():
            if not started.done():
                started.set_exception(BoxGone(why))
        for proc in self.running.values():
            if proc.returncode is None:
                proc.returncode = -9
                if not proc.exited.done():
                    proc.exited.set_result(-9)
        self.starting.clear()
        self.running.clear()

    async def aclose(self) -> None:
        """Closing our end ends the box (the spawner kills everything in it and exits)."""
        self._gone("the session's hook box is closed")
        self.sock.close()
        await asyncio.to_thread(self._reap)

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, 9)
            with contextlib.suppress(subprocess.SubprocessError):
                self.proc.wait(timeout=5)


class HookBox:
    """One session's hook box: which hooks go in (`covers`) and starting one inside (`start`). The box itself (its
    folder, /tmp, proxy relay, bubblewrap and the spawner) comes up with the first boxed hook; `aclose()` ends it."""

    def __init__(self, boundary: Any, trusted: Callable[[], bool], sources: Iterable[str],
                 withheld: Iterable[str] = (), untrusted_sources: Iterable[str] = (),
                 hooks: Callable[[], Iterable[Any]] = tuple) -> None:
        self.boundary = boundary
        self._trusted = trusted
        self._hooks = hooks  # the session's hooks now (their plugins' folders are opened in the box)
        self._sources = frozenset(sources)
        self._untrusted_sources = frozenset(untrusted_sources)
        self._withheld = frozenset(withheld)
        self._extra = frozenset(re.split(r"[\s,]+", os.environ.get(PASS_VAR, "")))
        self._lock = threading.Lock()
        self._opening: asyncio.Lock | None = None
        self._box: box_mod.Box | None = None
        self._spawner: _Spawner | None = None
        self._tmp = ""
        self._files = 0
        self.closed = False
        # Warm python launchers inside the box (hooks/executors/python.py keeps them here, idle between hooks).
        self.python_launchers: list[Any] = []

    def covers(self, spec: Any) -> bool:
        """Whether this hook runs inside: a project's own always; a user's settings hook while the project is not
        trusted (it names the project's tools: `npx prettier`, `npm run lint`)."""
        source = getattr(spec, "source", None)
        return source in self._sources or (source in self._untrusted_sources and not self._trusted())

    # ------------------------------------------------------------------ the box

    def _open_folder(self) -> tuple[box_mod.Box, str]:
        """Blocking: the box's folder, /tmp and proxy relay, and bubblewrap's arguments."""
        # No model endpoint: hooks do not talk to the model (prompt and agent hooks run in the sidecar).
        plan = dataclasses.replace(self.boundary.plan, model_endpoint=None)
        boundary = dataclasses.replace(self.boundary, plan=plan, shield="", credential=None)
        box = box_mod.Box.open_for_hooks(boundary)
        try:
            tmp = os.path.join(box.dir, "tmp")
            os.mkdir(tmp, 0o700)
            args = plan.bwrap_args(os.path.join(box.dir, "empty"), os.path.join(box.dir, "net"), None, tmp_dir=tmp)
            args += self._plugin_binds()
            args_file = os.path.join(box.dir, "box.args")
            fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(b"".join(a.encode() + b"\0" for a in args))
        except BaseException:
            box.close()
            raise
        self._tmp = tmp
        return box, args_file

    def _plugin_binds(self) -> list[str]:
        """A boxed plugin hook's own files: its plugin's folder read-only, its data folder writable, even where the
        box hides what holds them (a scripted session hides the user's ~/.claude, where plugins are installed).
        After every other mount: these open places the plan closed, for these folders only."""
        roots: dict[str, None] = {}
        data: dict[str, None] = {}
        for spec in self._hooks():
            env = getattr(spec, "env", None) or {}
            if not env.get("CLAUDE_PLUGIN_ROOT") or not self.covers(spec):
                continue
            roots.setdefault(os.path.realpath(env["CLAUDE_PLUGIN_ROOT"]), None)
            if env.get("CLAUDE_PLUGIN_DATA"):
                data.setdefault(os.path.realpath(env["CLAUDE_PLUGIN_DATA"]), None)
        args: list[str] = []
        for path in roots:
            if os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for path in data:
            if os.path.isdir(path):
                args += ["--bind", path, path]
        return args

    async def _running(self) -> _Spawner:
        import fcntl  # POSIX only: imported where used, so the module imports everywhere
        if self._spawner is not None and self._spawner.dead is None:
            return self._spawner
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self.closed:
                raise BoxGone("the session's hook box is closed")
            if self._spawner is not None and self._spawner.dead is None:
                return self._spawner
            if self._spawner is not None:  # it died (killed from outside): a new one, in a new box
                log.warning("the session's hook box ended early (%s); starting another", self._spawner.dead)
                await self._close_now()
            box, args_file = await asyncio.to_thread(self._open_folder)
            self._box = box
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            # Above the descriptors cli_exec.sh and bwrap use (3), inherited by the spawner and nothing else.
            high = fcntl.fcntl(theirs.fileno(), fcntl.F_DUPFD, 10)
            theirs.close()
            try:
                env = {name: value for name, value in os.environ.items() if self._base_passes(name)}
                keep = sorted(env)
                launch = {**env, "ORION_CLI_EXEC_REAL": sys.executable, "ORION_CLI_ENV_KEEP": " ".join(keep),
                          "ORION_CLI_BOX": args_file, "ORION_CLI_BOX_EXEC": self.boundary.launcher,
                          "ORION_CLI_BOX_KIND": "bwrap", "ORION_CLI_BOX_INIT": str(box_mod.BOX_INIT),
                          "ORION_CLI_BOX_SOCAT": self.boundary.socat, "ORION_CLI_BOX_SHIELD": "-",
                          "ORION_CLI_BOX_RELAY": f"{self.boundary.plan.proxy_port}={box.relays.proxy_socket}"}
                from sidecar.agent import CLI_EXEC

                from hooks.launcher.frozen import helper_argv

                # The spawner under this interpreter (`python -S -u box_spawner.py FD`), or in the self-contained
                # build its own executable in the box-spawner role (hooks/launcher/frozen.py).
                spawner_argv = helper_argv("box-spawner", SPAWNER, str(high), unbuffered=True)
                if spawner_argv[0] == sys.executable and spawner_argv[1:2] == ["-u"]:
                    spawner_argv.insert(1, "-S")
                launch["ORION_CLI_EXEC_REAL"] = spawner_argv[0]
                from hooks import dispositions

                proc = subprocess.Popen([str(CLI_EXEC), *spawner_argv[1:]], env=launch,
                                        cwd=self.boundary.plan.project, pass_fds=(high,), start_new_session=True,
                                        stdin=subprocess.DEVNULL, preexec_fn=dispositions.child_setup())
            finally:
                os.close(high)
            from hooks import children

            children.started(proc.pid, own_group=True)
            ours.setblocking(False)
            self._spawner = _Spawner(ours, proc)
            return self._spawner

    def _base_passes(self, name: str) -> bool:
        if not _NAME.match(name) or name in self._withheld or name.startswith(_NEVER):
            return False
        return name in CLI_ENV_NAMES or name in self._extra or name.startswith("LC_")

    def _passes(self, name: str) -> bool:
        if not _NAME.match(name) or name in self._withheld:
            return False
        if name in (MARKER_VAR, RUN_TOKEN_VAR):  # markers the leftover sweeps find processes by; no secret
            return True
        if name.startswith(_NEVER):
            return False
        return (name in CLI_ENV_NAMES or name in self._extra or name.startswith(_HOOK_PREFIXES)
                or name in _HOOK_NAMES)

    # ------------------------------------------------------------------ a hook

    async def start(self, argv: list[str], cwd: Path, env: Mapping[str, str], payload: bytes) -> BoxedProcess:
        """Start one hook inside: `argv` with the allow-listed part of `env`, in `cwd`. A payload too big to travel
        in the message is written into the box's /tmp (HOOK_PAYLOAD_FILE names it as the hook sees it)."""
        spawner = await self._running()
        kept = {name: value for name, value in env.items() if self._passes(name)}
        if len(kept.get("HOOK_PAYLOAD", "")) > _INLINE_PAYLOAD or "HOOK_PAYLOAD_FILE" in kept:
            kept.pop("HOOK_PAYLOAD", None)
            kept["HOOK_PAYLOAD_FILE"] = await asyncio.to_thread(self._payload_file, payload)
        return await spawner.start(argv, kept, str(cwd))

    def _payload_file(self, payload: bytes) -> str:
        with self._lock:
            self._files += 1
            name = f"orion-hook-{self._files}.json"
        fd = os.open(os.path.join(self._tmp, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        return f"{TMP_INSIDE}/{name}"

    # ------------------------------------------------------------------ the end

    async def _close_now(self) -> None:
        self.python_launchers.clear()  # they die with the box
        spawner, self._spawner = self._spawner, None
        if spawner is not None:
            await spawner.aclose()
        box, self._box = self._box, None
        if box is not None:
            await asyncio.to_thread(box.close)

    async def aclose(self) -> None:
        """The box ends (everything in it is killed), then its relay and folder go. On the event loop that ran the
        hooks (the spawner's reader is that loop's)."""
        self.closed = True
        await self._close_now()


def for_session(sandbox: Any, trusted: Callable[[], bool], withheld: Iterable[str] = (),
                hooks: Callable[[], Iterable[Any]] = tuple) -> HookBox | None:
    """The session's hook box, when its boundary is bubblewrap's (None: hooks run as before, and the session's
    sandbox report says why there is no boundary)."""
    from hooks.hookset import CLAUDE_USER, TRUST_SOURCES

    boundary = getattr(sandbox, "boundary", None)
    if boundary is None or boundary.platform != "linux" or shutil.which(boundary.launcher) is None:
        return None
    return HookBox(boundary, trusted, TRUST_SOURCES, withheld, UNTRUSTED_PROJECT_SOURCES | {CLAUDE_USER}, hooks)


# The user's own settings hooks (Orion's user settings, `user`; Claude Code's, `claude-user`) run inside while the
# project is not trusted: a settings hook is a command line, and the commands people put there run the project's
# tools. A plugin the user installed runs its own files, pinned by the plugin's trust (hooks/plugins.py), and keeps
# the user's home (its data, its worker): it runs outside, like Orion's built-in hooks.
UNTRUSTED_PROJECT_SOURCES = frozenset({"user"})


def listing_boundary(spec: Any, trusted: bool, available: bool) -> str | None:
    """Where a listed hook's process runs (hooks/list `boundary`): "box" in the session's hook box, "outside" with the
    user's account, None for a hook that starts no process of its own (http, prompt, agent, mcp_tool, Python
    functions). `available`: whether sessions here get a boundary (Linux, bubblewrap)."""
    from hooks.hookset import CLAUDE_USER, MANAGED, TRUST_SOURCES
    from hooks.plugins import MANAGED_PLUGIN

    if getattr(spec, "type", None) not in ("command", "python"):
        return None
    source = getattr(spec, "source", None)
    # An organization's managed hooks run in the session's CLI, which runs inside the session's boundary.
    inside = (source in TRUST_SOURCES or source in (MANAGED, MANAGED_PLUGIN)
              or (source in (UNTRUSTED_PROJECT_SOURCES | {CLAUDE_USER}) and not trusted))
    return "box" if inside and available else "outside"
