"""Where every process the hook engine starts is reported, so that a host can make sure none outlives it; without a host, reporting does nothing.

The hook engine knows nothing of the sidecar: the sidecar installs its
supervisor as the tracker (sidecar/supervisor.py), `python -m hooks` installs
none. Reporting is best effort and never fails a spawn: a tracker that raises
is ignored, because the hook must run either way.
"""

from __future__ import annotations

from collections.abc import Callable

# (pid, leads_own_group): the second is True when the child was started in its own process group,
# so the whole group can be killed with it.
Tracker = Callable[[int, bool], None]

_tracker: Tracker | None = None


def set_tracker(tracker: Tracker | None) -> None:
    """Install (or, with None, remove) the process-wide tracker."""
    global _tracker
    _tracker = tracker


def started(pid: int, *, own_group: bool) -> None:
    """Report a child just started; cheap enough for every hook run."""
    tracker = _tracker
    if tracker is None:
        return
    try:
        tracker(pid, own_group)
    except Exception:  # noqa: BLE001 - a broken tracker must not fail the hook it reports
        pass
