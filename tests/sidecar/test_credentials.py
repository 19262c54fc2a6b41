"""sidecar/credentials.py: which credential a real-model CLI will use, in Claude Code's precedence, offline;
and what sdk_env does with the answer (the refusal, the CLI's environment)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

import hooks.paths
from sidecar import credentials
from sidecar.credentials import ClaudeFiles, Credential, cli_truthy, find_credential, missing_credential_message
from sidecar.sdk_env import ModelConfigError, NoCredential, build_model_env, cli_environment

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                   "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CONFIG_DIR")


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    # No machine's managed settings in these tests.
    monkeypatch.setattr(hooks.paths, "MANAGED_SETTINGS_DIRS", {})


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def oauth_login(config_dir: Path, scopes: list[str] | None = None) -> Path:
    return write(config_dir / ".credentials.json", {"claudeAiOauth": {
        "accessToken": "sk-ant-oat01-secret", "refreshToken": "sk-ant-ort01-secret", "expiresAt": 4102444800000,
        "scopes": scopes if scopes is not None else ["user:inference", "user:profile"]}})


def find(home: Path, **env: str) -> Credential | None:
    return find_credential({"HOME": str(home), **env}, managed_settings=[])


# ------------------------------------------------------------------------------------------------ precedence


def test_nothing_is_no_credential(tmp_path: Path) -> None:
    assert find(tmp_path) is None
    # Empty values are unset, as for the CLI (measured: an empty ANTHROPIC_AUTH_TOKEN is "Not logged in").
    assert find(tmp_path, ANTHROPIC_API_KEY="", ANTHROPIC_AUTH_TOKEN="  ", CLAUDE_CODE_OAUTH_TOKEN="") is None


def test_a_base_url_alone_is_no_credential(tmp_path: Path) -> None:
    """Measured on the bundled CLI: with only ANTHROPIC_BASE_URL it answers "Not logged in" and sends nothing."""
    assert find(tmp_path, ANTHROPIC_BASE_URL="http://127.0.0.1:9") is None


def test_the_documented_precedence_first_match_wins(tmp_path: Path) -> None:
    home = tmp_path
    write(home / ".claude" / "settings.json", {"apiKeyHelper": "/usr/local/bin/print-key"})
    oauth_login(home / ".claude")
    write(home / ".claude.json", {"primaryApiKey": "sk-ant-console-secret"})
    env = {"CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_AUTH_TOKEN": "t", "ANTHROPIC_API_KEY": "k",
           "CLAUDE_CODE_OAUTH_TOKEN": "o"}
    order = []
    while True:
        found = find(home, **env)
        if found is None:
            break
        order.append(found.source)
        # Take the winner away and look again.
        if found.source.startswith("Amazon Bedrock"):
            env.pop("CLAUDE_CODE_USE_BEDROCK")
        elif found.source in env:
            env.pop(found.source)
        elif found.source == "apiKeyHelper":
            (home / ".claude" / "settings.json").unlink()
        elif found.source == "claude.ai login":
            (home / ".claude" / ".credentials.json").unlink()
        else:
            (home / ".claude.json").unlink()
    assert order == ["Amazon Bedrock (CLAUDE_CODE_USE_BEDROCK)", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY",
                     "apiKeyHelper", "CLAUDE_CODE_OAUTH_TOKEN", "claude.ai login", "Console login"]


@pytest.mark.parametrize("switch,name", [("CLAUDE_CODE_USE_BEDROCK", "Amazon Bedrock"),
                                         ("CLAUDE_CODE_USE_VERTEX", "Google Vertex AI"),
                                         ("CLAUDE_CODE_USE_FOUNDRY", "Microsoft Foundry")])
def test_a_cloud_provider_switch(tmp_path: Path, switch: str, name: str) -> None:
    assert find(tmp_path, **{switch: "true", "ANTHROPIC_API_KEY": "k"}) == Credential(f"{name} ({switch})", "environment")
    # Read as the CLI reads a switch: only 1/true/yes/on.
    for off in ("0", "false", "off", "", "2"):
        assert find(tmp_path, **{switch: off}) is None


def test_cli_truthy() -> None:
    assert all(cli_truthy(v) for v in ("1", "true", "TRUE", " yes ", "on"))
    assert not any(cli_truthy(v) for v in (None, "", "0", "false", "no", "off", "2", "y"))


# ------------------------------------------------------------------------------------------------ settings


def test_an_api_key_helper_is_seen_configured_and_never_run(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    helper = tmp_path / "helper.sh"
    helper.write_text(f"#!/bin/sh\ntouch '{ran}'\necho key\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    settings = write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": str(helper)})
    assert find(tmp_path) == Credential("apiKeyHelper", f"user settings {settings}")
    assert not ran.exists()


def test_claude_config_dir_moves_every_file(tmp_path: Path) -> None:
    home, config = tmp_path / "home", tmp_path / "config"
    write(home / ".claude" / "settings.json", {"apiKeyHelper": "print-key"})
    oauth_login(home / ".claude")
    write(home / ".claude.json", {"primaryApiKey": "sk"})
    # With CLAUDE_CONFIG_DIR set the CLI reads none of ~/.claude, ~/.claude.json (measured).
    assert find(home, CLAUDE_CONFIG_DIR=str(config)) is None
    write(config / ".claude.json", {"primaryApiKey": "sk"})
    assert find(home, CLAUDE_CONFIG_DIR=str(config)) == Credential("Console login", str(config / ".claude.json"))
    oauth_login(config)
    assert find(home, CLAUDE_CONFIG_DIR=str(config)) == Credential("claude.ai login", str(config / ".credentials.json"))
    write(config / "settings.json", {"apiKeyHelper": "print-key"})
    assert find(home, CLAUDE_CONFIG_DIR=str(config)).source == "apiKeyHelper"  # type: ignore[union-attr]
    files = ClaudeFiles.for_env({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)})
    assert files == ClaudeFiles(config, config / "settings.json", config / ".claude.json", config / ".credentials.json")


def test_the_user_settings_env_block_counts_and_outranks_the_environment(tmp_path: Path) -> None:
    settings = write(tmp_path / ".claude" / "settings.json", {"env": {"ANTHROPIC_AUTH_TOKEN": "from-settings"}})
    assert find(tmp_path) == Credential("ANTHROPIC_AUTH_TOKEN", f"env of user settings {settings}")
    # The settings' env is applied over the CLI's environment: a switch turned off there is off.
    write(settings, {"env": {"CLAUDE_CODE_USE_VERTEX": "0"}})
    assert find(tmp_path, CLAUDE_CODE_USE_VERTEX="1", ANTHROPIC_API_KEY="k") == Credential("ANTHROPIC_API_KEY", "environment")


def test_user_settings_count_only_when_the_session_loads_them(tmp_path: Path) -> None:
    """Measured: with --setting-sources not naming `user`, the CLI ignores the user's apiKeyHelper and env."""
    write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": "print-key", "env": {"ANTHROPIC_API_KEY": "k"}})
    assert find_credential({"HOME": str(tmp_path)}, user_settings=False, managed_settings=[]) is None
    assert "with the 'user' setting source loaded" in missing_credential_message({"HOME": str(tmp_path)}, user_settings=False)


