"""Keeps Orion's data directory within the user's retention policy while a sidecar runs: one full pass once `initialize` is answered, then one after each session that ends or is deleted, on a worker thread.

The first pass lists every session's folders (hooks/pruning.py); later passes measure again only the sessions
they were told about and decide from what the first one found, so a session's end costs a listing of its own
folders, not of the whole history. The policy is read again on each pass: an edit of the user's settings counts
from the next session's end. Nothing here runs on the event loop or delays an answer; a pass that fails is logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from hooks.pruning import DataInventory
from hooks.retention import load_policy

log = logging.getLogger("sidecar.janitor")


class Janitor:
    """One per data directory and process (`janitor_for`); `start` and `session_ended` only queue work."""

    def __init__(self, data_dir: Path) -> None:
        self.inventory = DataInventory(data_dir)
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._live: frozenset[str] = frozenset()
        self._full = False
        self._thread: threading.Thread | None = None
        self.passes = 0

    def start(self) -> None:
        """The start-up pass: everything the data directory holds."""
        self._queue(full=True)

    def session_ended(self, session_id: str, live: Iterable[str] = ()) -> None:
        """A session ended or was deleted: measure it again and apply the policy. `live`: the sessions open in
        this process now (each also holds its lease; this is for one whose lease could not be taken)."""
        self._queue(session_id, live=live)

    def _queue(self, session_id: str | None = None, *, full: bool = False, live: Iterable[str] = ()) -> None:
        with self._lock:
            if session_id is not None:
                self._pending.add(session_id)
            self._full = self._full or full
            self._live = frozenset(live)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="orion-retention", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._pending and not self._full:
                    self._thread = None
                    return
                sessions, full, live = self._pending, self._full, self._live
                self._pending, self._full = set(), False
            try:
                self._pass(sessions, full, live)
            except Exception:
                log.exception("retention: pruning the data directory failed")

    def _pass(self, sessions: set[str], full: bool, live: frozenset[str]) -> None:
        policy = load_policy()
        if policy.max_age_s is None and policy.max_total_bytes is None:
            log.info("retention: %s; nothing to prune", policy.describe())
            return
        if full or not self.inventory.scanned:
            self.inventory.scan()
        else:
            self.inventory.refresh(sessions)
        report = self.inventory.prune(policy, live=live)
        self.passes += 1
        trigger = "start-up" if full else f"after session {', '.join(sorted(sessions))}"
        log.info("retention (%s): %s", trigger, report.summary())


_janitors: dict[str, Janitor] = {}
_janitors_lock = threading.Lock()


def janitor_for(data_dir: Path) -> Janitor:
    key = str(Path(data_dir).absolute())
    with _janitors_lock:
        found = _janitors.get(key)
        if found is None:
            found = _janitors[key] = Janitor(Path(data_dir))
        return found


def start() -> None:
    """The start-up pass over the sidecar's data directory (once `initialize` is answered)."""
    from hooks.paths import data_dir

    janitor = janitor_for(data_dir())
    if not janitor.passes:
        janitor.start()
