"""An organization's managed Claude Code settings through `python -m sidecar`, as the bundled CLI has them (measured
on 2.1.330, with Orion's flag settings in place): their hooks run in the CLI itself, and Orion lists them and
reports each run; `allowManagedHooksOnly` stops every other settings hook (the user's, the project's); their
`disableAllHooks` stops every settings hook, theirs too; Orion's built-in hooks keep running under both, as the
CLI's SDK callbacks do. Each sidecar here sees a /etc/claude-code of its test's own (tests/managed_settings.py)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import fixed_policy
from tests.e2e.test_claude_user_hooks import COMMANDS, DEFAULT_PATH, marker_lines, write_claude_user_hooks
from tests.managed_settings import managed_launcher, needs_managed_namespace
from tests.security.test_sandbox import NO_BACKEND

pytestmark = [pytest.mark.cli, needs_managed_namespace]

MANAGED_FILE = "/etc/claude-code/managed-settings.json"
# The organization's hook: each Bash command it sees, one per line, in the project (writable inside the box).
RECORD = ("import json, os, sys; p = json.load(sys.stdin); "
          "open(os.path.join(os.environ['CLAUDE_PROJECT_DIR'], 'managed.log'), 'a')"
          ".write(p['tool_input']['command'] + '\\n')")
RECORDER = {"type": "command", "command": f"{shlex.quote(sys.executable)} -c {shlex.quote(RECORD)}"}
BLOCKER = {"type": "command", "command": "echo 'the organization does not allow this' >&2; exit 2"}


def managed_settings(tmp_path: Path, doc: dict[str, Any]) -> list[str]:
    """The organization's managed-settings.json for this test; the launcher that shows it to the sidecar."""
    folder = tmp_path / "etc-claude-code"
    folder.mkdir()
    (folder / "managed-settings.json").write_text(json.dumps(doc))
    return managed_launcher(folder)


def on_bash(*hooks: dict[str, Any]) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "Bash", "hooks": list(hooks)}]}


def project_hook(project: Path, marker: Path) -> None:
    """The project's own PreToolUse hook on Bash (trusted below): it would touch `marker`."""
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": on_bash(
        {"type": "command", "name": "project-guard", "command": f"touch {shlex.quote(str(marker))}"})}))


def by_source(listing: dict[str, Any], source: str) -> list[dict[str, Any]]:
    return [h for h in listing["hooks"] if h["source"] == source]


@pytest.mark.asyncio
async def test_only_the_organizations_hooks_run_under_allow_managed_hooks_only_in_the_cli_and_observed(
        sidecar, tmp_path: Path) -> None:
    launcher = managed_settings(tmp_path, {"allowManagedHooksOnly": True, "hooks": on_bash(RECORDER)})
    _user_file, user_marker = write_claude_user_hooks(tmp_path)
    project_marker = tmp_path / "user-hook-out" / "project-hook-ran"
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH,
                       launcher=launcher) as run:
        project_hook(run.project, project_marker)
        await run.trust()
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        [managed] = by_source(listed, "managed")
        assert managed["state"] == "managed" and managed["sourceFile"] == MANAGED_FILE, managed
        assert "runs it itself" in managed["reason"]
        # It runs in the session's CLI, inside the session's boundary where there is one.
        assert managed["boundary"] == ("box" if NO_BACKEND is None else "outside"), managed
        others = by_source(listed, "claude-user") + by_source(listed, "project")
        assert len(others) == 2 and {h["state"] for h in others} == {"dropped"}, others
        assert all("allowManagedHooksOnly" in h["reason"] and MANAGED_FILE in h["reason"] for h in others)

        created = await run.new_session("claude_user_bash")
        sid = created["sessionId"]
        assert created["hooks"]["managed"] == 1 and created["hooks"]["active"] > 0, created["hooks"]
        assert any("allowManagedHooksOnly" in w and "2 hook(s)" in w for w in created["warnings"]), created["warnings"]
        assert any("run in the Claude Code CLI itself" in w for w in created["warnings"]), created["warnings"]
        await run.prompt(sid, "run both")
        await run.end(sid)

        # The CLI ran the organization's hook on each call; nobody ran the user's or the project's.
        assert (run.project / "managed.log").read_text().splitlines() == COMMANDS
        assert marker_lines(user_marker) == [] and not project_marker.exists()
        started = [e for e in run.named("hook_started", sid) if e["source"] == "managed"]
        responses = [e for e in run.named("hook_response", sid) if e["source"] == "managed"]
        assert [(e["event"], e["hookId"], e["hookName"]) for e in started] == \
            [("PreToolUse", managed["id"], managed["name"])] * 2, started
        assert [r["outcome"] for r in responses] == ["success", "success"], responses
        assert {r["executionId"] for r in responses} == {e["executionId"] for e in started}
        # ... and tracked like Orion's own runs: the session's stats count them.
        stats = await run.request("hooks/stats", {"sessionId": sid})
        assert [(r["name"], r["event"], r["runs"]) for r in stats["hooks"] if r["name"] == managed["name"]] == \
            [(managed["name"], "PreToolUse", 2)], stats
        # Orion's own guards still ran on every call (the CLI calls its SDK callbacks whatever the policy).
        builtin = [e for e in run.named("hook_response", sid) if e["source"] == "builtin" and e["event"] == "PreToolUse"]
        assert len({e["executionId"] for e in builtin}) >= 2, builtin


