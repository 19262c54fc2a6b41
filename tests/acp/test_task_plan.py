"""The agent's task list reaches the client as ACP `plan` updates (issue 25: the plan was built from TodoWrite,
which the bundled CLI refuses in an SDK session, so an editor showed a plan only for calls that failed). The CLI's
Task tools (TaskCreate, TaskUpdate) on the real CLI; each update is the whole list as the CLI confirmed it, and a
session loaded in a new sidecar replays the same plans where they happened. (The CLI offers its Task tools for
some models only, or when a session's allowedTools names them, as here; where it does not, the agent keeps no list
and no plan is sent.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block

from tests.acp.conftest import RecordingClient, acp_sidecar, project

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


def scenario(tmp_path: Path) -> str:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "TaskCreate", "input": {"subject": "Write the notes", "description": "notes.txt"}}}],
        [{"tool_use": {"name": "TaskCreate", "input": {"subject": "Check the notes", "description": "read back"}}}],
        [{"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "in_progress"}}}],
        [{"tool_use": {"name": "TaskUpdate", "input": {"taskId": "9", "status": "completed"}}}],  # no such task
        [{"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}}],
        "Both tasks noted.",
    ], "default": "Done."}))
    return f"scripted:{path}"


def plans(client: RecordingClient) -> list[list[tuple[str, str]]]:
    return [[(e["content"], e["status"]) for e in u["entries"]] for u in client.of_kind("plan")]


async def test_the_task_tools_make_the_plan_live_and_when_the_session_is_loaded(tmp_path: Path,
                                                                               sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    live = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(live, tmp_path, events=False) as (conn, _init):
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": scenario(tmp_path), "builtinHooks": False,
                                                "allowedTools": ["TaskCreate", "TaskUpdate"]})
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("plan the notes")])
    assert result.stop_reason == "end_turn"
    expected = [
        [("Write the notes", "pending")],
        [("Write the notes", "pending"), ("Check the notes", "pending")],
        [("Write the notes", "in_progress"), ("Check the notes", "pending")],
        [("Write the notes", "completed"), ("Check the notes", "pending")],
    ]
    assert plans(live) == expected
    # each plan follows the result of the call that made it
    kinds = [u["sessionUpdate"] for _, u in live.updates if u["sessionUpdate"] in ("tool_call_update", "plan")]
    assert kinds[:2] == ["tool_call_update", "plan"]

    replayed = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(replayed, tmp_path, events=False) as (conn, _init):
        await conn.load_session(cwd=str(project_dir), session_id=session.session_id, mcp_servers=[])
    assert plans(replayed) == expected
    assert not sdk_errors
