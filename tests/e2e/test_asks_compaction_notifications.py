"""A hook's "ask" reaching the frontend, manual compaction reaching it as contextSummaryUpdated, and Notification hooks as `notification`."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import fixed_policy, request_text, result_text, tool_results

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

ASK_REASON = "E2E-ASK: the project wants a person to confirm this probe."


@pytest.mark.parametrize(("answer", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_a_hook_asking_puts_the_decision_to_the_frontend(sidecar, answer: str, runs: bool) -> None:
    async with sidecar(permission=fixed_policy(answer)) as run:
        sid = (await run.new_session("ask"))["sessionId"]
        result = await run.prompt(sid, "probe with a question")
        assert result["stopReason"] == "end_turn"
        [asked] = run.permission_requests
        assert asked["sessionId"] == sid
        assert asked["toolName"] == "Bash"
        assert "ask-user-probe" in asked["toolInput"]["command"]
        assert asked["reason"] == ASK_REASON
        assert {o["optionId"] for o in asked["options"]} == {"allow_once", "allow_always", "reject_once", "reject_always"}
        assert (run.project / "asked-marker").exists() is runs
        if not runs:
            # The model was told the user said no.
            second = run.model_requests("ask")[1]
            [block] = tool_results(second)
            assert "rejected" in result_text(block)


async def test_manual_compaction_reaches_the_frontend_as_a_context_summary(sidecar) -> None:
    async with sidecar(trust=False) as run:
        sid = (await run.new_session("compact"))["sessionId"]
        await run.prompt(sid, "Remember the codename amber-kite.")
        await run.prompt(sid, "/compact")
        event = await run.wait_event(lambda e: e.name == "contextSummaryUpdated")
        assert event.params["sessionId"] == sid
        assert event.params["trigger"] == "manual"
        assert "E2E-SUMMARY" in event.params["summary"]
        assert len(event.params["summary"]) <= 4000
        # The event is emitted from inside the hook: its hook_response follows it.
        await run.wait_event(lambda e: e.name == "hook_response" and e.params["hookName"] == "compact-summary")
        fired = {(p["hookName"], p["event"]) for p in run.named("hook_response", sid)}
        # PreCompact came through the SDK bridge, PostCompact was fired by the sidecar itself.
        assert ("precompact-continuity", "PreCompact") in fired
        assert ("compact-summary", "PostCompact") in fired
        # And the model was asked for the summary (the request the rule answered).
        assert any("<summary>" in request_text(r) for r in run.model_requests("compact", main_only=False))


async def test_notification_hooks_reach_the_frontend_as_notification_events(sidecar) -> None:
    async with sidecar(trust=False) as run:
        answer = await run.request(
            "hooks/test",
            {"projectDir": str(run.project), "event": "Notification",
             "payload": {"message": "Claude needs your permission to use Bash", "title": "Permission needed",
                         "notification_type": "permission_prompt"}},
        )
        assert any(r["hookName"] == "notification-forward" and r["outcome"] == "success" for r in answer["results"])
        event = await run.wait_event(lambda e: e.name == "notification")
        assert event.params["message"] == "Claude needs your permission to use Bash"
        assert event.params["title"] == "Permission needed"
        assert event.params["notificationType"] == "permission_prompt"
        assert event.params["sessionId"].startswith("hooks-test-")
