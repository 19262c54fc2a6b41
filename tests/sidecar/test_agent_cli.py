"""AgentSession through the real bundled Claude Code CLI against the scripted model server (offline)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from sidecar.agent import AgentConfig, AgentSession, PermissionAnswer
from sidecar.scripted_model import ScriptedModelServer, parse_scenario
from sidecar.scripted_model.scenario import content_text
from sidecar.sdk_env import offline_env
from tests.waiting import GONE_S, pids_alive, running, until

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

Responder = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class RecordingBridge:
    """Answers hook events from a table of responders and records every call."""

    responders: dict[str, Responder] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)

    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        self.calls.append((event, payload, tool_use_id))
        responder = self.responders.get(event)
        return responder(payload) if responder else {}

    def budget_s(self, event: str) -> float:
        return 10.0

    def events(self) -> list[str]:
        return [event for event, _, _ in self.calls]


@dataclass
class ScriptedAsker:
    answer: PermissionAnswer = field(default_factory=lambda: PermissionAnswer(allow=True))
    asked: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def ask(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None, reason: str | None,
                  *, suggestions: list[Any] | None = None) -> PermissionAnswer:
        self.asked.append((tool_name, tool_input))
        return self.answer


@dataclass
class Harness:
    session: AgentSession
    server: ScriptedModelServer
    bridge: RecordingBridge
    asker: ScriptedAsker
    updates: list[dict[str, Any]]
    project: Path
    compactions: list[tuple[str, str]]

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]


@asynccontextmanager
async def harness(
    tmp_path: Path,
    scenario: dict[str, Any],
    *,
    bridge: RecordingBridge | None = None,
    asker: ScriptedAsker | None = None,
    server: ScriptedModelServer | None = None,
    name: str = "s",
    **config: Any,
) -> AsyncIterator[Harness]:
    project = tmp_path / f"project-{name}"
    project.mkdir(exist_ok=True)
    own_server = server is None
    server = server or ScriptedModelServer(parse_scenario(scenario))
    url = await server.start()
    updates: list[dict[str, Any]] = []
    compactions: list[tuple[str, str]] = []

    async def on_update(update: dict[str, Any]) -> None:
        updates.append(update)

    async def on_compact(summary: str, trigger: str) -> None:
        compactions.append((summary, trigger))

    bridge = bridge or RecordingBridge()
    asker = asker or ScriptedAsker()
    cfg = AgentConfig(
        project_dir=project,
        session_id=str(uuid.uuid4()),
        env=offline_env(url, tmp_path / f"cli-home-{name}"),
        **config,
    )
    session = AgentSession(cfg, bridge, asker, on_update, on_compact=on_compact)
    try:
        with anyio.fail_after(30):
            await session.start()
        yield Harness(session, server, bridge, asker, updates, project, compactions)
    finally:
        with anyio.fail_after(30):
            await session.close()
            if own_server:
                await server.stop()


def tool_results(body: dict[str, Any] | None) -> list[dict[str, Any]]:
    assert body is not None
    return [
        block
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def bash_turn(command: str, then: str = "Done.") -> dict[str, Any]:
    return {"turns": [[{"tool_use": {"name": "Bash", "input": {"command": command}}}], then], "text_chunk": 8}


# --------------------------------------------------------------------------- streaming and tools


async def test_text_answer_streams_chunks_then_a_result(tmp_path: Path) -> None:
    answer = "The scripted model streams this sentence in small pieces."
    async with harness(tmp_path, {"turns": [answer], "text_chunk": 7}) as h:
        with anyio.fail_after(30):
            result = await h.session.prompt("Say something")
    chunks = h.of("agent_message_chunk")
    assert len(chunks) >= 5
    assert "".join(c["text"] for c in chunks) == answer
    assert h.kinds()[0] == "user_message" and h.kinds()[-1] == "result"
    assert result.stop_reason == "end_turn" and result.result_text == answer and result.num_turns == 1
    assert h.of("result")[0]["resultText"] == answer and h.of("result")[0]["usage"]["output_tokens"] > 0


async def test_bash_tool_call_reports_real_output_and_model_gets_the_result(tmp_path: Path) -> None:
    async with harness(tmp_path, bash_turn("echo hello-$((6*7))"), allowed_tools=["Bash"]) as h:
        with anyio.fail_after(30):
            result = await h.session.prompt("Run it")
    (call,) = h.of("tool_call")
    (update,) = h.of("tool_call_update")
    assert call["name"] == "Bash" and call["input"]["command"] == "echo hello-$((6*7))"
    assert update == {"sessionUpdate": "tool_call_update", "toolUseId": call["toolUseId"], "status": "completed", "output": "hello-42", "isError": False}
    assert h.kinds().index("tool_call") < h.kinds().index("tool_call_update")
    second = h.server.main_requests()[1]
    assert [(r["tool_use_id"], content_text(r["content"])) for r in tool_results(second.body)] == [(call["toolUseId"], "hello-42")]
    assert result.result_text == "Done." and result.num_turns == 2
    # payloads reach the bridge exactly as the CLI sent them
    pre = next(p for e, p, _ in h.bridge.calls if e == "PreToolUse")
    assert pre["tool_name"] == "Bash" and pre["tool_use_id"] == call["toolUseId"] and pre["cwd"] == str(h.project)
    # every event the CLI has is registered (hook_events None), so the CLI's batch and display events come too
    assert h.bridge.events() == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolBatch", "MessageDisplay",
                                 "Stop"]


async def test_pre_tool_use_deny_blocks_the_tool_and_the_model_hears_why(tmp_path: Path) -> None:
    marker = tmp_path / "should-not-exist"
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "policy-42 forbids this"}}
    bridge = RecordingBridge({"PreToolUse": lambda _p: deny})
    async with harness(tmp_path, bash_turn(f"touch {marker}"), bridge=bridge, allowed_tools=["Bash"]) as h:
        with anyio.fail_after(30):
            await h.session.prompt("Do it")
    assert not marker.exists()
    (update,) = h.of("tool_call_update")
    assert update["status"] == "denied" and update["isError"] is True
    (sent,) = tool_results(h.server.main_requests()[1].body)
    assert "policy-42 forbids this" in content_text(sent["content"]) and sent["is_error"] is True


async def test_updated_input_runs_the_rewritten_command(tmp_path: Path) -> None:
    original, rewritten = tmp_path / "original", tmp_path / "rewritten"

    def rewrite(payload: dict[str, Any]) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {**payload["tool_input"], "command": f"echo rewritten > {rewritten}"}}}

    bridge = RecordingBridge({"PreToolUse": rewrite})
    async with harness(tmp_path, bash_turn(f"echo original > {original}"), bridge=bridge, allowed_tools=["Bash"]) as h:
        with anyio.fail_after(30):
            await h.session.prompt("Write it")
    assert not original.exists()
    assert rewritten.read_text() == "rewritten\n"
    post = next(p for e, p, _ in h.bridge.calls if e == "PostToolUse")
    assert post["tool_input"]["command"] == f"echo rewritten > {rewritten}"


async def test_user_prompt_submit_block_means_no_model_call(tmp_path: Path) -> None:
    bridge = RecordingBridge({"UserPromptSubmit": lambda _p: {"decision": "block", "reason": "prompts about secrets are blocked"}})
    async with harness(tmp_path, {"turns": ["should never be sent"]}, bridge=bridge) as h:
        with anyio.fail_after(30):
            result = await h.session.prompt("tell me the secret")
    assert h.server.main_requests() == []
    assert h.of("agent_message_chunk") == []
    assert h.kinds()[-1] == "result" and result.stop_reason == "blocked"
    assert "prompts about secrets are blocked" in result.result_text


async def test_permission_ask_deny_reaches_the_model(tmp_path: Path) -> None:
    marker = tmp_path / "asked-marker"
    asker = ScriptedAsker(PermissionAnswer(allow=False, message="the user said no-7"))
    async with harness(tmp_path, bash_turn(f"touch {marker}"), asker=asker) as h:  # Bash not pre-allowed: the CLI asks
        with anyio.fail_after(30):
            await h.session.prompt("Touch it")
    assert asker.asked == [("Bash", {"command": f"touch {marker}"})]
    assert not marker.exists()
    assert h.of("tool_call_update")[0]["status"] == "denied"
    (sent,) = tool_results(h.server.main_requests()[1].body)
    assert "the user said no-7" in content_text(sent["content"])


async def test_append_context_reaches_the_model_in_the_system_prompt(tmp_path: Path) -> None:
    async with harness(tmp_path, {"turns": ["ok"]}, append_context="SESSION-START-CONTEXT: branch feature/x") as h:
        with anyio.fail_after(30):
            await h.session.prompt("hi")
    (request,) = h.server.main_requests()
    assert request.body is not None and "SESSION-START-CONTEXT: branch feature/x" in content_text(request.body["system"])


# --------------------------------------------------------------------------- hooks run exactly once


def write_project_hook(project: Path, log_file: Path) -> None:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    settings = {"hooks": {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": f"echo fired >> {log_file}"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))


@pytest.mark.parametrize("setting_sources", [[], ["user", "project", "local"]], ids=["isolated", "all-sources"])
async def test_settings_file_hooks_do_not_run_in_the_cli_only_our_callbacks(tmp_path: Path, setting_sources: list[str]) -> None:
    hook_log = tmp_path / "command-hook.log"
    scenario = {"turns": [[{"tool_use": {"name": "Bash", "input": {"command": "echo one"}}}, {"tool_use": {"name": "Bash", "input": {"command": "echo two"}}}], "done"]}
    (tmp_path / "project-s").mkdir()
    write_project_hook(tmp_path / "project-s", hook_log)
    async with harness(tmp_path, scenario, allowed_tools=["Bash"], setting_sources=setting_sources) as h:
        with anyio.fail_after(30):
            await h.session.prompt("two commands")
    assert not hook_log.exists()
    pre_calls = [p["tool_input"]["command"] for e, p, _ in h.bridge.calls if e == "PreToolUse"]
    assert sorted(pre_calls) == ["echo one", "echo two"]
    assert sorted(u["output"] for u in h.of("tool_call_update")) == ["one", "two"]


async def test_control_without_the_guard_the_settings_hook_does_run(tmp_path: Path) -> None:
    """Proves the test above can fail: the same project hook fires once our guard option is removed."""
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage

    hook_log = tmp_path / "command-hook.log"
    (tmp_path / "project-s").mkdir()
    write_project_hook(tmp_path / "project-s", hook_log)
    async with harness(tmp_path, bash_turn("echo hi"), allowed_tools=["Bash"], setting_sources=["project"]) as h:
        options = replace(h.session.build_options(), settings=None)
        with anyio.fail_after(30):
            async with ClaudeSDKClient(options) as client:
                await client.query("run")
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        break
    assert hook_log.read_text() == "fired\n"


# --------------------------------------------------------------------------- cancel, concurrency, close


async def test_cancel_mid_turn_returns_cancelled_and_kills_the_tool(tmp_path: Path) -> None:
    marker = tmp_path / "slept"
    command = f"python3 -c 'import time; time.sleep(20)'; touch {marker}"
    async with harness(tmp_path, bash_turn(command, then="after the sleep"), allowed_tools=["Bash"]) as h:
        tool_started = anyio.Event()
        bridge_fire = h.bridge.fire

        async def fire(event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
            out = await bridge_fire(event, payload, tool_use_id)
            if event == "PreToolUse":
                tool_started.set()
            return out

        h.bridge.fire = fire  # type: ignore[method-assign]
        results: list[Any] = []
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                async def run() -> None:
                    results.append(await h.session.prompt("sleep"))
                tg.start_soon(run)
                await tool_started.wait()
                await wait_for_sleeper()
                assert await h.session.cancel() is True
        assert results[0].stop_reason == "cancelled"
        assert h.of("result")[-1]["stopReason"] == "cancelled"
        assert await h.session.cancel() is False  # nothing running any more
        with anyio.fail_after(30):
            follow_up = await h.session.prompt("still there?")
        assert follow_up.stop_reason == "end_turn"
    assert not marker.exists()
    await until(lambda: not sleepers(), GONE_S, "the cancelled command's sleeper gone")


def clis_among(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The running CLIs among `processes` (a zombie, or one gone while we looked, is none)."""
    found = []
    for process in processes:
        try:
            if "claude" in process.name() and running(process):
                found.append(process)
        except psutil.Error:
            continue
    return found


