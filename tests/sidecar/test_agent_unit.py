"""AgentSession pieces that need no CLI: hook output conversion, option building, and message translation (compaction, tool results)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sidecar.agent import (
    NO_SETTINGS_HOOKS,
    SDK_HOOK_EVENTS,
    AgentConfig,
    AgentNotStarted,
    AgentSession,
    PermissionAnswer,
    compaction_summary,
    to_sdk_hook_output,
)

# The user message the CLI 2.1.330 writes right after a compact_boundary (captured from a real /compact run).
CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n<system-reminder>\n"
    "<tools-used-before-summary></tools-used-before-summary>\n</system-reminder>\nSummary:\n"
    "The user said hi.\nThen asked for a listing.\n\nIf you need specific details from before compaction "
    "(like exact code snippets), read the full transcript at: /x.jsonl\nContinue the conversation."
)


class Bridge:
    def __init__(self, output: dict[str, Any] | None = None, fail: bool = False) -> None:
        self.output, self.fail = output or {}, fail
        self.calls: list[tuple[str, dict[str, Any], str | None]] = []

    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        self.calls.append((event, payload, tool_use_id))
        if self.fail:
            raise RuntimeError("runner crashed")
        return self.output

    def budget_s(self, event: str) -> float:
        return 30.0 if event == "PreToolUse" else 7.0


class Asker:
    def __init__(self, answer: PermissionAnswer) -> None:
        self.answer = answer

    async def ask(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None, reason: str | None,
                  *, suggestions: list[Any] | None = None) -> PermissionAnswer:
        return self.answer


def make_session(tmp_path: Path, bridge: Bridge | None = None, asker: Asker | None = None, **config: Any) -> tuple[AgentSession, list[dict[str, Any]], list[tuple[str, str]]]:
    updates: list[dict[str, Any]] = []
    compactions: list[tuple[str, str]] = []

    async def on_update(update: dict[str, Any]) -> None:
        updates.append(update)

    async def on_compact(summary: str, trigger: str) -> None:
        compactions.append((summary, trigger))

    session = AgentSession(
        AgentConfig(project_dir=tmp_path, session_id="7d3c0f4e-8f5e-4a4a-9d43-1f7cbd2a2f10", **config),
        bridge or Bridge(),
        asker or Asker(PermissionAnswer(allow=True)),
        on_update,
        on_compact=on_compact,
    )
    return session, updates, compactions


def test_hook_output_keys_become_the_sdk_python_names() -> None:
    out = to_sdk_hook_output({"continue": False, "async": True, "stopReason": "x", "hookSpecificOutput": {"a": 1}})
    assert out == {"continue_": False, "async_": True, "stopReason": "x", "hookSpecificOutput": {"a": 1}}
    assert to_sdk_hook_output(None) == {}


def test_compaction_summary_is_cut_out_of_the_continuation_message() -> None:
    assert compaction_summary(CONTINUATION) == "The user said hi.\nThen asked for a listing."
    assert compaction_summary("an ordinary prompt") is None


def test_options_register_one_bridge_callback_per_event_with_budget_plus_margin(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, append_context="CTX")
    options = session.build_options()
    assert options.hooks is not None and set(options.hooks) == set(SDK_HOOK_EVENTS)
    for event, matchers in options.hooks.items():
        (matcher,) = matchers
        assert matcher.matcher is None and len(matcher.hooks) == 1
        assert matcher.timeout == (30.0 if event == "PreToolUse" else 7.0) + 5.0
    assert options.settings == NO_SETTINGS_HOOKS and options.setting_sources == []
    assert options.system_prompt == {"type": "preset", "preset": "claude_code", "append": "CTX"}
    assert options.session_id == "7d3c0f4e-8f5e-4a4a-9d43-1f7cbd2a2f10"


def test_custom_system_prompt_gets_the_context_appended(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, system_prompt="You are terse.", append_context="CTX")
    assert session.build_options().system_prompt == "You are terse.\n\nCTX"


@pytest.mark.asyncio
async def test_bridge_callback_converts_output_and_fails_open(tmp_path: Path) -> None:
    bridge = Bridge({"continue": False, "stopReason": "enough"})
    session, _, _ = make_session(tmp_path, bridge)
    callback = session.build_options().hooks["Stop"][0].hooks[0]  # type: ignore[index]
    payload = {"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": False}
    assert await callback(payload, "uuid-1", {"signal": None}) == {"continue_": False, "stopReason": "enough"}
    assert bridge.calls == [("Stop", payload, "uuid-1")]
    crashing, _, _ = make_session(tmp_path, Bridge(fail=True))
    callback = crashing.build_options().hooks["PreToolUse"][0].hooks[0]  # type: ignore[index]
    assert await callback({"tool_use_id": "t"}, "t", {"signal": None}) == {}


@pytest.mark.asyncio
async def test_compact_boundary_then_continuation_calls_on_compact(tmp_path: Path) -> None:
    from claude_agent_sdk import SystemMessage, UserMessage

    session, _, compactions = make_session(tmp_path)
    boundary = SystemMessage(subtype="compact_boundary", data={"type": "system", "subtype": "compact_boundary", "compact_metadata": {"trigger": "auto", "pre_tokens": 150000}})
    await session._translate(boundary)
    assert compactions == []
    await session._translate(UserMessage(content=CONTINUATION))
    assert compactions == [("The user said hi.\nThen asked for a listing.", "auto")]


@pytest.mark.asyncio
async def test_boundary_without_summary_is_still_reported_at_turn_end(tmp_path: Path) -> None:
    from claude_agent_sdk import SystemMessage

    session, _, compactions = make_session(tmp_path)
    await session._translate(SystemMessage(subtype="compact_boundary", data={"compact_metadata": {"trigger": "manual"}}))
    await session._finish_compaction()
    assert compactions == [("", "manual")]


@pytest.mark.asyncio
async def test_denied_tool_results_are_reported_as_denied(tmp_path: Path) -> None:
    from claude_agent_sdk import AssistantMessage, UserMessage
    from claude_agent_sdk.types import ToolResultBlock, ToolUseBlock

    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}
    session, updates, _ = make_session(tmp_path, Bridge(deny))
    callback = session.build_options().hooks["PreToolUse"][0].hooks[0]  # type: ignore[index]
    await session._translate(AssistantMessage(content=[ToolUseBlock(id="t1", name="Bash", input={"command": "ls"})], model="m"))
    await callback({"tool_use_id": "t1", "tool_name": "Bash"}, "t1", {"signal": None})
    await session._translate(UserMessage(content=[ToolResultBlock(tool_use_id="t1", content="no", is_error=True)]))
    await session._translate(UserMessage(content=[ToolResultBlock(tool_use_id="t2", content=[{"type": "text", "text": "boom"}], is_error=True)]))
    assert updates == [
        {"sessionUpdate": "tool_call", "toolUseId": "t1", "name": "Bash", "input": {"command": "ls"}},
        {"sessionUpdate": "tool_call_update", "toolUseId": "t1", "status": "denied", "output": "no", "isError": True},
        {"sessionUpdate": "tool_call_update", "toolUseId": "t2", "status": "failed", "output": "boom", "isError": True},
    ]


@pytest.mark.asyncio
async def test_can_use_tool_maps_answers_to_sdk_results(tmp_path: Path) -> None:
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny
    from claude_agent_sdk.types import ToolPermissionContext

    context = ToolPermissionContext(tool_use_id="t9")
    allow, _, _ = make_session(tmp_path, asker=Asker(PermissionAnswer(allow=True, updated_input={"command": "ls -1"})))
    result = await allow._can_use_tool("Bash", {"command": "ls"}, context)
    assert isinstance(result, PermissionResultAllow) and result.updated_input == {"command": "ls -1"}
    deny, _, _ = make_session(tmp_path, asker=Asker(PermissionAnswer(allow=False)))
    result = await deny._can_use_tool("Bash", {"command": "ls"}, context)
    assert isinstance(result, PermissionResultDeny) and result.message  # the model always gets a reason


@pytest.mark.asyncio
async def test_prompt_before_start_is_an_error(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path)
    with pytest.raises(AgentNotStarted):
        await session.prompt("hi")
    assert await session.cancel() is False
    await session.close()  # closing a never-started session is harmless


class _HangingClient:
    """A connected client whose turn never ends and whose interrupt fails (the CLI died under it)."""

    def __init__(self) -> None:
        self.interrupts = 0

    async def query(self, text: str) -> None:
        pass

    async def receive_response(self):  # type: ignore[no-untyped-def]
        await anyio.sleep_forever()
        yield None

    async def interrupt(self) -> None:
        self.interrupts += 1
        raise RuntimeError("CLI connection lost")


@pytest.mark.asyncio
async def test_a_cancelled_turn_stays_cancelled_when_the_interrupt_fails(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path)
    client = _HangingClient()
    session._client = client  # type: ignore[assignment]
    with anyio.move_on_after(0.2) as scope:
        await session.prompt("hi")
    assert scope.cancelled_caught  # the cancellation went through, not the interrupt's RuntimeError
    assert client.interrupts == 1
    assert session.running is False


@pytest.mark.asyncio
async def test_a_late_hook_answer_is_a_synthetic_message_and_wakes_are_bounded_between_prompts(tmp_path: Path) -> None:
    """tell_model writes the CLI a host's synthetic message (measured on the bundled CLI through the real path in
    tests/e2e/test_late_answers.py); a context waits (`shouldQuery: false`), a wake queries, and between two of the
    user's prompts at most MAX_WAKES_BETWEEN_PROMPTS wakes go out: the next waits for the prompt, with a notice."""
    import json

    from sidecar.agent import MAX_WAKES_BETWEEN_PROMPTS

    class Transport:
        def __init__(self) -> None:
            self.lines: list[dict[str, Any]] = []

        async def write(self, data: str) -> None:
            self.lines.extend(json.loads(line) for line in data.splitlines())

    class Client:
        def __init__(self) -> None:
            self._transport = Transport()

    session, updates, _ = make_session(tmp_path)
    client = Client()
    session._client = client  # noqa: SLF001 - the seam: no CLI in a unit test
    await session.tell_model("lint: 2 warnings", wake=False)
    for _ in range(MAX_WAKES_BETWEEN_PROMPTS + 1):
        await session.tell_model("Stop hook blocking error from command \"PreToolUse:Bash\": tests fail", wake=True)
    sent = client._transport.lines
    assert all(m["type"] == "user" and m["isSynthetic"] is True and m["parent_tool_use_id"] is None for m in sent)
    assert sent[0]["message"] == {"role": "user", "content": "lint: 2 warnings"} and sent[0]["shouldQuery"] is False
    assert ["shouldQuery" in m for m in sent[1:]] == [False] * MAX_WAKES_BETWEEN_PROMPTS + [True]
    [notice] = [u for u in updates if u.get("sessionUpdate") == "notice"]
    assert notice["level"] == "warning" and "waits for your next prompt" in notice["text"]
    # No field of the message comes from the hook: its text is the content, nothing else.
    assert {key for m in sent for key in m} <= {"type", "message", "parent_tool_use_id", "session_id", "isSynthetic",
                                                "shouldQuery"}
