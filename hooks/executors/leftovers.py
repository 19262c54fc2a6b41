"""What a command hook leaves running: a stray still attached to it dies, a helper it detached lives until its session ends; found without scanning, because this process adopts every orphan below it (Linux: a child subreaper).

Claude Code (2.1.330, checked on the bundled CLI by tests/conformance/test_hook_children.py)
kills nothing a command hook leaves behind when the hook exits on its own: strays,
`nohup` jobs and `setsid` daemons all outlive the hook and the CLI itself; it stops
reading the hook's output half a second after the exit if something still holds it,
and kills the hook's whole tree only on a timeout or a cancel. Orion keeps what a hook
started *on purpose*, and only until the session ends:

* on purpose = detached from the hook, as the kernel shows it after the fact, however
  it was spelled: the process left the hook's session (`setsid`, a double fork,
  node's `spawn({detached: true})`), or it ignores SIGHUP (`nohup`), or it holds neither
  of the hook's output pipes (`>log 2>&1`, stdio `ignore`). Such a helper is the
  session's: `Helpers.end` kills it when the session ends.
* a stray = still attached when the hook's output is given up (the hook's session,
  SIGHUP not ignored, a pipe held): killed, and the hook's observers are told.

Finding them costs O(1) per hook, with no scan of the process table: this process is
a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever a hook leaves (its shell has
exited, a double fork's middle process has) becomes a child of ours instead of
init's, listed in /proc/<pid>/task/<pid>/children. One read of that list after a hook
that forked finds them; each new child is examined once in its life, and tied to its
hook by the `ORION_HOOK_RUN` marker in its environment or else by the hook's session
id. Nothing can leave this subtree while we live, so a helper dies with its session
and, recorded through `hooks.children` and carrying the sidecar's token, with the
sidecar (sidecar/reaper.py), `kill -9` included. A process that both drops the marker
and leaves the hook's session cannot be tied to a session: it lives until the sidecar
ends (the way out for a service that must outlive a session, and the limit).

Python hooks run in a warm launcher that lives on; for them `reap` keeps the stricter
rule: whatever carries the hook's marker when `run()` returns is killed, below the
launcher or orphaned to us. Elsewhere (no /proc, no subreaper) only the process group
is reached: after the exit, the group is killed when the output is given up, as before.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import select
import signal
import sys
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from hooks import children

MARKER_VAR = "ORION_HOOK_RUN"
_LINUX = sys.platform.startswith("linux")
_PR_SET_CHILD_SUBREAPER = 36
_SIGHUP_MASK = 1 << (signal.SIGHUP - 1)
_RECENT_RUNS = 4096  # finished hooks remembered by marker, so that an orphan seen late still finds its hook
_FOLLOW_UPS_S = (0.02, 0.1, 0.4)  # after a kill: the dying's children arrive as orphans a moment later
_UNSURE_TRIES = 5  # a child caught inside execve() shows an empty environment: look again this many times
# An own-session child no spawner claimed: ours only after this long (a launcher is reported just after its spawn).
_PENDING_S = 1.0
_DYING_S = 10.0  # a killed process that is not our child is forgotten after this long (its parent reaps it)
# A child no hook owns (an orphan of the CLI or of a child of ours that exited) still a zombie after this long: no
# one will reap it, so we do. Our spawners' own children are reaped at their exit, long before this.
_LINGER_S = 2.0
_END_ROUNDS = 5
_OPT_OUT_WAIT_S = 3.0  # on a loaded machine `env -u ORION_HOOK_RUN setsid svc` took more than 0.5 s to get there
_DEATH_WAIT_S = 1.0

log = logging.getLogger("hooks.leftovers")

# kinds of the children already examined
_SHELL, _FOREIGN, _OWNED = 1, 2, 3


@dataclass(slots=True)
class Stats:
    """What the bookkeeping costs, counted rather than timed (tests/hooks/test_leftovers.py)."""

    proc_reads: int = 0  # files and directories read under /proc
    examined: int = 0  # processes looked at for the first time
    refreshes: int = 0  # reads of our own children list


stats = Stats()


def new_marker() -> str:
    return os.urandom(8).hex()


def describe(killed: list[str]) -> str:
    """The line a hook's observers and the log get when a stray of the hook had to be killed."""
    return f"[orion] killed {len(killed)} process(es) the hook left running: {', '.join(killed)}"


