"""The memory store: sessions, user prompts, observations and summaries in one private SQLite file (WAL, FTS5), every text redacted.

Exceptions:

    MemoryStoreError
     └── SchemaTooNewError   the file (or database) was written by a newer sidecar; we refuse to touch it

`open_store(data_dir)` is the one way in: this SQLite file by default, the
team's PostgreSQL database (hooks/memory/pg_store.py, same methods) when the
user's settings or `ORION_MEMORY_URL` name one (hooks/memory/config.py).

Every method here is synchronous and does blocking I/O; async callers go
through `MemoryStore.run(...)`, which hops to a worker thread. One connection
per store, guarded by a lock: SQLite serialises writers anyway, and a lock is
simpler to reason about than a connection per thread.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from hooks.memory import bm25, fts_window
from hooks.memory.config import MemoryConfig, MemoryConfigError, RetentionRule, install_id, load_config
from hooks.memory.embedder import embedder_status, get_embedder
from hooks.memory.ranking import meaning_snippet, meaning_why, text_why
from hooks.memory.ranking import search as ranked_search
from hooks.memory.retention import PRUNE_BATCH, VECTOR_BYTES, Cut, Removed, cut_of
from hooks.memory.usage import UsageSql
from hooks.memory.usage import usage as usage_of
from hooks.memory.vectors import VectorIndex
from hooks.private_files import fix_file_mode, open_private, private_data_dir
from hooks.redaction import redact

T = TypeVar("T")

SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 5000
WRITE_PATIENCE_S = 60.0  # how long a write waits in all for another writer of the file (store._write)

_SCHEMA_V1 = """
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed')),
    prompt_count INTEGER NOT NULL DEFAULT 0,
    started_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    completed_at REAL,
    end_reason TEXT
);
CREATE INDEX sessions_by_project ON sessions (project, started_at DESC);

CREATE TABLE user_prompts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    prompt_number INTEGER NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (session_id, prompt_number)
);
CREATE INDEX user_prompts_by_time ON user_prompts (created_at DESC);

CREATE TABLE observations (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX observations_by_session ON observations (session_id, id);
CREATE INDEX observations_by_project ON observations (project, created_at DESC);

CREATE TABLE session_summaries (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    request TEXT NOT NULL,
    outcome TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (session_id, prompt_number)
);
CREATE INDEX session_summaries_by_project ON session_summaries (project, created_at DESC);

-- One full-text index over everything searchable: `kind` and `ref_id` point back at the row.
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    text,
    kind UNINDEXED,
    ref_id UNINDEXED,
    session_id UNINDEXED,
    project UNINDEXED,
    created_at UNINDEXED,
    tokenize = 'porter unicode61'
);
"""

# v2: a prompt's and a summary's full-text row is keyed by its own row (prompt id p: rowid -2p; summary id s:
# -(2s+1)), so replacing one deletes by rowid instead of filtering UNINDEXED columns, which scanned the whole index
# (0.5 ms at 1k observations, 324 ms at 1M). (Observations: their own ids since v4.)
_SCHEMA_V2 = """
DELETE FROM memory_fts WHERE kind IN ('prompt', 'summary');
INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at)
    SELECT -2 * p.id, p.text, 'prompt', p.prompt_number, p.session_id, s.project, p.created_at
    FROM user_prompts p JOIN sessions s ON s.session_id = p.session_id;
INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at)
    SELECT -2 * id - 1, trim(request || char(10) || outcome, ' ' || char(9) || char(10) || char(13)), 'summary',
           prompt_number, session_id, project, created_at
    FROM session_summaries;
"""

# v3: search by meaning (hooks/memory/vectors.py): each item's vector and its code blocks, and which model made them.
_SCHEMA_V3 = """
CREATE TABLE memory_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE memory_vectors (
    item INTEGER PRIMARY KEY,
    block INTEGER NOT NULL,
    slot INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE memory_vector_blocks (
    id INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    count INTEGER NOT NULL,
    changed INTEGER NOT NULL DEFAULT 0,
    items BLOB NOT NULL,
    codes BLOB NOT NULL
);
CREATE INDEX memory_vector_blocks_by_project ON memory_vector_blocks (project, id);
CREATE INDEX memory_vector_blocks_by_change ON memory_vector_blocks (changed);
INSERT INTO memory_meta (key, value) VALUES ('vectors_generation', '0'), ('vectors_epoch', '0');
"""

# v4: each full-text row also indexes its project as one token (`scope`, a column bm25 weighs 0), so a project's
# search intersects posting lists instead of reading every match's row to filter on an UNINDEXED column, and the
# ranking can be bounded to the newest matches (`RANK_WINDOW`). An observation's rowid becomes its own id (FTS5
# had numbered them on from the newest prompt's -2p, so the first were -1 and 0, in the prompts' half and on the
# vector index's tombstone): the vectors, keyed by rowid, are dropped and the backfill makes them again.
# The memory context's "newest of a project" indexes end in the id too: rows of one instant need no sort.
_SCHEMA_V4 = """
CREATE VIRTUAL TABLE memory_fts_v4 USING fts5 (
    text,
    kind UNINDEXED,
    ref_id UNINDEXED,
    session_id UNINDEXED,
    project UNINDEXED,
    created_at UNINDEXED,
    scope,
    tokenize = 'porter unicode61'
);
INSERT INTO memory_fts_v4 (rowid, text, kind, ref_id, session_id, project, created_at, scope)
    SELECT CASE kind WHEN 'observation' THEN ref_id ELSE rowid END, text, kind, ref_id, session_id, project,
           created_at, 's' || lower(hex(project)) || '0'
    FROM memory_fts;
DROP TABLE memory_fts;
ALTER TABLE memory_fts_v4 RENAME TO memory_fts;
DELETE FROM memory_vectors;
DELETE FROM memory_vector_blocks;
UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_epoch';
DROP INDEX observations_by_project;
CREATE INDEX observations_by_project ON observations (project, created_at DESC, id DESC);
DROP INDEX session_summaries_by_project;
CREATE INDEX session_summaries_by_project ON session_summaries (project, created_at DESC, id DESC);
"""

# v5: an observation's text is kept once, in its full-text row (search, the vector backfill and every reader take it
# from there by rowid, which is the observation's id): the observations table held a second copy, ~135 of its
# ~180 bytes a row (issue 27: the store against its floor, bench/bench_memory_store_size.py). An observation
# without a full-text row (none is written so; a file damaged by hand could hold one) gets one first, so no text is
# lost. The table is written again (a dropped column would leave every page as wide as before); the old pages go to
# the file's free list, reused by later writes (`python -m hooks.memory compact` gives them back to the disk).
_SCHEMA_V5 = """
INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)
    SELECT o.id, o.text, 'observation', o.id, o.session_id, o.project, o.created_at,
           's' || lower(hex(o.project)) || '0'
    FROM observations o WHERE NOT EXISTS (SELECT 1 FROM memory_fts_content c WHERE c.id = o.id);
