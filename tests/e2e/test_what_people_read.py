"""A person reads what the agent asked for, never env-isolation's `unset …;` prefix: in the permission prompt's title
and in the memory's records; what will run (the prompt's `toolInput`) stays exact. Hooks after PreToolUse read the
agent's command too, as Claude Code's would, and a PermissionRequest hook's rewrite still runs isolated. Every way
env-isolation works: the CLI's shell prefix inside the boundary and without one (the command stays the agent's),
and the rewrite (the launcher's `ORION_SHELL_PREFIX=0`)."""

from __future__ import annotations

import json
import os

import pytest

from sidecar.sandbox import backend_problem
from tests.e2e.conftest import fixed_policy

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

ASKED = "touch asked-marker # ask-user-probe"
STEP = "touch step-marker && echo agent-step"  # tests/e2e/scenarios/read_base.yaml: a command the CLI asks about
NO_BOX = backend_problem(os.environ.get("PATH"))
# "auto": a boundary, env-isolation through the CLI's shell prefix; "off": no boundary, the prefix all the same;
# "rewrite": no boundary and the launcher's ORION_SHELL_PREFIX=0, env-isolation rewrites each command.
WAYS = [pytest.param("auto", marks=pytest.mark.skipif(NO_BOX is not None, reason=f"no sandbox here: {NO_BOX}")),
        "off", "rewrite"]


def launch(way: str) -> tuple[str, dict[str, str]]:
    """The session's `sandbox` and the sidecar's environment for one way."""
    return ("off", {"ORION_SHELL_PREFIX": "0"}) if way == "rewrite" else (way, {})


@pytest.mark.parametrize("way", WAYS)
async def test_the_permission_title_and_the_memory_show_the_agents_own_command(sidecar, way: str) -> None:
    sandbox, env = launch(way)
    async with sidecar(permission=fixed_policy("allow_once"), env=env) as run:
        session = await run.new_session("ask", sandbox=sandbox)
        await run.prompt(session["sessionId"], "run the probe")
        hits = (await run.request("memory/search", {"query": "asked marker"}))["results"]
    [asked] = run.permission_requests
    if way == "rewrite":  # what will run: the rewritten command
        assert asked["toolInput"]["command"].startswith("unset ") and asked["toolInput"]["command"].endswith(ASKED)
    else:  # the agent's own, which runs through the prefix
        assert asked["toolInput"]["command"] == ASKED
    assert asked["title"] == ASKED
    observed = [h for h in hits if h["kind"] == "observation"]
    assert observed and all("unset ANTHROPIC" not in h["text"] for h in observed), observed
    assert any(ASKED in h["text"] for h in observed)


@pytest.mark.parametrize("way", WAYS)
async def test_hooks_after_pre_tool_use_read_the_agents_command_and_a_rewrite_stays_isolated(sidecar,
                                                                                           way: str) -> None:
    rewritten = 'echo "base=${ANTHROPIC_BASE_URL:-unset}"'
    sandbox, env = launch(way)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("reject_once"), env=env) as run:
        log = run.project / "calls.jsonl"
        record = f"cat >> '{log}'; echo >> '{log}'"
        allow = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": "allow", "updatedInput": {"command": rewritten, "description": "Step"}}}}
        (run.project / ".claude").mkdir(exist_ok=True)
        (run.project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
            "PermissionRequest": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": f"{record}; echo '{json.dumps(allow)}'"}]}],
            **{event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": record}]}]
               for event in ("PreToolUse", "PostToolUse", "PostToolBatch")}}}))
        await run.trust()
        sid = (await run.new_session("read_base", sandbox=sandbox))["sessionId"]
        assert (await run.prompt(sid, "take the step"))["stopReason"] == "end_turn"
        await run.end(sid)
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    seen = {c["hook_event_name"]: c.get("tool_input", {}).get("command") for c in calls}
    assert seen["PreToolUse"] == STEP
    assert seen["PermissionRequest"] == STEP  # not `unset …; <the step>`
    # nor a suggested rule for env-isolation's `unset …` part, which the CLI offers for the rewritten command
    [asked] = [c for c in calls if c["hook_event_name"] == "PermissionRequest"]
    rules = [r["ruleContent"] for s in asked["permission_suggestions"] for r in s.get("rules", [])]
    assert not [r for r in rules if r.startswith("unset ")], asked["permission_suggestions"]
    assert seen["PostToolUse"] == rewritten  # what ran, as the hook answered it, without the sidecar's prefix
    [batch] = [c for c in calls if c["hook_event_name"] == "PostToolBatch"]
    # the CLI gives PostToolBatch the call as the model made it; never with the sidecar's prefix
    assert [t["tool_input"]["command"] for t in batch["tool_calls"]] == [STEP]
    assert not run.permission_requests  # the hook answered; the user was not asked
    # The hook's rewrite ran isolated (the rewrite's prefix put back, or the CLI's shell prefix): the model's
    # address was out of reach.
    [post] = [c for c in calls if c["hook_event_name"] == "PostToolUse"]
    assert "base=unset" in json.dumps(post["tool_response"])


@pytest.mark.parametrize(("verdict", "asked_user"), [("allow", True), ("deny", False)])
async def test_a_hooks_ask_runs_the_permission_request_hooks_whose_deny_is_taken_and_allow_is_not(
        sidecar, verdict: str, asked_user: bool) -> None:
    """Claude Code opens its dialog for a PreToolUse hook's `ask`, and the PermissionRequest hooks run on it (measured
    with OrchestKit on the bundled CLI: bench/plugin_parity.py). Under Orion they run too, once, with the agent's
    command; a deny of theirs answers the ask, an allow does not: the user is asked (a hook's ask is the user's)."""
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                  "permissionDecisionReason": "Careful with that step."}}
    async with sidecar(project="notes", trust=False, permission=fixed_policy("reject_once")) as run:
        log = run.project / "calls.jsonl"
        record = f"cat >> '{log}'; echo >> '{log}'"
        answer = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
            "behavior": verdict, **({"message": "not today"} if verdict == "deny" else {})}}}
        (run.project / ".claude").mkdir(exist_ok=True)
        (run.project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"echo '{json.dumps(ask)}'"}]}],
            "PermissionRequest": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": f"{record}; echo '{json.dumps(answer)}'"}]}]}}))
        await run.trust()
        sid = (await run.new_session("read_base"))["sessionId"]
        assert (await run.prompt(sid, "take the step"))["stopReason"] == "end_turn"
        await run.end(sid)
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(c["hook_event_name"], c["tool_input"]["command"]) for c in calls] == [("PermissionRequest", STEP)]
    assert bool(run.permission_requests) is asked_user
    [result] = [u for u in run.updates(sid, "tool_call_update") if u.get("status") in ("denied", "failed")]
    if verdict == "deny":
        assert "not today" in json.dumps(result)
