"""Forwards the sidecar's own warnings and errors to the frontend as `log` events, bounded and with secrets redacted."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from typing import Any

from sidecar.app import SidecarApp

ENV_LEVEL = "ORION_LOG_FORWARD_LEVEL"
MAX_QUEUED = 1000
MAX_MESSAGE = 4000
# Records from the wire layer are not forwarded: a warning about a failing write must not cause another write.
_SKIPPED_PREFIXES = ("ipc", "sidecar.lifecycle", "sidecar.log_forward")


class FrontendLogHandler(logging.Handler):
    """Queues records from any thread; a task on the event loop sends them. Overflow is counted, never blocking."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: deque[logging.LogRecord] = deque(maxlen=MAX_QUEUED)
        self.dropped = 0
        self.wakeup = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(_SKIPPED_PREFIXES):
            return
        if len(self.records) == MAX_QUEUED:
            self.dropped += 1
        self.records.append(record)
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            if asyncio.get_running_loop() is loop:
                self.wakeup.set()
                return
        except RuntimeError:
            pass
        loop.call_soon_threadsafe(self.wakeup.set)


def _params(record: logging.LogRecord) -> dict[str, Any]:
    from hooks.redaction import redact

    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format must not stop forwarding
        message = str(record.msg)
    if record.exc_info and record.exc_info[1] is not None:
        message += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
    message = redact(message)
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "…"
    level = record.levelname.lower()
    if level not in ("debug", "info", "warning", "error", "critical"):
        level = "info"
    return {"level": level, "logger": redact(record.name), "message": message}


async def forward_logs(app: SidecarApp) -> None:
    """Runs while serving: drains the handler's queue into `log` notifications."""
    level_name = os.environ.get(ENV_LEVEL, "WARNING").upper()
    level = logging.getLevelName(level_name)
    if not isinstance(level, int) or level_name == "OFF":
        return
    handler = FrontendLogHandler(level)
    handler.loop = asyncio.get_running_loop()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        while True:
            await handler.wakeup.wait()
            handler.wakeup.clear()
            while handler.records:
                record = handler.records.popleft()
                try:
                    await app.notify("log", _params(record))
                except Exception:  # the connection is closing: stop forwarding, the stderr log keeps everything
                    return
            if handler.dropped:
                dropped, handler.dropped = handler.dropped, 0
                try:
                    await app.notify("log", {"level": "warning", "logger": "sidecar.log_forward",
                                             "message": f"{dropped} log records were not forwarded (queue full); see stderr"})
                except Exception:
                    return
    finally:
        root.removeHandler(handler)
