"""`session/prepare`: the next session's CLI starts ahead of `session/new` (issue 13, "keep a warm CLI ready per
project"). Through the real sidecar and CLI: the prepared CLI is the one the session gets, no hook runs before
`session/new`, SessionStart context still reaches the first prompt, and a project that changed since it was prepared
never gets the old CLI (nor the trust its old hooks had)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import psutil
import pytest

from ipc.errors import RemoteError
from tests.e2e.conftest import request_text, scenario_model

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

CONTEXT = "PREPARED-CONTEXT-7"


def claude_pids(sidecar_pid: int) -> set[int]:
    """The CLI processes under the sidecar (the CLI may fork helpers with its own name: count the top ones)."""
    out = set()
    for proc in psutil.Process(sidecar_pid).children(recursive=True):
        try:
            if proc.name() == "claude" and proc.parent().name() != "claude":
                out.add(proc.pid)
        except psutil.Error:
            pass
    return out


def write_start_hook(project: Path, log: Path) -> None:
    """A SessionStart command hook that records the payload it got and gives context for the first prompt."""
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": CONTEXT}})
    command = f"cat >> '{log}' && echo >> '{log}' && echo '{answer}'"
    claude = project / ".claude"
    claude.mkdir(exist_ok=True)
    (claude / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": command, "name": "start-probe"}]}]}}))


def starts(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


async def settle_pids(pid: int, want: int) -> set[int]:
    """The CLI pids once exactly `want` remain (a closed CLI takes a moment to go)."""
    with anyio.fail_after(15):
        while len(pids := claude_pids(pid)) != want:
            await anyio.sleep(0.05)
    return pids


async def test_new_takes_over_the_prepared_cli_and_only_then_runs_session_start(sidecar, tmp_path: Path) -> None:
    log = tmp_path / "notes" / "starts.jsonl"  # in the project: its hooks run in the session's hook box
    async with sidecar("notes", trust=False) as run:
        write_start_hook(run.project, log)
        await run.trust()
        params = {"projectDir": str(run.project), "model": scenario_model("plain"), "builtinHooks": False}
        pid = run.client.process.pid

        prepared = await run.request("session/prepare", params, timeout=60)
        assert prepared == {"prepared": True, "expiresInS": 600.0}
        [cli] = await settle_pids(pid, 1)
        assert starts(log) == [], "no hook runs for a prepared session"
        assert run.named("hook_started") == []

        session = await run.request("session/new", params, timeout=60)
        sid = session["sessionId"]
        assert claude_pids(pid) == {cli}, "the session got the prepared CLI, no second one"
        assert [s["session_id"] for s in starts(log)] == [sid]
        assert starts(log)[0]["source"] == "startup"
        assert [e["hookName"] for e in run.named("hook_response", sid)] == ["start-probe"]

        result = await run.prompt(sid, "hello")
        assert result["stopReason"] == "end_turn"
        [first] = run.model_requests("plain")
        assert CONTEXT in request_text(first), "SessionStart context rides on the first prompt, as without prepare"
        await run.end(sid)


async def test_a_project_changed_after_prepare_never_gets_the_old_cli_or_its_trust(sidecar, tmp_path: Path) -> None:
    """The attack: the user's app prepares a session in a trusted project; before the session starts, the project
    changes its hooks (a `git pull`, an agent's write). The session must not start on what was prepared: its hooks
    are the new ones, untrusted, and the old CLI is closed."""
    log = tmp_path / "notes" / "starts.jsonl"  # in the project: its hooks run in the session's hook box
    async with sidecar("notes", trust=False) as run:
        write_start_hook(run.project, log)
        await run.trust()
        params = {"projectDir": str(run.project), "model": scenario_model("plain"), "builtinHooks": False}
        pid = run.client.process.pid
        await run.request("session/prepare", params, timeout=60)
        [prepared_cli] = await settle_pids(pid, 1)

        settings = run.project / ".claude" / "settings.json"
        changed = json.loads(settings.read_text())
        changed["hooks"]["SessionStart"][0]["hooks"][0]["command"] = f"echo pulled >> '{tmp_path / 'pulled'}'"
        settings.write_text(json.dumps(changed))

        session = await run.request("session/new", params, timeout=60)
        sid = session["sessionId"]
        [fresh_cli] = await settle_pids(pid, 1)
        assert fresh_cli != prepared_cli, "the prepared CLI was closed, the session started its own"
        assert session["hooks"]["untrusted"] == 1 and session["hooks"]["active"] == 0
        assert starts(log) == [] and not (tmp_path / "pulled").exists(), "neither the old nor the new hook ran"
        await run.end(sid)


async def test_other_options_start_afresh_and_nothing_prepared_outlives_the_sidecar(sidecar) -> None:
    async with sidecar("notes", trust=False) as run:
        params = {"projectDir": str(run.project), "model": scenario_model("plain"), "builtinHooks": False}
        pid = run.client.process.pid
        await run.request("session/prepare", params, timeout=60)
        [prepared_cli] = await settle_pids(pid, 1)

        session = await run.request("session/new", {**params, "permissionMode": "plan"}, timeout=60)
        both = await settle_pids(pid, 2)
        assert prepared_cli in both, "a session with other options does not take it; it still waits"
        descendants = psutil.Process(pid).children(recursive=True)
        await run.end(session["sessionId"])
        with anyio.fail_after(30):
            assert await run.client.close() == 0
    _gone, alive = psutil.wait_procs(descendants, timeout=10)
    assert [p.pid for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []


async def test_prepare_refuses_what_session_new_refuses(sidecar, tmp_path: Path) -> None:
    async with sidecar("notes", trust=False) as run:
        with pytest.raises(RemoteError) as missing:
            await run.request("session/prepare", {"projectDir": str(tmp_path / "nowhere"),
                                                  "model": scenario_model("plain")})
        assert missing.value.code == -32602 and "projectDir" in str(missing.value)
        with pytest.raises(RemoteError) as mode:
            await run.request("session/prepare", {"projectDir": str(run.project), "permissionMode": "yolo"})
        assert mode.value.code == -32602
        assert claude_pids(run.client.process.pid) == set()


async def test_setup_runs_with_session_new_after_session_start_and_is_never_prepared(sidecar, tmp_path: Path) -> None:
    """`setup` (an app's "set this project up" / "maintenance" action) runs the project's Setup hooks with that
    trigger as the session starts, after its SessionStart hooks, as Claude Code's `--init` does; a prepared CLI
    runs no hook, so session/prepare refuses it and starts nothing."""
    log = tmp_path / "notes" / "starts.jsonl"
    async with sidecar("notes", trust=False) as run:
        write_start_hook(run.project, log)
        settings = json.loads((run.project / ".claude" / "settings.json").read_text())
        settings["hooks"]["Setup"] = [{"matcher": "init", "hooks": [
            {"type": "command", "command": f"cat >> '{log}' && echo >> '{log}'", "name": "setup-probe"}]}]
        (run.project / ".claude" / "settings.json").write_text(json.dumps(settings))
        await run.trust()
        params = {"projectDir": str(run.project), "model": scenario_model("plain"), "builtinHooks": False}
        with pytest.raises(RemoteError) as refused:
            await run.request("session/prepare", {**params, "setup": "init"}, timeout=60)
        assert refused.value.code == -32602 and "setup" in str(refused.value)
        assert claude_pids(run.client.process.pid) == set() and starts(log) == []
        with pytest.raises(RemoteError) as unknown:
            await run.request("session/new", {**params, "setup": "install"}, timeout=60)
        assert unknown.value.code == -32602
        session = await run.request("session/new", {**params, "setup": "init"}, timeout=60)
        sid = session["sessionId"]
        assert [(s["hook_event_name"], s.get("source") or s.get("trigger")) for s in starts(log)] == [
            ("SessionStart", "startup"), ("Setup", "init")]
        assert [e["hookName"] for e in run.named("hook_response", sid)] == ["start-probe", "setup-probe"]
        await run.end(sid)
        # A later session of the same project without `setup` runs no Setup hook.
        again = await run.request("session/new", params, timeout=60)
        assert [s["hook_event_name"] for s in starts(log)][2:] == ["SessionStart"]
        await run.end(again["sessionId"])
