"""`orion chat` without --scenario: the real model with whatever credential the sidecar finds, or its refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                   "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CONFIG_DIR")
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}


def chat(project: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARS}
    env.update(OFFLINE, PYTHONPATH=str(ROOT), **extra)
    return subprocess.run([sys.executable, "-m", "frontend_stub", "chat", "Say something.", "--project", str(project)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[str]:
    scenario = tmp_path / "gateway.json"
    scenario.write_text(json.dumps({"turns": ["Hello from the gateway."], "side_reply": "Gateway chat"}))
    proc = subprocess.Popen([sys.executable, "-m", "sidecar.scripted_model", str(scenario)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_without_any_credential_chat_says_what_to_set(tmp_path: Path) -> None:
    result = chat(tmp_path)
    assert result.returncode == 1
    assert "orion: the sidecar refused the session: no credentials for a real model" in result.stderr
    for what in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "apiKeyHelper", "claude /login", "--scenario NAME"):
        assert what in result.stderr, what


@pytest.mark.cli
def test_an_auth_token_and_a_base_url_are_enough(tmp_path: Path, gateway: str) -> None:
    result = chat(tmp_path, ANTHROPIC_BASE_URL=gateway, ANTHROPIC_AUTH_TOKEN="gateway-token-dummy")
    assert result.returncode == 0, result.stderr
    assert "Hello from the gateway." in result.stdout
    assert "gateway-token-dummy" not in result.stdout + result.stderr
