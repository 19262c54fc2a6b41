"""The built-in bookkeeping runs after the answer and loses nothing: a search right after a prompt finds it, a
session's end waits for it, and a prompt a hook refused is not recorded."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


async def test_a_search_right_after_the_prompt_finds_it_and_a_refused_prompt_is_not_kept(sidecar) -> None:
    async with sidecar() as run:
        session = await run.new_session("plain")
        sid = session["sessionId"]
        await run.prompt(sid, "remember the striped zebra in the orchard")
        found = await run.request("memory/search", {"query": "zebra"})
        hits = found["results"]
        assert found["pendingWrites"] == 0
        assert [h for h in hits if h["sessionId"] == sid and h["kind"] == "prompt"], hits
        blocked = await run.prompt(sid, "a forbidden-prompt about the purple walrus")
        assert blocked["stopReason"] == "blocked"
        await run.end(sid)
        assert (await run.request("memory/search", {"query": "walrus", "mode": "text"}))["results"] == []
        # by meaning, the nearest items come back: none of them is the refused prompt
        near = (await run.request("memory/search", {"query": "walrus"}))["results"]
        assert not any("walrus" in h["text"] for h in near), near
        # The session's end waited for the bookkeeping: each memory hook reported, and succeeded.
        ran = {e["hookName"]: e["outcome"] for e in run.named("hook_response", sid)
               if e["hookName"] in ("memory-session", "memory-summary")}
    assert ran == {"memory-session": "success", "memory-summary": "success"}


async def test_a_search_never_waits_on_a_write_backlog_and_says_what_is_still_queued(sidecar) -> None:
    """Another process holds the memory file's write lock (another sidecar writing, a backup): the session's memory
    write waits for it after the answer. A search made meanwhile answers within its one-second wait with what is
    stored and `pendingWrites` naming the writes not yet in; once the lock goes the write lands, nothing lost."""
    import os
    import sqlite3
    import time
    from pathlib import Path

    db = Path(os.environ["ORION_DATA_DIR"]) / "memory.sqlite3"
    async with sidecar() as run:
        session = await run.new_session("plain")
        sid = session["sessionId"]
        await run.prompt(sid, "a first prompt so that the memory file exists")
        first = await run.request("memory/search", {"query": "first prompt", "mode": "text"})
        assert first["pendingWrites"] == 0 and first["results"]
        lock = sqlite3.connect(db, timeout=1.0)
        try:
            lock.execute("BEGIN IMMEDIATE")  # the write lock, held: the sidecar's memory write waits for it
            await run.prompt(sid, "remember the vermilion lighthouse on the cliff")
            started = time.monotonic()
            behind = await run.request("memory/search", {"query": "vermilion lighthouse", "mode": "text"})
            waited = time.monotonic() - started
        finally:
            lock.rollback()
            lock.close()
        assert behind["pendingWrites"] >= 1, behind
        assert not [h for h in behind["results"] if "vermilion" in h["text"]]
        # The memory's own lock wait is 5 s: a search that sat it out would have taken at least that long.
        assert waited < 5.0, waited
        # Once the lock goes the queued write lands (a search waits up to a second for it; a loaded machine may
        # need a few searches).
        for _ in range(20):
            after = await run.request("memory/search", {"query": "vermilion lighthouse", "mode": "text"})
            if after["pendingWrites"] == 0:
                break
        assert after["pendingWrites"] == 0, after
        assert [h for h in after["results"] if h["sessionId"] == sid and "vermilion" in h["text"]], after
        await run.end(sid)
