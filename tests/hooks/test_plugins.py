"""Claude Code plugins as a hook source, through `python -m hooks` (list, trust, test) as a real subprocess, under a
throwaway CLAUDE_CONFIG_DIR holding fixture plugins laid out as `claude plugin install` leaves them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin_fixture import InstalledPlugin, enable, install

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's Claude Code folder: CLAUDE_CONFIG_DIR, read as `claude` reads it (no ORION_CLAUDE_USER_SETTINGS)."""
    config = tmp_path / "claude-config"
    config.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.delenv("ORION_CLAUDE_USER_SETTINGS", raising=False)
    return config


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def run_hooks(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hooks", *args], input=stdin, capture_output=True, text=True, env=env,
                          timeout=60)


def listing(project: Path) -> dict:
    out = run_hooks("list", "--project", str(project), "--no-builtin", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def plugin_rows(listed: dict, plugin_id: str) -> list[dict]:
    return [h for h in listed["hooks"] if (h.get("plugin") or {}).get("id") == plugin_id]


def plugin_entry(listed: dict, plugin_id: str) -> dict:
    [entry] = [p for p in listed["trust"]["plugins"] if p["id"] == plugin_id]
    return entry


def guard(claude: Path, tmp_path: Path, **kw) -> InstalledPlugin:
    return install(claude, tmp_path / "marketplace", kw.pop("name", "guard"), log_dir=tmp_path / "guard-log", **kw)


def rm_payload() -> str:
    return json.dumps({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}})


def test_a_user_enabled_plugin_is_listed_with_name_version_and_root_and_runs_without_the_projects_trust(
        claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path)
    listed = listing(project)
    assert listed["trust"]["trusted"] is False
    [row] = plugin_rows(listed, plugin.plugin_id)
    assert row["source"] == "plugin" and row["state"] == "active" and row["reason"] is None
    assert row["name"] == "guard:guard.py guard-log"
    assert row["plugin"] == {"id": plugin.plugin_id, "name": "guard", "version": "1.0.0", "marketplace": "orion-fixtures",
                             "root": str(plugin.root), "enabledBy": "plugin",
                             "enabledIn": str(claude / "settings.json")}
    # ${CLAUDE_PLUGIN_ROOT} is the plugin's own folder (a local marketplace's plugin loads in place, not from the cache).
    assert f"{plugin.root}/hooks/guard.py" in row["runs"]["command"] and "${" not in row["runs"]["command"]
    entry = plugin_entry(listed, plugin.plugin_id)
    assert entry["state"] == "trusted" and entry["inPlace"] is True and entry["components"] == ["commands"]
    assert entry["dataDir"] == str(claude / "plugins" / "data" / "guard-orion-fixtures")
    # The data folder exists, private (the CLI creates it on first use; Orion runs the hooks).
    assert stat.S_IMODE(os.stat(entry["dataDir"]).st_mode) == 0o700

    table = run_hooks("list", "--project", str(project), "--no-builtin")
    assert "plugin guard 1.0.0" in table.stdout and "guard@orion-fixtures 1.0.0" in table.stdout

    out = run_hooks("test", "PreToolUse", "--payload", "-", "--project", str(project), "--no-builtin", stdin=rm_payload())
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert [(r["hook"], r["source"], r["exitCode"]) for r in got["results"]] == [("guard:guard.py guard-log", "plugin", 2)]
    assert got["aggregate"]["decision"] == "deny"
    assert "rm -rf is not allowed" in got["aggregate"]["reason"]
    assert [c["command"] for c in plugin.calls()] == ["rm -rf build"]


def test_a_plugin_from_a_remote_marketplace_loads_from_its_install_record(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path, in_place=False, version="2.3.4")
    [row] = plugin_rows(listing(project), plugin.plugin_id)
    assert row["plugin"]["root"] == str(claude / "plugins" / "cache" / "orion-fixtures" / "guard" / "2.3.4")
    assert row["plugin"]["version"] == "2.3.4" and row["state"] == "active"


def test_a_project_enabled_plugin_waits_for_the_projects_trust(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path, scope="project", project=project)
    listed = listing(project)
    [row] = plugin_rows(listed, plugin.plugin_id)
    assert row["source"] == "project-plugin" and row["state"] == "untrusted"
    assert row["plugin"]["enabledIn"] == str(project / ".claude" / "settings.json")
    assert plugin_entry(listed, plugin.plugin_id)["state"] == "untrusted"
    # Its files are part of what the user trusts with the project.
    assert f"plugin:{plugin.plugin_id}/hooks/guard.py" in {f["path"] for f in listed["trust"]["files"]}
    out = run_hooks("test", "PreToolUse", "--payload", "-", "--project", str(project), "--no-builtin", stdin=rm_payload())
    assert json.loads(out.stdout)["results"] == [] and plugin.calls() == []

    assert run_hooks("trust", "--project", str(project), "--hash", listed["trustHash"]).returncode == 0
    [row] = plugin_rows(listing(project), plugin.plugin_id)
    assert row["state"] == "active"
    out = run_hooks("test", "PreToolUse", "--payload", "-", "--project", str(project), "--no-builtin", stdin=rm_payload())
    assert json.loads(out.stdout)["aggregate"]["decision"] == "deny"


