"""Leftover hook processes: every hook child carries a per-execution marker in its environment, and whatever still carries it after the hook ended is killed.

Killing the process group catches most of what a hook starts, but a daemon
that calls setsid() (or double-forks) leaves the group and would outlive the
hook forever. The environment is inherited across fork, exec and setsid, so a
marker variable finds those too. A hook that really means to start a
long-lived service removes the variable for it (`env -u ORION_HOOK_RUN cmd &`).
A process that clears its whole environment, or one owned by another user,
is beyond reach: that is the known limit of this sweep.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

MARKER_VAR = "ORION_HOOK_RUN"
_ROUNDS = 3  # a leftover may fork while we sweep: look again until nothing carries the marker
_LAST_PID = "/proc/sys/kernel/ns_last_pid"
_DEATH_WAIT_S = 0.5  # SIGKILL is asynchronous: how long to wait for the killed to be gone
# A process caught inside execve() shows an empty environment for a moment: look at it again later.
_RECHECK_DELAYS_S = (0.02, 0.05, 0.1, 0.2, 0.4)
_PF_KTHREAD = 0x00200000


def new_marker() -> str:
    return os.urandom(8).hex()


@dataclass(slots=True)
class Sweep:
    killed: list[str] = field(default_factory=list)  # "pid (name)" of each process killed
    unsure: list[int] = field(default_factory=list)  # mid-exec, environment not readable yet


def sweep(marker: str, since_pid: int, *, spare: frozenset[int] = frozenset()) -> Sweep:
    """SIGKILL every process whose environment carries `ORION_HOOK_RUN=<marker>`.

    Only pids from `since_pid` upward are read (a hook's children are newer than
    its first process) unless the pid counter wrapped since, then all are.
    """
    needle = _needle(marker)
    result = Sweep()
    done: set[int] = set(spare)
    for _ in range(_ROUNDS):
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        lowest = _lower_bound(since_pid)
        found, result.unsure = _kill_carriers(needle, [p for p in pids if p >= lowest and p not in done], opting_out_waits=True)
        if not found:
            break
        result.killed.extend(found.values())
        done.update(found)
    return result


def follow_up(marker: str, pids: list[int], on_kill: Callable[[list[str]], None]) -> None:
    """Look at processes that were mid-exec during the sweep again, from the loop, without making the hook wait."""
    loop = asyncio.get_running_loop()
    needle = _needle(marker)

    def recheck(pending: list[int], attempt: int) -> None:
        last = attempt + 1 >= len(_RECHECK_DELAYS_S)
        killed, unsure = _kill_carriers(needle, pending, opting_out_waits=not last)
        if killed:
            on_kill(list(killed.values()))
        if unsure and attempt + 1 < len(_RECHECK_DELAYS_S):
            loop.call_later(_RECHECK_DELAYS_S[attempt + 1], recheck, unsure, attempt + 1)

    loop.call_later(_RECHECK_DELAYS_S[0], recheck, list(pids), 0)


def reap(marker: str, since_pid: int, log: logging.Logger, hook_name: str, *, spare: frozenset[int] = frozenset()) -> list[str]:
    """`sweep` now, and `follow_up` on whatever was mid-exec; returns what was killed now (later kills are logged)."""
    result = sweep(marker, since_pid, spare=spare)
    if result.unsure:
        follow_up(marker, result.unsure, lambda killed: log.warning("hook %r: %s", hook_name, describe(killed)))
    return result.killed


def describe(killed: list[str]) -> str:
    """The line a hook's observers and the log get when the sweep had to kill something."""
    return f"[orion] killed {len(killed)} process(es) the hook left running: {', '.join(killed)}"


def _needle(marker: str) -> bytes:
    return f"{MARKER_VAR}={marker}".encode() + b"\0"


def _lower_bound(since_pid: int) -> int:
    try:
        with open(_LAST_PID, "rb") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        return 0
    return since_pid if last >= since_pid else 0


def _kill_carriers(needle: bytes, pids: list[int], *, opting_out_waits: bool = False) -> tuple[dict[int, str], list[int]]:
    """Kill those of `pids` whose environment holds the needle; also returns those whose environment could not be seen yet.

    With `opting_out_waits`, a carrier whose command line drops the marker (`env -u ORION_HOOK_RUN ...`,
    still on its way to exec the service) is looked at again later instead of being killed now.
    """
    me = os.getpid()
    killed: dict[int, str] = {}
    unsure: list[int] = []
    dying: list[int] = []
    for pid in pids:
        if pid == me:
            continue
        # The pidfd pins the process we read, so the signal cannot hit a recycled pid.
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    env = b"\0" + fh.read()
            except OSError:
                continue
            if env == b"\0":
                if _may_still_exec(pid):
                    unsure.append(pid)
                continue
            if b"\0" + needle not in env and not env.endswith(b"\0" + needle[:-1]):
                continue
            if opting_out_waits and _opting_out(pid):
                unsure.append(pid)
                continue
            label = f"{pid} ({_comm(pid)})"
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                continue
            killed[pid] = label
            dying.append(pidfd)
            pidfd = -1
        finally:
            if pidfd >= 0:
                os.close(pidfd)
    _await_deaths(dying)
    return killed, unsure


def _opting_out(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return MARKER_VAR.encode() in fh.read()
    except OSError:
        return False


def _may_still_exec(pid: int) -> bool:
    """An empty environment: a zombie or kernel thread (never ours), or a process inside execve()."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    state, flags = fields[0], int(fields[6])
    return state not in (b"Z", b"X") and not flags & _PF_KTHREAD


def _await_deaths(pidfds: list[int]) -> None:
    # A pidfd turns readable when its process has exited; a next round must not find the dying again.
    try:
        pending = list(pidfds)
        while pending:
            ready, _, _ = select.select(pending, [], [], _DEATH_WAIT_S)
            if not ready:
                break
            pending = [fd for fd in pending if fd not in ready]
    finally:
        for fd in pidfds:
            os.close(fd)


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return "?"
