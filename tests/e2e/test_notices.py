"""What Claude Code shows the user beside the conversation reaches the frontend as `notice` session updates:
a hook's systemMessage, a prompt a hook blocked, a hook that timed out or gave no usable answer."""

from __future__ import annotations

import pytest

from hooks.types import HookOutput, HookResult
from sidecar.hook_events import hook_notice

@pytest.mark.asyncio
@pytest.mark.cli
async def test_a_hooks_system_message_is_a_notice(sidecar) -> None:
    async with sidecar() as run:
        session = await run.new_session("system_message")
        await run.prompt(session["sessionId"], "probe")
        notices = run.updates(session["sessionId"], "notice")
    [notice] = [n for n in notices if "E2E-SYSTEM-MESSAGE" in n["text"]]
    assert notice["level"] == "info" and notice["source"] == "hook"
    assert notice["event"] == "PreToolUse" and notice["hookName"] == "e2e-bash-gate"


@pytest.mark.asyncio
@pytest.mark.cli
async def test_a_prompt_a_hook_blocked_is_a_notice_with_the_hooks_reason(sidecar) -> None:
    async with sidecar() as run:
        session = await run.new_session("plain")
        result = await run.prompt(session["sessionId"], "this is a forbidden-prompt")
        notices = run.updates(session["sessionId"], "notice")
    assert result["stopReason"] == "blocked"
    blocked = [n for n in notices if n["event"] == "UserPromptSubmit" and n["level"] == "error"]
    assert blocked and "E2E-PROMPT-BLOCKED" in blocked[0]["text"]
    assert blocked[0]["text"].startswith("Prompt blocked by a UserPromptSubmit hook")


def _result(**overrides) -> HookResult:
    base = dict(execution_id="x", hook_id="h", hook_name="lint", hook_type="command", source="project",
                event="PreToolUse", outcome="success", duration_ms=1.0)
    return HookResult(**{**base, **overrides})


def test_a_timeout_and_an_unusable_answer_are_warnings_that_say_what_followed() -> None:
    timed_out = hook_notice(_result(outcome="timeout"))
    assert timed_out["level"] == "warning" and "timed out" in timed_out["text"]
    assert "went on without it" in timed_out["text"]
    closed = hook_notice(_result(outcome="timeout", fail_closed=True))
    assert "denied (failClosed)" in closed["text"]
    failed = hook_notice(_result(outcome="error", exit_code=1))
    assert failed["level"] == "warning" and "exit code 1" in failed["text"]
    assert hook_notice(_result(outcome="success")) is None
    said = hook_notice(_result(outcome="success", output=HookOutput(systemMessage="hello user")))
    assert said["text"] == "hello user" and said["level"] == "info"


@pytest.mark.asyncio
@pytest.mark.cli
async def test_session_new_reports_the_settings_problems_and_still_starts(sidecar) -> None:
    import json

    async with sidecar("notes", trust=False) as run:
        claude = run.project / ".claude"
        claude.mkdir()
        (claude / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": [
            {"type": "command", "command": "true"}]}]}}))
        session = await run.new_session("plain")
        logged = await run.wait_event(lambda e: e.name == "log" and "Bash(" in e.params.get("message", ""))
    [warning] = [w for w in session["warnings"] if "Bash(" in w]
    assert "$.hooks.PreToolUse[0]" in warning and "not a valid regular expression" in warning
    assert logged.params["level"] == "warning" and logged.params["data"]["sessionId"] == session["sessionId"]