@pytest.mark.asyncio
async def test_the_organizations_disable_all_hooks_stops_every_settings_hook_but_not_orions_guards(
        sidecar, tmp_path: Path) -> None:
    launcher = managed_settings(tmp_path, {"disableAllHooks": True, "hooks": on_bash(RECORDER)})
    _user_file, user_marker = write_claude_user_hooks(tmp_path)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH,
                       launcher=launcher) as run:
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        rows = by_source(listed, "managed") + by_source(listed, "claude-user")
        assert len(rows) == 2 and {h["state"] for h in rows} == {"disabled"}, rows
        assert all("disableAllHooks" in h["reason"] and MANAGED_FILE in h["reason"] for h in rows)
        sid = (await run.new_session("claude_user_bash"))["sessionId"]
        await run.prompt(sid, "run both")
        await run.end(sid)
        assert not (run.project / "managed.log").exists() and marker_lines(user_marker) == []
        assert not [e for e in run.named("hook_started", sid) if e["source"] in ("managed", "claude-user")]
        assert [e for e in run.named("hook_response", sid) if e["source"] == "builtin"]


@pytest.mark.asyncio
async def test_an_organizations_hook_that_blocks_stops_the_call_with_its_words_and_is_reported_blocked(
        sidecar, tmp_path: Path) -> None:
    launcher = managed_settings(tmp_path, {"hooks": on_bash(BLOCKER)})
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH,
                       launcher=launcher) as run:
        sid = (await run.new_session("claude_user_bash"))["sessionId"]
        await run.prompt(sid, "run both")
        await run.end(sid)
        blocked = [e for e in run.named("hook_response", sid) if e["source"] == "managed"]
        assert [(e["outcome"], e["exitCode"]) for e in blocked] == [("blocked", 2)] * 2, blocked
        assert "the organization does not allow this" in blocked[0]["stderr"]
        results = [u for u in run.updates(sid, "tool_call_update") if u.get("status") == "failed"]
        assert len(results) == 2 and all("the organization does not allow this" in json.dumps(u) for u in results), \
            results


@pytest.mark.asyncio
async def test_a_managed_file_that_does_not_parse_stops_the_session_with_the_clis_words(sidecar, tmp_path: Path) -> None:
    """Claude Code refuses to start with a managed settings file it cannot parse (measured: exit 1, "none of its
    settings are in effect"), and so does the session's CLI: session/new says why, in the CLI's words, and the
    sidecar goes on serving."""
    from ipc.errors import RemoteError

    folder = tmp_path / "etc-claude-code"
    folder.mkdir()
    (folder / "managed-settings.json").write_text('{"allowManagedHooksOnly": true,')
    async with sidecar(project="notes", trust=False, launcher=managed_launcher(folder)) as run:
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        assert any(MANAGED_FILE in w and "not valid JSON" in w for w in listed["warnings"]), listed["warnings"]
        with pytest.raises(RemoteError) as refused:
            await run.new_session("claude_user_bash")
        assert "the agent could not start" in refused.value.message
        assert "could not be parsed as a JSON object" in refused.value.message, refused.value.message
        assert (await run.request("hooks/list", {"projectDir": str(run.project)}))["hooks"] is not None


