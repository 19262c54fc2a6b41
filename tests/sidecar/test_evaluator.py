"""prompt and agent hooks through the real Claude Code CLI and the scripted model: verdicts, malformed answers, deadlines, read-only tools."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from hooks.config import AgentHookConfig, PromptHookConfig
from hooks.executors.agent import AgentExecutor
from hooks.executors.prompt import PromptExecutor
from hooks.types import ExecutionReport
from sidecar import evaluator
from sidecar.evaluator import SdkModelClient
from sidecar.scripted_model import ScriptedModelServer, parse_scenario
from sidecar.scripted_model.scenario import content_text
from sidecar.sdk_env import offline_env
from tests.hooks.test_executor_prompt import make_call

pytestmark = pytest.mark.cli

# One rule per behaviour; rules match the text of the last user message (the rendered hook prompt).
VERDICT_RULES: list[dict[str, Any]] = [
    {"when": {"last_user_contains": "rm -rf"},
     "reply": 'It deletes files.\n```json\n{"ok": false, "reason": "rm -rf deletes the build tree"}\n```'},
    {"when": {"last_user_contains": "MALFORMED"}, "reply": "Looks fine to me, go ahead!"},
    {"when": {"last_user_contains": "git status"}, "reply": '{"ok": true, "reason": "read-only command"}'},
]

TEST_MARK_ENV = "ORION_TEST_EVALUATOR_MARK"


@dataclass
class Rig:
    server: ScriptedModelServer
    client: SdkModelClient
    mark: str

    def processes(self) -> list[int]:
        """Every live (non-zombie) process carrying this test's environment mark: the CLI and anything it started."""
        pids = []
        for proc in psutil.process_iter():
            try:
                if proc.environ().get(TEST_MARK_ENV) == self.mark and proc.status() != psutil.STATUS_ZOMBIE:
                    pids.append(proc.pid)
            except psutil.Error:
                continue
        return pids


@asynccontextmanager
async def rig(scenario: dict[str, Any], tmp_path: Path) -> AsyncIterator[Rig]:
    server = ScriptedModelServer(parse_scenario(scenario))
    async with server.running() as url:
        mark = os.urandom(8).hex()
        env = {**offline_env(url, tmp_path / "cli-home"), TEST_MARK_ENV: mark}
        yield Rig(server, SdkModelClient(env, None, tmp_path / "data"), mark)


@pytest.fixture
def killed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """pids hit by the evaluator's own deadline kill (not by the SDK's slower terminate-on-close)."""
    hit: list[int] = []
    real = evaluator.kill_marked_processes

    def recording(marker: str, since: float) -> list[psutil.Process]:
        victims = real(marker, since)
        hit.extend(p.pid for p in victims)
        return victims

    monkeypatch.setattr(evaluator, "kill_marked_processes", recording)
    return hit


def pre_tool(command: str) -> dict[str, Any]:
    return {
        "session_id": "s-1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "toolu_1",
    }


async def run_prompt_hook(r: Rig, command: str, *, timeout_s: float = 30) -> ExecutionReport:
    config = PromptHookConfig(type="prompt", prompt="Is this Bash command safe to run? $ARGUMENTS")
    call = make_call(config, payload=pre_tool(command), timeout_s=timeout_s)
    with anyio.fail_after(timeout_s + 30):
        return await PromptExecutor(r.client).run(call)


# --------------------------------------------------------------------------- prompt hooks


@pytest.mark.asyncio
async def test_prompt_hook_allows_through_the_cli(tmp_path: Path) -> None:
    async with rig({"rules": VERDICT_RULES}, tmp_path) as r:
        report = await run_prompt_hook(r, "git status")
        requests = list(r.server.requests)
    assert report.status == "ok", report.error
    assert not report.blocking_error and report.output is None
    [request] = [q for q in requests if q.answered_by.startswith("rule:")]
    assert request.body["model"] == "claude-haiku-4-5"
    assert not request.has_tools, "a prompt hook is a one-shot question with no tools"
    assert '{"ok": false, "reason":' in content_text(request.body["system"])
    assert '"tool_input": {"command": "git status"}' in content_text(request.body["messages"][-1]["content"])
    assert r.processes() == []


@pytest.mark.asyncio
async def test_prompt_hook_denies_with_the_models_reason(tmp_path: Path) -> None:
    async with rig({"rules": VERDICT_RULES}, tmp_path) as r:
        report = await run_prompt_hook(r, "rm -rf build")
    assert report.status == "ok"
    specific = report.output.hookSpecificOutput
    assert specific.permissionDecision == "deny"
    # Claude Code's words (the hook's prompt as written, then the reason), and the turn ends there
    assert specific.permissionDecisionReason == \
        "[Is this Bash command safe to run? $ARGUMENTS]: rm -rf deletes the build tree"
    assert report.output.continue_ is False


@pytest.mark.asyncio
async def test_prompt_hook_malformed_answer_is_a_hook_error(tmp_path: Path) -> None:
    async with rig({"rules": VERDICT_RULES}, tmp_path) as r:
        report = await run_prompt_hook(r, "echo MALFORMED")
    assert report.status == "error"
    assert "Looks fine to me, go ahead!" in report.error
    assert report.output is None


