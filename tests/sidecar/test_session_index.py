"""The session index (sidecar/session_index.py): what session/list and session/load read across restarts."""

from __future__ import annotations

import stat
from pathlib import Path

from sidecar import session_index
from sidecar.session_index import SessionIndex


def test_the_first_prompt_names_the_session_and_later_prompts_write_at_most_once_a_minute(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    index = SessionIndex(tmp_path)
    index.record("s1", str(tmp_path), {"model": "scripted:x", "secret": "not kept"})
    index.touch("s1", "")  # an image-only prompt names nothing: the next one still writes
    index.touch("s1", "Fix the login bug\nwith details")
    written = index.path.stat().st_ino
    index.touch("s1", "second prompt")
    assert index.path.stat().st_ino == written, "a replace within the minute would be a new file"
    entry = index.get("s1")
    assert entry["title"] == "Fix the login bug"
    assert entry["options"] == {"model": "scripted:x"}
    assert stat.S_IMODE(index.path.stat().st_mode) == 0o600

    now = [1000.0]
    monkeypatch.setattr(session_index.time, "monotonic", lambda: now[0])
    fresh = SessionIndex(tmp_path)
    fresh.touch("s1", "third")
    first = fresh.path.stat().st_ino
    now[0] += session_index.TOUCH_EVERY_S + 1
    fresh.touch("s1", "fourth")
    assert fresh.path.stat().st_ino != first, "a minute later the session moves up the list again"
    assert fresh.get("s1")["title"] == "Fix the login bug"


def test_a_title_never_holds_a_secret_the_prompt_carried(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path)
    index.record("s2", str(tmp_path), {})
    key = "sk-ant-api03-" + "A" * 90
    index.touch("s2", f"use {key} for the deploy")
    assert key not in index.path.read_text()
