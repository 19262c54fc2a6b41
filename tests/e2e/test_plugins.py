"""Claude Code plugins through `python -m sidecar`: a fixture plugin installed as `claude plugin install` leaves it in a
throwaway CLAUDE_CONFIG_DIR. The user's plugin's PreToolUse guard refuses a Bash command in a session of an untrusted
project; a project's plugin runs only once the project is trusted; an updated plugin waits for trust again, and the
listing names the file that changed. Every session says, in session/new's warnings, what its CLI does not load."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import fixed_policy, result_text, tool_results
from tests.plugin_fixture import InstalledPlugin, install

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

SCENARIO = "plugin_guard"
COMMANDS = ["rm -rf build", "echo safe-call"]


def claude_env(config: Path) -> dict[str, str]:
    """The sidecar reads the user's Claude Code folder as `claude` does: CLAUDE_CONFIG_DIR."""
    return {"ORION_CLAUDE_USER_SETTINGS": "", "CLAUDE_CONFIG_DIR": str(config)}


def guard(tmp_path: Path, log_dir: Path | None = None, **kw) -> InstalledPlugin:
    return install(tmp_path / "claude-config", tmp_path / "marketplace", "guard",
                   log_dir=log_dir or tmp_path / "guard-log", **kw)


async def session(run, *, expect_blocked: bool) -> tuple[str, dict]:
    created = await run.new_session(SCENARIO)
    sid = created["sessionId"]
    await run.prompt(sid, "clean up")
    await run.end(sid)
    first_result = tool_results(run.model_requests(SCENARIO)[-2])
    if expect_blocked:
        [block] = first_result
        assert block.get("is_error") and "rm -rf is not allowed here" in result_text(block)
    return sid, created


def plugin_listing(listed: dict, plugin_id: str) -> dict:
    [entry] = [p for p in listed["trust"]["plugins"] if p["id"] == plugin_id]
    return entry


async def test_a_user_enabled_plugins_guard_blocks_a_bash_command_in_an_untrusted_project(sidecar, tmp_path) -> None:
    plugin = guard(tmp_path)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=claude_env(tmp_path / "claude-config")) as run:
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        assert listed["trusted"] is False
        [row] = [h for h in listed["hooks"] if h.get("plugin")]
        assert row["source"] == "plugin" and row["state"] == "active"
        assert (row["plugin"]["id"], row["plugin"]["name"], row["plugin"]["version"]) == (plugin.plugin_id, "guard", "1.0.0")
        assert row["plugin"]["root"] == str(plugin.root)

        sid, created = await session(run, expect_blocked=True)
        # The session's CLI runs with its own config folder (scripted model): the plugin's commands are not loaded
        # there, and session/new says so.
        assert any(plugin.plugin_id in w and "commands are not loaded" in w for w in created["warnings"])

    assert [c["command"] for c in plugin.calls()] == COMMANDS
    started = [h for h in run.named("hook_started", sid) if h["source"] == "plugin"]
    assert [h["hookName"] for h in started] == ["guard:guard.py guard-log"] * 2
    responses = [r for r in run.named("hook_response", sid) if r["source"] == "plugin"]
    assert [r["outcome"] for r in responses] == ["blocked", "success"]
    # The second command ran: the guard let it through.
    assert "safe-call" in result_text(tool_results(run.model_requests(SCENARIO)[-1])[0])


async def test_a_plugin_hook_gets_CLAUDE_PLUGIN_ROOT_and_CLAUDE_PLUGIN_DATA_as_the_cli_exports_them(
        sidecar, tmp_path) -> None:
    plugin = guard(tmp_path)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=claude_env(tmp_path / "claude-config")) as run:
        await session(run, expect_blocked=True)
    calls = plugin.calls()
    assert calls and all(c["root"] == str(plugin.root) and c["data"] == str(plugin.data_dir) for c in calls)
    assert plugin.data_dir.is_dir() and (plugin.data_dir.stat().st_mode & 0o777) == 0o700


