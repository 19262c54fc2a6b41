"""The memory store itself: schema, WAL, transactions, FTS and concurrency, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from hooks.memory.store import MemoryStore, SchemaTooNewError, fts_query, open_store

# Raw SQL for one session row (the Postgres table also records who wrote it).
_INSERT_SESSION = {
    "sqlite": "INSERT INTO sessions (session_id, project, started_at, updated_at) VALUES ('s', 'p', 0, 0)",
    "postgres": "INSERT INTO sessions (owner, team, shared, session_id, project, started_at, updated_at)"
                " VALUES ('me', '', false, 's', 'p', 0, 0)",
}


def test_schema_is_versioned_in_wal_mode(tmp_path):
    store = MemoryStore(tmp_path / "m.sqlite3")
    assert store._read("PRAGMA journal_mode") == [{"journal_mode": "wal"}]
    assert store._read("PRAGMA user_version") == [{"user_version": 1}]
    tables = {r["name"] for r in store._read("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    assert {"sessions", "user_prompts", "observations", "session_summaries", "memory_fts",
            "observations_by_project", "sessions_by_project"} <= tables
    store.close()
    MemoryStore(tmp_path / "m.sqlite3").close()  # reopening an up-to-date file migrates nothing


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "m.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaTooNewError):
        MemoryStore(path)


def test_a_failed_write_rolls_back_everything(tmp_path, memory_backend):
    store = open_store(tmp_path)
    assert store.backend == memory_backend

    def tx(conn):
        conn.execute(_INSERT_SESSION[memory_backend])
        assert conn.execute("SELECT COUNT(*) AS n FROM sessions").fetchone()[0 if memory_backend == "sqlite" else "n"] == 1
        raise RuntimeError("crash mid-transaction")

    with pytest.raises(RuntimeError):
        store._write(tx)
    assert store._read("SELECT COUNT(*) AS n FROM sessions") == [{"n": 0}]


def test_concurrent_writers_from_threads(tmp_path, memory_backend):
    store = open_store(tmp_path)
    errors = []

    def work(n):
        try:
            for i in range(25):
                num = store.begin_prompt(f"s{n}", "p")
                store.add_observation(f"s{n}", "p", num, "Bash", f"thread {n} step {i}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert store._read("SELECT COUNT(*) AS n FROM observations") == [{"n": 100}]
    assert len(store.search("thread step", limit=100)) == 100
    assert [p for p in range(4) if store.current_prompt_number(f"s{p}") != 25] == []


def test_fts_query_quotes_every_word():
    assert fts_query('login OR "x" NEAR(a*') == '"login" "OR" "x" "NEAR" "a"'
    assert fts_query("  ") is None
