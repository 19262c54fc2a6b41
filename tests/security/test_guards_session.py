"""The guards in a real session (real CLI, scripted model): a command protection does not deny reaches the user's prompt as the agent wrote it, and runs without the sidecar's variables; a write to .env is denied before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import open_sidecar, queued_policy, result_text, tool_results

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "guards.yaml"


async def test_an_undenied_bash_call_is_asked_about_as_written_runs_isolated_and_env_writes_are_denied(tmp_path) -> None:
    policy = queued_policy("allow_once")  # the first request is allowed; any other would be rejected
    async with open_sidecar(tmp_path, "notes", trust=False, permission=policy) as run:
        sid = (await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}"},
                                 timeout=60.0))["sessionId"]
        result = await run.prompt(sid, "Write the probe, then the env file.")
        assert result["stopReason"] == "end_turn"

        # (1) No guard approved the first command: it reached the frontend's permission prompt ...
        [asked] = run.permission_requests
        assert asked["toolName"] == "Bash"
        command = asked["toolInput"]["command"]
        # ... showing the command as the agent wrote it: env-isolation no longer rewrites it ...
        assert command == 'echo "probe=${CLAUDE_CODE_ENTRYPOINT-unset}" > probe.txt'
        # ... and it ran without the variables the CLI has (CLAUDE_CODE_ENTRYPOINT among them): the CLI's shell
        # prefix took them out (sidecar/shell_isolation.py).
        assert (run.project / "probe.txt").read_text() == "probe=unset\n"

        # (2) `echo X > .env` was denied by protection, without a prompt, and the model was told why.
        # (The CLI's sandbox may leave an empty .env as a mount point: what matters is that nothing was written.)
        env_file = run.project / ".env"
        assert not env_file.exists() or env_file.read_text() == ""
        requests = run.model_requests(SCENARIO.stem)
        [denied] = tool_results(requests[2])
        assert denied.get("is_error") is True
        assert "Blocked by Orion's protection hook" in result_text(denied)
        assert ".env" in result_text(denied)
        decisions = [(r["hookName"], (r.get("output") or {}).get("hookSpecificOutput", {}).get("permissionDecision"))
                     for r in run.named("hook_response", sid) if r["hookName"] in ("env-isolation", "protection")]
        assert ("protection", "deny") in decisions
        assert all(d != "allow" for _, d in decisions)
        await run.end(sid)


async def test_a_guards_ask_reaches_the_user_even_when_bash_is_allowed(tmp_path) -> None:
    scenario = SCENARIO.with_name("guards_ask.yaml")
    async with open_sidecar(tmp_path, "notes", trust=False, permission=queued_policy("reject_once")) as run:
        sid = (await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{scenario}",
                                                 "allowedTools": ["Bash"]}, timeout=60.0))["sessionId"]
        result = await run.prompt(sid, "Add the MCP config.")
        assert result["stopReason"] == "end_turn"
        [asked] = run.permission_requests
        assert asked["toolName"] == "Bash"
        assert "changes what runs" in asked["reason"]
        mcp = run.project / ".mcp.json"
        assert not mcp.exists() or "mcpServers" not in mcp.read_text()  # the user said no
        await run.end(sid)
