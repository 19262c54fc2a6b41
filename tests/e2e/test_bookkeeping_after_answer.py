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
        hits = (await run.request("memory/search", {"query": "zebra"}))["results"]
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