def test_managed_settings_count_and_outrank_the_users(tmp_path: Path) -> None:
    managed_dir = tmp_path / "etc-claude-code"
    managed = write(managed_dir / "managed-settings.json", {"apiKeyHelper": "corp-key"})
    drop_in = write(managed_dir / "managed-settings.d" / "10-gateway.json", {"env": {"ANTHROPIC_AUTH_TOKEN": "t"}})
    assert credentials.managed_settings_files(managed_dir) == [managed, drop_in]
    write(tmp_path / ".claude" / "settings.json", {"env": {"ANTHROPIC_AUTH_TOKEN": "mine"}})
    found = find_credential({"HOME": str(tmp_path)}, managed_settings=[managed, drop_in])
    assert found == Credential("ANTHROPIC_AUTH_TOKEN", f"env of managed settings {drop_in}")
    assert find_credential({"HOME": str(tmp_path / "none")}, managed_settings=[managed]) == \
        Credential("apiKeyHelper", f"managed settings {managed}")


def test_broken_files_are_no_credential(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    (tmp_path / ".claude" / ".credentials.json").write_text("[]")
    write(tmp_path / ".claude.json", {"primaryApiKey": ""})
    assert find(tmp_path) is None
    write(tmp_path / ".claude" / "settings.json", {"apiKeyHelper": ["not", "a", "string"], "env": "nope"})
    write(tmp_path / ".claude" / ".credentials.json", {"claudeAiOauth": {"accessToken": "", "scopes": ["user:inference"]}})
    assert find(tmp_path) is None


# ------------------------------------------------------------------------------------------------ the login


def test_a_claude_ai_login_needs_the_inference_scope(tmp_path: Path) -> None:
    """Measured: a login without `user:inference` is "Not logged in"."""
    oauth_login(tmp_path / ".claude", scopes=["user:profile"])
    assert find(tmp_path) is None
    oauth_login(tmp_path / ".claude")
    assert find(tmp_path) == Credential("claude.ai login", str(tmp_path / ".claude" / ".credentials.json"))


def test_on_macos_the_keychain_login_is_taken_from_the_recorded_account(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path / ".claude.json", {"oauthAccount": {"emailAddress": "someone@example.com"}})
    monkeypatch.setattr(sys, "platform", "linux")
    assert find(tmp_path) is None
    monkeypatch.setattr(sys, "platform", "darwin")
    found = find(tmp_path)
    assert found is not None and found.source == "claude.ai login" and "Keychain" in found.where


def test_no_value_is_ever_in_the_answer(tmp_path: Path) -> None:
    secrets = ["sk-ant-oat01-secret", "sk-ant-ort01-secret", "sk-ant-console-secret", "env-secret"]
    oauth_login(tmp_path / ".claude")
    write(tmp_path / ".claude.json", {"primaryApiKey": "sk-ant-console-secret"})
    for env in ({"ANTHROPIC_AUTH_TOKEN": "env-secret"}, {"ANTHROPIC_API_KEY": "env-secret"},
                {"CLAUDE_CODE_OAUTH_TOKEN": "env-secret"}, {}):
        found = find(tmp_path, **env)
        assert found is not None
        assert not any(s in str(found) or s in repr(found) for s in secrets)


# ------------------------------------------------------------------------------------------------ the refusal


def test_the_refusal_names_everything_the_user_can_set(tmp_path: Path) -> None:
    message = missing_credential_message({"HOME": str(tmp_path)})
    for what in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                 f"apiKeyHelper in {tmp_path / '.claude' / 'settings.json'}", "CLAUDE_CODE_OAUTH_TOKEN",
                 "claude setup-token", "claude /login", "CLAUDE_CODE_USE_BEDROCK=1", "CLAUDE_CODE_USE_VERTEX=1",
                 "CLAUDE_CODE_USE_FOUNDRY=1", "'scripted:<scenario>'"):
        assert what in message, what
    assert "ANTHROPIC_BASE_URL is set" not in message
    with_url = missing_credential_message({"HOME": str(tmp_path), "ANTHROPIC_BASE_URL": "http://gw"})
    assert "ANTHROPIC_BASE_URL is set" in with_url and "set ANTHROPIC_AUTH_TOKEN to any value" in with_url


