"""Memory hooks through the runner: what a session leaves in the store, what stays out, and what comes back."""

from __future__ import annotations

import json

import pytest

from hooks.memory.identity import project_identity
from hooks.memory.search import memory_search_method, search_memory
from hooks.memory.store import open_store
from tests.builtin.harness import sandbox

KEY = "ghp_" + "Z9y8X7w6V5" * 4

# Every test here runs twice: on the local SQLite file and on a real PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memory_backend")


async def scripted_session(sb, session_id="sess-1"):
    await sb.fire("SessionStart", {"source": "startup"}, session_id=session_id)
    await sb.fire("UserPromptSubmit", {
        "prompt": "<private>my bank PIN is 4321</private>Fix the flaky login test in auth_test.py"
                  "<workflow-hint>injected</workflow-hint>"}, session_id=session_id)
    await sb.tool("PostToolUse", "Read", {"file_path": "auth_test.py"},
                  {"type": "text", "file": {"content": "def test_login():\n    token = '<private>hidden</private>'\n"
                                            f"    GITHUB={KEY}\n    assert retry_login()\n"}},
                  session_id=session_id)
    await sb.tool("PostToolUse", "TodoWrite", {"todos": [{"content": "remember"}]}, {"ok": True}, session_id=session_id)
    await sb.fire("Stop", {"stop_hook_active": False,
                           "last_assistant_message": "The login test raced the token refresh. I added a retry. Tests pass."},
                  session_id=session_id)
    await sb.fire("SessionEnd", {"reason": "prompt_input_exit"}, session_id=session_id)


def dump(store, sid):
    return json.dumps([store.session(sid), store.prompts(sid), store.observations(sid), store.summaries(sid)])


@pytest.mark.asyncio
async def test_a_session_leaves_prompts_observations_and_a_summary_without_private_content(tmp_path):
    async with sandbox(tmp_path) as sb:
        await scripted_session(sb)
        store = open_store(sb.data)
        session = store.session("sess-1")
        prompts = store.prompts("sess-1")
        observations = store.observations("sess-1")
        summaries = store.summaries("sess-1")
        everything = dump(store, "sess-1")
        project_id = project_identity(sb.data, sb.project).id
    assert session["status"] == "completed" and session["end_reason"] == "prompt_input_exit"
    assert session["project"] == project_id and session["prompt_count"] == 1
    assert [p["text"] for p in prompts] == ["Fix the flaky login test in auth_test.py"]
    assert [o["tool_name"] for o in observations] == ["Read"]  # TodoWrite is low-value and skipped
    assert "retry_login" in observations[0]["text"]
    assert summaries[0]["request"] == "Request: Fix the flaky login test in auth_test.py"
    assert summaries[0]["outcome"].startswith("Outcome: The login test raced the token refresh.")
    for leaked in ("4321", "PIN", "hidden", "<private", "injected", KEY):
        assert leaked not in everything
    assert "[REDACTED:github-token]" in observations[0]["text"]


@pytest.mark.asyncio
async def test_search_finds_a_stored_observation(tmp_path):
    async with sandbox(tmp_path) as sb:
        await scripted_session(sb)
        hits = await search_memory(sb.data, "retry_login", mode="text")
        # The project filter takes the project's folder (or its id); a bare folder name matches nothing.
        by_method = await memory_search_method({"query": "login test", "project": str(sb.project), "limit": 5},
                                               data_dir=sb.data)
        with pytest.raises(ValueError, match="absolute path"):  # a folder's name alone says nothing: refused
            await memory_search_method({"query": "login test", "project": "project"}, data_dir=sb.data)
        by_name: list = []
        project_id = project_identity(sb.data, sb.project).id
        by_id = await memory_search_method({"query": "login test", "project": project_id}, data_dir=sb.data)
        other_project = await memory_search_method({"query": "login", "project": str(sb.root / "elsewhere")},
                                                   data_dir=sb.data)
        private = await search_memory(sb.data, "4321", mode="text")
        # by meaning, the nearest items come back, but nothing of the private part was stored to be found
        private_by_meaning = await search_memory(sb.data, "4321 PIN hidden", mode="meaning")
    assert [h["kind"] for h in hits] == ["observation"]
    assert hits[0]["matchedBy"] == ["text"] and hits[0]["why"]["text"]["rank"] == 1
    assert hits[0]["sessionId"] == "sess-1" and hits[0]["project"] == project_id
    assert "«retry_login»" in hits[0]["snippet"]
    assert hits[0]["createdAt"].endswith("Z")
    assert {h["kind"] for h in by_method} >= {"prompt", "observation", "summary"}
    assert set(by_method[0]) == {"kind", "sessionId", "project", "text", "snippet", "createdAt", "score", "why",
                                 "matchedBy"}
    assert by_method[0]["matchedBy"] == ["text", "meaning"]  # hybrid (the default): both rankings agree
    assert other_project == [] and private == [] and by_name == []
    assert {h["kind"] for h in by_id} >= {"prompt", "observation", "summary"}
    assert private_by_meaning and not any("4321" in h["text"] or "hidden" in h["text"] for h in private_by_meaning)


