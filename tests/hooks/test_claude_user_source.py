"""The user's own Claude Code settings as a hook source (`claude-user`): where the file is, its place in the order,
what may run from it, who may switch it, and that a project reaches none of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hooks.paths import claude_user_settings_path
from hooks.registry import HookRegistry
from hooks.sources import SOURCE_ORDER
from hooks.trust import TrustStore
from tests.hooks.support import PRE_BASH, cmd, running, script, session, settings, write_json

REPO = Path(__file__).resolve().parents[2]


def _claude_user(tmp_path: Path, *entries: dict, event: str = "PreToolUse", matcher: str | None = "Bash", **top) -> Path:
    return write_json(tmp_path / "claude-home" / "settings.json", {**settings(event, *entries, matcher=matcher), **top})


def _states(hs) -> dict[tuple[str, str], str]:
    return {(s.source, s.name): s.state for s in hs.entries}


def _one(hs, name: str, source: str = "claude-user"):
    [spec] = [s for s in hs.entries if s.name == name and s.source == source]
    return spec


# --------------------------------------------------------------------------- where the file is


def test_the_file_is_the_override_else_claude_config_dir_else_home(monkeypatch, tmp_path, isolated_home):
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(tmp_path / "x.json"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert claude_user_settings_path() == tmp_path / "x.json"
    monkeypatch.delenv("ORION_CLAUDE_USER_SETTINGS")
    assert claude_user_settings_path() == tmp_path / "cfg" / "settings.json"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert claude_user_settings_path() == isolated_home / ".claude" / "settings.json"


def test_the_test_suite_never_reads_the_machines_own_claude_settings(project):
    # tests/conftest.py points the source at the test's own HOME, which has no ~/.claude.
    hs = project.load()
    assert hs.paths.claude_user == Path.home() / ".claude" / "settings.json"
    assert not hs.paths.claude_user.exists()
    assert not [s for s in hs.entries if s.source == "claude-user"]


# --------------------------------------------------------------------------- order and policy


def test_sources_concatenate_in_documented_order_then_programmatic(project, tmp_path):
    """builtin, managed, user, claude-user, vault, project, local, then programmatic; every listing row has the same
    keys."""
    assert SOURCE_ORDER == ("builtin", "managed", "user", "claude-user", "vault", "project", "local")
    builtin = write_json(tmp_path / "builtin.json", settings("Stop", cmd("echo b", name="b")))
    managed = write_json(tmp_path / "managed-settings.json", settings("Stop", cmd("echo m", name="m")))
    user = write_json(tmp_path / "user.json", settings("Stop", {"type": "prompt", "prompt": "u", "name": "u"}))
    claude_user = _claude_user(tmp_path, cmd("echo c", name="c"), event="Stop", matcher=None)
    vault = tmp_path / "vault"
    write_json(vault / ".orion" / "settings.json", settings("Stop", {"type": "prompt", "prompt": "v", "name": "v"}))
    project.settings(settings("Stop", cmd("echo p", name="p")))
    project.settings(settings("Stop", cmd("echo l", name="l")), local=True)
    reg = HookRegistry()

    @reg.hook("Stop", name="prog")
    async def prog(inp, ctx):
        return None

    hs = project.load(registry=reg, vault=vault, builtin_settings=builtin, user_settings=user,
                      claude_user_settings=claude_user, managed_settings=(managed,))
    assert [(s.name, s.source) for s in hs.entries] == [
        ("b", "builtin"), ("m", "managed"), ("u", "user"), ("c", "claude-user"), ("v", "vault"), ("p", "project"), ("l", "local"),
        ("prog", "programmatic")]
    first = hs.to_listing()[0]
    assert set(first) == {"id", "name", "event", "matcher", "type", "source", "sourceFile", "state", "reason",
                          "timeout", "failClosed", "async", "runs", "at"}
    assert first["sourceFile"] == str(builtin) and first["state"] == "active"
    row = next(r for r in hs.to_listing() if r["name"] == "c")
    assert row["source"] == "claude-user" and row["sourceFile"] == str(claude_user)
    assert row["state"] == "active" and row["reason"] is None
    assert [k for k, _ in hs.paths.ordered()] == ["builtin", "managed", "user", "claude-user", "vault", "project",
                                                  "local"]


def test_every_hook_type_runs_from_it_without_the_projects_trust(project, tmp_path):
    entries = [cmd("echo c", name="c"), {"type": "python", "script": "gate.py", "name": "py"},
               {"type": "prompt", "prompt": "ok?", "name": "pr"}, {"type": "agent", "prompt": "check", "name": "ag"},
               {"type": "http", "url": "http://127.0.0.1:9/h", "name": "ht"}]
    claude_user = _claude_user(tmp_path, *entries)
    project.settings(settings("PreToolUse", cmd("echo p", name="p"), matcher="Bash"))
    hs = project.load(claude_user_settings=claude_user)
    assert not hs.trusted
    assert {n: st for (src, n), st in _states(hs).items() if src == "claude-user"} == {
        "c": "active", "py": "active", "pr": "active", "ag": "active", "ht": "active"}
    assert _states(hs)[("project", "p")] == "untrusted"
    # A python hook's relative script is the user's, next to the file: never the project's .claude/hooks/gate.py.
    assert _one(hs, "py").script == claude_user.parent / "gate.py"


def test_a_legacy_bare_script_name_is_not_resolved_in_the_projects_hooks_dir(project, tmp_path):
    script(project.hooks_dir / "gate.sh", "#!/bin/sh\ntouch planted\n")
    claude_user = write_json(tmp_path / "claude-home" / "settings.json",
                             {"hooks": {"Stop": [{"command": "gate.sh", "timeout": 5000}]}})
    spec = _one(project.load(claude_user_settings=claude_user), "gate.sh")
    assert spec.command == "gate.sh" and spec.cwd is None
    assert not spec.runs_project_code


@pytest.mark.asyncio
async def test_it_runs_in_an_untrusted_project(project, tmp_path):
    marker = tmp_path / "ran"
    claude_user = _claude_user(tmp_path, cmd(f"echo ran >> {marker}", name="audit"))
    hs = project.load(claude_user_settings=claude_user)
    async with running(hs) as runner:
        agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert [r.source for r in agg.results] == ["claude-user"]
    assert marker.read_text() == "ran\n"


# --------------------------------------------------------------------------- switches


def test_claude_user_hooks_false_in_orions_user_settings_disables_the_whole_file_with_the_reason(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo a", name="a"), {"type": "prompt", "prompt": "p", "name": "b"})
    user = write_json(tmp_path / "user.json", {"claudeUserHooks": False})
    hs = project.load(claude_user_settings=claude_user, user_settings=user)
    for name in ("a", "b"):
        spec = _one(hs, name)
        assert spec.state == "disabled"
        assert "claudeUserHooks is false" in spec.reason and str(user) in spec.reason and str(claude_user) in spec.reason
    # true (the default) and absent both keep them on
    write_json(user, {"claudeUserHooks": True})
    assert _one(project.load(claude_user_settings=claude_user, user_settings=user), "a").state == "active"


def test_a_non_boolean_claude_user_hooks_is_an_error_named_in_the_warnings(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo a", name="a"))
    user = write_json(tmp_path / "user.json", {"claudeUserHooks": "no"})
    hs = project.load(claude_user_settings=claude_user, user_settings=user)
    assert any(f"{user}: $.claudeUserHooks: expected true or false" in w for w in hs.warnings)


def test_orions_user_disabled_hooks_and_disable_all_hooks_reach_it(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo a", name="a"), cmd("echo b", name="b"))
    user = write_json(tmp_path / "user.json", {"disabledHooks": ["a"]})
    hs = project.load(claude_user_settings=claude_user, user_settings=user)
    assert _one(hs, "a").state == "disabled" and str(user) in _one(hs, "a").reason
    assert _one(hs, "b").state == "active"
    write_json(user, {"disableAllHooks": True})
    hs = project.load(claude_user_settings=claude_user, user_settings=user)
    assert _one(hs, "b").state == "disabled" and _one(hs, "b").reason == f"disableAllHooks is set in {user}"


def test_its_own_disable_all_hooks_reaches_only_its_own_hooks(project, tmp_path):
    builtin = write_json(tmp_path / "builtin.json", settings("Stop", cmd("echo b", name="b")))
    claude_user = _claude_user(tmp_path, cmd("echo c", name="c"), disableAllHooks=True)
    project.settings(settings("Stop", cmd("echo p", name="p")))
    project.trust()
    hs = project.load(claude_user_settings=claude_user, builtin_settings=builtin)
    assert _one(hs, "c").state == "disabled" and _one(hs, "c").reason == f"disableAllHooks is set in {claude_user}"
    assert _one(hs, "b", "builtin").state == "active" and _one(hs, "p", "project").state == "active"


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
def test_no_project_switch_reaches_it(project, tmp_path, trusted):
    claude_user = _claude_user(tmp_path, cmd("echo c", name="audit"))
    write_json(project.claude / "hook-overrides.json", {"disabled": ["audit"]})
    project.settings({"disableAllHooks": True, "claudeUserHooks": False, "disabledHooks": ["audit"],
                      "allowedHttpHookUrls": [], **settings("Stop", cmd("echo p", name="own"))})
    project.settings({"disableAllHooks": True, "claudeUserHooks": False}, local=True)
    vault = tmp_path / "vault"
    write_json(vault / ".orion" / "settings.json", {"disableAllHooks": True, "claudeUserHooks": False})
    if trusted:
        TrustStore().trust(project.root, vault_dir=vault)
    hs = project.load(claude_user_settings=claude_user, vault=vault)
    assert _one(hs, "audit").state == "active"
    assert _one(hs, "own", "project").state == "disabled"
    for file in (project.claude / "settings.json", project.claude / "settings.local.json",
                 vault / ".orion" / "settings.json"):
        assert any(w.startswith(f"{file}: $.claudeUserHooks: only Orion's user settings") for w in hs.warnings)
    assert any("'audit' is a claude-user hook; a project may turn off only its own hooks" in w for w in hs.warnings)


def test_a_project_cannot_turn_them_back_on_once_the_user_turned_them_off(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo c", name="audit"))
    user = write_json(tmp_path / "user.json", {"claudeUserHooks": False})
    project.settings({"claudeUserHooks": True})
    project.trust()
    assert _one(project.load(claude_user_settings=claude_user, user_settings=user), "audit").state == "disabled"


def test_its_own_claude_user_hooks_key_is_ignored(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo c", name="audit"), claudeUserHooks=False)
    hs = project.load(claude_user_settings=claude_user)
    assert _one(hs, "audit").state == "active"
    assert any(w.startswith(f"{claude_user}: $.claudeUserHooks") for w in hs.warnings)


def test_http_url_lists_the_users_apply_and_its_own_narrows_only_its_own(project, tmp_path):
    claude_user = _claude_user(tmp_path, {"type": "http", "url": "http://127.0.0.1:9/a", "name": "a"},
                               {"type": "http", "url": "http://10.0.0.1/b", "name": "b"},
                               allowedHttpHookUrls=["http://127.0.0.1:*"])
    project.settings(settings("PreToolUse", {"type": "http", "url": "http://10.0.0.1/p", "name": "p"}, matcher="Bash"))
    project.trust()
    hs = project.load(claude_user_settings=claude_user)
    assert _one(hs, "a").state == "active"
    assert _one(hs, "b").state == "invalid" and "user's Claude Code settings" in _one(hs, "b").reason
    assert _one(hs, "p", "project").state == "active"  # the user's Claude Code list does not reach the project
    user = write_json(tmp_path / "user.json", {"allowedHttpHookUrls": ["http://10.0.0.1/*"]})
    hs = project.load(claude_user_settings=claude_user, user_settings=user)
    assert _one(hs, "a").state == "invalid" and "user's settings" in _one(hs, "a").reason


# --------------------------------------------------------------------------- trust


def test_it_does_not_change_the_projects_trust_hash(project, tmp_path):
    project.settings(settings("Stop", cmd("echo p", name="p")))
    before = project.load().trust_hash
    tool = script(tmp_path / "claude-home" / "hooks" / "notify.sh", "#!/bin/sh\n")
    claude_user = _claude_user(tmp_path, cmd(str(tool), name="notify"), cmd(f"python3 {tool}", name="py"))
    hs = project.load(claude_user_settings=claude_user)
    assert hs.trust_hash == before
    assert {label for label in hs.manifest.files} == {label for label in project.load().manifest.files}


@pytest.mark.asyncio
async def test_a_hook_of_its_that_runs_a_project_file_waits_for_trust_and_is_checked_before_each_run(
        project, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    check = script(project.root / "tools" / "check.sh", f"#!/bin/sh\necho ok >> {marker}\n")
    without = project.load().trust_hash
    claude_user = _claude_user(tmp_path, cmd("tools/check.sh", name="rel"),
                               cmd('"$CLAUDE_PROJECT_DIR"/tools/check.sh', name="abs"))
    # Through the environment, as in the sidecar: the trust store computes the hash from the same sources.
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(claude_user))
    hs = project.load()
    for name in ("rel", "abs"):
        spec = _one(hs, name)
        assert spec.runs_project_code and spec.state == "untrusted"
        assert str(check) in spec.reason and "waits for the project's trust" in spec.reason
    assert "tools/check.sh" in hs.manifest.files and hs.trust_hash != without  # the user reviews what it runs
    TrustStore().trust(project.root, hs.trust_hash)
    hs = project.load()
    assert _one(hs, "rel").state == "active" and _one(hs, "abs").state == "active"
    async with running(hs) as runner:
        await runner.fire("PreToolUse", PRE_BASH, session(project))
        assert marker.read_text() == "ok\nok\n"
        marker.unlink()
        check.write_text(f"#!/bin/sh\necho edited >> {marker}\n")
        agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert not marker.exists()
    assert all(r.outcome == "error" and "changed since the project was trusted" in r.error for r in agg.results)


def test_when_the_project_is_the_home_directory_the_file_is_read_once_as_the_projects(project, tmp_path):
    project.settings(settings("Stop", cmd("echo p", name="p")))
    hs = project.load(claude_user_settings=project.claude / "settings.json")
    assert [(s.source, s.state) for s in hs.entries] == [("project", "untrusted")]
    assert "claude-user" not in [k for k, _ in hs.paths.ordered()]
    assert any("read once, as the project's" in w for w in hs.warnings)


def test_an_identical_project_command_runs_once_as_the_users(project, tmp_path):
    claude_user = _claude_user(tmp_path, cmd("echo same", name="u"))
    project.settings(settings("PreToolUse", cmd("echo same", name="p"), matcher="Bash"))
    hs = project.load(claude_user_settings=claude_user)
    assert _one(hs, "u").state == "active"
    assert _one(hs, "p", "project").state == "disabled"


# --------------------------------------------------------------------------- python -m hooks list


def test_python_m_hooks_list_shows_the_source_its_file_and_why_it_does_not_run(project, tmp_path, isolated_home):
    claude_user = _claude_user(tmp_path, cmd("echo c", name="global-audit"))
    env = {k: v for k, v in __import__("os").environ.items()}
    env.update(ORION_CLAUDE_USER_SETTINGS=str(claude_user), PYTHONPATH=str(REPO))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hooks", "list", "--project", str(project.root), "--no-builtin",
                               *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=60)

    table = run()
    assert table.returncode == 0, table.stderr
    [line] = [ln for ln in table.stdout.splitlines() if ln.startswith("global-audit")]
    assert "claude-user" in line and "active" in line
    assert f"claude-user  {claude_user}" in table.stdout

    user = Path(env["ORION_USER_SETTINGS"])
    write_json(user, {"claudeUserHooks": False})
    listed = json.loads(run("--json").stdout)
    [row] = [h for h in listed["hooks"] if h["name"] == "global-audit"]
    assert row["source"] == "claude-user" and row["sourceFile"] == str(claude_user) and row["state"] == "disabled"
    assert f"claudeUserHooks is false in {user}" in row["reason"]