def test_an_updated_project_plugin_untrusts_the_project_and_the_listing_names_the_file(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path, scope="project", project=project)
    assert run_hooks("trust", "--project", str(project)).returncode == 0
    (plugin.root / "hooks" / "guard.py").write_text("import sys\nsys.exit(0)\n")  # the update lets everything through
    listed = listing(project)
    [row] = plugin_rows(listed, plugin.plugin_id)
    assert row["state"] == "untrusted" and f"plugin:{plugin.plugin_id}/hooks/guard.py (modified)" in row["reason"]
    assert {"path": f"plugin:{plugin.plugin_id}/hooks/guard.py", "change": "modified"} in listed["trust"]["changes"]


def test_an_updated_user_plugin_needs_trust_again_and_the_listing_names_the_changed_file(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path)
    assert plugin_entry(listing(project), plugin.plugin_id)["state"] == "trusted"  # first seen: pinned
    (plugin.root / "hooks" / "guard.py").write_text("import sys\nsys.exit(0)\n")
    (plugin.root / "hooks" / "new.sh").write_text("true\n")
    listed = listing(project)
    [row] = plugin_rows(listed, plugin.plugin_id)
    assert row["state"] == "untrusted"
    assert "hooks/guard.py (modified)" in row["reason"] and "hooks/new.sh (added)" in row["reason"]
    entry = plugin_entry(listed, plugin.plugin_id)
    assert entry["state"] == "changed"
    assert entry["changes"] == [{"path": "hooks/guard.py", "change": "modified"},
                                {"path": "hooks/new.sh", "change": "added"}]
    table = run_hooks("list", "--project", str(project), "--no-builtin")
    assert "changed since trusted: hooks/guard.py (modified)" in table.stdout
    # The project's own trust is not what is asked for: trusting the project does not trust the plugin.
    assert run_hooks("trust", "--project", str(project)).returncode == 0
    assert plugin_rows(listing(project), plugin.plugin_id)[0]["state"] == "untrusted"
    # A stale review is refused; the reviewed hash is trusted.
    stale = run_hooks("trust", "--project", str(project), "--plugin", plugin.plugin_id, "--hash", "0" * 64)
    assert stale.returncode == 1 and "changed since it was reviewed" in stale.stderr
    ok = run_hooks("trust", "--project", str(project), "--plugin", plugin.plugin_id, "--hash", entry["hash"])
    assert ok.returncode == 0, ok.stderr
    assert plugin_rows(listing(project), plugin.plugin_id)[0]["state"] == "active"


def test_a_project_cannot_switch_off_the_users_plugin_nor_redirect_its_marketplace(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path)
    enable(project / ".claude" / "settings.local.json", plugin.plugin_id, False)
    listed = listing(project)
    [row] = plugin_rows(listed, plugin.plugin_id)
    assert row["source"] == "plugin" and row["state"] == "active"
    assert any("does not switch off the user's plugin hooks" in w for w in listed["warnings"])

    # A user plugin of a marketplace the user never registered: the project declaring one of that name changes nothing.
    enable(claude / "settings.json", "other@elsewhere")
    evil = project / "evil-market"
    install(claude.parent / "scratch", evil, "other", log_dir=tmp_path / "evil-log")  # a catalogue inside the project
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({"extraKnownMarketplaces": {
        "elsewhere": {"source": {"source": "directory", "path": str(evil)}}}}))
    listed = listing(project)
    assert plugin_rows(listed, "other@elsewhere") == []
    assert plugin_entry(listed, "other@elsewhere")["state"] == "unresolved"
    assert "not registered" in plugin_entry(listed, "other@elsewhere")["problem"]


def test_a_disabled_or_version_listed_plugin_brings_no_hooks(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path)
    enable(claude / "settings.json", plugin.plugin_id, ["1.0.0"])
    listed = listing(project)
    assert plugin_rows(listed, plugin.plugin_id) == [] and listed["trust"]["plugins"] == []
    assert any("only true turns a plugin on" in w for w in listed["warnings"])


def test_the_users_disable_all_hooks_and_claude_user_hooks_switch_plugin_hooks_off(claude, project, tmp_path) -> None:
    plugin = guard(claude, tmp_path)
    orion_user = Path(os.environ["ORION_USER_SETTINGS"])
    orion_user.parent.mkdir(parents=True, exist_ok=True)
    orion_user.write_text(json.dumps({"claudeUserHooks": False}))
    [row] = plugin_rows(listing(project), plugin.plugin_id)
    assert row["state"] == "disabled" and "claudeUserHooks is false" in row["reason"]
    orion_user.write_text("{}")
    settings = json.loads((claude / "settings.json").read_text())
    (claude / "settings.json").write_text(json.dumps({**settings, "disableAllHooks": True}))
    [row] = plugin_rows(listing(project), plugin.plugin_id)
    assert row["state"] == "disabled" and "disableAllHooks" in row["reason"]