@pytest.mark.parametrize("policy", [{}, {"allowManagedHooksOnly": True}])
def test_the_cli_itself_runs_the_hooks_of_a_plugin_the_organization_enables_whatever_orions_flags_say(
        tmp_path: Path, policy: dict[str, Any]) -> None:
    """The premise of listing a managed plugin's hooks as the CLI's (hooks/plugins.py MANAGED_PLUGIN): the bare CLI,
    given Orion's flag settings (`disableAllHooks: true`), still runs the hook of a plugin that managed settings
    enable, and not one that only the user enables. If a CLI update changes this, Orion must run them itself."""
    import os
    import subprocess

    from tests.conformance.harness import OFFLINE, ScriptedServer, cli_path
    from tests.e2e.conftest import SCENARIOS
    from tests.plugin_fixture import install_with_cli, write_guard_plugin

    def guard_calls(managed_enables: bool) -> int:
        root = tmp_path / ("managed" if managed_enables else "user")
        home, project, market, log_dir = root / "home", root / "project", root / "marketplace", root / "guard-log"
        (home / ".claude").mkdir(parents=True)
        project.mkdir()
        write_guard_plugin(market / "plugins" / "guard", "guard", "1.0.0", log_dir)
        env = {**os.environ, **OFFLINE, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        plugin_id = install_with_cli(cli_path(), env, market, "guard", "1.0.0", project)
        managed = root / "etc-claude-code"
        managed.mkdir()
        (managed / "managed-settings.json").write_text(json.dumps(
            {**policy, **({"enabledPlugins": {plugin_id: True}} if managed_enables else {})}))
        server = ScriptedServer(SCENARIOS / "claude_user_bash.yaml", root / "requests.jsonl")
        try:
            done = subprocess.run([*managed_launcher(managed), cli_path(), "-p", "go", "--output-format", "json",
                                   "--allowedTools", "Bash", "--settings", json.dumps({"disableAllHooks": True})],
                                  cwd=project, capture_output=True, text=True, timeout=120,
                                  env={**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "offline"})
        finally:
            server.close()
        assert done.returncode == 0, done.stderr[-2000:]
        calls = log_dir / "calls.jsonl"
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    assert guard_calls(managed_enables=True) == len(COMMANDS)
    assert guard_calls(managed_enables=False) == 0


@pytest.mark.asyncio
async def test_under_the_organizations_own_permission_rules_only_the_users_auto_approve_approves_nothing(
        sidecar, tmp_path: Path) -> None:
    """allowManagedPermissionRulesOnly: Claude Code then ignores the user's allow rules; Orion's auto-approve, the
    user's standing allow list, is off with the reason, so the user is asked where it would have answered."""
    from tests.e2e.test_user_choice_hooks import user_settings

    launcher = managed_settings(tmp_path, {"allowManagedPermissionRulesOnly": True})
    env = user_settings(tmp_path, {"auto-approve": {"enabled": True, "bashAllow": ["touch *"]}})
    async with sidecar("notes", trust=False, permission=fixed_policy("allow_once"), env=env, launcher=launcher) as run:
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        [row] = [h for h in listed["hooks"] if h["name"] == "auto-approve"]
        assert row["state"] == "disabled" and "allowManagedPermissionRulesOnly" in row["reason"], row
        session = await run.new_session("approve")
        assert (await run.prompt(session["sessionId"], "go"))["stopReason"] == "end_turn"
    assert len(run.permission_requests) == 2, run.permission_requests  # `touch approved-by-user` asked too
    assert not [e for e in run.named("hook_response") if e["hookName"] == "auto-approve"]


SANDBOXING = {"sandbox": {"enabled": True, "filesystem": {"denyRead": ["/etc/hostname"]}}}


def reading_scenario(tmp_path: Path) -> str:
    import yaml

    path = tmp_path / "read-hostname.yaml"
    path.write_text(yaml.safe_dump({"description": "a read the organization denies", "turns": [
        [{"tool_use": {"name": "Bash", "input": {"command": "cat /etc/hostname; echo rc=$?", "description": "read"}}}],
        "Done."], "default": "Done."}))
    return f"scripted:{path}"


@pytest.mark.asyncio
async def test_the_organizations_own_sandbox_confines_the_commands_when_it_cannot_nest_in_orions(
        sidecar, tmp_path: Path) -> None:
    """Managed `sandbox.enabled` outranks the flag settings that switch the CLI's sandbox off inside Orion's box, and
    as root the CLI's bubblewrap cannot start inside it (measured: every Bash command failed with "bwrap: setting up
    uid map"). The session then has no Orion boundary, says why, and the organization's sandbox applies, as in
    Claude Code; an app that requires Orion's boundary is refused with the same reason."""
    from ipc.errors import RemoteError

    launcher = managed_settings(tmp_path, SANDBOXING)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), launcher=launcher) as run:
        created = await run.request("session/new", {"projectDir": str(run.project), "model": reading_scenario(tmp_path),
                                                    "sandbox": "auto"}, timeout=60.0)
        assert created["sandbox"]["enabled"] is False and "managed" in created["sandbox"]["reason"], created["sandbox"]
        await run.prompt(created["sessionId"], "go")
        [done] = [u for u in run.updates(created["sessionId"], "tool_call_update") if u.get("status")]
        assert "Permission denied" in done["output"] and "uid map" not in done["output"], done
        with pytest.raises(RemoteError) as refused:
            await run.request("session/new", {"projectDir": str(run.project), "model": reading_scenario(tmp_path),
                                              "sandbox": "required"}, timeout=60.0)
        assert "managed Claude Code settings turn on Claude Code's own sandbox" in refused.value.message
