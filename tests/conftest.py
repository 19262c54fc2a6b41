"""Shared test configuration: every test gets an isolated HOME and Orion data/config directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# anyio imports its subprocess module lazily, at a test's first `anyio.open_process`, and pytest rewrites a plugin's
# modules on import (anyio ships a pytest plugin). Rewritten deep inside a running event loop, CPython 3.11.7's
# parser can fail with "AST constructor recursion depth mismatch" (seen when tests/sidecar/test_agent_unit.py ran
# before tests/e2e/test_plugins.py): import it here, at the top of the stack.
import anyio._core._subprocesses  # noqa: F401


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run: what is cached there is built from the repository (the CLI's shield),
    never from a test's data, so every test's sidecar may reuse it."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                  shared_cache: Path) -> Path:
    """Nothing a test does may touch the real user's config, trust store or data directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))
    monkeypatch.setenv("ORION_DATA_DIR", str(home / ".local" / "share" / "orion"))
    monkeypatch.setenv("ORION_USER_SETTINGS", str(home / ".config" / "orion" / "settings.json"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # The user's Claude Code settings are a hook source (claude-user): never the machine's real ~/.claude.
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(home / ".claude" / "settings.json"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("HOOK_DEBUG", raising=False)
    # The sidecars tests start log at INFO (the product's default is WARNING): many tests read what a session logged.
    monkeypatch.setenv("ORION_LOG_LEVEL", os.environ.get("ORION_LOG_LEVEL") or "INFO")
    # The memory backend is the user's choice: a developer's team database must never receive test data.
    for name in ("ORION_MEMORY_URL", "ORION_MEMORY_TEAM", "ORION_MEMORY_USER"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the whole run (tests/pg_server.py), started on first use."""
    from tests.pg_server import PgServer, find_bin_dir

    if find_bin_dir() is None:
        pytest.fail("PostgreSQL is not installed: the memory tests run against a real server "
                    "(apt-get install postgresql, which scripts/bootstrap.sh does)")
    server = PgServer()
    yield server
    server.destroy()


@pytest.fixture(params=["sqlite", "postgres"])
def memory_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per memory backend: the local SQLite file, and a fresh database on a real PostgreSQL."""
    from hooks.memory.store import close_all_stores

    if request.param == "postgres":
        monkeypatch.setenv("ORION_MEMORY_URL", request.getfixturevalue("pg_server").create_database())
    yield request.param
    close_all_stores()
