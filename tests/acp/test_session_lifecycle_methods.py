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


def transcript_prompts(path: Path) -> list[str]:
    """The user's typed prompts in a CLI transcript, in order."""
    import json

    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "user" and isinstance(message.get("content"), str):
            out.append(message["content"])
    return out


async def test_fork_goes_on_from_a_copy_and_leaves_the_original_as_it_was(tmp_path: Path, sdk_errors: list) -> None:
    from sidecar.sessions import cli_transcript

    project_dir = project(tmp_path)
    client = RecordingClient()
    data = Path(os.environ["ORION_DATA_DIR"])

    def transcript(home: str, sid: str) -> Path:
        return cli_transcript(data / "cli-home" / home / ".claude", project_dir, sid)  # a scripted session's home

    async with acp_sidecar(client, tmp_path) as (conn, init):
        assert init.agent_capabilities.session_capabilities.fork is not None
        await trust(conn, project_dir)
        source = (await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})).session_id
        await conn.prompt(session_id=source, prompt=[text_block("remember the blue door")])

        # a live session forks: the copy goes on from its conversation, under an id of its own
        fork = (await conn.fork_session(session_id=source, cwd=str(project_dir), mcp_servers=[])).session_id
        assert fork != source
        starts = [c for c in hook_calls(project_dir) if c["event"] == "SessionStart"]
        assert [c["source"] for c in starts] == ["startup", "resume"]  # a fork starts as a resumed conversation
        await conn.prompt(session_id=fork, prompt=[text_block("which door?")])
        await conn.prompt(session_id=source, prompt=[text_block("the original goes on")])
        assert transcript_prompts(transcript(fork, fork)) == ["remember the blue door", "which door?"]
        assert transcript_prompts(transcript(source, source)) == ["remember the blue door", "the original goes on"]
        listed = {s.session_id: s.title for s in (await conn.list_sessions(cwd=str(project_dir))).sessions}
        assert listed[fork] == listed[source] == "remember the blue door"

        # an ended one forks too (from the conversation Orion kept), and a session never prompted has nothing to fork
        await conn.close_session(session_id=source)
        again = (await conn.fork_session(session_id=source, cwd=str(project_dir), mcp_servers=[])).session_id
        await conn.prompt(session_id=again, prompt=[text_block("and from the end")])
        assert transcript_prompts(transcript(again, again)) == ["remember the blue door", "the original goes on",
                                                                "and from the end"]
        empty = (await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})).session_id
        with pytest.raises(Exception) as refused:
            await conn.fork_session(session_id=empty, cwd=str(project_dir), mcp_servers=[])
        assert "never prompted" in str(refused.value)
        with pytest.raises(Exception) as unknown:
            await conn.fork_session(session_id="no-such-session", cwd=str(project_dir), mcp_servers=[])
        assert "no session" in str(unknown.value)
    assert sdk_errors == []


async def test_the_settings_page_edits_hooks_through_acp_extension_methods(tmp_path: Path, sdk_errors: list) -> None:
    """The hooks API over ACP (`_orion/hooks/settings`, `_orion/hooks/add`, `_orion/hooks/remove`): advertised in
    the handshake, a project edit waits for review, and a stale digest gets Orion's own code."""
    from acp.exceptions import RequestError

    project_dir = project(tmp_path)
    hook = {"type": "command", "name": "from-an-editor", "command": "printf hi"}
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        assert {"_orion/hooks/settings", "_orion/hooks/add", "_orion/hooks/update", "_orion/hooks/remove",
                "_orion/hooks/enable"} <= set(init.field_meta["orion"]["methods"])
        await trust(conn, project_dir)
        read = await conn.ext_method("orion/hooks/settings", {"target": "project", "projectDir": str(project_dir)})
        added = await conn.ext_method("orion/hooks/add", {"target": "project", "projectDir": str(project_dir),
                                                          "digest": read["digest"], "event": "Stop", "hook": hook})
        assert added["trusted"] is False and added["at"]["event"] == "Stop"
        with pytest.raises(RequestError) as stale:
            await conn.ext_method("orion/hooks/remove", {"target": "project", "projectDir": str(project_dir),
                                                         "digest": read["digest"], "at": added["at"]})
        assert stale.value.code == -31008
        await conn.ext_method("orion/hooks/remove", {"target": "project", "projectDir": str(project_dir),
                                                     "digest": added["digest"], "at": added["at"]})
        listed = await conn.ext_method("orion/hooks/list", {"projectDir": str(project_dir)})
        assert "from-an-editor" not in {h["name"] for h in listed["hooks"]}
    assert sdk_errors == []
