"""Permission round trips through frontend_stub, and two sessions running at once without crossing events or answers."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.e2e.conftest import EVENT_WAIT_S, queued_policy, result_text, tool_results

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

OPTION_IDS = ["allow_once", "allow_always", "reject_once", "reject_always"]


async def test_permission_round_trip_allow_once_reject_once_allow_always(sidecar) -> None:
    async with sidecar(permission=queued_policy("allow_once", "reject_once", "allow_always")) as run:
        sid = (await run.new_session("permissions"))["sessionId"]
        result = await run.prompt(sid, "Write the files.")

        assert result["stopReason"] == "end_turn"
        asked = run.permission_requests
        # allow_always on the third call means the fourth Write is not asked about.
        assert len(asked) == 3
        calls = {u["toolUseId"]: u for u in run.updates(sid, "tool_call")}
        for request, name in zip(asked, ["once.txt", "rejected.txt", "always.txt"]):
            assert request["sessionId"] == sid
            assert request["toolName"] == "Write"
            assert request["toolInput"]["file_path"].endswith("/" + name)
            assert request["toolUseId"] in calls
            assert [o["optionId"] for o in request["options"]] == OPTION_IDS
        assert (run.project / "once.txt").read_text() == "allowed once\n"
        assert not (run.project / "rejected.txt").exists()
        assert (run.project / "always.txt").read_text() == "allowed always\n"
        assert (run.project / "again.txt").read_text() == "not asked again\n"

        requests = run.model_requests("permissions")
        [rejection] = tool_results(requests[2])
        assert rejection.get("is_error") is True
        assert "rejected" in result_text(rejection)
        statuses = [u["status"] for u in run.updates(sid, "tool_call_update")]
        assert statuses == ["completed", "denied", "completed", "completed"]


async def test_allowed_tools_are_not_asked_about(sidecar) -> None:
    async with sidecar(permission=queued_policy()) as run:
        sid = (await run.new_session("permissions", allowedTools=["Write"]))["sessionId"]
        result = await run.prompt(sid, "Write the files.")

        assert result["stopReason"] == "end_turn"
        assert run.permission_requests == []
        for name in ("once.txt", "rejected.txt", "always.txt", "again.txt"):
            assert (run.project / name).exists()


async def test_two_sessions_run_at_once_with_their_own_events_and_answers(sidecar) -> None:
    both_asked = anyio.Event()
    pending: list[str] = []
    sessions: dict[str, str] = {}

    async def policy(params: dict[str, Any]) -> str:
        # Hold every answer until both sessions are waiting on one: proves the turns overlap.
        pending.append(params["sessionId"])
        if len(pending) == 2:
            both_asked.set()
        with anyio.fail_after(EVENT_WAIT_S):
            await both_asked.wait()
        return "allow_once" if sessions[params["sessionId"]] == "alpha" else "reject_once"

    async with sidecar(permission=policy) as run:
        alpha = (await run.new_session("pair"))["sessionId"]
        beta = (await run.new_session("pair"))["sessionId"]
        sessions.update({alpha: "alpha", beta: "beta"})
        results: dict[str, dict[str, Any]] = {}

        async def prompt(sid: str, text: str) -> None:
            results[sid] = await run.prompt(sid, text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt, alpha, "Please do the alpha-task.")
            tg.start_soon(prompt, beta, "Please do the beta-task.")

        assert sorted(pending) == sorted([alpha, beta])
        assert results[alpha]["resultText"] == "alpha finished"
        assert results[beta]["resultText"] == "The write was rejected."
        assert (run.project / "alpha.txt").read_text() == "alpha\n"
        assert not (run.project / "beta.txt").exists()
        for sid, name in ((alpha, "alpha"), (beta, "beta")):
            [call] = run.updates(sid, "tool_call")
            assert call["input"]["file_path"].endswith(f"{name}.txt")
            [request] = [r for r in run.permission_requests if r["sessionId"] == sid]
            assert request["toolUseId"] == call["toolUseId"]
            texts = "".join(u["text"] for u in run.updates(sid, "agent_message_chunk"))
            other = "beta" if name == "alpha" else "alpha"
            assert f"Writing {name}." in texts and f"Writing {other}." not in texts
            # Every hook event of this session concerns this session's tool call only.
            tool_ids = {h["toolUseId"] for h in run.named("hook_started", sid) if h["event"] == "PreToolUse"}
            assert tool_ids == {call["toolUseId"]}
