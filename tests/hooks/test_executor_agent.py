"""agent hooks at the model seam: read-only tools, turn limits, project directory, verdicts and deadlines."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hooks.config import AgentHookConfig
from hooks.executors.agent import AgentExecutor, turn_limit
from tests.hooks.test_executor_prompt import FakeModelClient, make_call


def agent_hook(**extra) -> AgentHookConfig:
    return AgentHookConfig(type="agent", prompt="Verify the tests pass before stopping: $ARGUMENTS", **extra)


async def run(client: FakeModelClient, call, **kwargs):
    with anyio.fail_after(10):
        return await AgentExecutor(client, **kwargs).run(call)


@pytest.mark.asyncio
async def test_subagent_gets_read_only_tools_the_project_dir_and_ten_turns(tmp_path: Path) -> None:
    client = FakeModelClient('{"ok": true, "reason": "tests pass"}')
    report = await run(client, make_call(agent_hook(), event="Stop", project_dir=tmp_path, timeout_s=60))
    assert report.status == "ok" and not report.blocking_error and report.output is None
    [call] = client.calls
    assert call["kind"] == "agent"
    assert call["tools"] == ["Read", "Grep", "Glob"]
    assert call["cwd"] == tmp_path
    assert call["max_turns"] == 10
    assert call["timeout_s"] == 60
    assert '"ok"' in call["system"] and "read-only" in call["system"]


@pytest.mark.asyncio
async def test_ok_false_on_stop_blocks_with_the_reason() -> None:
    client = FakeModelClient('I read the log.\n{"ok": false, "reason": "2 tests fail in test_api.py"}')
    report = await run(client, make_call(agent_hook(), event="Stop"))
    assert report.status == "ok" and report.blocking_error
    # Claude Code 2.1.330's words for an agent hook's "no" (its hook runner); the turn goes on either way
    worded = "Agent hook condition was not met: 2 tests fail in test_api.py"
    assert report.output.to_json_dict() == {"decision": "block", "reason": worded}


@pytest.mark.asyncio
async def test_ok_false_on_pre_tool_use_denies() -> None:
    client = FakeModelClient('{"ok": false, "reason": "no migration file"}')
    report = await run(client, make_call(agent_hook(), event="PreToolUse"))
    assert report.output.hookSpecificOutput.permissionDecision == "deny"
    assert report.output.hookSpecificOutput.permissionDecisionReason == \
        "Agent hook condition was not met: no migration file"
    assert report.output.continue_ is None and report.blocking_error


@pytest.mark.asyncio
async def test_malformed_answer_is_a_hook_error() -> None:
    report = await run(FakeModelClient("I could not decide."), make_call(agent_hook(), event="Stop"))
    assert report.status == "error" and "I could not decide." in report.error


@pytest.mark.asyncio
async def test_deadline_cancels_the_subagent() -> None:
    client = FakeModelClient(hang=True)
    report = await run(client, make_call(agent_hook(), event="Stop", timeout_s=0.2))
    assert report.status == "timeout"
    assert client.cancelled


@pytest.mark.asyncio
async def test_max_turns_and_model_come_from_the_hook() -> None:
    client = FakeModelClient()
    await run(client, make_call(agent_hook(maxTurns=3, model="claude-sonnet-x"), event="Stop"))
    assert (client.calls[0]["max_turns"], client.calls[0]["model"]) == (3, "claude-sonnet-x")


def test_turn_limit_defaults_to_ten_and_caps_at_fifty() -> None:
    assert [turn_limit(None), turn_limit(1), turn_limit(50), turn_limit(500), turn_limit(0), turn_limit(True)] == [
        10, 1, 50, 50, 1, 10,
    ]
