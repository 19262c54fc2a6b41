"""What a hook author sees from a live session: session/new reports the shared analysis's new warnings (shadowed
hooks, matchers that match nothing, override typos), and `hooks/test` with `sessionId` + `hookName` runs a prompt
hook against the session's own model."""

from __future__ import annotations

import json

import pytest

JUDGE = {"type": "prompt", "prompt": "Is this safe? $ARGUMENTS", "name": "judge"}


@pytest.mark.asyncio
@pytest.mark.cli
async def test_session_new_reports_shadowed_hooks_matcher_typos_and_override_typos(sidecar) -> None:
    async with sidecar("notes", trust=False) as run:
        claude = run.project / ".claude"
        claude.mkdir(exist_ok=True)
        (claude / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "true", "name": "first"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "name": "second"}]},
            {"matcher": "Bsh", "hooks": [{"type": "command", "command": "echo typo", "name": "typo"}]},
        ]}}))
        (claude / "hook-overrides.json").write_text(json.dumps({"disabled": ["secnd"]}))
        await run.trust()
        session = await run.new_session("plain")
        logged = await run.wait_event(lambda e: e.name == "log" and "'secnd'" in e.params.get("message", ""))
    warnings = session["warnings"]
    assert any("$.hooks.PreToolUse[1]" in w and "hook 'second' never runs" in w for w in warnings), warnings
    assert any("$.hooks.PreToolUse[2]" in w and "(did you mean 'Bash'?)" in w for w in warnings), warnings
    assert any("'secnd' names no hook (closest known hook: 'second')" in w for w in warnings), warnings
    assert logged.params["level"] == "warning"


@pytest.mark.asyncio
@pytest.mark.cli
async def test_hooks_test_on_one_hook_of_a_live_session_asks_the_sessions_model(sidecar) -> None:
    async with sidecar("notes", trust=False) as run:
        claude = run.project / ".claude"
        claude.mkdir(exist_ok=True)
        (claude / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [JUDGE]}]}}))
        await run.trust()
        session = await run.new_session("hook_judge")
        got = await run.request("hooks/test", {
            "sessionId": session["sessionId"], "event": "PreToolUse", "hookName": "judge",
            "payload": {"tool_name": "Bash", "tool_input": {"command": "make release"}}}, timeout=60.0)
        evaluations = [r for r in run.model_requests("hook_judge", main_only=False) if not r["has_tools"]]
    [result] = got["results"]
    assert result["outcome"] == "blocked", result
    assert got["aggregate"]["decision"] == "deny"
    # Claude Code's words for a prompt hook's "no": the hook's prompt as written, then the model's reason
    assert got["aggregate"]["reason"] == f"[{JUDGE['prompt']}]: session judge: not while the release is frozen"
    assert any("make release" in json.dumps(r["body"]["messages"]) for r in evaluations)