CREATE TABLE observations_v5 (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    created_at REAL NOT NULL
);
INSERT INTO observations_v5 (id, session_id, project, prompt_number, tool_name, created_at)
    SELECT id, session_id, project, prompt_number, tool_name, created_at FROM observations ORDER BY id;
DROP TABLE observations;
ALTER TABLE observations_v5 RENAME TO observations;
CREATE INDEX observations_by_session ON observations (session_id, id);
CREATE INDEX observations_by_project ON observations (project, created_at DESC, id DESC);
"""

# Observations with their text, from their full-text rows (`o`, `f`), and an observation as callers know it.
_WITH_TEXT = "observations o JOIN memory_fts f ON f.rowid = o.id"
_OBSERVATION = ("SELECT o.id, o.session_id, o.project, o.prompt_number, o.tool_name, f.text, o.created_at"
                f" FROM {_WITH_TEXT}")
# Every observation, oldest first, for a reader of the file at this schema (hooks/memory/importer.py).
OBSERVATIONS_IN_ORDER = _OBSERVATION + " ORDER BY o.id"

_MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: _SCHEMA_V4, 5: _SCHEMA_V5}
# Full-text ranking is bounded: the newest RANK_WINDOW matches of a query (observations; and as many prompts and
# summaries) are ranked by BM25 (hooks/memory/bm25.py), so a word in every row costs what a rare one does. "Newest,
# then most relevant among them": docs/MEMORY.md, "Search".
RANK_WINDOW = 500
# A project with this share of the memory is filtered by its column, not its scope token: for the newest
# RANK_WINDOW matches it reads about RANK_WINDOW / share rows, where the token's posting list (a row in every
# second at 0.5) costs about as much to walk; at 1M rows of one project, 14-18 ms against 25-32 ms.
MOST = 0.6
BACKFILL_BATCH = 256
_TEXTS_AFTER = "SELECT rowid, project, text FROM memory_fts WHERE rowid > ? ORDER BY rowid LIMIT ?"

# What a retention cut removes (hooks/memory/retention.py), per table: which rows (`:p` the project, `:at`/`:id` the
# cut), their bytes, and their full-text rowid (which is also their vector index item). Each is a range of the
# table's (project, created_at) index, or of the project's sessions; a prompt's project is its session's.
_DOOMED: dict[str, tuple[str, str, str, str]] = {
    "observations": ("observations", "project = :p AND (created_at < :at OR (created_at = :at AND id < :id))",
                     "length(CAST(tool_name AS BLOB)) + coalesce((SELECT length(CAST(f.text AS BLOB)) FROM memory_fts f"
                     " WHERE f.rowid = observations.id), 0)", "id"),
    "prompts": ("user_prompts", "created_at < :at AND session_id IN (SELECT session_id FROM sessions"
                " WHERE project = :p)", "length(CAST(text AS BLOB))", "-2 * id"),
    "summaries": ("session_summaries", "project = :p AND created_at < :at",
                  "length(CAST(request AS BLOB)) + length(CAST(outcome AS BLOB))", "-2 * id - 1"),
}
# A session of the project, untouched since before the cut, none of whose rows is left (`{left}`: which rows count as
# left; after the deletes, any row).
_EMPTIED_SESSION = ("project = :p AND started_at < :at AND updated_at < :at"
                    " AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.session_id = s.session_id{obs})"
                    " AND NOT EXISTS (SELECT 1 FROM user_prompts u WHERE u.session_id = s.session_id{prompts})"
                    " AND NOT EXISTS (SELECT 1 FROM session_summaries m WHERE m.session_id = s.session_id{summaries})")
# A preview counts a session as emptied when every row it has would go.
_PREVIEWED_SESSION = _EMPTIED_SESSION.format(
    obs=" AND NOT (o.project = :p AND (o.created_at < :at OR (o.created_at = :at AND o.id < :id)))",
    prompts=" AND u.created_at >= :at", summaries=" AND NOT (m.project = :p AND m.created_at < :at)")
_EMPTY_SESSION = _EMPTIED_SESSION.format(obs="", prompts="", summaries="")

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 16
STOP_WORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
                        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
                        "they", "this", "to", "was", "will", "with"})


def _replace_fts(conn: sqlite3.Connection, rowid: int, text: str, kind: str, ref_id: int, session_id: str,
                 project: str, now: float) -> None:
    """A prompt's or summary's full-text row, replaced by its own rowid (an index lookup, not a scan)."""
    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
    conn.execute("INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (rowid, text, kind, ref_id, session_id, project, now,
                                                      scope_token(project)))


def scope_token(project: str) -> str:
    """The one full-text token a project's rows carry in `scope` (hex, so no tokenizer or stemmer splits or
    changes it; the same as the migration's `'s' || lower(hex(project)) || '0'`)."""
    return "s" + project.encode("utf-8").hex() + "0"


