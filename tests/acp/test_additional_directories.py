"""A client's other workspace folders (ACP `additionalDirectories`, a multi-root workspace) reach the session,
through the official ACP Python SDK: the CLI works in them (`--add-dir`) and the session's boundary lets it write
there, with the same read-only places inside as the project; a folder that holds what the boundary hides is
refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp import RequestError, text_block

from sidecar.sandbox import backend_problem
from tests.acp.conftest import RecordingClient, acp_sidecar, project
from tests.security.box_helpers import visible_outside

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


async def test_a_second_root_is_worked_in_and_its_hook_machinery_stays_read_only(tmp_path: Path) -> None:
    project_dir = project(tmp_path, "notes")
    with visible_outside("orion-root-") as other:
        (other / ".git" / "hooks").mkdir(parents=True)
        scenario = tmp_path / "roots.json"
        scenario.write_text(json.dumps({"turns": [
            [{"tool_use": {"name": "Write", "input": {"file_path": str(other / "shared.txt"), "content": "from A\n"}}}],
            [{"tool_use": {"name": "Bash", "input": {"command": f"echo planted > {other}/.git/hooks/pre-commit; "
                                                                "echo probe-done", "description": "a git hook"}}}],
            "Done.",
        ], "default": "Done."}))
        client = RecordingClient(answer=lambda request: "allow_once")
        async with acp_sidecar(client, tmp_path) as (conn, init):
            assert init.agent_capabilities.session_capabilities.additional_directories is not None
            session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], additional_directories=[str(other)],
                                             orion={"model": f"scripted:{scenario}", "builtinHooks": False})
            result = await conn.prompt(session_id=session.session_id, prompt=[text_block("share it")])
            assert result.stop_reason == "end_turn"
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                       additional_directories=[os.environ["HOME"]], orion={"model": "scripted:basic"})
        assert (other / "shared.txt").read_text() == "from A\n"
        boxed = backend_problem(os.environ.get("PATH")) is None
        if boxed:
            assert not (other / ".git" / "hooks" / "pre-commit").exists()  # what runs later, outside: read-only
    if boxed:
        assert "cannot be a workspace folder" in str(refused.value) and refused.value.data == {"reason": "sandboxUnavailable"}