# --------------------------------------------------------------------------- /proc


def _read(path: str) -> bytes | None:
    stats.proc_reads += 1
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        parts = []
        while chunk := os.read(fd, 65536):
            parts.append(chunk)
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[bytes, int, int] | None:
    """(state, process group, session) of a process, or None when it is gone."""
    data = _read(f"/proc/{pid}/stat")
    if not data:
        return None
    try:
        fields = data.rsplit(b")", 1)[1].split()
        return fields[0], int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _marker(pid: int) -> str | None:
    """The hook marker in a process's environment: None without one, "" when the environment is not readable yet."""
    env = _read(f"/proc/{pid}/environ")
    if not env:
        return ""
    key = b"\0" + MARKER_VAR.encode() + b"="
    env = b"\0" + env
    at = env.find(key)
    if at < 0:
        return None
    end = env.find(b"\0", at + len(key))
    return env[at + len(key): end if end >= 0 else None].decode(errors="replace")


def _ignores_hangup(pid: int) -> bool:
    data = _read(f"/proc/{pid}/status") or b""
    for line in data.splitlines():
        if line.startswith(b"SigIgn:"):
            try:
                return bool(int(line.split()[1], 16) & _SIGHUP_MASK)
            except (IndexError, ValueError):
                return False
    return False


def _holds(pid: int, pipes: frozenset[bytes]) -> bool:
    """Whether the process has one of these pipes (`pipe:[inode]`) among its descriptors."""
    stats.proc_reads += 1
    base = f"/proc/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return False
    for name in names:
        stats.proc_reads += 1
        try:
            if os.readlink(f"{base}/{name}").encode() in pipes:
                return True
        except OSError:
            continue
    return False


def _children_of(pid: int) -> list[int]:
    """The direct children of a process, every thread's (each thread has its own list)."""
    stats.proc_reads += 1
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        found += [int(c) for c in (_read(f"/proc/{pid}/task/{tid}/children") or b"").split()]
    return found


def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in _children_of(stack.pop()):
            if child not in out:
                out.append(child)
                stack.append(child)
    return out


def _comm(pid: int) -> str:
    return (_read(f"/proc/{pid}/comm") or b"?").decode(errors="replace").strip()


def _start(pid: int) -> str | None:
    data = _read(f"/proc/{pid}/stat")
    try:
        return data.rsplit(b")", 1)[1].split()[19].decode() if data else None
    except IndexError:
        return None


