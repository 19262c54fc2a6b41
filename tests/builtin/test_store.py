"""The memory store itself: schema, WAL, transactions, FTS and concurrency, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from hooks.memory.store import SCHEMA_VERSION, MemoryStore, SchemaTooNewError, fts_query, open_store

# Raw SQL for one session row (the Postgres table also records who wrote it).
_INSERT_SESSION = {
    "sqlite": "INSERT INTO sessions (session_id, project, started_at, updated_at) VALUES ('s', 'p', 0, 0)",
    "postgres": "INSERT INTO sessions (owner, team, shared, session_id, project, started_at, updated_at)"
                " VALUES ('me', '', false, 's', 'p', 0, 0)",
}


def test_schema_is_versioned_in_wal_mode(tmp_path):
    store = MemoryStore(tmp_path / "m.sqlite3")
    assert store._read("PRAGMA journal_mode") == [{"journal_mode": "wal"}]
    assert store._read("PRAGMA user_version") == [{"user_version": SCHEMA_VERSION}]
    tables = {r["name"] for r in store._read("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    assert {"sessions", "user_prompts", "observations", "session_summaries", "memory_fts",
            "observations_by_project", "sessions_by_project"} <= tables
    store.close()
    MemoryStore(tmp_path / "m.sqlite3").close()  # reopening an up-to-date file migrates nothing


def test_a_prompt_or_summary_replaced_leaves_one_full_text_row_found_by_its_rowid(tmp_path):
    """A Stop that fires twice for a turn, a prompt written again: one row each in the full-text index, replaced by
    rowid (the plan names the rowid: no scan of the index, whatever its size)."""
    store = MemoryStore(tmp_path / "m.sqlite3")
    store.add_observation("s1", "/p", 1, "Bash", "an observation about caching")
    for text in ("first prompt text", "second prompt text"):
        store.add_prompt("s1", "/p", 1, text)
    for outcome in ("first outcome", "second outcome"):
        store.upsert_summary("s1", "/p", 1, "the request", outcome)
    rows = store._read("SELECT rowid, kind, text FROM memory_fts ORDER BY kind")
    assert [(r["kind"], r["text"]) for r in rows] == [
        ("observation", "an observation about caching"), ("prompt", "second prompt text"),
        ("summary", "the request\nsecond outcome")]
    assert all(r["rowid"] < 0 for r in rows if r["kind"] != "observation")
    # FTS5's plan for a rowid lookup reads "INDEX 0:=" (a seek); a filter on UNINDEXED columns reads "INDEX 0:" (all).
    plan = " ".join(str(r) for r in store._read("EXPLAIN QUERY PLAN DELETE FROM memory_fts WHERE rowid = ?", (-2,)))
    assert "VIRTUAL TABLE INDEX 0:=" in plan, plan
    store.close()


def test_a_version_1_memory_is_migrated_in_place(tmp_path):
    """A memory written by the previous schema keeps everything and finds it by the same words; its prompts and
    summaries are re-keyed, so replacing one afterwards leaves one row."""
    path = tmp_path / "m.sqlite3"
    from hooks.memory.store import _MIGRATIONS, _split_sql

    conn = sqlite3.connect(path)
    for statement in _split_sql(_MIGRATIONS[1]):
        conn.execute(statement)
    conn.execute("INSERT INTO sessions (session_id, project, started_at, updated_at) VALUES ('s1', '/p', 1, 1)")
    conn.execute("INSERT INTO user_prompts (session_id, prompt_number, text, created_at) VALUES ('s1', 1, 'old prompt', 1)")
    conn.execute("INSERT INTO session_summaries (session_id, project, prompt_number, request, outcome, created_at)"
                 " VALUES ('s1', '/p', 1, 'old request', 'old outcome', 1)")
    conn.execute("INSERT INTO memory_fts (text, kind, ref_id, session_id, project, created_at)"
                 " VALUES ('old prompt', 'prompt', 1, 's1', '/p', 1)")
    conn.execute("INSERT INTO memory_fts (text, kind, ref_id, session_id, project, created_at)"
                 " VALUES ('old request\nold outcome', 'summary', 1, 's1', '/p', 1)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store = MemoryStore(path)
    assert store._read("PRAGMA user_version") == [{"user_version": SCHEMA_VERSION}]
    before = store._read("SELECT kind, text, project FROM memory_fts ORDER BY kind")
    assert [(r["kind"], r["text"], r["project"]) for r in before] == [
        ("prompt", "old prompt", "/p"), ("summary", "old request\nold outcome", "/p")]
    store.add_prompt("s1", "/p", 1, "new prompt")
    store.upsert_summary("s1", "/p", 1, "new request", "new outcome")
    after = store._read("SELECT kind, text FROM memory_fts ORDER BY kind")
    assert [(r["kind"], r["text"]) for r in after] == [("prompt", "new prompt"), ("summary", "new request\nnew outcome")]
    store.close()


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
    assert fts_query('login OR "x" NEAR(a*') == '"login" "x" "NEAR"'  # quoted; stop words (OR, a) left out
    assert fts_query("the") == '"the"'  # but a query of stop words alone searches for them
    assert fts_query("  ") is None


def test_a_version_3_memory_is_renumbered_scoped_and_embedded_again_by_the_migration(tmp_path) -> None:
    """v4 rebuilds the full-text table: each project's scope token, and an observation's rowid is its own id (FTS5
    had numbered observations on from the newest prompt's -2p: -1, 0, 1...; 0 is the vector index's tombstone).
    Vectors keyed by the old rowids are dropped; the backfill makes them again and a search by meaning answers."""
    from hooks.memory.store import _MIGRATIONS, _split_sql

    path = tmp_path / "m.sqlite3"
    store = MemoryStore(path)
    store.add_prompt("s1", "/p", 1, "why did the zebra migration run twice")
    store.add_observation("s1", "/p", 1, "Bash", "the zebra migration ran twice")
    store.add_observation("s1", "/q", 1, "Bash", "the zebra of another project")
    store.close()
    conn = sqlite3.connect(str(path))  # back to what version 3 wrote: no scope, observations numbered after -2,
    conn.execute("ALTER TABLE observations ADD COLUMN text TEXT NOT NULL DEFAULT ''")  # each text in its row too
    conn.execute("UPDATE observations SET text = (SELECT f.text FROM memory_fts f WHERE f.rowid = observations.id)")
    conn.execute("CREATE VIRTUAL TABLE old_fts USING fts5 (text, kind UNINDEXED, ref_id UNINDEXED,"
                 " session_id UNINDEXED, project UNINDEXED, created_at UNINDEXED, tokenize = 'porter unicode61')")
    conn.execute("INSERT INTO old_fts (rowid, text, kind, ref_id, session_id, project, created_at)"
                 " SELECT CASE kind WHEN 'observation' THEN ref_id - 2 ELSE rowid END, text, kind, ref_id, session_id,"
                 " project, created_at FROM memory_fts")
    conn.execute("DROP TABLE memory_fts")
    conn.execute("ALTER TABLE old_fts RENAME TO memory_fts")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    assert sorted(r[0] for r in conn.execute("SELECT rowid FROM memory_fts")) == [-2, -1, 0]
    conn.close()
    assert _split_sql(_MIGRATIONS[4])
    store = MemoryStore(path)
    assert store._read("PRAGMA user_version") == [{"user_version": SCHEMA_VERSION}]
    rows = store._read("SELECT rowid, kind, ref_id FROM memory_fts ORDER BY rowid")
    assert [(r["rowid"], r["kind"]) for r in rows] == [(-2, "prompt"), (1, "observation"), (2, "observation")]
    assert all(r["rowid"] == r["ref_id"] for r in rows if r["kind"] == "observation")
    by_words = store.search("zebra", project="/p", mode="text")
    assert {h["text"] for h in by_words} == {"the zebra migration ran twice", "why did the zebra migration run twice"}
    assert store.search("zebra", project="/q", mode="text")[0]["text"] == "the zebra of another project"
    assert store.vector_status()["embedded"] == 0 and store.backfill() == 3
    by_meaning = store.search("a database change applied two times", project="/p", mode="meaning")
    assert {h["project"] for h in by_meaning} == {"/p"} and len(by_meaning) == 2
    store.close()


def test_a_version_4_memory_keeps_each_observation_text_once_and_loses_none(tmp_path) -> None:
    """v5 drops the observations table's copy of each text (the full-text row holds it, and every reader takes it
    from there); an observation whose full-text row is missing (a file damaged by hand) gets one first."""
    path = tmp_path / "m.sqlite3"
    store = MemoryStore(path)
    store.add_observation("s1", "/p", 1, "Bash", "the quokka export finished")
    store.add_observation("s1", "/p", 1, "Read", "the quokka notes were read")
    store.close()
    conn = sqlite3.connect(str(path))  # back to what version 4 wrote: each text in its row as well
    conn.execute("ALTER TABLE observations ADD COLUMN text TEXT NOT NULL DEFAULT ''")
    conn.execute("UPDATE observations SET text = (SELECT f.text FROM memory_fts f WHERE f.rowid = observations.id)")
    conn.execute("DELETE FROM memory_fts WHERE rowid = 2")  # the damaged one: its text only in its row
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    store = MemoryStore(path)
    assert store._read("PRAGMA user_version") == [{"user_version": SCHEMA_VERSION}]
    assert "text" not in {r["name"] for r in store._read("PRAGMA table_info(observations)")}
    assert [(r["id"], r["tool_name"], r["text"]) for r in store.observations("s1")] == [
        (1, "Bash", "the quokka export finished"), (2, "Read", "the quokka notes were read")]
    context = store.recent_context("/p", exclude_session="other", summaries=5, observations=5)
    assert [o["text"] for o in context.observations] == ["the quokka notes were read", "the quokka export finished"]
    assert {h["text"] for h in store.search("quokka", project="/p", mode="text")} == {
        "the quokka export finished", "the quokka notes were read"}
    store.add_observation("s1", "/p", 2, "Bash", "a quokka after the migration")
    assert store.observations("s1")[-1]["text"] == "a quokka after the migration"
    # The newest observations of a project are read by its index, each text by its full-text rowid (no scan).
    plan = " | ".join(r["detail"] for r in store._read(
        "EXPLAIN QUERY PLAN SELECT o.session_id, o.tool_name, f.text, o.created_at FROM observations o"
        " JOIN memory_fts f ON f.rowid = o.id WHERE o.project = ? AND o.session_id != ?"
        " ORDER BY o.created_at DESC, o.id DESC LIMIT 5", ("/p", "x")))
    assert "observations_by_project" in plan and "INDEX 0:=" in plan, plan
    store.close()


def test_observations_are_found_when_a_prompt_was_stored_first(tmp_path) -> None:
    """The order the memory hooks write in (the prompt, then what the tools did): every observation is found by
    words and by meaning (FTS5's own numbering put the first two at rowids -1 and 0, outside both searches)."""
    store = MemoryStore(tmp_path / "m.sqlite3")
    store.add_prompt("s1", "/p", 1, "leave a trace")
    for word in ("glimmerstone", "quartzhollow", "emberlark"):
        store.add_observation("s1", "/p", 1, "Bash", f"echo observation {word}")
    for word in ("glimmerstone", "quartzhollow", "emberlark"):
        assert [h["kind"] for h in store.search(word, project="/p", mode="text")] == ["observation"], word
    near = store.search("echo observation", project="/p", limit=10, mode="meaning")
    assert sum(h["kind"] == "observation" for h in near) == 3
    store.close()


def test_a_write_waits_for_another_writer_longer_than_sqlites_own_wait_and_loses_nothing(tmp_path, monkeypatch):
    """Another process holding the memory file's write lock (another sidecar, a backup) past SQLite's busy wait:
    the write waits for it (the store's patience), lands once the lock goes, and a reader is served meanwhile; past
    the patience it fails with SQLite's own error rather than hang."""
    from hooks.memory import store as store_module

    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)  # SQLite's own wait, per try
    store = open_store(tmp_path)
    num = store.begin_prompt("s1", "p")
    holder = sqlite3.connect(store.path, timeout=1.0)
    holder.execute("BEGIN IMMEDIATE")
    done = []
    writer = threading.Thread(target=lambda: done.append(store.add_observation("s1", "p", num, "Bash", "held")))
    writer.start()
    writer.join(0.5)
    try:
        assert writer.is_alive()  # past SQLite's own 100 ms: still waiting, not failed
        assert store.search("held") == []  # a reader is served meanwhile
    finally:
        holder.rollback()
        holder.close()
    writer.join(10)
    assert len(done) == 1 and [h["text"] for h in store.search("held")] == ["held"]

    monkeypatch.setattr(store_module, "WRITE_PATIENCE_S", 0.3)
    holder = sqlite3.connect(store.path, timeout=1.0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            store.add_observation("s1", "p", num, "Bash", "given up")
    finally:
        holder.rollback()
        holder.close()
