"""What the inspector page shows: the session's events in order, timed from the inspector's start, with the
permission requests and prompts the page sends back.

The same events a desktop frontend receives (ACP updates, Orion's `_orion/` events), kept as they arrived; the
page renders them. Bounded: a session that runs for days keeps the newest MAX_EVENTS.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from typing import Any

MAX_EVENTS = 50_000


class Feed:
    def __init__(self, title: str) -> None:
        self.title = title
        self.started = time.monotonic()
        self.events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self._seq = itertools.count(1)
        self._tick = asyncio.Event()  # set (and replaced) on every event: whoever waits on it wakes
        self._permissions: dict[str, asyncio.Future[str]] = {}
        self._permission_ids = itertools.count(1)
        self.prompts: asyncio.Queue[str] = asyncio.Queue()
        self.end_requested = asyncio.Event()
        self.live = True

    def add(self, kind: str, data: Any, *, at_ms: float | None = None) -> dict[str, Any]:
        """Append one event; `at_ms` places a recorded event on the time axis (default: now)."""
        event = {"seq": next(self._seq), "t": round((time.monotonic() - self.started) * 1000, 1) if at_ms is None else at_ms,
                 "wall": round(time.time() * 1000, 1), "kind": kind, "data": data}
        self.events.append(event)
        self._wake()
        return event

    def _wake(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    def after(self, seq: int) -> list[dict[str, Any]]:
        fresh = []
        for event in reversed(self.events):  # newest first: a follower asks for the last few
            if event["seq"] <= seq:
                break
            fresh.append(event)
        fresh.reverse()
        return fresh

    async def wait_after(self, seq: int, timeout: float) -> list[dict[str, Any]]:
        """Events newer than `seq`, waiting up to `timeout` s for one to come."""
        fresh = self.after(seq)
        if fresh:
            return fresh
        try:
            await asyncio.wait_for(self._tick.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        return self.after(seq)

    # ------------------------------------------------------------------ permissions

    async def ask(self, request: dict[str, Any]) -> str:
        """Show a permission request on the page and wait for the option the user picks there."""
        ident = str(next(self._permission_ids))
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._permissions[ident] = future
        self.add("permission", {**request, "id": ident})
        try:
            return await future
        finally:
            self._permissions.pop(ident, None)

    def answer(self, ident: str, option: str) -> bool:
        future = self._permissions.get(ident)
        if future is None or future.done():
            return False
        future.set_result(option)
        self.add("permission_answer", {"id": ident, "optionId": option})
        return True
