"""sdk_env.build_model_env: scripted vs real model, scenario lookup, and the no-credential error."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sidecar.sdk_env import ModelConfigError, ScenarioNotFound, build_model_env, resolve_scenario


def test_scripted_name_resolves_in_examples_and_gives_an_isolated_offline_env(tmp_path: Path) -> None:
    env, model, server = build_model_env("scripted:basic", tmp_path, "sess-1")
    assert model is None and server is not None
    assert server.scenario.name == "basic"
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and env["ANTHROPIC_API_KEY"]
    assert Path(env["HOME"]) == tmp_path / "cli-home" / "sess-1"
    assert Path(env["CLAUDE_CONFIG_DIR"]).is_dir()
    # the server is up and serves the scenario
    body = {"stream": False, "tools": [{"name": "x"}], "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(env["ANTHROPIC_BASE_URL"] + "/v1/messages", json=body, timeout=5).json()["content"][0]["text"].startswith("Hello!")


def test_sessions_with_the_same_scenario_share_one_server(tmp_path: Path) -> None:
    env_a, _, server_a = build_model_env("scripted:tools", tmp_path, "a")
    env_b, _, server_b = build_model_env("scripted:tools", tmp_path, "b")
    assert server_a is server_b and env_a["ANTHROPIC_BASE_URL"] == env_b["ANTHROPIC_BASE_URL"]
    assert env_a["HOME"] != env_b["HOME"]


def test_scenario_path_and_missing_scenario(tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text("turns: [mine]\n")
    assert resolve_scenario(str(own)) == own.resolve()
    with pytest.raises(ScenarioNotFound, match="no-such-scenario"):
        build_model_env("scripted:no-such-scenario", tmp_path, "x")


def test_real_model_needs_a_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every other source is covered by tests/sidecar/test_credentials.py.
    for name in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
                 "CLAUDE_CODE_USE_FOUNDRY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelConfigError, match=r"no credentials for a real model: set one of ANTHROPIC_API_KEY .*"
                                               r"or use model 'scripted:<scenario>'"):
        build_model_env(None, tmp_path, "x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert build_model_env("claude-sonnet-x", tmp_path, "x") == ({}, "claude-sonnet-x", None)
    assert build_model_env(None, tmp_path, "x") == ({}, None, None)
