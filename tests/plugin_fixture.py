"""Claude Code plugins on disk for tests, laid out as `claude plugin marketplace add` + `claude plugin install` (2.1.330)
leave them: a local marketplace folder, `known_marketplaces.json`, `installed_plugins.json` (version 2), the versioned
cache copy, and `enabledPlugins` in a settings file. The guard plugin's PreToolUse hook refuses any Bash command with
"rm -rf" (exit 2) and records every call, with the CLAUDE_PLUGIN_* variables it saw, in `<log dir>/calls.jsonl`."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKETPLACE = "orion-fixtures"

GUARD_SCRIPT = """\
import json, os, sys
payload = json.load(sys.stdin)
log_dir = sys.argv[1]
os.makedirs(log_dir, exist_ok=True)
command = (payload.get("tool_input") or {}).get("command", "")
with open(os.path.join(log_dir, "calls.jsonl"), "a") as fh:
    fh.write(json.dumps({"command": command, "root": os.environ.get("CLAUDE_PLUGIN_ROOT"),
                         "data": os.environ.get("CLAUDE_PLUGIN_DATA"), "cwd": os.getcwd()}) + "\\n")
if "rm -rf" in command:
    print("guard plugin: rm -rf is not allowed here", file=sys.stderr)
    sys.exit(2)
"""


@dataclass(slots=True)
class InstalledPlugin:
    plugin_id: str
    root: Path  # where it loads from (CLAUDE_PLUGIN_ROOT)
    data_dir: Path  # CLAUDE_PLUGIN_DATA
    log_dir: Path  # where its guard records its calls

    def calls(self) -> list[dict[str, Any]]:
        path = self.log_dir / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def write_guard_plugin(root: Path, name: str, version: str, log_dir: Path) -> None:
    """A plugin folder: manifest, a commands file and a skill (what the CLI loads besides hooks), and the guard hook."""
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name, "version": version}))
    (root / "hooks").mkdir(exist_ok=True)
    (root / "hooks" / "guard.py").write_text(GUARD_SCRIPT)
    command = f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/hooks/guard.py {log_dir}"
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}))
    (root / "commands").mkdir(exist_ok=True)
    (root / "commands" / "check.md").write_text("---\ndescription: check\n---\nCheck the build.\n")


def install(config_dir: Path, marketplace_dir: Path, name: str, *, version: str = "1.0.0", scope: str = "user",
            project: Path | None = None, in_place: bool = True, log_dir: Path) -> InstalledPlugin:
    """Add `name` to the local marketplace at `marketplace_dir` and record its install as the CLI does.

    `in_place`: the catalogue entry's source is a relative path, so the CLI loads it from the marketplace folder;
    otherwise the entry is a GitHub source and the plugin loads from its versioned cache copy.
    """
    plugins = config_dir / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    source_root = marketplace_dir / "plugins" / name
    write_guard_plugin(source_root, name, version, log_dir)
    catalogue_path = marketplace_dir / ".claude-plugin" / "marketplace.json"
    catalogue_path.parent.mkdir(parents=True, exist_ok=True)
    catalogue = json.loads(catalogue_path.read_text()) if catalogue_path.exists() else {
        "name": MARKETPLACE, "owner": {"name": "Orion tests"}, "plugins": []}
    entry: dict[str, Any] = {"name": name, "version": version,
                             "source": f"./plugins/{name}" if in_place else {"source": "github", "repo": f"orion/{name}"}}
    catalogue["plugins"] = [p for p in catalogue["plugins"] if p["name"] != name] + [entry]
    catalogue_path.write_text(json.dumps(catalogue, indent=2))
    known_path = plugins / "known_marketplaces.json"
    known = json.loads(known_path.read_text()) if known_path.exists() else {}
    known[MARKETPLACE] = {"source": {"source": "directory", "path": str(marketplace_dir)},
                          "installLocation": str(marketplace_dir), "lastUpdated": "2026-01-01T00:00:00.000Z"}
    known_path.write_text(json.dumps(known, indent=2))
    plugin_id = f"{name}@{MARKETPLACE}"
    cache = plugins / "cache" / MARKETPLACE / name / version
    if cache.exists():
        shutil.rmtree(cache)
    shutil.copytree(source_root, cache)
    record: dict[str, Any] = {"scope": scope, "installPath": str(cache), "version": version,
                              "installedAt": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z"}
    if project is not None:
        record["projectPath"] = str(project)
    installed_path = plugins / "installed_plugins.json"
    installed = json.loads(installed_path.read_text()) if installed_path.exists() else {"version": 2, "plugins": {}}
    installed["plugins"][plugin_id] = [record]
    installed_path.write_text(json.dumps(installed, indent=2))
    settings = (project / ".claude" / "settings.json") if scope == "project" and project else config_dir / "settings.json"
    enable(settings, plugin_id)
    return InstalledPlugin(plugin_id, source_root if in_place else cache,
                           plugins / "data" / plugin_id.replace("@", "-"), log_dir)


def install_with_cli(cli: str, env: dict[str, str], market: Path, name: str, version: str, cwd: Path) -> str:
    """Install the plugin at `<market>/plugins/<name>` the way a Claude Code user does: a catalogue naming it in the
    local marketplace `market`, then the CLI's own `claude plugin marketplace add` and `claude plugin install`
    (with `env`: its HOME and CLAUDE_CONFIG_DIR). Returns the plugin's id; raises with the CLI's words on failure."""
    import subprocess

    (market / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "name": MARKETPLACE, "owner": {"name": "Orion tests"},
        "plugins": [{"name": name, "source": f"./plugins/{name}", "version": version}]}))
    plugin_id = f"{name}@{MARKETPLACE}"
    for args in (["plugin", "marketplace", "add", str(market)], ["plugin", "install", plugin_id]):
        done = subprocess.run([cli, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"claude {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return plugin_id


def enable(settings: Path, plugin_id: str, value: Any = True) -> None:
    """Set `enabledPlugins[plugin_id]` in a settings file, keeping what else it holds."""
    settings.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data.setdefault("enabledPlugins", {})[plugin_id] = value
    settings.write_text(json.dumps(data, indent=2))
