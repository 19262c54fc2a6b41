"""A Claude Code plugin's userConfig options reach its hooks as they do under Claude Code: the bare bundled CLI and
the sidecar run one installed plugin with saved options (non-sensitive in the user's settings `pluginConfigs`,
sensitive in the CLI's `.credentials.json` `pluginSecrets`), and its hooks see the same CLAUDE_PLUGIN_OPTION_*
variables and the same `${user_config.KEY}` arguments; a hook whose option has no saved value, or a shell-form
command that names one, runs under neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import fixed_policy
from tests.e2e.test_plugins import claude_env

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

RECORD = """import json, os, sys
seen = {k: v for k, v in os.environ.items() if k.startswith("CLAUDE_PLUGIN_OPTION_")}
with open(sys.argv[1], "a") as fh:
    fh.write(json.dumps({"tag": sys.argv[2], "argv": sys.argv[3:], "options": seen}, sort_keys=True) + "\\n")
"""
USER_CONFIG = {
    "api_url": {"type": "string", "title": "API URL", "description": "where", "default": "https://default.example"},
    "token": {"type": "string", "title": "Token", "description": "secret", "sensitive": True},
    "max_items": {"type": "number", "title": "Max", "description": "how many"},
    "never_saved": {"type": "string", "title": "Unset", "description": "no value saved"},
}


def write_plugin(market: Path, log: Path) -> None:
    root = market / "plugins" / "opts"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        {"name": "opts", "version": "1.0.0", "userConfig": USER_CONFIG}))
    (root / "hooks").mkdir()
    (root / "hooks" / "record.py").write_text(RECORD)
    script = "${CLAUDE_PLUGIN_ROOT}/hooks/record.py"

    def exec_form(tag: str, *args: str) -> dict[str, Any]:
        return {"type": "command", "command": sys.executable, "args": [script, str(log), tag, *args]}

    hooks = [exec_form("saved", "${user_config.api_url}", "${user_config.token}", "${user_config.max_items}"),
             exec_form("unsaved", "${user_config.never_saved}"),
             {"type": "command", "command": f"{sys.executable} {script} {log} shell '${{user_config.api_url}}'"}]
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": hooks}]}}))


def install_with_options(tmp_path: Path, name: str) -> tuple[dict[str, str], Path, Path]:
    """The plugin installed with the CLI's own commands in a home of its own, its options saved as /plugin saves
    them; returns (environment, project, the hooks' log)."""
    from tests.conformance.harness import OFFLINE, cli_path
    from tests.plugin_fixture import install_with_cli

    home, project, market, log = (tmp_path / name / "home", tmp_path / name / "project", tmp_path / name / "market",
                                  tmp_path / name / "options.jsonl")
    config = home / ".claude"
    config.mkdir(parents=True)
    project.mkdir()
    write_plugin(market, log)
    env = {**os.environ, **OFFLINE, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)}
    plugin_id = install_with_cli(cli_path(), env, market, "opts", "1.0.0", project)
    settings = json.loads((config / "settings.json").read_text())
    settings["pluginConfigs"] = {plugin_id: {"options": {"api_url": "https://saved.example", "max_items": 7}}}
    (config / "settings.json").write_text(json.dumps(settings))
    (config / ".credentials.json").write_text(json.dumps({"pluginSecrets": {plugin_id: {"token": "tok-123"}}}))
    (config / ".credentials.json").chmod(0o600)
    return env, project, log


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_plugins_saved_options_reach_its_hooks_as_under_claude_code(sidecar, tmp_path: Path) -> None:
    from tests.conformance.harness import ScriptedServer, cli_path
    from tests.e2e.conftest import SCENARIOS

    env, project, log = install_with_options(tmp_path, "bare")
    server = ScriptedServer(SCENARIOS / "claude_user_bash.yaml", tmp_path / "bare-requests.jsonl")
    try:
        done = subprocess.run([cli_path(), "-p", "go", "--output-format", "json", "--allowedTools", "Bash"],
                              cwd=project, capture_output=True, text=True, timeout=120,
                              env={**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "offline"})
    finally:
        server.close()
    assert done.returncode == 0, done.stderr[-2000:]
    cli_seen = records(log)
    expected = {"tag": "saved", "argv": ["https://saved.example", "tok-123", "7"],
                "options": {"CLAUDE_PLUGIN_OPTION_API_URL": "https://saved.example", "CLAUDE_PLUGIN_OPTION_MAX_ITEMS": "7",
                            "CLAUDE_PLUGIN_OPTION_TOKEN": "tok-123"}}
    assert cli_seen == [expected, expected], cli_seen  # one per Bash call; the other two hooks never ran

    env, _project, log = install_with_options(tmp_path, "sidecar")
    async with sidecar(project="notes", trust=True, permission=fixed_policy("allow_once"),
                       env={**claude_env(Path(env["CLAUDE_CONFIG_DIR"])), "HOME": env["HOME"]}) as run:
        listed = await run.request("hooks/list", {"projectDir": str(run.project)})
        rows = {h["name"]: h for h in listed["hooks"] if h.get("plugin")}
        invalid = [h for h in rows.values() if h["state"] == "invalid"]
        assert len(invalid) == 2, rows
        assert any("never_saved" in h["reason"] for h in invalid)
        assert any("shell-form command may not use ${user_config" in h["reason"] for h in invalid)
        # What the user saved as sensitive is not shown in listings: that word as written.
        [saved] = [h for h in rows.values() if h["state"] == "active"]
        assert saved["runs"]["argv"][-3:] == ["https://saved.example", "${user_config.token}", "7"], saved["runs"]
        assert "tok-123" not in json.dumps(listed)
        sid = (await run.new_session("claude_user_bash"))["sessionId"]
        await run.prompt(sid, "go")
        await run.end(sid)
    assert records(log) == cli_seen