def _exited(pidfds: list[int]) -> set[int]:
    """Those of the pidfds whose process has exited (poll, not select: descriptors may be numbered past 1024)."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(0)}


def _become_subreaper() -> bool:
    try:
        import ctypes  # only here: ~2 ms of import, paid when the first hook runner is built

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 and os.path.exists(
            f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    except (OSError, AttributeError):
        return False


# --------------------------------------------------------------------------- hooks and their processes


@dataclass(slots=True, eq=False)
class _Proc:
    pid: int
    pidfd: int
    run: HookRun | None  # None: tied to no hook (lives until the sidecar ends)
    label: str = ""
    kept: bool = False
    dead: bool = False  # killed by us; reaped once it is our zombie


@dataclass(slots=True, eq=False)
class HookRun:
    """One command hook's execution: its shell, its marker, and what of it this process adopted."""

    marker: str
    shell: int
    owner: Helpers
    log: logging.Logger
    name: str
    procs: dict[int, _Proc] = field(default_factory=dict)
    pipes: frozenset[bytes] | None = None  # its output pipes, once given up while something held them
    settled: bool = False  # the hook has ended: what turns up from now on is classified at once
    killing: bool = False  # a timeout, a cancel or the session's end: all of it dies

    def after(self, *, kill: bool, pipes: tuple[int, int] | None = None) -> list[str]:
        """The hook's shell has exited (or is being killed): settle what it left; returns "pid (name)" of what was killed.

        `kill`: a timeout or a cancel; everything of the hook dies (the caller has killed its process group).
        `pipes`: the inodes of the hook's stdout and stderr pipes when they are given up while still held.
        """
        reg = _registry
        if not reg.enabled:
            if pipes is not None:
                _killpg(self.shell)  # no adoption here: free the pipes as before, with the group
            self.finish()
            return []
        if pipes is not None:
            self.pipes = frozenset(f"pipe:[{ino}]".encode() for ino in pipes)
        killed: list[str] = []
        if kill:
            self.killing = True
            # Still below the dying shell: what left its group (setsid) before it could be orphaned to us.
            killed += reg.kill_pids([p for p in _descendants(self.shell) if p not in self.procs])
        reg.refresh()
        self.settled = True
        for proc in list(self.procs.values()):
            killed += self.judge(proc)
        if kill:
            reg.follow_up()
        self.finish()
        return killed

    def judge(self, proc: _Proc) -> list[str]:
        """Keep a helper, kill a stray (or anything, once the hook or its session is being killed)."""
        if proc.dead or (proc.kept and not self.killing):
            return []
        if not self.killing and not self.owner.closed:
            why = self._detached(proc.pid)
            if why:
                proc.kept = True
                self.owner.runs.add(self)
                _registry.pinned[self.marker] = self  # found by its marker for as long as it has helpers
                self.log.info("hook %r: %s runs on as a helper until the session ends (%s)", self.name, proc.label, why)
                return []
        return _registry.kill([proc])

    def _detached(self, pid: int) -> str:
        st = _stat(pid)
        if st is None:
            return ""
        if st[2] != self.shell:
            return "it left the hook's session"
        if _ignores_hangup(pid):
            return "it ignores SIGHUP"
        if self.pipes is None or not _holds(pid, self.pipes):
            return "it let go of the hook's output"
        return ""

    def finish(self) -> None:
        """Forget the hook unless something of it still runs (a helper, or a process not reaped yet)."""
        if any(not p.dead for p in self.procs.values()):
            return
        reg = _registry
        self.owner.runs.discard(self)
        if reg.pinned.get(self.marker) is self:
            del reg.pinned[self.marker]
        if reg.shells.get(self.shell) is self:
            del reg.shells[self.shell]
            reg.known.setdefault(str(self.shell).encode(), _SHELL)  # until our caller reaps it: never ours to reap
        if reg.sessions.get(self.shell) is self:
            del reg.sessions[self.shell]


