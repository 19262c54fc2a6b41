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

import contextlib
import os
import signal

MARKER_VAR = "ORION_HOOK_RUN"
_ROUNDS = 3  # a leftover may fork while we sweep: look again until nothing carries the marker
_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def new_marker() -> str:
    return os.urandom(8).hex()


def sweep(marker: str, since_pid: int, *, spare: frozenset[int] = frozenset()) -> list[str]:
    """SIGKILL every process whose environment carries `ORION_HOOK_RUN=<marker>`; returns "pid (name)" of each one killed.

    Only pids from `since_pid` upward are read (a hook's children are newer than
    its first process) unless the pid counter wrapped since, then all are.
    """
    needle = f"{MARKER_VAR}={marker}".encode() + b"\0"
    killed: list[str] = []
    for _ in range(_ROUNDS):
        found = _kill_carriers(needle, _lower_bound(since_pid), spare)
        if not found:
            break
        killed.extend(found)
    return killed


def describe(killed: list[str]) -> str:
    """The line a hook's observers and the log get when the sweep had to kill something."""
    return f"[orion] killed {len(killed)} process(es) the hook left running: {', '.join(killed)}"


def _lower_bound(since_pid: int) -> int:
    try:
        with open(_LAST_PID, "rb") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        return 0
    return since_pid if last >= since_pid else 0


def _kill_carriers(needle: bytes, lowest: int, spare: frozenset[int]) -> list[str]:
    me = os.getpid()
    killed = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid < lowest or pid == me or pid in spare:
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
            if b"\0" + needle not in env and not env.endswith(b"\0" + needle[:-1]):
                continue
            label = f"{pid} ({_comm(pid)})"
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                killed.append(label)
        finally:
            os.close(pidfd)
    return killed


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return "?"
