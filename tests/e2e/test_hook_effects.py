"""What a project's command hooks do to a real session, seen from the frontend: deny, rewrite, added context, blocked prompts, blocked stops, session start context."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import request_text, result_text, tool_results

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

DENY_REASON = "E2E-DENY: denied-marker must never be created."
SESSION_START_CONTEXT = "E2E-SESSION-START-CONTEXT: the project codename is quartz-heron."
POST_CONTEXT = "E2E-POST-CONTEXT: the probe output was checked by the project hook."
STOP_REASON = "E2E-STOP-REASON: check the work once more before stopping."


async def test_pretooluse_deny_stops_the_tool_and_tells_the_model_why(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("deny"))["sessionId"]
        result = await run.prompt(sid, "Create the marker file.")

        assert result["stopReason"] == "end_turn"
        assert not (run.project / "denied-marker").exists()
        requests = run.model_requests("deny")
        assert len(requests) == 2
        [denied] = tool_results(requests[1])
        assert denied.get("is_error") is True
        assert DENY_REASON in result_text(denied)
        [update] = [u for u in run.updates(sid, "tool_call_update")]
        assert update["status"] == "denied"
        gate = [r for r in run.named("hook_response", sid) if r["hookName"] == "e2e-bash-gate"]
        assert [r["exitCode"] for r in gate] == [2]


async def test_updated_input_is_the_command_that_runs(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("rewrite", allowedTools=["Bash"]))["sessionId"]
        result = await run.prompt(sid, "Write out.txt.")

        assert result["stopReason"] == "end_turn"
        assert (run.project / "out.txt").read_text() == "rewritten\n"
        # The model asked for the original; the hook saw the original; the file says the rewrite ran.
        [call] = run.updates(sid, "tool_call")
        assert call["input"]["command"] == "echo original > out.txt"


async def test_posttooluse_context_reaches_the_next_model_request(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("post_context", allowedTools=["Bash"]))["sessionId"]
        await run.prompt(sid, "Run the probe.")

        first, second = run.model_requests("post_context")
        assert POST_CONTEXT not in request_text(first)
        assert POST_CONTEXT in request_text(second)


async def test_blocked_prompt_makes_no_model_request(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("plain"))["sessionId"]
        blocked = await run.prompt(sid, "This is a forbidden-prompt, refuse it.")

        assert blocked["stopReason"] == "blocked"
        assert run.model_requests("plain") == []
        gate = [r for r in run.named("hook_response", sid) if r["hookName"] == "e2e-prompt-gate"]
        assert [r["exitCode"] for r in gate] == [2]
        # The session is still usable: the next prompt reaches the model.
        allowed = await run.prompt(sid, "An ordinary prompt.")
        assert allowed["stopReason"] == "end_turn"
        assert allowed["resultText"] == "Plain answer."
        [sent] = run.model_requests("plain")
        assert "An ordinary prompt." in request_text(sent)
        assert "forbidden-prompt" not in request_text(sent)


async def test_stop_block_gives_the_model_another_turn_once(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("stop_block"))["sessionId"]
        result = await run.prompt(sid, "Answer, then let the stop hook check.")

        assert result["resultText"] == "Checked again after the stop hook reason (please-block-stop)."
        requests = run.model_requests("stop_block")
        assert len(requests) == 2
        assert STOP_REASON not in request_text(requests[0])
        assert STOP_REASON in request_text(requests[1])
        # The second Stop carried stop_hook_active, which is what let the turn end.
        assert [c["stop_hook_active"] for c in run.hook_calls("Stop")] == [False, True]


async def test_session_start_context_reaches_the_model(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("plain"))["sessionId"]
        await run.prompt(sid, "Hello.")

        [first] = run.model_requests("plain")
        # In the conversation, as Claude Code puts it; the system prompt stays as the session asked for it.
        assert SESSION_START_CONTEXT not in str(first["body"].get("system"))
        assert SESSION_START_CONTEXT in json.dumps(first["body"]["messages"])
        [start] = [r for r in run.named("hook_response", sid) if r["hookName"] == "e2e-session-start"]
        assert start["outcome"] == "success"