async def test_a_project_enabled_plugin_does_not_run_until_the_project_is_trusted(sidecar, tmp_path) -> None:
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=claude_env(tmp_path / "claude-config")) as run:
        # A project's plugin runs in the session's hook box (sidecar/hook_box.py): it logs where the box may write.
        plugin = guard(tmp_path, scope="project", project=run.project, log_dir=run.project / ".guard-log")
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        [row] = [h for h in listed["hooks"] if h.get("plugin")]
        assert row["source"] == "project-plugin" and row["state"] == "untrusted"
        assert plugin_listing(listed, plugin.plugin_id)["state"] == "untrusted"

        _, created = await session(run, expect_blocked=False)
        assert plugin.calls() == []
        assert any(plugin.plugin_id in w and "the project is not trusted" in w for w in created["warnings"])

        await run.trust()
        sid, _ = await session(run, expect_blocked=True)
        assert [c["command"] for c in plugin.calls()] == COMMANDS
        assert {h["source"] for h in run.named("hook_started", sid) if "guard" in h["hookName"]} == {"project-plugin"}


async def test_an_updated_user_plugin_waits_for_trust_again_and_the_listing_names_the_changed_file(
        sidecar, tmp_path) -> None:
    plugin = guard(tmp_path)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=claude_env(tmp_path / "claude-config")) as run:
        await session(run, expect_blocked=True)  # first sight: pinned, runs
        assert len(plugin.calls()) == 2

        # An update: the guard now refuses every command.
        script = plugin.root / "hooks" / "guard.py"
        script.write_text(script.read_text().replace('if "rm -rf" in command:', "if True:"))
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        entry = plugin_listing(listed, plugin.plugin_id)
        assert entry["state"] == "changed" and entry["changes"] == [{"path": "hooks/guard.py", "change": "modified"}]
        [row] = [h for h in listed["hooks"] if h.get("plugin")]
        assert row["state"] == "untrusted" and "hooks/guard.py (modified)" in row["reason"]

        _, created = await session(run, expect_blocked=False)
        assert len(plugin.calls()) == 2  # the changed plugin did not run
        assert any(plugin.plugin_id in w and "changed since it was first seen" in w for w in created["warnings"])

        trusted = await run.request("hooks/trust", {"projectDir": str(run.project), "plugin": plugin.plugin_id,
                                                    "hash": entry["hash"]})
        assert trusted == {"trusted": True, "hash": entry["hash"]}
        await session(run, expect_blocked=True)
        assert len(plugin.calls()) == 4
        second = tool_results(run.model_requests(SCENARIO)[-1])[0]
        assert "rm -rf is not allowed" in result_text(second)  # the new version's verdict on `echo safe-call`


async def test_the_bundled_cli_resolves_the_same_root_version_and_data_folder(sidecar, tmp_path) -> None:
    """Installed with the CLI's own `claude plugin marketplace add` / `install`, run by the bare CLI: the plugin root,
    version and data folder its hook sees are the ones `hooks/list` shows, and the model reads the guard's refusal
    in the same words from the bare CLI as through the sidecar (the plugin named on a line of its own)."""
    import json
    import os
    import subprocess
    import sys

    from tests.conformance.harness import OFFLINE, REPO, ScriptedServer, cli_path
    from tests.e2e.conftest import SCENARIOS
    from tests.plugin_fixture import MARKETPLACE, install_with_cli, write_guard_plugin

    home, project, market = tmp_path / "home", tmp_path / "project", tmp_path / "marketplace"
    config = home / ".claude"
    config.mkdir(parents=True)
    project.mkdir()
    log_dir = tmp_path / "guard-log"
    write_guard_plugin(market / "plugins" / "guard", "guard", "1.2.0", log_dir)
    env = {**os.environ, **OFFLINE, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)}
    install_with_cli(cli_path(), env, market, "guard", "1.2.0", project)

    server = ScriptedServer(SCENARIOS / f"{SCENARIO}.yaml", tmp_path / "requests.jsonl")
    try:
        done = subprocess.run([cli_path(), "-p", "clean up", "--output-format", "stream-json", "--verbose",
                               "--allowedTools", "Bash"], cwd=project, capture_output=True, text=True, timeout=120,
                              env={**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "scripted-offline"})
    finally:
        server.close()
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    [init] = [r for r in records if r.get("type") == "system" and r.get("subtype") == "init"]
    [cli_plugin] = [p for p in init["plugins"] if p["source"] == f"guard@{MARKETPLACE}"]
    cli_calls = [json.loads(line) for line in (log_dir / "calls.jsonl").read_text().splitlines()]
    assert [c["command"] for c in cli_calls] == COMMANDS  # the bare CLI ran the guard: same behaviour to compare

    listed = subprocess.run([sys.executable, "-m", "hooks", "list", "--json", "--no-builtin", "--project", str(project)],
                            capture_output=True, text=True, timeout=60, cwd=REPO,
                            env={**env, "ORION_CLAUDE_USER_SETTINGS": "", "PYTHONPATH": str(REPO)})
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)["trust"]["plugins"]
    assert (entry["root"], entry["version"]) == (cli_plugin["path"], cli_plugin["version"])
    assert {(c["root"], c["data"]) for c in cli_calls} == {(entry["root"], entry["dataDir"])}

    def refusal(requests: list[dict]) -> str:
        [block] = tool_results(requests[1])
        assert block.get("is_error") is True
        return result_text(block)

    cli_requests = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    cli_words = refusal([r for r in cli_requests if r["has_tools"]])
    assert cli_words.endswith(f"\nThis hook comes from the guard@{MARKETPLACE} plugin.")
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=claude_env(config)) as run:
        sid = (await run.new_session(SCENARIO))["sessionId"]
        await run.prompt(sid, "clean up")
        await run.end(sid)
    assert refusal(run.model_requests(SCENARIO)) == cli_words


