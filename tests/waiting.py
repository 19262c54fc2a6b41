"""One way for a test to wait for what it cannot be told about (a process gone, a file written): poll under a deadline.

The suite must pass on a loaded 2-core machine (CI; beside two busy loops before a stop), so:
- what happens after something asynchronous (a kill, a close, a timeout, a watcher's start) is polled for, never
  checked at once or after a fixed sleep; a killed process counts as gone once it has ended, a zombie included;
- a timeout a test gives a hook or a run that must start processes first is seconds, not fractions;
- how long something took is printed, not asserted (speed is measured in bench/).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
import psutil

# A process that was killed is gone (ended and reaped) within this, on a loaded machine too: the kernel ends it,
# and its parent reaps it, a moment after the kill.
GONE_S = 10.0


def running(process: psutil.Process) -> bool:
    """Alive and not a zombie (ended, not yet reaped: gone for a test); False once it cannot be asked."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE  # is_running checks the start time too
    except psutil.Error:
        return False


def pids_alive(pids: Iterable[int]) -> list[int]:
    """Those of `pids` still running (a zombie counts as gone)."""
    alive = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
        except psutil.Error:
            continue
        if running(process):
            alive.append(pid)
    return alive


async def until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll `predicate` until it holds; fail naming `what` at the deadline."""
    try:
        with anyio.fail_after(timeout):
            while not predicate():
                await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"{what}: not within {timeout:g} s") from None
