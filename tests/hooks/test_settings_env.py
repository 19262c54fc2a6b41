"""The settings files' `env` that hook processes inherit, as in Claude Code, less credentials and a project's loader variables."""

from __future__ import annotations

import json

from hooks.settings_env import settings_env


def test_user_then_project_then_local_later_wins_and_secrets_stay_out(tmp_path, monkeypatch):
    user = tmp_path / "user-settings.json"
    user.write_text(json.dumps({"env": {"TEAM": "user", "PATH": "/opt/user/bin:/usr/bin", "GITHUB_TOKEN": "ghp_x"}}))
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(user))
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {
        "TEAM": "project", "LD_PRELOAD": "./evil.so", "PATH": "./bin", "ANTHROPIC_API_KEY": "sk-x", "DB_PASSWORD": "p"}}))
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"env": {"TEAM": "local", "MODE": "dev"}}))
    env = settings_env(["user", "project", "local"], project)
    # later files win, as in the CLI; the user's own PATH is the user's to set
    assert env == {"TEAM": "local", "PATH": "/opt/user/bin:/usr/bin", "MODE": "dev"}


def test_an_untrusted_projects_env_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(tmp_path / "none.json"))
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"TEAM": "project"}}))
    assert settings_env(["user"], project) == {}