@pytest.mark.asyncio
async def test_search_survives_hostile_queries(tmp_path):
    async with sandbox(tmp_path) as sb:
        await scripted_session(sb)
        for query in ['"', "login OR", "NEAR(login", "*", "login)", "-login", "col:login", ""]:
            assert isinstance(await search_memory(sb.data, query), list)
        with pytest.raises(ValueError):
            await memory_search_method({"query": 3}, data_dir=sb.data)
    assert await search_memory(tmp_path / "nowhere", "login") == []


@pytest.mark.asyncio
async def test_a_fully_private_prompt_stores_nothing(tmp_path):
    async with sandbox(tmp_path) as sb:
        await sb.fire("UserPromptSubmit", {"prompt": "  <private>all of this is secret</private>  "})
        await sb.tool("PostToolUse", "Read", {"file_path": "notes.md"}, "secret notes")
        await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "Here are your secret notes."})
        store = open_store(sb.data)
        assert store.session("sess-1")["prompt_count"] == 1
        assert store.prompts("sess-1") == [] and store.observations("sess-1") == [] and store.summaries("sess-1") == []


@pytest.mark.asyncio
async def test_sessions_are_created_once_and_prompts_counted(tmp_path):
    async with sandbox(tmp_path) as sb:
        await sb.fire("UserPromptSubmit", {"prompt": "first"})
        await sb.fire("UserPromptSubmit", {"prompt": "second"})
        await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "one"})
        await sb.fire("Stop", {"stop_hook_active": True, "last_assistant_message": "one, revised"})
        store = open_store(sb.data)
        rows = store._read("SELECT COUNT(*) AS n FROM sessions")
        prompts = store.prompts("sess-1")
        summaries = store.summaries("sess-1")
    assert rows == [{"n": 1}]
    assert [(p["prompt_number"], p["text"]) for p in prompts] == [(1, "first"), (2, "second")]
    assert [(s["prompt_number"], s["outcome"]) for s in summaries] == [(2, "Outcome: one, revised")]


@pytest.mark.asyncio
async def test_memory_context_injects_earlier_sessions_of_the_project_bounded(tmp_path):
    async with sandbox(tmp_path, {"memory-context": {"max_chars": 400}}) as sb:
        first = await sb.fire("SessionStart", {"source": "startup"}, session_id="s-first")
        await scripted_session(sb, "s-old")
        for i in range(20):
            await sb.tool("PostToolUse", "Bash", {"command": f"pytest -k case{i}"}, {"stdout": "ok " * 100}, session_id="s-old")
        agg = await sb.fire("SessionStart", {"source": "startup"}, session_id="s-new")
    assert first.additional_context is None  # nothing remembered yet
    ctx = agg.additional_context
    assert "<memory-context>" in ctx and "</memory-context>" in ctx
    assert "Fix the flaky login test" in ctx
    assert len(ctx) < 400 + 200  # the bound plus the tags and the runner's hook label


@pytest.mark.asyncio
async def test_a_configured_summarizer_compresses_and_a_failing_one_falls_back(tmp_path):
    class Model:
        async def summarize(self, request, reply):
            return f"compressed ({len(reply)} chars)"

    class Broken:
        async def summarize(self, request, reply):
            raise RuntimeError("no API key")

    reply = "A long reply. " * 20
    for summarizer, expected in ((Model(), "Outcome: compressed (279 chars)"), (Broken(), "Outcome: A long reply.")):
        async with sandbox(tmp_path / type(summarizer).__name__, {"memory-summary": {"summarizer": summarizer}}) as sb:
            await sb.fire("UserPromptSubmit", {"prompt": "explain"})
            agg = await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": reply})
            (summary,) = open_store(sb.data).summaries("sess-1")
        assert sb.errors(agg) == []
        assert summary["outcome"].startswith(expected)


@pytest.mark.asyncio
async def test_summary_falls_back_to_the_transcript(tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"content": "Rename the config loader"}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "Renamed it."}]}}) + "\n"
    )
    async with sandbox(tmp_path) as sb:
        await sb.fire("Stop", {"stop_hook_active": False, "transcript_path": str(transcript)})
        (summary,) = open_store(sb.data).summaries("sess-1")
    assert summary["request"] == "Request: Rename the config loader"
    assert summary["outcome"] == "Outcome: Renamed it."
