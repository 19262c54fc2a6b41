"""Context hooks through the runner: project detection, workflow hints, subagent context, forwarding to the frontend."""

from __future__ import annotations

import json

import pytest

from tests.builtin.harness import sandbox


def make_projects(vault):
    (vault / "Projects" / "Orion Sidecar").mkdir(parents=True)
    garden = vault / "Projects" / "Garden"
    garden.mkdir(parents=True)
    (garden / "_meta.yaml").write_text("keywords: [tomatoes, compost, raised beds]\n")
    (vault / "Projects" / "Api").mkdir()  # a short one-word name: keywords only


def project_events(sb):
    return [p for e, p in sb.emitted if e == "projectContextChange"]


@pytest.mark.asyncio
async def test_autodetect_names_the_project_on_the_first_message_only(tmp_path):
    async with sandbox(tmp_path) as sb:
        make_projects(sb.vault)
        await sb.fire("UserPromptSubmit", {"prompt": "Let's continue on the orion-sidecar hook engine"})
        await sb.fire("UserPromptSubmit", {"prompt": "Now the garden: tomatoes and compost"})
    events = project_events(sb)
    assert len(events) == 1
    assert events[0]["project"] == {"name": "Orion Sidecar", "path": str(sb.vault / "Projects" / "Orion Sidecar")}
    assert events[0]["sessionId"] == "sess-1"
    assert "names the project" in events[0]["reason"]
    assert sb.sessions["sess-1"].state["active_project"]["name"] == "Orion Sidecar"


@pytest.mark.asyncio
async def test_autodetect_needs_high_confidence(tmp_path):
    async with sandbox(tmp_path) as sb:
        make_projects(sb.vault)
        await sb.fire("UserPromptSubmit", {"prompt": "how do I grow tomatoes?"}, session_id="one-keyword")
        await sb.fire("UserPromptSubmit", {"prompt": "call the api"}, session_id="short-name")
        await sb.fire("UserPromptSubmit", {"prompt": "orion sidecar and garden"}, session_id="ambiguous")
        assert project_events(sb) == []
        await sb.fire("UserPromptSubmit", {"prompt": "tomatoes in the raised beds again"}, session_id="two-keywords")
    (event,) = project_events(sb)
    assert event["project"]["name"] == "Garden"
    assert event["sessionId"] == "two-keywords"
    assert "2 keywords" in event["reason"]


@pytest.mark.asyncio
async def test_autodetect_caches_the_project_list(tmp_path):
    async with sandbox(tmp_path) as sb:
        make_projects(sb.vault)
        await sb.fire("UserPromptSubmit", {"prompt": "hello"}, session_id="a")
        (sb.vault / "Projects" / "Zeppelin").mkdir()
        await sb.fire("UserPromptSubmit", {"prompt": "zeppelin please"}, session_id="b")
        assert project_events(sb) == []  # listed moments ago: the new folder is not seen yet
    async with sandbox(tmp_path, {"project-autodetect": {"cache_seconds": 0}}) as sb:
        await sb.fire("UserPromptSubmit", {"prompt": "zeppelin please"}, session_id="c")
    assert [e["project"]["name"] for e in project_events(sb)] == ["Zeppelin"]


@pytest.mark.asyncio
async def test_project_detect_on_creating_project_metadata(tmp_path):
    async with sandbox(tmp_path) as sb:
        meta = sb.vault / "Projects" / "Apollo" / "_meta.yaml"
        await sb.tool("PostToolUse", "Write", {"file_path": str(meta), "content": "x"}, {"type": "update"})
        await sb.tool("PostToolUse", "Write", {"file_path": str(sb.project / "_meta.yaml"), "content": "x"}, {"type": "create"})
        assert project_events(sb) == []
        await sb.tool("PostToolUse", "Write", {"file_path": str(meta), "content": "x"}, {"type": "create"})
        (event,) = project_events(sb)
        assert event["project"] == {"name": "Apollo", "path": str(meta.parent)}
        # Subagents now learn the active project.
        agg = await sb.fire("SubagentStart", {"agent_id": "a1", "agent_type": "Explore"})
    assert agg.additional_context.endswith(f"<project-context>Active PARA project: Apollo ({meta.parent})</project-context>")


@pytest.mark.asyncio
async def test_subagent_hooks_without_a_project(tmp_path):
    async with sandbox(tmp_path) as sb:
        start = await sb.fire("SubagentStart", {"agent_id": "a1", "agent_type": "Explore"})
        stop = await sb.fire("SubagentStop", {"agent_id": "a1", "agent_type": "Explore", "stop_hook_active": False})
    tracked = (sb.data / "sessions" / "sess-1" / "events.jsonl").read_text()  # flushed when the runner closed
    assert start.additional_context is None
    # subagent-log is bookkeeping: it ran after the answer (not part of it), and it succeeded.
    assert stop.results == [] and stop.decision is None
    [logged] = [json.loads(line) for line in tracked.splitlines() if '"subagent-log"' in line]
    assert logged["outcome"] == "success"


@pytest.mark.asyncio
async def test_keyword_context_adds_workflow_hints(tmp_path):
    async with sandbox(tmp_path) as sb:
        agg = await sb.fire("UserPromptSubmit", {"prompt": "Plan it first, then do it TDD style"})
        plain = await sb.fire("UserPromptSubmit", {"prompt": "what is a planet?"}, session_id="s2")
    assert "<workflow-hint>" in agg.additional_context
    assert "plan: " in agg.additional_context and "tdd: " in agg.additional_context
    assert plain.additional_context is None


@pytest.mark.asyncio
async def test_compact_summary_and_notifications_reach_the_frontend(tmp_path):
    async with sandbox(tmp_path) as sb:
        await sb.fire("PreCompact", {"trigger": "manual", "custom_instructions": ""})
        await sb.fire("PostCompact", {"compact_summary": "S" * 5000})
        await sb.fire("Notification", {"message": "Claude needs your permission", "title": "Permission",
                                       "notification_type": "permission_prompt"})
    (summary,) = [p for e, p in sb.emitted if e == "contextSummaryUpdated"]
    assert summary["summary"] == "S" * 4000 and summary["trigger"] == "manual"
    (note,) = [p for e, p in sb.emitted if e == "notification"]
    assert note == {"title": "Permission", "message": "Claude needs your permission",
                    "notificationType": "permission_prompt", "sessionId": "sess-1"}