class Helpers:
    """The processes one session's command hooks left running on purpose (one per CommandExecutor, so per session)."""

    __slots__ = ("runs", "closed", "__weakref__")

    def __init__(self) -> None:
        self.runs: set[HookRun] = set()
        self.closed = False  # the session ended: nothing found later is kept for it
        _registry.enable()
        _registry.owners.add(self)

    def started(self, pid: int, marker: str, hook_log: logging.Logger, name: str) -> HookRun:
        """A hook's shell was just spawned (in its own session): what it leaves behind will be told apart by `marker`."""
        run = HookRun(marker, pid, self, hook_log, name)
        reg = _registry
        if reg.enabled:
            reg.shells[pid] = run
            reg.sessions[pid] = run
            reg.runs[marker] = run
            if len(reg.runs) > _RECENT_RUNS:
                reg.runs.popitem(last=False)
        return run

    async def end(self) -> list[str]:
        """The session ends: kill what its hooks left running (their descendants too), and wait for them to be gone."""
        reg = _registry
        if not reg.enabled:
            return []
        self.closed = True
        ended: list[str] = []
        loop = asyncio.get_running_loop()
        for run in list(self.runs):
            for proc in list(run.procs.values()):
                if proc.kept and not proc.dead and await _opted_out(proc.pid, run.shell):
                    # `env -u ORION_HOOK_RUN setsid svc`: started for longer than the session (the sidecar still ends it)
                    run.procs.pop(proc.pid)
                    proc.run = None
                    run.log.info("hook %r: %s dropped %s and left the hook's session: it runs until the sidecar ends",
                                 run.name, proc.label, MARKER_VAR)
        for _ in range(_END_ROUNDS):
            reg.refresh()
            procs = [p for run in self.runs for p in run.procs.values() if not p.dead]
            if not procs:
                break
            for run in self.runs:
                run.killing = True
            # Our own copies: a refresh meanwhile may reap them and close the registry's.
            watch = [os.dup(p.pidfd) for p in procs]
            try:
                ended += reg.kill(procs)
                await _gone(watch, loop.time() + _DEATH_WAIT_S)
            finally:
                for fd in watch:
                    os.close(fd)
        reg.refresh()
        for run in list(self.runs):
            run.finish()
        if ended:
            log.info("session ended: killed %d process(es) its hooks left running: %s", len(ended), ", ".join(ended))
        return ended

    def kill_now(self) -> None:
        """At interpreter exit, without a loop: what `end` would kill, not waited for."""
        if _registry.enabled:
            _registry.kill([p for run in self.runs for p in run.procs.values() if not p.dead])