async def test_a_held_back_plugin_is_kept_out_of_the_bundled_cli_by_the_flag_settings_orion_gives_it(
        tmp_path, monkeypatch) -> None:
    """What a plugin brings besides hooks follows its trust: for a user's plugin changed since its pin, the CLI is
    given `enabledPlugins: {id: false}` in the flag settings, and the bundled CLI then loads none of it (its commands
    are gone from the session), where it loads them for an unchanged plugin."""
    import json
    import os
    import subprocess

    from hooks.hookset import load_hookset
    from sidecar.agent import AgentConfig, AgentSession
    from tests.conformance.harness import OFFLINE, ScriptedServer, cli_path
    from tests.e2e.conftest import SCENARIOS

    config = tmp_path / "home" / ".claude"
    plugin = install(config, tmp_path / "marketplace", "guard", log_dir=tmp_path / "guard-log")
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, **OFFLINE, "HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(config)}
    monkeypatch.delenv("ORION_CLAUDE_USER_SETTINGS")  # read the user's Claude Code folder as `claude` does
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))

    def flag_settings() -> tuple[list[str], str]:
        held = sorted(load_hookset(project).held_back_plugins())
        agent = AgentSession.__new__(AgentSession)  # only its flag settings are wanted here
        agent.config = AgentConfig(project_dir=project, session_id="x", disabled_plugins=held)
        return held, agent._flag_settings()

    def cli_commands(settings: str) -> list[str]:
        server = ScriptedServer(SCENARIOS / "claude_user_bash.yaml", tmp_path / "requests.jsonl")
        try:
            done = subprocess.run([cli_path(), "-p", "hi", "--output-format", "stream-json", "--verbose",
                                   "--settings", settings, "--max-turns", "1"], cwd=project, capture_output=True,
                                  text=True, timeout=120,
                                  env={**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "scripted"})
        finally:
            server.close()
        [init] = [r for r in map(json.loads, filter(None, done.stdout.splitlines()))
                  if r.get("type") == "system" and r.get("subtype") == "init"]
        return [c for c in init["slash_commands"] if c.startswith("guard:")]

    held, settings = flag_settings()
    assert held == [] and "enabledPlugins" not in json.loads(settings)
    assert cli_commands(settings) == ["guard:check"]

    (plugin.root / "commands" / "check.md").write_text("---\ndescription: check\n---\nSomething else.\n")  # an update
    held, settings = flag_settings()
    assert held == [plugin.plugin_id]
    assert json.loads(settings)["enabledPlugins"] == {plugin.plugin_id: False}
    assert json.loads(settings)["disableAllHooks"] is True
    assert cli_commands(settings) == []
