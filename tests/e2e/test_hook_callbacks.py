"""The CLI calls the sidecar back only for hook events some hook listens to: a turn with no hooks on an event pays
no round trip for it (issue 13), and an event with a hook still fires."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

DEBUG = {"HOOK_DEBUG": "1", "ORION_LOG_LEVEL": "DEBUG"}


def fired(stderr: str) -> set[str]:
    """Every hook event the CLI called the sidecar back for (sidecar/hook_bridge.py logs each at DEBUG)."""
    return set(re.findall(r"CLI callback (\w+) session=", stderr))


async def test_without_hooks_the_cli_calls_back_for_nothing(sidecar) -> None:
    async with sidecar("notes", trust=False, env=DEBUG) as run:
        session = await run.new_session("many_tools", builtinHooks=False, allowedTools=["Bash", "Read"])
        result = await run.prompt(session["sessionId"], "go")
        await run.end(session["sessionId"])
        stderr = run.client.stderr_text()
    assert result["stopReason"] == "end_turn"
    assert run.updates(session["sessionId"], "tool_call"), "the turn used tools"
    # No PreToolUse, PostToolUse, UserPromptSubmit or Stop round trip (the CLI never calls back for SessionStart/End:
    # the sidecar fires those itself).
    assert fired(stderr) == set(), fired(stderr)
    assert "DEBUG" in stderr  # the log that would show a callback was on


async def with_stop_probe(run) -> None:
    """The project gets one user Stop hook (a command that does nothing), trusted."""
    claude = run.project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "true", "name": "stop-probe"}]}]}}))
    await run.trust()


async def test_an_event_with_a_hook_still_calls_back(sidecar) -> None:
    async with sidecar("notes", trust=False, env=DEBUG) as run:
        await with_stop_probe(run)
        session = await run.new_session("plain", builtinHooks=False)
        await run.prompt(session["sessionId"], "hello")
        stderr = run.client.stderr_text()
    assert "Stop" in fired(stderr) and "PreToolUse" not in fired(stderr)
    ran = [e for e in run.named("hook_response") if e.get("hookName") == "stop-probe"]
    assert ran and ran[0]["outcome"] == "success"


async def test_stop_with_only_bookkeeping_is_fired_by_the_sidecar_after_the_turn(sidecar) -> None:
    """With the built-ins alone, every Stop hook is bookkeeping that runs after the answer: the CLI does not stop to
    call back for Stop; the sidecar fires it when the turn has ended, and the hooks still run once per turn, with the
    answer the turn gave."""
    async with sidecar("notes", trust=False, env=DEBUG) as run:
        session = await run.new_session("plain")
        sid = session["sessionId"]
        result = await run.prompt(sid, "hello")
        await run.end(sid)  # waits for what runs after the answer
        stderr = run.client.stderr_text()
    assert result["stopReason"] == "end_turn"
    assert "Stop" not in fired(stderr) and "UserPromptSubmit" in fired(stderr)
    stops = [e for e in run.named("hook_response", sid) if e.get("event") == "Stop"]
    assert sorted(e["hookName"] for e in stops) == ["memory-summary", "turn-activity"], stops
    assert all(e["outcome"] == "success" for e in stops)
    started = [e for e in run.named("hook_started", sid) if e.get("event") == "Stop"]
    assert len(started) == 2


async def test_a_user_stop_hook_keeps_the_callback_and_the_bookkeeping_runs_once(sidecar) -> None:
    async with sidecar("notes", trust=False, env=DEBUG) as run:
        await with_stop_probe(run)
        session = await run.new_session("plain")
        sid = session["sessionId"]
        await run.prompt(sid, "hello")
        await run.end(sid)
        stderr = run.client.stderr_text()
    assert "Stop" in fired(stderr)
    names = sorted(e["hookName"] for e in run.named("hook_response", sid) if e.get("event") == "Stop")
    assert names == ["memory-summary", "stop-probe", "turn-activity"], names
