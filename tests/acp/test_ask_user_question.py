"""The model's AskUserQuestion reaches an ACP client that shows forms as a form (`elicitation/create`), through the
official ACP Python SDK: the client answers, and the model reads the user's answers in the tool's result, as
Claude Code's own dialog gives them. A client without forms still gets a permission request, as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process, text_block
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
)

from tests.acp.conftest import RecordingClient, child_env, project
from tests.acp.test_python_sdk_client import model_requests
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

QUESTIONS = {"questions": [
    {"question": "Which database should the service use?", "header": "Database", "multiSelect": False,
     "options": [{"label": "PostgreSQL", "description": "relational, the team knows it"},
                 {"label": "SQLite", "description": "one file, no server"}]},
    {"question": "Which checks should run before a merge?", "header": "Checks", "multiSelect": True,
     "options": [{"label": "unit tests", "description": "fast"}, {"label": "lint", "description": "style"},
                 {"label": "e2e", "description": "slow"}]},
]}


class FormClient(RecordingClient):
    """A client that shows forms: it records each one and answers as its user would."""

    def __init__(self, reply: Any) -> None:
        super().__init__(answer=lambda request: "allow_once")
        self.forms: list[dict[str, Any]] = []
        self.reply = reply

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.forms.append({"message": message, **mode.model_dump(by_alias=True, exclude_none=True)})
        return self.reply


def scenario(tmp_path: Path) -> str:
    path = tmp_path / "ask.json"
    path.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "AskUserQuestion", "input": QUESTIONS}}],
        "Noted, going with what you chose.",
    ], "default": "Done."}))
    return f"scripted:{path}"


async def run(client: RecordingClient, tmp_path: Path, forms: bool) -> Any:
    project_dir = project(tmp_path, "notes")
    capabilities = ClientCapabilities(
        elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if forms else None)
    # Elicitation is in ACP's unstable part: the SDK routes `elicitation/create` to a client that opts in.
    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT), use_unstable_protocol=True) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=capabilities)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": scenario(tmp_path)})
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("set the service up")])
        return session, result


def tool_result(tmp_path: Path) -> str:
    [_, second] = model_requests(tmp_path, "ask")[:2]
    blocks = [b for m in second["body"]["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
              if isinstance(b, dict) and b.get("type") == "tool_result"]
    return json.dumps(blocks[-1])


async def test_the_questions_reach_the_client_as_a_form_and_the_answers_reach_the_model(tmp_path: Path) -> None:
    reply = AcceptElicitationResponse(action="accept", content={"q0": "SQLite", "q1": ["unit tests", "lint"]})
    client = FormClient(reply)
    session, result = await run(client, tmp_path, forms=True)
    assert result.stop_reason == "end_turn"
    [form] = client.forms
    assert form["sessionId"] == session.session_id
    assert "Which database" in form["message"] and "Which checks" in form["message"]
    schema = form["requestedSchema"]
    assert schema["required"] == ["q0", "q1"]
    assert schema["properties"]["q0"]["enum"] == ["PostgreSQL", "SQLite"] and schema["properties"]["q0"]["title"] == "Database"
    assert schema["properties"]["q1"]["type"] == "array"
    assert schema["properties"]["q1"]["items"]["enum"] == ["unit tests", "lint", "e2e"]
    assert form.get("toolCallId")  # tied to the tool call the client was shown
    assert client.permission_requests == []  # a form, not an allow/reject question
    # The model reads the user's answers, in the CLI's words for them.
    seen = tool_result(tmp_path)
    assert "SQLite" in seen and "unit tests, lint" in seen, seen
    assert "did not answer" not in seen.lower()


async def test_a_declined_form_tells_the_model_so(tmp_path: Path) -> None:
    client = FormClient(DeclineElicitationResponse(action="decline"))
    _, result = await run(client, tmp_path, forms=True)
    assert result.stop_reason == "end_turn" and len(client.forms) == 1
    assert "declined to answer" in tool_result(tmp_path)


async def test_a_client_without_forms_is_asked_for_permission_as_before(tmp_path: Path) -> None:
    client = FormClient(None)
    _, result = await run(client, tmp_path, forms=False)
    assert result.stop_reason == "end_turn"
    assert client.forms == [] and len(client.permission_requests) == 1
    assert client.permission_requests[0]["toolCall"]["rawInput"]["questions"][0]["header"] == "Database"
