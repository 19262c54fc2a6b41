"""An MCP server's question (an elicitation) reaches the ACP client's user as a form (issue 25: it was answered
"cancel" unless a hook answered it): the client's answer goes back to the server, as Claude Code's own dialog's
would. A client without forms still gets "cancel", and an Elicitation hook's answer still comes first."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process, text_block
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    McpServerStdio,
)

from tests.acp.conftest import RecordingClient, child_env, project
from tests.acp.test_python_sdk_client import model_requests
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

PROBE = REPO_ROOT / "tests" / "conformance" / "mcp_probe.py"
QUESTION = "Which colour should the report use?"


class FormClient(RecordingClient):
    def __init__(self) -> None:
        super().__init__(answer=lambda request: "allow_once")
        self.forms: list[dict[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.forms.append({"message": message, **mode.model_dump(by_alias=True, exclude_none=True)})
        return AcceptElicitationResponse(action="accept", content={"colour": "teal"})


async def ask_through_the_server(client: RecordingClient, tmp_path: Path, forms: bool) -> str:
    """One turn whose tool asks the user through the probe MCP server; what the tool answered the model."""
    project_dir = project(tmp_path, "notes")
    server_dir = project_dir / "probe"  # the server runs in the session's box: the project is what it sees
    server_dir.mkdir()
    shutil.copy(PROBE, server_dir / "mcp_probe.py")
    scenario = tmp_path / "elicit.json"
    scenario.write_text(json.dumps({"turns": [[{"tool_use": {"name": "mcp__probe__ask", "input": {}}}], "Noted."],
                                    "default": "Done."}))
    capabilities = ClientCapabilities(
        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if forms else None)
    probe = McpServerStdio(name="probe", command=sys.executable, args=[str(server_dir / "mcp_probe.py")], env=[])
    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=capabilities)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[probe],
                                         orion={"model": f"scripted:{scenario}", "builtinHooks": False})
        deadline = time.monotonic() + 60  # the CLI does not wait for MCP servers: the tool must be there first
        while not (server_dir / "mcp-ready").exists():
            assert time.monotonic() < deadline, "the probe MCP server never listed its tools"
            time.sleep(0.1)
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("pick a colour")])
    assert result.stop_reason == "end_turn"
    [_, second] = model_requests(tmp_path, "elicit")[:2]
    blocks = [b for m in second["body"]["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
              if isinstance(b, dict) and b.get("type") == "tool_result"]
    return json.dumps(blocks[-1])


async def test_an_mcp_servers_question_is_the_clients_form_and_its_answer_reaches_the_server(tmp_path: Path) -> None:
    client = FormClient()
    said = await ask_through_the_server(client, tmp_path, forms=True)
    [form] = client.forms
    assert form["message"] == QUESTION and "url" not in form
    assert form["requestedSchema"]["properties"] == {"colour": {"type": "string"}}
    assert 'elicitation: accept {\\"colour\\": \\"teal\\"}' in said, said


async def test_a_client_without_forms_leaves_the_server_a_cancel(tmp_path: Path) -> None:
    said = await ask_through_the_server(RecordingClient(answer=lambda request: "allow_once"), tmp_path, forms=False)
    assert "elicitation: cancel" in said, said
