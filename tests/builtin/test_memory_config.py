"""Choosing the memory backend: the user's environment and settings, errors that name the setting, passwords never shown."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hooks.memory.config import MemoryConfigError, load_config, redact_url
from hooks.memory.store import close_all_stores, open_store


@pytest.mark.parametrize("url, shown", [
    ("postgresql://alice:pa%40ss@db:5432/orion", "postgresql://alice:***@db:5432/orion"),
    ("postgresql://db/orion?user=bob&password=hunter2&sslmode=require",
     "postgresql://db/orion?user=bob&password=***&sslmode=require"),
    ("postgresql://alice@db/orion", "postgresql://alice@db/orion"),
])
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def settings(tmp_path: Path, memory: object) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"memory": memory}))
    return path


def test_sqlite_unless_the_user_names_a_database(tmp_path: Path) -> None:
    assert load_config({}, tmp_path / "absent.json").backend == "sqlite"
    from_file = load_config({}, settings(tmp_path, {"url": "postgresql://h/db", "team": "core", "user": "al"}))
    assert (from_file.backend, from_file.team, from_file.user) == ("postgres", "core", "al")
    assert from_file.source.endswith("settings.json: $.memory.url")
    from_env = load_config({"ORION_MEMORY_URL": "postgres://other/db", "ORION_MEMORY_TEAM": "ops"},
                           settings(tmp_path, {"url": "postgresql://h/db", "team": "core"}))
    assert (from_env.url, from_env.source, from_env.team) == ("postgres://other/db", "ORION_MEMORY_URL", "ops")


@pytest.mark.parametrize("memory, names", [
    ({"url": "mysql://u:topsecret@h/db"}, "$.memory.url"),
    ({"url": "postgresql://h/db", "teamProjects": {"/p": "app"}}, "$.memory.teamProjects"),
    ({"url": "postgresql://h/db", "team": "no spaces please"}, "$.memory.team"),
    ({"url": "postgresql://h/db", "bufferLimit": 0}, "$.memory.bufferLimit"),
])
def test_a_bad_setting_is_named(tmp_path: Path, memory: dict, names: str) -> None:
    with pytest.raises(MemoryConfigError) as err:
        load_config({}, settings(tmp_path, memory))
    assert names in str(err.value) and "topsecret" not in str(err.value)


def test_a_bad_setting_keeps_memory_local_and_is_reported_once(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("ORION_MEMORY_URL", "mysql://u:topsecret@h/db")
    try:
        stores = {open_store(tmp_path / "data").backend for _ in range(3)}
    finally:
        close_all_stores()
    assert stores == {"sqlite"}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ORION_MEMORY_URL" in errors[0] and "topsecret" not in caplog.text
