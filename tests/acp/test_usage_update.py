"""After each prompt an ACP client hears how full the conversation is and what the session has cost
(`usage_update`), and once, after the first, the session's title (`session_info_update`), through the official
ACP Python SDK: the tokens of the last model request, the model's context window as the CLI reports it, the cost
in USD; the title as `session/list` shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp import text_block

from tests.acp.conftest import RecordingClient, acp_sidecar, project
from tests.acp.test_python_sdk_client import model_requests

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]


async def test_each_answered_prompt_is_followed_by_a_usage_update(tmp_path: Path, sdk_errors: list) -> None:
    # Each reply reports the usage a real model would: the second request carries the first exchange.
    scenario = tmp_path / "growing.json"
    scenario.write_text(json.dumps({"turns": [
        {"content": [{"text": "Hello."}], "usage": {"input_tokens": 1200, "cache_read_input_tokens": 3000,
                                                    "output_tokens": 40}},
        {"content": [{"text": "Again."}], "usage": {"input_tokens": 1300, "cache_read_input_tokens": 3000,
                                                    "output_tokens": 30}},
    ]}))
    client = RecordingClient()
    project_dir = project(tmp_path, "notes")
    async with acp_sidecar(client, tmp_path) as (conn, _):
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": f"scripted:{scenario}"})
        answers = [await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
                   for text in ("hello", "and again")]
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    updates = client.of_kind("usage_update")
    assert len(updates) == 2, client.kinds()
    first, second = updates
    assert first["size"] >= 100_000 and first["size"] == second["size"]  # the model's window, as the CLI knows it
    # `used` is the last request's context: what the model read (fresh and cached), plus its answer as far as the
    # CLI had counted it when the message arrived (the stream's final output count comes after).
    assert 1200 + 3000 <= first["used"] <= 1200 + 3000 + 40
    assert 1300 + 3000 <= second["used"] <= 1300 + 3000 + 30 and second["used"] > first["used"]
    assert first["cost"]["currency"] == "USD" and second["cost"]["amount"] >= first["cost"]["amount"] >= 0
    assert len(model_requests(tmp_path, "growing")) >= 2
    [info] = client.of_kind("session_info_update")  # named once, by its first prompt
    assert info["title"] == "hello" and info["updatedAt"]
    assert sdk_errors == []