@pytest.mark.asyncio
async def test_prompt_hook_timeout_leaves_no_cli_process(tmp_path: Path, killed: list[int]) -> None:
    # The model streams one character every two seconds: it will not finish before the deadline.
    slow = {"rules": VERDICT_RULES, "text_chunk": 1, "delta_delay_ms": 2000}
    async with rig(slow, tmp_path) as r:
        seen: list[int] = []
        reports: list[ExecutionReport] = []

        async def hook() -> None:
            reports.append(await run_prompt_hook(r, "git status", timeout_s=20))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(hook)
                await r.server.wait_for_requests(1, timeout=30)
                seen.extend(r.processes())
        [report] = reports
        assert report.status == "timeout"
        assert seen, "the CLI was running while the model streamed"
        assert set(seen) <= set(killed), "the deadline itself killed the CLI"
        assert r.processes() == []


# --------------------------------------------------------------------------- agent hooks


def agent_rules(status_file: Path, forbidden: Path) -> list[dict[str, Any]]:
    return [
        {"when": {"last_tool_result_contains": "3 failed"},
         "reply": '{"ok": false, "reason": "3 tests failed in the last run"}'},
        {"when": {"last_tool_result_contains": "all passed"}, "reply": '{"ok": true, "reason": "tests pass"}'},
        {"when": {"tool_result_is_error": True},
         "reply": '{"ok": false, "reason": "could not use the tool"}'},
        {"when": {"last_user_contains": "try to write"},
         "reply": [{"tool_use": {"name": "Write", "input": {"file_path": str(forbidden), "content": "x"}}}]},
        {"when": {"last_user_contains": "Verify"},
         "reply": [{"tool_use": {"name": "Read", "input": {"file_path": str(status_file)}}}]},
    ]


async def run_agent_hook(r: Rig, project: Path, prompt: str, *, timeout_s: float = 60, **extra: Any) -> ExecutionReport:
    config = AgentHookConfig(type="agent", prompt=prompt, **extra)
    payload = {"session_id": "s-1", "hook_event_name": "Stop", "stop_hook_active": False}
    call = make_call(config, event="Stop", payload=payload, timeout_s=timeout_s, project_dir=project)
    with anyio.fail_after(timeout_s + 30):
        return await AgentExecutor(r.client).run(call)


@pytest.mark.asyncio
async def test_agent_hook_reads_the_project_and_blocks_stop(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    status = project / "TEST_STATUS.txt"
    status.write_text("pytest: 12 passed, 3 failed\n")
    async with rig({"rules": agent_rules(status, project / "forbidden.txt")}, tmp_path) as r:
        report = await run_agent_hook(r, project, "Verify the tests pass: $ARGUMENTS")
        main = r.server.main_requests()
    assert report.status == "ok", report.error
    assert report.blocking_error
    assert report.output.to_json_dict() == {
        "decision": "block", "reason": "Agent hook condition was not met: 3 tests failed in the last run"}
    offered = {tool["name"] for tool in main[0].body["tools"]}
    assert offered == {"Read", "Grep", "Glob"}


@pytest.mark.asyncio
async def test_agent_hook_allows_when_the_check_passes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    status = project / "TEST_STATUS.txt"
    status.write_text("pytest: all passed\n")
    async with rig({"rules": agent_rules(status, project / "forbidden.txt")}, tmp_path) as r:
        report = await run_agent_hook(r, project, "Verify the tests pass: $ARGUMENTS")
    assert report.status == "ok", report.error
    assert not report.blocking_error and report.output is None


@pytest.mark.asyncio
async def test_agent_hook_cannot_write(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    forbidden = project / "forbidden.txt"
    async with rig({"rules": agent_rules(project / "none.txt", forbidden)}, tmp_path) as r:
        report = await run_agent_hook(r, project, "Please try to write a file")
    assert not forbidden.exists()
    assert report.status == "ok", report.error
    assert report.output.reason == "Agent hook condition was not met: could not use the tool"


@pytest.mark.asyncio
async def test_agent_hook_turn_limit_is_a_hook_error(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # The model keeps globbing forever; two turns is all it gets.
    looping = {"default": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]}
    async with rig(looping, tmp_path) as r:
        report = await run_agent_hook(r, project, "Look around", maxTurns=2)
        main = r.server.main_requests()
    assert report.status == "error"
    assert "turn limit (2)" in report.error
    assert len(main) == 2


@pytest.mark.asyncio
async def test_agent_hook_timeout_leaves_no_process(tmp_path: Path, killed: list[int]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    slow = {"default": "x" * 100, "text_chunk": 1, "delta_delay_ms": 2000}
    async with rig(slow, tmp_path) as r:
        seen: list[int] = []
        reports: list[ExecutionReport] = []

        async def hook() -> None:
            reports.append(await run_agent_hook(r, project, "Verify slowly", timeout_s=20))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(hook)
                await r.server.wait_for_requests(1, timeout=30, main_only=True)
                seen.extend(r.processes())
        [report] = reports
        assert report.status == "timeout"
        assert seen
        assert set(seen) <= set(killed), "the deadline itself killed the subagent"
        assert r.processes() == []
