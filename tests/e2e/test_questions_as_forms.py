"""The model's questions (AskUserQuestion) reach Orion's own frontend as a form, as they reach an ACP client
(`elicitation/create`): a frontend that said at `initialize` it shows forms gets them, and the model reads the
answers in the tool's result; one that did not gets the permission request, as before."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from frontend_stub.client import SidecarClient
from tests.e2e.conftest import REPO_ROOT, copy_project

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

QUESTIONS = {"questions": [
    {"question": "Which database should the service use?", "header": "Database", "multiSelect": False,
     "options": [{"label": "PostgreSQL", "description": "relational"}, {"label": "SQLite", "description": "a file"}]},
    {"question": "Which checks should run before a merge?", "header": "Checks", "multiSelect": True,
     "options": [{"label": "unit tests", "description": "fast"}, {"label": "lint", "description": "style"}]},
]}


async def ask(tmp_path: Path, capabilities: dict[str, Any] | None, reply: dict[str, Any]) -> tuple[list, str]:
    project = copy_project("notes", tmp_path)
    scenario = tmp_path / "ask.json"
    scenario.write_text(json.dumps({"turns": [[{"tool_use": {"name": "AskUserQuestion", "input": QUESTIONS}}],
                                              "Noted."], "default": "Done."}))
    asked: list[tuple[str, dict[str, Any]]] = []

    async def on_request(method: str, params: Any) -> dict[str, Any]:
        asked.append((method, params.model_dump(by_alias=True, exclude_none=True)))
        if method == "elicitation/create":
            return reply
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    log = tmp_path / "model-requests"
    env = {**os.environ, "ORION_SCRIPTED_LOG_DIR": str(log), "PYTHONPATH": str(REPO_ROOT)}
    async with SidecarClient.launch(env=env, cwd=str(REPO_ROOT), on_request=on_request,
                                    capabilities=capabilities) as client:
        sid = (await client.request("session/new", {"projectDir": str(project), "model": f"scripted:{scenario}"},
                                    timeout=60))["sessionId"]
        answer = await client.request("session/prompt", {"sessionId": sid, "prompt": "set the service up"}, timeout=60)
        assert answer["stopReason"] == "end_turn"
    requests = [json.loads(line) for line in (log / "ask.jsonl").read_text().splitlines()]
    results = [b for r in requests if r["has_tools"] for m in r["body"]["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    return asked, json.dumps(results[-1])


async def test_a_frontend_that_shows_forms_gets_the_questions_and_the_model_reads_the_answers(tmp_path: Path) -> None:
    asked, seen = await ask(tmp_path, {"elicitation": {"form": {}}},
                            {"action": "accept", "content": {"q0": "SQLite", "q1": ["unit tests", "lint"]}})
    [(method, form)] = asked
    assert method == "elicitation/create" and form["mode"] == "form" and form["toolCallId"]
    assert form["requestedSchema"]["properties"]["q0"]["enum"] == ["PostgreSQL", "SQLite"]
    assert "SQLite" in seen and "unit tests, lint" in seen, seen


async def test_a_frontend_without_forms_is_asked_for_permission_as_before(tmp_path: Path) -> None:
    asked, seen = await ask(tmp_path, None, {"action": "cancel"})
    assert [method for method, _ in asked] == ["session/request_permission"]
    assert "SQLite" not in seen
