"""Every hook runs exactly once per event, every execution is reported with its session, outcome and duration, and untrusted project hooks stay off until hooks/trust."""

from __future__ import annotations

from collections import Counter

import pytest

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

OUTCOMES = {"success", "blocked", "error", "timeout", "cancelled"}
PROJECT_HOOKS = {"e2e-session-start", "e2e-prompt-gate", "e2e-bash-gate", "e2e-bash-after", "e2e-stop-gate",
                 "e2e-session-end"}


async def test_every_hook_fires_exactly_once_and_is_reported_with_its_session(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("many_tools", allowedTools=["Bash"]))["sessionId"]
        result = await run.prompt(sid, "Count things.")
        assert result["resultText"] == "Counted."
        await run.end(sid)

        calls = run.updates(sid, "tool_call")
        bash_ids = {c["toolUseId"] for c in calls if c["name"] == "Bash"}
        [read_id] = [c["toolUseId"] for c in calls if c["name"] == "Read"]
        assert len(bash_ids) == 3

        started = run.named("hook_started")
        responses = run.named("hook_response")
        progress = run.named("hook_progress")
        assert any(line["hookName"] == "e2e-session-start" for line in progress)
        assert {h["sessionId"] for h in started + responses + progress} == {sid}
        # Tool hooks: one run per (hook, tool call); each Bash call went through both project hooks.
        per_tool = Counter((h["hookName"], h["event"], h["toolUseId"]) for h in started
                           if h["event"] in ("PreToolUse", "PostToolUse"))
        assert set(per_tool.values()) == {1}
        for tool_id in bash_ids:
            assert per_tool[("e2e-bash-gate", "PreToolUse", tool_id)] == 1
            assert per_tool[("e2e-bash-after", "PostToolUse", tool_id)] == 1
        assert per_tool[("document-guard", "PreToolUse", read_id)] == 1
        assert not any(name.startswith("e2e-") for name, _event, tool_id in per_tool if tool_id == read_id)
        # Session-level hooks: one run per hook and event in this one-prompt session.
        per_event = Counter((h["hookName"], h["event"]) for h in started
                            if h["event"] not in ("PreToolUse", "PostToolUse"))
        assert set(per_event.values()) == {1}
        assert {name for name, _ in per_event} | {name for name, _, _ in per_tool} >= PROJECT_HOOKS
        # Only tool events name a tool call: the UUID the CLI passes for the others is no tool_use_id.
        assert [h for h in started if h["event"] not in ("PreToolUse", "PostToolUse") and h.get("toolUseId")] == []
        assert [c for c in run.hook_calls() if c["event"] not in ("PreToolUse", "PostToolUse") and c["tool_use_id"]] == []

        # The project's hook process ran once per tool call: one line each, not two.
        assert sorted(c["tool_use_id"] for c in run.hook_calls("PreToolUse")) == sorted(bash_ids)
        assert sorted(c["tool_use_id"] for c in run.hook_calls("PostToolUse")) == sorted(bash_ids)
        assert Counter(c["event"] for c in run.hook_calls()) == Counter(
            {"SessionStart": 1, "UserPromptSubmit": 1, "PreToolUse": 3, "PostToolUse": 3, "Stop": 1, "SessionEnd": 1})

        # Every start has exactly one response, with an outcome and a duration.
        by_execution = Counter(r["executionId"] for r in responses)
        assert set(by_execution.values()) == {1}
        assert set(by_execution) == {h["executionId"] for h in started}
        for response in responses:
            assert response["outcome"] in OUTCOMES
            assert isinstance(response["durationMs"], (int, float)) and response["durationMs"] >= 0
        assert all(r["outcome"] == "success" for r in responses if r["hookName"] in PROJECT_HOOKS)


async def test_untrusted_project_hooks_do_not_run_until_trusted(sidecar) -> None:
    async with sidecar(trust=False) as run:
        created = await run.new_session("probe", allowedTools=["Bash"])
        sid = created["sessionId"]
        assert created["hooks"]["untrusted"] == len(PROJECT_HOOKS)

        first = await run.prompt(sid, "probe please")
        assert first["resultText"] == "probed"
        assert run.hook_calls() == []
        assert not any(h["source"] == "project" for h in run.named("hook_started"))
        listing = await run.request("hooks/list", {"sessionId": sid})
        states = {h["name"]: h["state"] for h in listing["hooks"] if h["source"] == "project"}
        assert states == dict.fromkeys(PROJECT_HOOKS, "untrusted")

        await run.trust()
        second = await run.prompt(sid, "probe please")

        assert second["resultText"] == "probed"
        assert [c["event"] for c in run.hook_calls()] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
        assert {h["hookName"] for h in run.named("hook_started") if h["source"] == "project"} == {
            "e2e-prompt-gate", "e2e-bash-gate", "e2e-bash-after", "e2e-stop-gate"}
