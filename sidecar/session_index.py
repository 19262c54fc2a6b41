"""The sessions this sidecar has run, kept across restarts so a client can list them and load one again.

One private JSON file in the data directory (0600 in a 0700 directory, replaced atomically): id, project, the
options the session was started with, a title and times. The title is the first prompt's first line, redacted: the
index never holds a secret a prompt carried. Nothing here is trusted for safety: loading a session re-reads the
project's hooks and trust as a new session would.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_SESSIONS = 500
TITLE_MAX = 120
# The options a loaded session starts with again (a client may override them in `_meta.orion`).
KEPT_OPTIONS = ("model", "vaultDir", "permissionMode", "allowedTools", "systemPrompt", "systemPromptAppend", "sandbox",
                "settingSources", "builtinHooks", "teammate")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def title_of(prompt: str) -> str:
    from hooks.redaction import redact

    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    first = redact(first)
    return first if len(first) <= TITLE_MAX else first[: TITLE_MAX - 1] + "…"


# A session's later prompts only move it up the list: its time is written at most this often (the first prompt,
# which names it, always is). Every write is a whole-file replace with an fsync.
TOUCH_EVERY_S = 60.0


class SessionIndex:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "session-index.json"  # beside sessions/<id>/ (tracking), not inside it
        self._lock = threading.Lock()
        self._touched: dict[str, float] = {}  # session id -> monotonic time of its last write here

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time, in this process and across sidecars sharing the data directory."""
        import fcntl  # POSIX only: imported where used, so the module imports everywhere
        from hooks.private_files import open_private, private_dir

        with self._lock:
            private_dir(self.path.parent)
            fd = open_private(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("session index %s unreadable (%s); starting a new one", self.path, exc)
            return {}
        sessions = data.get("sessions") if isinstance(data, dict) else None
        return {str(k): v for k, v in sessions.items() if isinstance(v, dict)} if isinstance(sessions, dict) else {}

    def _write(self, sessions: dict[str, dict[str, Any]]) -> None:
        from hooks.private_files import write_private_json

        if len(sessions) > MAX_SESSIONS:
            newest = sorted(sessions.items(), key=lambda kv: kv[1].get("updatedAt", ""), reverse=True)[:MAX_SESSIONS]
            sessions = dict(newest)
        write_private_json(self.path, {"version": 1, "sessions": sessions})

    def record(self, session_id: str, cwd: str, options: dict[str, Any]) -> None:
        """A session started (or was loaded): remember where and how."""
        with self._locked():
            sessions = self._read()
            entry = sessions.get(session_id, {})
            entry.update({"sessionId": session_id, "cwd": cwd, "updatedAt": _now(),
                          "options": {k: options[k] for k in KEPT_OPTIONS if options.get(k) is not None}})
            entry.setdefault("createdAt", entry["updatedAt"])
            sessions[session_id] = entry
            self._write(sessions)

    def current(self, session_id: str, **choices: str) -> None:
        """The user switched the session's model, mode or effort (`model=`, `permissionMode=`, `effort=`): what a later
        load restores."""
        with self._locked():
            sessions = self._read()
            entry = sessions.get(session_id)
            if entry is None:
                return
            entry.setdefault("current", {}).update(choices)
            self._write(sessions)

    def touch(self, session_id: str, prompt: str | None = None) -> dict[str, str] | None:
        """A prompt ran: the session moves up the list; its first prompt names it. Returns {title, updatedAt} when
        this prompt gave the session its title (None otherwise)."""
        last = self._touched.get(session_id)
        if last is not None and time.monotonic() - last < TOUCH_EVERY_S:
            return None
        named = None
        with self._locked():
            sessions = self._read()
            entry = sessions.get(session_id)
            if entry is None:
                return None
            entry["updatedAt"] = _now()
            if prompt and not entry.get("title"):
                entry["title"] = title_of(prompt)
                if entry["title"]:
                    named = {"title": entry["title"], "updatedAt": entry["updatedAt"]}
            self._write(sessions)
        if entry.get("title"):  # until a prompt has named it, every prompt writes
            self._touched.pop(session_id, None)
            self._touched[session_id] = time.monotonic()
            if len(self._touched) > MAX_SESSIONS:
                self._touched.pop(next(iter(self._touched)))
        return named

    def remove(self, session_id: str) -> bool:
        """Drop a session's entry (session/delete); False when there was none."""
        with self._locked():
            sessions = self._read()
            if sessions.pop(session_id, None) is None:
                return False
            self._write(sessions)
        self._touched.pop(session_id, None)
        return True

    def get(self, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._read().get(session_id)

    def list(self, cwd: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            entries = list(self._read().values())
        if cwd is not None:
            entries = [e for e in entries if e.get("cwd") == cwd]
        return sorted(entries, key=lambda e: e.get("updatedAt", ""), reverse=True)