async def _opted_out(pid: int, hook_session: int) -> bool:
    """Whether a helper dropped the marker and left the hook's session (`env -u ORION_HOOK_RUN setsid svc`); one
    still on its way there (its command line names the marker, or it dropped it but has not left yet) gets a moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _OPT_OUT_WAIT_S
    while True:
        st = _stat(pid)
        if st is None:
            return False
        marker = _marker(pid)
        if marker is None and st[2] != hook_session:
            return True
        cmdline = _read(f"/proc/{pid}/cmdline")
        # Caught inside execve() (env exec'ing setsid, say), environ and cmdline read empty: still on its way.
        on_its_way = marker in (None, "") or not cmdline or MARKER_VAR.encode() in cmdline
        if not on_its_way or loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)


async def _gone(pidfds: list[int], deadline: float) -> None:
    """Wait, without blocking the loop, until every process is gone or the deadline passes."""
    loop = asyncio.get_running_loop()
    waiting = list(pidfds)
    while waiting and loop.time() < deadline:
        ready = _exited(waiting)
        waiting = [fd for fd in waiting if fd not in ready]
        if waiting:
            future: asyncio.Future[None] = loop.create_future()

            def wake(f: asyncio.Future[None] = future) -> None:
                if not f.done():
                    f.set_result(None)

            for fd in waiting:
                loop.add_reader(fd, wake)
            try:
                await asyncio.wait_for(future, max(0.0, deadline - loop.time()))
            except TimeoutError:
                pass
            finally:
                for fd in waiting:
                    loop.remove_reader(fd)


# --------------------------------------------------------------------------- the registry of our children


class _Registry:
    """This process's children that hooks left: one per process, so that each child is examined once."""

    def __init__(self) -> None:
        self.enabled = False
        self.vouched = False  # a supervisor reports every child we spawn in its own session (see `vouch`)
        self.me = 0
        self.sid = 0
        self.path = ""
        self.shells: dict[int, HookRun] = {}  # hook shells we spawned and have not finished with
        self.sessions: dict[int, HookRun] = {}  # hook session id (= its shell's pid) -> hook
        self.runs: OrderedDict[str, HookRun] = OrderedDict()  # marker -> hook, the recent ones
        self.pinned: dict[str, HookRun] = {}  # marker -> hook that has helpers running, however old
        self.known: dict[bytes, int] = {}  # our children examined already (pid as /proc lists it) -> kind
        self.owned: dict[int, _Proc] = {}  # adopted, ours to reap
        self.unclaimed: dict[str, dict[int, _Proc]] = {}  # marker of no known command hook (a python hook's)
        self.direct: dict[int, str] = {}  # vouched own-session children we spawned -> their start time
        self.pending: dict[bytes, float] = {}  # own-session children no spawner has claimed yet -> first seen
        self.unsure: dict[bytes, int] = {}  # mid-exec children -> times looked at
        self.dying: dict[int, tuple[int, float]] = {}  # killed, not (yet) our children -> (pidfd, forget after)
        self.lingering: dict[bytes, float] = {}  # foreign children seen dead, not reaped by anyone -> first seen
        self.next_linger_check = 0.0
        self.owners: weakref.WeakSet[Helpers] = weakref.WeakSet()

    def enable(self) -> None:
        if not _LINUX or self.me == os.getpid():
            return
        if self.me:  # a forked copy of a process that had it: start over (it is no subreaper until it asks)
            self.__init__()  # type: ignore[misc]
        self.me = os.getpid()
        self.enabled = _become_subreaper()
        self.sid = os.getsid(0)
        self.path = f"/proc/{self.me}/task/{self.me}/children"
        if self.enabled:
            atexit.register(self.at_exit)

    def vouch(self, pid: int, start: str) -> None:
        """A child we spawned in its own session (a launcher, the watchdog): never an orphan of a hook."""
        if pid in self.owned or pid in self.shells:
            return  # a hook's shell, or reported by us (an adopted helper) through hooks.children
        self.direct[pid] = start

    # ------------------------------------------------------------------ the one read

    def refresh(self) -> None:
        """Read our children list; examine the new ones; reap the owned and killed that have died."""
        if not self.enabled:
            return
        stats.refreshes += 1
        data = _read(self.path)
        if data is None:
            return
        now = time.monotonic()
        current = set(data.split())  # pids as bytes: only the new and the gone are converted
        known = self.known
        for key in known.keys() - current:
            kind = known.pop(key)
            if kind == _OWNED and (proc := self.owned.get(int(key))) is not None:
                self._forget(proc)  # reaped by someone else
            elif kind == _SHELL and (run := self.shells.pop(int(key), None)) is not None:
                run.finish()  # reaped without a word to us (its hook was cancelled between exit and sweep)
        for waiting in (self.pending, self.unsure):
            for key in waiting.keys() - current:
                del waiting[key]
        for key in current - known.keys():
            self._examine(key, now)
        self._reap(current)
        if now >= self.next_linger_check:  # at most once per _LINGER_S, whatever the number of hooks
            self.next_linger_check = now + _LINGER_S
            self._reap_lingering(current, now)
        if len(self.direct) > 64:
            for pid in [p for p in list(self.direct) if str(p).encode() not in current]:
                del self.direct[pid]

    def _examine(self, key: bytes, now: float) -> None:
        pid = int(key)
        if pid in self.shells:
            self.known[key] = _SHELL
            return
        stats.examined += 1
        st = _stat(pid)
        if st is None:
            return
        state, pgid, sid = st
        if sid == self.sid:
            self.known[key] = _FOREIGN  # a hook's processes never join our session: the CLI, its tools, our tools
            return
        zombie = state in (b"Z", b"X")
        marker = None if zombie else _marker(pid)
        if marker == "":
            tries = self.unsure.get(key, 0) + 1
            if tries < _UNSURE_TRIES:
                self.unsure[key] = tries
                return  # inside execve(): looked at again next time
            marker = None
        self.unsure.pop(key, None)
        run = (self.runs.get(marker) or self.pinned.get(marker)) if marker else self.sessions.get(sid)
        if run is not None and pid == run.shell:
            self.known[key] = _SHELL
            return
        if run is None and marker is None:
            if not self.vouched or self._spawned(pid):
                self.known[key] = _FOREIGN
                return
            first = self.pending.setdefault(key, now)
            if now - first < _PENDING_S:
                return  # maybe a child of ours whose spawner has not reported it yet
            self.pending.pop(key, None)
        self._adopt(key, pgid, marker, run, zombie)

    def _spawned(self, pid: int) -> bool:
        start = self.direct.get(pid)
        if start is None:
            return False
        if _start(pid) == start:
            return True
        del self.direct[pid]
        return False

    def _adopt(self, key: bytes, pgid: int, marker: str | None, run: HookRun | None, zombie: bool) -> None:
        pid = int(key)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return
        proc = _Proc(pid, pidfd, run, label=f"{pid} ({_comm(pid)})")
        self.owned[pid] = proc
        self.known[key] = _OWNED
        if zombie or pid in self.dying:
            proc.dead = True  # killed already (below a helper or a stray), orphaned to us on its way out: reap it
            self._reap_one(proc)
            return
        if run is not None:
            run.procs[pid] = proc
        elif marker:
            self.unclaimed.setdefault(marker, {})[pid] = proc
        # In the runtime record: the sidecar's watchdog kills it if we die, whatever its environment says.
        children.started(pid, own_group=pgid == pid)
        if run is not None and run.settled:
            killed = run.judge(proc)  # turned up after its hook ended
            if killed:
                run.log.warning("hook %r: %s", run.name, describe(killed))
            run.finish()

    # ------------------------------------------------------------------ killing and reaping

    def kill(self, procs: list[_Proc]) -> list[str]:
        """SIGKILL each, and the trees below them (their children are not ours until they die)."""
        labels: list[str] = []
        below: list[int] = []
        for proc in procs:
            if proc.dead:
                continue
            below += _descendants(proc.pid)
            try:
                signal.pidfd_send_signal(proc.pidfd, signal.SIGKILL)
            except OSError:
                pass
            proc.dead = True
            labels.append(proc.label)
            if proc.run is not None:
                proc.run.procs.pop(proc.pid, None)
        labels += self.kill_pids([p for p in below if p not in self.owned])
        if labels:
            self.follow_up()
        return labels

    def kill_pids(self, pids: list[int]) -> list[str]:
        labels = []
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            label = f"{pid} ({_comm(pid)})"
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                os.close(pidfd)
                continue
            labels.append(label)
            old = self.dying.pop(pid, None)
            if old is not None:
                os.close(old[0])
            self.dying[pid] = (pidfd, time.monotonic() + _DYING_S)
        return labels

    def _reap(self, current: set[bytes]) -> None:
        mine = [p for pid, p in self.owned.items() if str(pid).encode() in current]
        if mine:
            done = _exited([p.pidfd for p in mine])
            for proc in mine:
                if proc.pidfd in done:
                    self._reap_one(proc)
        if self.dying:
            now = time.monotonic()
            for pid, (pidfd, until) in list(self.dying.items()):
                reaped = False
                if str(pid).encode() in current:
                    try:
                        reaped = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None
                    except ChildProcessError:
                        reaped = True
                if reaped or now > until:
                    os.close(pidfd)
                    del self.dying[pid]

    def _reap_lingering(self, current: set[bytes], now: float) -> None:
        """Reap the foreign children that stayed zombies: a subreaper adopts every orphan below it (the CLI's
        helpers when the CLI ends unboxed, what a dead child of ours left), and one nobody waits for would hold its
        process-table slot until we exit. A child of our own spawners is reaped by them as it exits, so only one that
        is still a zombie `_LINGER_S` after we first saw it so is taken."""
        for key in [k for k, kind in self.known.items() if kind == _FOREIGN and k in current]:
            st = _stat(int(key))
            if st is None or st[0] not in (b"Z", b"X"):
                self.lingering.pop(key, None)
                continue
            if now - self.lingering.setdefault(key, now) < _LINGER_S:
                continue
            try:
                os.waitpid(int(key), os.WNOHANG)
            except ChildProcessError:
                pass
            del self.lingering[key]
            del self.known[key]
        for key in self.lingering.keys() - current:
            del self.lingering[key]

    def _reap_one(self, proc: _Proc) -> None:
        try:
            if os.waitid(os.P_PIDFD, proc.pidfd, os.WEXITED | os.WNOHANG) is None:
                return  # still running
        except ChildProcessError:
            pass  # not ours (any more)
        self._forget(proc)

    def _forget(self, proc: _Proc) -> None:
        self.owned.pop(proc.pid, None)
        self.known.pop(str(proc.pid).encode(), None)
        os.close(proc.pidfd)
        proc.pidfd = -1
        proc.dead = True
        run = proc.run
        if run is not None:
            run.procs.pop(proc.pid, None)
            run.finish()
        else:
            for marker, group in list(self.unclaimed.items()):
                if group.pop(proc.pid, None) is not None and not group:
                    del self.unclaimed[marker]

    def follow_up(self) -> None:
        """Look again a few times shortly: the killed become zombies, and their children our orphans."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for delay in _FOLLOW_UPS_S:
            loop.call_later(delay, self.refresh)

    def claim(self, marker: str) -> list[_Proc]:
        """The adopted processes carrying a marker no command hook has (a python hook's)."""
        self.refresh()
        return [p for p in self.unclaimed.pop(marker, {}).values() if not p.dead]

    def at_exit(self) -> None:
        for owner in list(self.owners):
            owner.kill_now()


_registry = _Registry()


def vouch(pid: int, start: str) -> None:
    """For the process's supervisor, which reports every child it and the hook engine spawn in their own session
    (`start`: the child's start time): such a child is not an orphan to adopt. From the first call on, an
    own-session child of ours that nobody reported is an orphan (of a CLI's command, say), reaped when it dies."""
    _registry.vouched = True
    _registry.vouch(pid, start)


def reap(marker: str, root: int, hook_log: logging.Logger, hook_name: str, *, spare: frozenset[int] = frozenset()) -> list[str]:
    """A python hook ended in `root` (its launcher, which lives on): SIGKILL what it started, below the launcher or
    orphaned to us, by its marker; returns what was killed now (later kills are logged)."""
    if not _LINUX:
        return []
    reg = _registry
    killed: list[str] = []
    carriers: list[int] = []
    unsure: list[int] = []
    for pid in _descendants(root):
        if pid in spare:
            continue
        found = _marker(pid)
        if found == marker:
            carriers.append(pid)
        elif found == "":
            unsure.append(pid)
    killed += reg.kill_pids(carriers)
    if reg.enabled:
        killed += reg.kill(reg.claim(marker))
    if unsure:
        _recheck(marker, unsure, hook_log, hook_name, 0)
    return killed


def _recheck(marker: str, pids: list[int], hook_log: logging.Logger, hook_name: str, attempt: int) -> None:
    # A process caught inside execve() shows an empty environment for a moment: look at it again later.
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    def again() -> None:
        carriers, still = [], []
        for pid in pids:
            found = _marker(pid)
            if found == marker:
                carriers.append(pid)
            elif found == "" and _stat(pid) is not None:
                still.append(pid)
        killed = _registry.kill_pids(carriers)
        if killed:
            hook_log.warning("hook %r: %s", hook_name, describe(killed))
        if still and attempt + 1 < len(_FOLLOW_UPS_S):
            _recheck(marker, still, hook_log, hook_name, attempt + 1)

    loop.call_later(_FOLLOW_UPS_S[attempt], again)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