class MemoryStoreError(Exception):
    """Base of the memory store's errors."""


class SchemaTooNewError(MemoryStoreError):
    """The database's user_version is newer than this code understands."""


@dataclass(slots=True)
class ContextItems:
    """What `memory-context` injects: recent summaries and observations of one project."""

    summaries: list[dict[str, Any]]
    observations: list[dict[str, Any]]


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def query_terms(query: str) -> list[str]:
    """A user's free text as the words a search requires: all of them, English stop words left out when other words
    remain (PostgreSQL's `english` configuration drops them too; on SQLite a word in every row found nothing more)."""
    terms = _WORD.findall(query)
    content = [t for t in terms if t.lower() not in STOP_WORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


def fts_query(query: str) -> str | None:
    """A user's free text as a safe FTS5 query: every word quoted (no operators), all required (`query_terms`)."""
    terms = query_terms(query)
    return " ".join(f'"{t}"' for t in terms) if terms else None


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the memory file as the store uses them: any thread (the store's locks order them), no implicit
    transactions (writes issue BEGIN IMMEDIATE themselves), rows by name, and waits for a busy file."""
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _holds_most(conn: sqlite3.Connection, project: str) -> bool:
    """Whether `project` holds at least MOST of the memory's items, as its vector index blocks count them (kept
    for every write: ~0.5 ms to count at a million items). Unknown (no vectors: no model, or not backfilled yet):
    False, so the scope token is used, which is right for any share."""
    mine = conn.execute("SELECT count(*) FROM memory_vector_blocks WHERE project = ?", (project,)).fetchone()[0]
    if not mine:
        return False
    return mine >= MOST * conn.execute("SELECT count(*) FROM memory_vector_blocks").fetchone()[0]


def _free_bytes(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA freelist_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0])


def _holding(conn: sqlite3.Connection, phrases: list[str]) -> tuple[int, list[int], list[Any]]:
    """The table's size and, per FTS5 phrase expression, how many rows hold it, bounded: a phrase's newest
    STATS_CAP matches at most are read (and returned, highest rowid first, for the search's plan), and beyond that
    the count is estimated from how densely they lie. Rowids count observations up from 1 and prompts and summaries
    down from -2, so the ends tell the size."""
    newest = conn.execute("SELECT rowid FROM memory_fts ORDER BY rowid DESC LIMIT 1").fetchone()
    oldest = conn.execute("SELECT rowid FROM memory_fts ORDER BY rowid ASC LIMIT 1").fetchone()
    if newest is None:
        return 0, [0 for _ in phrases], []
    top = max(int(newest[0]), 0)

    def position(rowid: int) -> int:  # how many rows lie from the newest observation to `rowid` (the DESC walk)
        return top - rowid + 1 if rowid > 0 else top + max(-rowid - 1, 0)

    rows = max(1, position(int(oldest[0])))
    holding, read = [], []
    for phrase in phrases:
        found = fts_window.newest_in_table(conn, phrase, bm25.STATS_CAP)
        holding.append(bm25.estimate_holding(len(found), position(int(found[-1])) if len(found) else 0, rows))
        read.append(found)
    return rows, holding, read


class MemoryStore:
    """One SQLite memory database. Methods are blocking; use `await store.run(store.method, ...)` from async code."""

    backend = "sqlite"

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._busy_logged = float("-inf")
        self._clock = clock
        self._lock = threading.Lock()
        # Private before SQLite touches it: created 0600 here (SQLite gives its -wal/-shm the database
        # file's mode), and files an older version left world-readable are narrowed.
        private_data_dir(path.parent)
        os.close(open_private(path, os.O_RDWR))
        for companion in ("-wal", "-shm", "-journal"):
            fix_file_mode(f"{path}{companion}")
        # Writes take the write lock up front (BEGIN IMMEDIATE) instead of upgrading mid-transaction (`_connect`).
        self._conn = _connect(path)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._migrate()
        self._vectors = VectorIndex("?", cache=True)
        self._model_checked: str | None = None  # the model whose vectors this file holds, once checked
        self._reader_lock = threading.Lock()
        self._reader: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ plumbing

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(lambda: fn(*args))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A second connection, for full-text search: a hybrid search's two rankings run side by side (WAL readers
        do not wait for each other or for the writer)."""
        with self._reader_lock:
            if self._reader is None:
                reader = _connect(self.path)
                reader.execute("PRAGMA query_only = ON")
                self._reader = reader
            yield self._reader

    def describe(self) -> str:
        return f"SQLite at {self.path}"

    def project_key(self, project_id: str, project_dir: str | Path | None) -> str:
        """The key memory of a project is filed under: on one machine, always its id."""
        return project_id

    def wait_flushed(self, timeout: float) -> bool:
        return True  # every write is on disk when its call returns

    def status(self) -> dict[str, Any]:
        return {"backend": self.backend, "path": str(self.path), "up": True, "pending": 0, "dropped": 0}

    def _migrate(self) -> None:
        with self._lock:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SchemaTooNewError(f"{self.path} has memory schema {version}; this sidecar knows up to {SCHEMA_VERSION}")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self._conn.execute("BEGIN IMMEDIATE")
                if self._conn.execute("PRAGMA user_version").fetchone()[0] >= target:
                    self._conn.execute("COMMIT")  # another process migrated it while this one waited
                    continue
                try:
                    for statement in _split_sql(_MIGRATIONS[target]):
                        self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA user_version = {target}")
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """One transaction. Another writer holding the file (another sidecar, a backup, a long import) longer than
        SQLite's own wait (BUSY_TIMEOUT_MS) is waited for again, up to WRITE_PATIENCE_S in all, before the write
        fails: writes run after the answer, so waiting costs no turn, and giving up would lose the record. Readers
        of this store are not held meanwhile (its lock is let go between tries)."""
        deadline = time.monotonic() + WRITE_PATIENCE_S
        while True:
            with self._lock:
                if not self._begin_write(deadline):
                    continue
                try:
                    result = fn(self._conn)
                    self._conn.execute("COMMIT")
                    return result
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise

    def _begin_write(self, deadline: float) -> bool:
        """Under the lock: BEGIN IMMEDIATE, waiting SQLite's busy time; False when another writer still holds the
        file and `deadline` has not passed (try again), its error once it has."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() >= deadline:
                raise
            now = time.monotonic()
            if now - self._busy_logged > 30.0:  # said once, not at every try
                self._busy_logged = now
                log.warning("memory: %s is held by another writer; writes wait for it (up to %.0f s each)",
                            self.path, WRITE_PATIENCE_S)
            return False

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._conn.execute(sql, params).fetchall()]

    # ------------------------------------------------------------------ writes

    def _ensure_session(self, conn: sqlite3.Connection, session_id: str, project: str, now: float) -> None:
        # INSERT OR IGNORE makes create-or-get idempotent: the CLI's session_id is the key.
        conn.execute(
            "INSERT OR IGNORE INTO sessions (session_id, project, started_at, updated_at) VALUES (?, ?, ?, ?)",
            (session_id, project, now, now),
        )

    def begin_prompt(self, session_id: str, project: str) -> int:
        """Create-or-get the session and count one more prompt; returns this prompt's number (1-based)."""
        now = self._clock()

        def tx(conn: sqlite3.Connection) -> int:
            self._ensure_session(conn, session_id, project, now)
            conn.execute(
                "UPDATE sessions SET prompt_count = prompt_count + 1, updated_at = ?, status = 'active' WHERE session_id = ?",
                (now, session_id),
            )
            return conn.execute("SELECT prompt_count FROM sessions WHERE session_id = ?", (session_id,)).fetchone()[0]

        return self._write(tx)

    def add_prompt(self, session_id: str, project: str, prompt_number: int, text: str) -> None:
        now = self._clock()
        text = redact(text)  # every text column passes the one redaction, whoever the caller is

        embedded = self._embed([text])

        def tx(conn: sqlite3.Connection) -> None:
            self._ensure_session(conn, session_id, project, now)
            row = conn.execute(
                "INSERT INTO user_prompts (session_id, prompt_number, text, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id, prompt_number) DO UPDATE SET text = excluded.text,"
                " created_at = excluded.created_at RETURNING id",
                (session_id, prompt_number, text, now),
            ).fetchone()
            _replace_fts(conn, -2 * int(row[0]), text, "prompt", prompt_number, session_id, project, now)
            self._index(conn, project, [-2 * int(row[0])], embedded)

        self._write(tx)

    def current_prompt_number(self, session_id: str) -> int:
        rows = self._read("SELECT prompt_count FROM sessions WHERE session_id = ?", (session_id,))
        return rows[0]["prompt_count"] if rows else 0

    def add_observation(self, session_id: str, project: str, prompt_number: int, tool_name: str, text: str) -> int:
        now = self._clock()
        tool_name, text = redact(tool_name), redact(text)

        embedded = self._embed([text])

        def tx(conn: sqlite3.Connection) -> int:
            self._ensure_session(conn, session_id, project, now)
            cur = conn.execute(
                "INSERT INTO observations (session_id, project, prompt_number, tool_name, created_at) VALUES (?, ?, ?, ?, ?)",
                (session_id, project, prompt_number, tool_name, now),
            )
            rowid = int(cur.lastrowid or 0)
            # The observation's own id is its full-text rowid: positive, as every other rowid is negative (FTS5's
            # own numbering would continue after the newest prompt's -2p: -1, 0, 1, ...).
            conn.execute(
                "INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
                " VALUES (?, ?, 'observation', ?, ?, ?, ?, ?)",
                (rowid, text, rowid, session_id, project, now, scope_token(project)),
            )
            self._index(conn, project, [rowid], embedded)
            return rowid

        return self._write(tx)

    def upsert_summary(self, session_id: str, project: str, prompt_number: int, request: str, outcome: str) -> None:
        """One summary per (session, prompt): a Stop that fires again for the same turn replaces it."""
        now = self._clock()
        request, outcome = redact(request), redact(outcome)
        text = f"{request}\n{outcome}".strip()
        embedded = self._embed([text])

        def tx(conn: sqlite3.Connection) -> None:
            self._ensure_session(conn, session_id, project, now)
            row = conn.execute(
                "INSERT INTO session_summaries (session_id, project, prompt_number, request, outcome, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (session_id, prompt_number) DO UPDATE SET request = excluded.request,"
                " outcome = excluded.outcome, created_at = excluded.created_at RETURNING id",
                (session_id, project, prompt_number, request, outcome, now),
            ).fetchone()
            _replace_fts(conn, -2 * int(row[0]) - 1, text, "summary", prompt_number, session_id, project, now)
            self._index(conn, project, [-2 * int(row[0]) - 1], embedded)

        self._write(tx)

    def complete_session(self, session_id: str, reason: str | None) -> bool:
        """Mark the session completed; False when no such session was ever recorded."""
        now = self._clock()
        reason = redact(reason) if reason else reason

        def tx(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE sessions SET status = 'completed', completed_at = ?, updated_at = ?, end_reason = ? WHERE session_id = ?",
                (now, now, reason, session_id),
            )
            return cur.rowcount > 0

        return self._write(tx)

    # ------------------------------------------------------------------ reads

    def session(self, session_id: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        return rows[0] if rows else None

    def prompts(self, session_id: str) -> list[dict[str, Any]]:
        return self._read("SELECT * FROM user_prompts WHERE session_id = ? ORDER BY prompt_number", (session_id,))

    def observations(self, session_id: str) -> list[dict[str, Any]]:
        return self._read(f"{_OBSERVATION} WHERE o.session_id = ? ORDER BY o.id", (session_id,))

    def summaries(self, session_id: str) -> list[dict[str, Any]]:
        return self._read("SELECT * FROM session_summaries WHERE session_id = ? ORDER BY prompt_number", (session_id,))

    def recent_context(self, project: str, *, exclude_session: str | None, summaries: int, observations: int) -> ContextItems:
        """The newest summaries and observations recorded for `project` by other sessions."""
        exclude = exclude_session or ""
        return ContextItems(
            summaries=self._read(
                "SELECT session_id, request, outcome, created_at FROM session_summaries"
                " WHERE project = ? AND session_id != ? ORDER BY created_at DESC, id DESC LIMIT ?",
                (project, exclude, summaries),
            ),
            observations=self._read(
                f"SELECT o.session_id, o.tool_name, f.text, o.created_at FROM {_WITH_TEXT}"
                " WHERE o.project = ? AND o.session_id != ? ORDER BY o.created_at DESC, o.id DESC LIMIT ?",
                (project, exclude, observations),
            ),
        )

    def search(self, query: str, *, project: str | None = None, limit: int = 20,
               mode: str = "hybrid") -> list[dict[str, Any]]:
        """Prompts, observations and summaries by words (`text`), by meaning (`meaning`) or both fused (`hybrid`),
        best first; each hit says why it matched (hooks/memory/ranking.py). Without the embedding model, `hybrid`
        ranks by words alone and `meaning` finds nothing (memory status says why)."""
        return ranked_search(query, project, limit, mode, self._text_hits, self._meaning_hits)

    def _text_hits(self, query: str, project: str | None, limit: int) -> list[dict[str, Any]]:
        """Full-text hits, best first: of each side (observations; prompts and summaries), the newest RANK_WINDOW
        matches, ranked by BM25 (hooks/memory/bm25.py); a project's rows are found by its scope token beside the
        words, or by its column when it holds most of the memory. How many matches each side asks FTS5 for is
        planned first (hooks/memory/fts_window.py), so that no walk runs to the end of the history."""
        terms = query_terms(query)
        if not terms:
            return []
        phrases = [f'"{t}"' for t in terms]
        match = " ".join(phrases)
        window = ("SELECT rowid AS item, kind, session_id, project, text, created_at,"
                  f" highlight(memory_fts, 0, '{bm25.OPEN}', '{bm25.CLOSE}') AS marked"
                  " FROM memory_fts WHERE memory_fts MATCH ? AND {side}{mine} ORDER BY rowid {order} LIMIT ?")
        with self._reading() as conn:
            conn.execute("BEGIN")  # one snapshot: each side's plan counts the rows its query then reads
            try:
                # A project's rows: by its scope token (its posting list walked beside the words'), or, for a project
                # holding most of the memory, by its column (each match's row read: fewer reads than the token's
                # walk); the plan counts the project's rows the same way.
                mine, extra, column = "", (), None
                if project and _holds_most(conn, project):
                    mine, extra, column = " AND project = ?", (project,), project
                elif project:
                    phrases.append(f'scope : "{scope_token(project)}"')
                    match = f'{phrases[-1]} AND ({match})'
                size, holding, read = _holding(conn, phrases)
                if not size:
                    return []
                sampled = [fts_window.observations_sample(found, bm25.STATS_CAP) for found in read]
                usable = all(s is not None for s in sampled)  # the words' newest rows serve the observations' plan
                rows: list[Any] = []
                for side in (fts_window.OBSERVATIONS, fts_window.PROMPTS_AND_SUMMARIES):
                    newest = sampled if side is fts_window.OBSERVATIONS and usable else None
                    planned = fts_window.plan(conn, phrases, holding, side, RANK_WINDOW, column, newest)
                    if planned.limit:
                        sql = window.format(side=side.bound, mine=mine, order=side.order)
                        rows.extend(conn.execute(sql, (match, *extra, planned.limit)).fetchall())
                if not rows:
                    return []
                stats = bm25.TermStats(rows=size, holding=dict(zip(terms, holding)))  # the words come first
            finally:
                conn.execute("COMMIT")
        scores = bm25.score([r["marked"] for r in rows], terms, stats)
        order_ = sorted(range(len(rows)), key=lambda n: (-scores[n], -float(rows[n]["created_at"])))[:limit]
        return [make_hit(rows[n], bm25.snippet(rows[n]["marked"]), scores[n], {"text": text_why(rank, scores[n])})
                for rank, n in enumerate(order_, 1)]

    def _meaning_hits(self, query: str, project: str | None, limit: int) -> list[dict[str, Any]]:
        embedder = get_embedder()
        if embedder is None or not query.strip():
            return []
        vector = embedder.embed([query])
        if not vector.any():
            return []
        codes = embedder.codes(vector)
        with self._lock:
            try:
                if self._current_model(embedder) is None:
                    return []
            except sqlite3.OperationalError:  # the model's first mark in the file waits for another writer: words only
                return []
            nearest = self._vectors.nearest(self._conn, vector[0], codes[0], project=project or None, k=limit)
            if not nearest:
                return []
            marks = ", ".join("?" * len(nearest))
            rows = {int(r["item"]): r for r in self._conn.execute(
                "SELECT rowid AS item, kind, session_id, project, text, created_at FROM memory_fts"
                f" WHERE rowid IN ({marks})", [item for item, _ in nearest])}
            hits = []
            for n, (item, similarity) in enumerate(nearest, 1):
                row = rows.get(item)
                if row is not None and (not project or row["project"] == project):
                    hits.append(make_hit(row, meaning_snippet(row["text"]), similarity,
                                     {"meaning": meaning_why(n, similarity)}))
        return hits

    # ------------------------------------------------------------------ vectors

    def _embed(self, texts: list[str]) -> tuple[Any, Any] | None:
        """The texts' vectors and codes (outside any lock: ~0.1–1.5 ms a text), or None without the model."""
        embedder = get_embedder()
        if embedder is None:
            return None
        try:
            vectors = embedder.embed(texts)
        except Exception as exc:  # a text the tokenizer chokes on costs its vector, never the row
            log.warning("memory: could not embed a text (%s); the backfill will retry it", exc)
            return None
        deadline = time.monotonic() + WRITE_PATIENCE_S
        while self._model_checked != embedder.model_id:
            with self._lock:  # let go between tries: readers go on while another writer holds the file
                self._current_model(embedder, deadline)
        return vectors, embedder.codes(vectors)

    def _current_model(self, embedder: Any, deadline: float | None = None) -> str | None:
        """Under the lock: make sure the file's vectors are this model's (another model's are dropped, once).
        With a `deadline`, another writer holding the file returns None (try again) until it has passed."""
        if self._model_checked == embedder.model_id:
            return self._model_checked
        row = self._conn.execute("SELECT value FROM memory_meta WHERE key = 'embedding_model'").fetchone()
        if row is None or row[0] != embedder.model_id:
            if not self._begin_write(time.monotonic() if deadline is None else deadline):
                return None
            try:
                row = self._conn.execute("SELECT value FROM memory_meta WHERE key = 'embedding_model'").fetchone()
                if row is None or row[0] != embedder.model_id:
                    if row is not None:
                        log.info("memory: the embedding model changed (%s -> %s); the vectors are made again",
                                 row[0], embedder.model_id)
                    self._vectors.clear(self._conn)
                    self._conn.execute("INSERT INTO memory_meta (key, value) VALUES ('embedding_model', ?)"
                                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (embedder.model_id,))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        self._model_checked = embedder.model_id
        return self._model_checked

    def _index(self, conn: sqlite3.Connection, project: str, items: list[int], embedded: tuple[Any, Any] | None) -> None:
        """Inside a write: the items' vectors, when the model made them and the file holds this model's vectors."""
        if embedded is None:
            return  # no model: the backfill adds it once there is one
        vectors, codes = embedded
        # A text of no known token gets a zero vector (similarity 0 to everything): stored all the same, so the
        # backfill does not count it as missing forever.
        self._vectors.put(conn, project, items, vectors, codes)

    def usage(self) -> dict[str, Any]:
        """Size on disk, items, growth over the last day / week / month, largest projects (hooks/memory/usage.py)."""
        conn = self._conn

        def per_project() -> dict[str, tuple[int, int, float | None]]:
            out: dict[str, tuple[int, int, float | None]] = {}
            for project, n, newest in conn.execute(
                    "SELECT project, count(*), max(created_at) FROM observations GROUP BY project"):
                out[project] = (int(n), 0, newest)
            for project, n, newest in conn.execute(
                    "SELECT project, count(*), max(created_at) FROM session_summaries GROUP BY project"):
                o, _, t = out.get(project, (0, 0, None))
                out[project] = (o, int(n), max(x for x in (t, newest) if x is not None))
            return out

        def since(project: str, t: float) -> int:
            return int(conn.execute(
                "SELECT (SELECT count(*) FROM observations WHERE project = ? AND created_at >= ?)"
                " + (SELECT count(*) FROM session_summaries WHERE project = ? AND created_at >= ?)",
                (project, t, project, t)).fetchone()[0])

        def size() -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
            wal = Path(f"{self.path}-wal")
            return int(pages) + (wal.stat().st_size if wal.exists() else 0)

        with self._lock:
            return usage_of(UsageSql(
                per_project=per_project, since=since,
                prompts=lambda: int(conn.execute("SELECT count(*) FROM user_prompts").fetchone()[0]),
                vectors=lambda: self._vectors.count(conn), bytes=size, free_bytes=lambda: _free_bytes(conn)),
                            self._clock(), iso_utc)

    def free_bytes(self) -> int:
        """The file's free pages, in bytes: what `compact` would give back to the disk."""
        with self._lock:
            return _free_bytes(self._conn)

    def compact(self) -> dict[str, int]:
        """Give the file's free pages back to the disk (SQLite's VACUUM: the file is written again, so it needs twice
        the pages in use free on disk, and holds the write lock meanwhile; readers go on). A retention pass
        or the v5 migration leaves pages free that later writes reuse; this is for when the disk wants them now.
        Returns {before, after} in bytes (the file and its WAL)."""
        def on_disk() -> int:
            wal = Path(f"{self.path}-wal")
            return self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            before = on_disk()
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return {"before": before, "after": on_disk()}

    def vector_status(self) -> dict[str, Any]:
        """How much of the memory has vectors: {model, embedded, items, available, reason?}."""
        embedder = get_embedder()
        with self._lock:
            items = int(self._conn.execute("SELECT count(*) FROM memory_fts").fetchone()[0])
            embedded = self._vectors.count(self._conn)
            row = self._conn.execute("SELECT value FROM memory_meta WHERE key = 'embedding_model'").fetchone()
        stored = row[0] if row else None
        status = {**embedder_status(), "items": items, "embedded": embedded, "model": stored}
        if embedder is not None and stored not in (None, embedder.model_id):
            status["embedded"] = 0  # another model's vectors: all made again at the next backfill
        return status

    def backfill(self, *, batch: int = BACKFILL_BATCH, progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> int:
        """Embed every item that has no vector yet, `batch` items per transaction (resumable: a stop or a crash
        keeps what was committed and the next run goes on). Returns how many were embedded; `progress(done,
        left)` after each batch."""
        embedder = get_embedder()
        if embedder is None:
            return 0
        with self._lock:
            self._current_model(embedder)
            left = int(self._conn.execute("SELECT count(*) FROM memory_fts").fetchone()[0]) - self._vectors.count(self._conn)
        done, after = 0, None
        while left > 0 and not (should_stop and should_stop()):
            with self._lock:
                rows = self._vectors.missing(self._conn, after=after, limit=batch, texts_sql=_TEXTS_AFTER)
            if not rows:
                break
            after = rows[-1][0]
            vectors = embedder.embed([text for _, _, text in rows])
            codes = embedder.codes(vectors)

            def tx(conn: sqlite3.Connection, rows=rows, vectors=vectors, codes=codes) -> None:
                if self._model_checked != embedder.model_id:
                    return
                # An item a prune removed since it was read gets no vector (it would hang in the index alone).
                marks = ", ".join("?" * len(rows))
                there = {int(r[0]) for r in conn.execute(f"SELECT rowid FROM memory_fts WHERE rowid IN ({marks})",
                                                         [row[0] for row in rows])}
                by_project: dict[str, list[int]] = {}
                for n in range(len(rows)):
                    if rows[n][0] in there:
                        by_project.setdefault(rows[n][1], []).append(n)
                for project, ns in by_project.items():
                    # a row a writer indexed meanwhile is replaced by the same vector: harmless
                    self._vectors.put(conn, project, [rows[n][0] for n in ns], vectors[ns], codes[ns])

            self._write(tx)
            done += len(rows)
            left = max(0, left - len(rows))
            if progress is not None:
                progress(done, left)
        return done

    # ------------------------------------------------------------------ retention (hooks/memory/retention.py)

    def retention_projects(self) -> list[str]:
        """Every project with something stored."""
        return sorted(r["project"] for r in self._read(
            "SELECT project FROM sessions UNION SELECT project FROM observations UNION SELECT project FROM"
            " session_summaries"))

    def _cut(self, project: str, rule: RetentionRule) -> Cut | None:
        def nth_newest(n: int) -> tuple[float, int] | None:
            row = self._conn.execute("SELECT created_at, id FROM observations WHERE project = ?"
                                     " ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?", (project, n - 1)).fetchone()
            return (float(row[0]), int(row[1])) if row else None

        with self._lock:
            return cut_of(rule, self._clock(), nth_newest)

    def preview_prune(self, project: str, rule: RetentionRule, *, with_bytes: bool = True) -> Removed:
        """What `prune(project, rule)` would remove now, changing nothing (`with_bytes`: also the bytes and the
        vectors, which reads the rows; without, counts by index only)."""
        cut = self._cut(project, rule)
        out = Removed()
        if cut is None:
            return out
        params = {"p": project, "at": cut.at, "id": cut.id}
        with self._lock:
            for kind, (table, doomed, size, item) in _DOOMED.items():
                if with_bytes:
                    n, total, vectors = self._conn.execute(
                        f"SELECT count(*), coalesce(sum({size}), 0), (SELECT count(*) FROM memory_vectors WHERE item IN"
                        f" (SELECT {item} FROM {table} WHERE {doomed})) FROM {table} WHERE {doomed}", params).fetchone()
                    out.bytes += int(total) + int(vectors) * VECTOR_BYTES
                    out.vectors += int(vectors)
                else:
                    n = self._conn.execute(f"SELECT count(*) FROM {table} WHERE {doomed}", params).fetchone()[0]
                setattr(out, kind, int(n))
            out.sessions = int(self._conn.execute(f"SELECT count(*) FROM sessions s WHERE {_PREVIEWED_SESSION}",
                                                  params).fetchone()[0])
        return out

    def prune(self, project: str, rule: RetentionRule, *, batch: int = PRUNE_BATCH,
              should_stop: Callable[[], bool] | None = None) -> Removed:
        """Remove what `rule` does not keep of `project` (hooks/memory/retention.py), through every index: the
        rows, their full-text rows, their vectors and codes (hooks/memory/vectors.py `delete`), and the sessions
        left empty. At most `batch` rows per transaction, each a write like any other (other writers wait for one
        batch at most, and this waits for them as every write does). `should_stop` is asked between batches."""
        cut = self._cut(project, rule)
        out = Removed()
        if cut is None:
            return out
        params = {"p": project, "at": cut.at, "id": cut.id, "n": batch}

        def step(conn: sqlite3.Connection, kind: str) -> Removed:
            got = Removed()
            if kind == "sessions":
                got.sessions = conn.execute(f"DELETE FROM sessions WHERE id IN (SELECT id FROM sessions s WHERE"
                                            f" {_EMPTY_SESSION} LIMIT :n)", params).rowcount
                return got
            table, doomed, size, item = _DOOMED[kind]
            rows = conn.execute(f"SELECT id, {item}, {size} FROM {table} WHERE {doomed} ORDER BY created_at, id"
                                " LIMIT :n", params).fetchall()
            if not rows:
                return got
            ids, items = [int(r[0]) for r in rows], [int(r[1]) for r in rows]
            got.vectors = self._vectors.delete(conn, items)
            marks = ", ".join("?" * len(ids))
            conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks})", items)
            conn.execute(f"DELETE FROM {table} WHERE id IN ({marks})", ids)
            setattr(got, kind, len(ids))
            got.bytes = sum(int(r[2]) for r in rows) + got.vectors * VECTOR_BYTES
            return got

        for kind in ("observations", "prompts", "summaries", "sessions"):
            while not (should_stop and should_stop()):
                got = self._write(functools.partial(step, kind=kind))
                out.add(got)
                if getattr(got, kind) < batch:
                    break
        return out


def make_hit(row: Any, snippet: str, score: float, why: dict[str, Any]) -> dict[str, Any]:
    """A search hit of either backend, keyed (`key`) by its vector index item until `ranking.public` drops it."""
    return {
        "key": int(row["item"]),
        "kind": row["kind"],
        "sessionId": row["session_id"],
        "project": row["project"],
        "text": row["text"],
        "snippet": snippet,
        "createdAt": iso_utc(float(row["created_at"])),
        "score": round(score, 6),
        "why": why,
    }


def _split_sql(script: str) -> list[str]:
    # executescript() would COMMIT our transaction; run the statements one by one instead.
    statements: list[str] = []
    for chunk in script.split(";"):
        lines = [ln for ln in chunk.splitlines() if not ln.strip().startswith("--")]
        stmt = "\n".join(lines).strip()
        if stmt:
            statements.append(stmt)
    return statements


_stores: dict[Any, Any] = {}
_stores_lock = threading.Lock()
_reported: set[str] = set()
log = logging.getLogger("hooks.memory")


def memory_db_path(data_dir: Path) -> Path:
    return data_dir / "memory.sqlite3"


def _report_once(message: str) -> None:
    if message not in _reported:
        _reported.add(message)
        log.error("%s", message)


def current_config() -> MemoryConfig:
    """This process's memory configuration; an unusable one is reported once and the local SQLite file used instead.

    Falling back keeps memory on the machine: nothing leaves it because of a typo.
    """
    try:
        return load_config()
    except MemoryConfigError as exc:
        _report_once(f"memory: {exc}; using the local SQLite memory until it is fixed")
        return MemoryConfig(backend="sqlite")


def memory_exists(data_dir: Path) -> bool:
    """Whether there can be anything to read: the SQLite file exists, or a team database holds this install's rows."""
    config = current_config()
    if config.backend == "sqlite":
        return memory_db_path(data_dir).exists()
    return bool(config.team) or install_id(data_dir, create=False) is not None


def open_store(data_dir: Path) -> Any:
    """The process-wide store for this data dir and configuration, opened on first use (blocking; call off the loop).

    A `MemoryStore` (SQLite) or a `PostgresMemoryStore`: the same methods.
    """
    config = current_config()
    path = memory_db_path(data_dir).resolve()
    if config.backend == "postgres":
        key: Any = (path, config.cache_key())
        with _stores_lock:
            store = _stores.get(key)
            if store is None:
                try:
                    from hooks.memory.pg_store import PostgresMemoryStore
                except ImportError as exc:
                    _report_once(f"memory: {config.source} names a PostgreSQL database but psycopg is not installed "
                                 f"({exc}); install the extra: pip install 'orion-sidecar[postgres]'. Using the local "
                                 "SQLite memory meanwhile")
                else:
                    store = _stores[key] = PostgresMemoryStore(config, Path(data_dir))
                    return store
            else:
                return store
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = MemoryStore(path)
        return store


def close_all_stores() -> None:
    with _stores_lock:
        for store in _stores.values():
            store.close()
        _stores.clear()
