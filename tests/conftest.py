"""Shared test configuration: every test gets an isolated HOME and Orion data/config directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing a test does may touch the real user's config, trust store or data directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ORION_DATA_DIR", str(home / ".local" / "share" / "orion"))
    monkeypatch.setenv("ORION_USER_SETTINGS", str(home / ".config" / "orion" / "settings.json"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # The user's Claude Code settings are a hook source (claude-user): never the machine's real ~/.claude.
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(home / ".claude" / "settings.json"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("HOOK_DEBUG", raising=False)
    return home
