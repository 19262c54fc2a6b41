"""ACP's session lifecycle beyond new/load/list, through the official ACP Python SDK: `session/close` ends a live
session (its SessionEnd hooks run) and leaves it listed; `session/resume` brings it back without replaying its
history; `session/delete` takes it off the list with what Orion kept of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import DeleteSessionRequest

from tests.acp.conftest import RecordingClient, acp_sidecar, model, project
from tests.acp.test_python_sdk_client import hook_calls, trust

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


async def test_close_resume_and_delete(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)  # the hooked project: SessionStart and SessionEnd hooks record their calls
    client = RecordingClient()
    data = Path(os.environ["ORION_DATA_DIR"])
    async with acp_sidecar(client, tmp_path) as (conn, init):
        caps = init.agent_capabilities.session_capabilities
        assert caps.close is not None and caps.delete is not None and caps.resume is not None
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hello there")])
        assert (data / "sessions" / sid).is_dir()

        await conn.close_session(session_id=sid)
        assert [c["reason"] for c in hook_calls(project_dir) if c["event"] == "SessionEnd"] == ["other"]
        listed = await conn.list_sessions(cwd=str(project_dir))
        assert [s.session_id for s in listed.sessions] == [sid]

        before = len(client.updates)
        await conn.resume_session(session_id=sid, cwd=str(project_dir), mcp_servers=[])
        replayed = [u for s, u in client.updates[before:] if s == sid and u["sessionUpdate"] == "user_message_chunk"]
        assert replayed == []  # resume, not load: the client already shows the history
        answer = await conn.prompt(session_id=sid, prompt=[text_block("and again")])
        assert answer.stop_reason == "end_turn"

        await conn._conn.send_request("session/delete", DeleteSessionRequest(session_id=sid).model_dump(
            by_alias=True, exclude_none=True))
        assert (await conn.list_sessions(cwd=str(project_dir))).sessions == []
        assert not (data / "sessions" / sid).exists() and not (data / "cli-home" / sid).exists()
        assert [c["reason"] for c in hook_calls(project_dir) if c["event"] == "SessionEnd"] == ["other", "other"]
    assert sdk_errors == []
