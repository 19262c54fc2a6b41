"""Claude Code's plan approval through ACP, with the official ACP Python SDK as the client: in plan mode the agent's
ExitPlanMode reaches the client with the plan and the dialog's own choices; "Yes, and auto-accept edits" leaves
plan mode for acceptEdits (the client hears it, and the CLI writes without asking), "No, keep planning" keeps the
session in plan mode and tells the model so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp import spawn_agent_process, text_block
from acp.schema import ClientCapabilities

from tests.acp.conftest import RecordingClient, child_env, project
from tests.acp.test_python_sdk_client import model_requests
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

PLAN = "1. Write hello.txt with a greeting.\n2. Tell the user it is there."


def scenario(tmp_path: Path, project_dir: Path) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "ExitPlanMode", "input": {"plan": PLAN}}}],
        [{"tool_use": {"name": "Write", "input": {"file_path": str(project_dir / "hello.txt"), "content": "hi\n"}}}],
        "Done: hello.txt is there.",
    ], "default": "Done."}))
    return f"scripted:{path}"


async def run(tmp_path: Path, option: str) -> tuple[RecordingClient, Path, object]:
    project_dir = project(tmp_path, "notes")
    client = RecordingClient(answer=lambda request: option)
    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT)) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": scenario(tmp_path, project_dir), "builtinHooks": False})
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("plan a greeting")])
        assert result.stop_reason == "end_turn"
    return client, project_dir, result


async def test_an_approved_plan_is_shown_whole_and_leaves_plan_mode_for_accept_edits(tmp_path: Path) -> None:
    client, project_dir, _ = await run(tmp_path, "allow_always")
    [request] = client.permission_requests  # the Write that followed was not asked about: acceptEdits
    assert request["toolCall"]["title"] == "Ready to code?"
    assert request["toolCall"]["rawInput"]["plan"] == PLAN
    assert request["toolCall"]["content"][0]["content"]["text"] == PLAN
    assert [(o["optionId"], o["name"]) for o in request["options"]] == [
        ("allow_always", "Yes, and auto-accept edits"), ("allow_once", "Yes, and manually approve edits"),
        ("reject_once", "No, keep planning")]
    modes = [u["currentModeId"] for u in client.of_kind("current_mode_update")]
    assert modes[-1] == "acceptEdits", modes
    assert (project_dir / "hello.txt").read_text() == "hi\n"


async def test_keep_planning_stays_in_plan_mode_and_tells_the_model(tmp_path: Path) -> None:
    client, project_dir, _ = await run(tmp_path, "reject_once")
    assert len(client.permission_requests) >= 1
    assert client.permission_requests[0]["toolCall"]["title"] == "Ready to code?"
    assert [u["currentModeId"] for u in client.of_kind("current_mode_update")] == ["plan"]
    assert not (project_dir / "hello.txt").exists()  # still planning: the CLI's plan mode refused the Write
    second = json.dumps(model_requests(tmp_path, "plan")[1])
    assert "keep planning" in second or "doesn't want to proceed with this plan" in second