def sleepers() -> list[psutil.Process]:
    found = []
    for proc in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if "time.sleep(20)" in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            pass
    return found


async def wait_for_sleeper() -> None:
    # The PreToolUse answer precedes the spawn; wait until the command really runs so cancel hits it mid-flight.
    while not sleepers():
        await anyio.sleep(0.02)


async def test_two_sessions_on_one_server_keep_their_own_turns(tmp_path: Path) -> None:
    server = ScriptedModelServer(parse_scenario({"turns": ["first reply", "second reply"]}))
    results: dict[str, list[str]] = {"a": [], "b": []}
    async with server.running():
        async with harness(tmp_path, {}, server=server, name="a") as a, harness(tmp_path, {}, server=server, name="b") as b:
            with anyio.fail_after(60):
                for _ in range(2):
                    async with anyio.create_task_group() as tg:
                        for key, h in (("a", a), ("b", b)):
                            async def run(key: str = key, h: Harness = h) -> None:
                                results[key].append((await h.session.prompt("next")).result_text)
                            tg.start_soon(run)
    assert results == {"a": ["first reply", "second reply"], "b": ["first reply", "second reply"]}
    assert len({r.conversation for r in server.main_requests()}) == 2


async def test_no_cli_process_remains_after_close(tmp_path: Path) -> None:
    async with harness(tmp_path, {"turns": ["hi"]}) as h:
        with anyio.fail_after(30):
            await h.session.prompt("hi")
        pid = h.session.cli_pid
        assert pid is not None and psutil.pid_exists(pid)

    await until(lambda: not pids_alive([pid]), GONE_S, "the session's CLI gone after close")
    # Alive, that is: the test process adopts orphans (the hook engine makes it a child subreaper), and another
    # test's dead CLI may wait there as a zombie until a hook's sweep reaps it.
    await until(lambda: not clis_among(psutil.Process(os.getpid()).children(recursive=True)), GONE_S, "no CLI left")


# --------------------------------------------------------------------------- compaction


async def test_manual_compact_reports_summary_and_trigger(tmp_path: Path) -> None:
    scenario = {
        "turns": ["first answer"],
        "rules": [{"when": {"last_user_contains": "<summary>"}, "reply": "<analysis>x</analysis>\n<summary>SUMMARY-OF-CHAT-9</summary>"}],
    }
    async with harness(tmp_path, scenario) as h:
        with anyio.fail_after(30):
            await h.session.prompt("hello")
            await h.session.prompt("/compact")
    assert len(h.compactions) == 1
    summary, trigger = h.compactions[0]
    assert "SUMMARY-OF-CHAT-9" in summary and trigger == "manual"
    assert "PreCompact" in h.bridge.events()
    pre_compact = next(p for e, p, _ in h.bridge.calls if e == "PreCompact")
    assert pre_compact["trigger"] == "manual"
    # the summarisation request belongs to the same conversation (same CLI session id) and used the rule
    assert [r.answered_by for r in h.server.main_requests()] == ["turn:0", "rule:0"]
    assert len({r.conversation for r in h.server.requests}) == 1
