"""Lifecycle hooks through the runner: continuity across compaction and sessions, turn activity, stale cache cleanup."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hooks.builtin.common import write_json_atomic
from tests.builtin.harness import sandbox

DAY = 86400


def write_transcript(path: Path, prompt: str, reply: str) -> Path:
    records = [
        {"type": "user", "message": {"role": "user", "content": "an older prompt"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "older reply"}]}},
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Read"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "file"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.asyncio
async def test_precompact_writes_continuity_that_the_next_session_start_injects(tmp_path):
    async with sandbox(tmp_path) as sb:
        transcript = write_transcript(tmp_path / "t.jsonl", "Refactor the billing module", "Split billing into three files.")
        await sb.tool("PostToolUse", "Write", {"file_path": "billing/core.py", "content": "x"}, {"type": "create"})
        await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
        agg = await sb.fire("PreCompact", {"trigger": "auto", "custom_instructions": "", "transcript_path": str(transcript)})
        assert sb.errors(agg) == []
        record = json.loads((sb.data / "continuity" / "sess-1.json").read_text())
        assert record["summary"].startswith("Last request: Refactor the billing module")
        assert "Split billing into three files." in record["summary"]
        assert record["files"] == ["billing/core.py"]
        assert record["turnCount"] == 1
        assert record["sessionType"] == "chat"
        assert set(record) >= {"summary", "files", "activeProject", "sessionType", "turnCount"}
        assert [p.name for p in (sb.data / "continuity").iterdir()] == ["sess-1.json"]  # no temp file left behind

        # A later session in the same project picks it up.
        start = await sb.fire("SessionStart", {"source": "startup"}, session_id="sess-2")
    assert "<session-continuity>" in start.additional_context
    assert "Refactor the billing module" in start.additional_context
    assert "billing/core.py" in start.additional_context


@pytest.mark.asyncio
async def test_session_continuity_ignores_records_older_than_a_day_or_from_other_projects(tmp_path):
    async with sandbox(tmp_path) as sb:
        directory = sb.data / "continuity"
        old = time.time() - 2 * DAY
        write_json_atomic(directory / "old.json", {"project": str(sb.project), "summary": "stale", "ts": old})
        os.utime(directory / "old.json", (old, old))
        write_json_atomic(directory / "other.json", {"project": "/elsewhere", "summary": "other", "ts": time.time()})
        agg = await sb.fire("SessionStart", {"source": "startup"})
    assert agg.additional_context is None


def test_continuity_write_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "c" / "conv.json"
    write_json_atomic(target, {"v": 1})

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_json_atomic(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}  # the old record survives intact
    assert [p.name for p in target.parent.iterdir()] == ["conv.json"]


@pytest.mark.asyncio
async def test_turn_activity_writes_every_fifth_turn(tmp_path):
    async with sandbox(tmp_path) as sb:
        activity = sb.data / "session-activity" / "sess-1.json"
        await sb.tool("PostToolUse", "Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, {})
        for _ in range(4):
            await sb.fire("Stop", {"stop_hook_active": False})
        await sb.fire("Stop", {"stop_hook_active": True})  # a continuation, not a turn
        assert not activity.exists()
        await sb.fire("Stop", {"stop_hook_active": False})
        record = json.loads(activity.read_text())
    assert record["turns"] == 5
    assert record["filesModified"] == ["a.py"]


@pytest.mark.asyncio
async def test_turn_activity_keeps_at_most_100_conversations(tmp_path):
    async with sandbox(tmp_path, {"turn-activity": {"every_turns": 1}}) as sb:
        for i in range(101):
            await sb.fire("Stop", {"stop_hook_active": False}, session_id=f"conv-{i:03d}")
        files = sorted(p.name for p in (sb.data / "session-activity").iterdir())
        assert len(files) == 100
        assert "conv-000.json" not in files and "conv-100.json" in files
        # The in-memory counter of the evicted conversation starts over; a kept one continues.
        await sb.fire("Stop", {"stop_hook_active": False}, session_id="conv-000")
        await sb.fire("Stop", {"stop_hook_active": False}, session_id="conv-050")
    assert sb.sessions["conv-000"].state["turn_count"] == 1
    assert sb.sessions["conv-050"].state["turn_count"] == 2


@pytest.mark.asyncio
async def test_stale_cache_cleanup_deletes_only_old_files_and_is_rate_limited(tmp_path):
    old = time.time() - 8 * DAY
    async with sandbox(tmp_path) as sb:
        kept, gone = [], []
        for name in ("continuity", "session-activity", "memory-enrichment"):
            d = sb.data / name
            d.mkdir(parents=True, exist_ok=True)
            (d / "fresh.json").write_text("{}")
            (d / "old.json").write_text("{}")
            os.utime(d / "old.json", (old, old))
            kept.append(d / "fresh.json")
            gone.append(d / "old.json")
        (sb.data / "memory.sqlite3-unrelated").write_text("x")
        os.utime(sb.data / "memory.sqlite3-unrelated", (old, old))
        await sb.fire("SessionEnd", {"reason": "other"})
        assert all(p.exists() for p in kept)
        assert not any(p.exists() for p in gone)
        assert (sb.data / "memory.sqlite3-unrelated").exists()  # only the three cache folders are swept

        late = sb.data / "continuity" / "late.json"
        late.write_text("{}")
        os.utime(late, (old, old))
        await sb.fire("SessionEnd", {"reason": "other"}, session_id="sess-2")
        assert late.exists()  # rate-limited: a sweep ran moments ago

    # A new sidecar process (fresh in-memory state) still honours the marker file...
    async with sandbox(tmp_path) as sb:
        await sb.fire("SessionEnd", {"reason": "other"})
        assert late.exists()

    # ...and sweeps again once the marker is older than the interval.
    marker = tmp_path / "data" / ".stale-cache-cleanup"
    os.utime(marker, (old, old))
    async with sandbox(tmp_path) as sb:
        await sb.fire("SessionEnd", {"reason": "other"})
    assert not late.exists()