def test_build_model_env_refuses_with_the_message_and_accepts_any_source(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(NoCredential) as refused:
        build_model_env(None, tmp_path, "x")
    assert isinstance(refused.value, ModelConfigError) and refused.value.reason == "modelUnavailable"
    assert "ANTHROPIC_AUTH_TOKEN" in str(refused.value) and "apiKeyHelper" in str(refused.value)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "t")
    assert build_model_env("claude-sonnet-x", tmp_path, "x") == ({}, "claude-sonnet-x", None)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN")
    write(Path.home() / ".claude" / "settings.json", {"apiKeyHelper": "print-key"})
    assert build_model_env(None, tmp_path, "x") == ({}, None, None)
    # Not when the session's CLI does not load the user's settings.
    with pytest.raises(NoCredential):
        build_model_env(None, tmp_path, "x", setting_sources=["project"])
    assert build_model_env(None, tmp_path, "x", setting_sources=["user"]) == ({}, None, None)


def test_build_model_env_logs_the_source_never_the_value(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api-secret")
    with caplog.at_level("INFO", logger="sidecar.sdk_env"):
        build_model_env(None, tmp_path, "sess-9")
    assert "session sess-9: model (the CLI's default), credential ANTHROPIC_API_KEY (environment)" in caplog.text
    assert "sk-ant-api-secret" not in caplog.text


# ------------------------------------------------------------------------------------------------ the CLI's env


def test_the_cli_gets_what_each_source_needs() -> None:
    base = {"PATH": "/usr/bin", "HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/home/u/.cc", "ANTHROPIC_AUTH_TOKEN": "t",
            "ANTHROPIC_BASE_URL": "http://gw", "CLAUDE_CODE_OAUTH_TOKEN": "o", "ANTHROPIC_FOUNDRY_API_KEY": "f",
            "AWS_PROFILE": "p", "AZURE_CLIENT_SECRET": "a", "GOOGLE_APPLICATION_CREDENTIALS": "/g.json"}
    env = cli_environment({}, base=base)
    # The login and the user's settings are found through HOME and CLAUDE_CONFIG_DIR; variables pass by name.
    for name in ("HOME", "CLAUDE_CONFIG_DIR", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                 "ANTHROPIC_FOUNDRY_API_KEY"):
        assert env[name] == base[name]
    # A provider's own credentials only when it is chosen, and chosen as the CLI reads the switch.
    assert not {"AWS_PROFILE", "AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS"} & set(env)
    assert "AWS_PROFILE" not in cli_environment({}, base={**base, "CLAUDE_CODE_USE_BEDROCK": "2"})
    assert cli_environment({}, base={**base, "CLAUDE_CODE_USE_BEDROCK": "yes"})["AWS_PROFILE"] == "p"
    assert cli_environment({}, base={**base, "CLAUDE_CODE_USE_FOUNDRY": "1"})["AZURE_CLIENT_SECRET"] == "a"
    vertex = cli_environment({}, base={**base, "CLAUDE_CODE_USE_VERTEX": "1"})
    assert vertex["GOOGLE_APPLICATION_CREDENTIALS"] == "/g.json" and "AZURE_CLIENT_SECRET" not in vertex
