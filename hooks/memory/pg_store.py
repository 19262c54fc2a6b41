"""The memory store on PostgreSQL: the SQLite store's methods over a pooled psycopg 3 connection, shared by a team.

Exceptions (hooks/memory/store.py draws the tree): `SchemaTooNewError` when
the database was migrated by a newer sidecar. Connection failures never reach
the caller: the session goes on without the database.

- **Schema** in its own schema `orion_memory`, versioned in
  `orion_memory.schema_version`; migrations run at start inside one
  transaction holding `pg_advisory_xact_lock`, so sidecars starting together
  migrate once and the others wait, then see the new version.
- **Writes** are one transaction each, keyed by natural keys (`ON CONFLICT`):
  a session by (owner, session_id), a prompt and a summary by (owner,
  session_id, prompt_number), an observation by a key made when it was
  observed. Replaying a write changes nothing.
- **Lost connection**: a write that cannot reach the server is queued in a
  durable, bounded spool (hooks/memory/spool.py) and replayed in order by a
  background flusher once the server answers again; while anything is
  queued, new writes queue behind it so the order holds. Reads while down
  answer empty. Either is reported once per outage, naming the setting.
- **Scope**: every row carries `owner` (`<user>/<install id>`), `team` and
  `shared`. A process reads its own rows and, in its team, the rows of
  projects shared with the team (`memory.teamProjects` in the user's
  settings); nothing else.
- **Privacy**: every text is stripped of `<private>` (and the sidecar's
  injected blocks) and redacted here, before it is queued or sent, whatever
  the caller already did.
- **Search by meaning**: hooks/memory/vectors.py's plain-table index (no
  pgvector), its code blocks kept per (owner, team, shared, project) so a
  scan reads only blocks the rows' own visibility rule lets it see. An item
  is `row id * 4 + kind code` (prompt 1, observation 2, summary 3). A write's
  vector is made when the write is applied, outside its transaction and
  written inside it: a spooled write is embedded when it is replayed, so the
  spool holds text only, in the format it always had. The codes of the last
  few (visibility, project) searched are kept in memory as the SQLite store
  keeps them (`PgCodeCache`), caught up at each search by reading only the
  blocks stamped with a generation newer than the cache's (schema 3).
- **Retention** (`prune`): the user's own rows only (`owner`), never a
  teammate's, in batches of at most PRUNE_BATCH rows per transaction, through
  every index: the rows (their `tsvector` and GIN entries go with them), their
  vectors and codes (`PgVectorIndex.delete`), and the sessions left empty.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from hooks.memory.config import SHARED_PREFIX, MemoryConfig, RetentionRule, owner_of, shared_project
from hooks.memory.embedder import CODE_BYTES, embedder_status, get_embedder
from hooks.memory.pg_text import best_matches, rows_sql
from hooks.memory.ranking import meaning_snippet, meaning_why, text_why
from hooks.memory.ranking import search as ranked_search
from hooks.memory.retention import PRUNE_BATCH, VECTOR_BYTES, Cut, Removed, cut_of
from hooks.memory.spool import Op, Spool
from hooks.memory.store import (BACKFILL_BATCH, RANK_WINDOW, ContextItems, SchemaTooNewError, fts_query, iso_utc,
                                make_hit)
from hooks.memory.usage import UsageSql
from hooks.memory.usage import usage as usage_of
from hooks.memory.tags import strip_tags
from hooks.memory.vectors import (BLOCK, CACHED_PROJECTS, CANDIDATES, DROPPED, EPOCH, GENERATION, SCAN_BATCH,
                                  CodeEntry, choose, pack_vector, rank_by_cosine, sync_dropped, tombstoned)
from hooks.redaction import redact

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")
Conn = psycopg.Connection[dict[str, Any]]  # every connection of the store makes dict rows (`dict_row`)
log = logging.getLogger("hooks.memory")
# The pool logs every failed connection attempt as a warning: while the server is down that would be a line (and a
# `log` event to the frontend) every few seconds. The store reports an outage once itself.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

SCHEMA = "orion_memory"
SCHEMA_VERSION = 5
# pg_advisory_xact_lock's key: any constant every sidecar agrees on ("orion_me" as a big-endian int64).
MIGRATION_LOCK = 0x6F72696F6E5F6D65
# Taken shared by every vector write and exclusively by a change of embedding model, which drops every vector: no
# write can leave a vector of the old model behind the change.
MODEL_LOCK = MIGRATION_LOCK + 1
# The two-key advisory locks (a key space apart from the one-key locks above) that serialise appends to one scope's
# blocks: (VECTOR_LOCK_CLASS, hash of the scope).
VECTOR_LOCK_CLASS = 0x6F726976
CONNECT_TIMEOUT_S = 3
POOL_WAIT_S = 2.0  # how long a write waits for a connection before it is queued instead (hooks time out at 10 s)
POOL_MAX = 4
RETRY_MIN_S = 0.2
RETRY_MAX_S = 5.0
TS_CONFIG = "english"  # stemming like FTS5's porter tokenizer

_VISIBLE = "team = %(team)s AND (owner = %(owner)s OR shared)"
_INDEXED = "id, owner, team, shared, project"  # what a write returns for its row's vector: its id and its scope

_SCHEMA_V1 = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE {SCHEMA}.sessions (
    id BIGSERIAL PRIMARY KEY,
    owner TEXT NOT NULL,
    team TEXT NOT NULL,
    shared BOOLEAN NOT NULL,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed')),
    prompt_count INTEGER NOT NULL DEFAULT 0,
    started_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    completed_at DOUBLE PRECISION,
    end_reason TEXT,
    UNIQUE (owner, session_id)
);
CREATE INDEX sessions_by_project ON {SCHEMA}.sessions (project, started_at DESC);

CREATE TABLE {SCHEMA}.user_prompts (
    id BIGSERIAL PRIMARY KEY,
    owner TEXT NOT NULL,
    team TEXT NOT NULL,
    shared BOOLEAN NOT NULL,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    text TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', text)) STORED,
    UNIQUE (owner, session_id, prompt_number),
    FOREIGN KEY (owner, session_id) REFERENCES {SCHEMA}.sessions (owner, session_id)
);
CREATE INDEX user_prompts_by_time ON {SCHEMA}.user_prompts (created_at DESC);
CREATE INDEX user_prompts_fts ON {SCHEMA}.user_prompts USING GIN (tsv);

CREATE TABLE {SCHEMA}.observations (
    id BIGSERIAL PRIMARY KEY,
    obs_key TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    team TEXT NOT NULL,
    shared BOOLEAN NOT NULL,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', text)) STORED,
    FOREIGN KEY (owner, session_id) REFERENCES {SCHEMA}.sessions (owner, session_id)
);
CREATE INDEX observations_by_session ON {SCHEMA}.observations (owner, session_id, id);
CREATE INDEX observations_by_project ON {SCHEMA}.observations (project, created_at DESC);
CREATE INDEX observations_fts ON {SCHEMA}.observations USING GIN (tsv);

CREATE TABLE {SCHEMA}.session_summaries (
    id BIGSERIAL PRIMARY KEY,
    owner TEXT NOT NULL,
    team TEXT NOT NULL,
    shared BOOLEAN NOT NULL,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    prompt_number INTEGER NOT NULL,
    request TEXT NOT NULL,
    outcome TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}', request || ' ' || outcome)) STORED,
    UNIQUE (owner, session_id, prompt_number),
    FOREIGN KEY (owner, session_id) REFERENCES {SCHEMA}.sessions (owner, session_id)
);
CREATE INDEX session_summaries_by_project ON {SCHEMA}.session_summaries (project, created_at DESC);
CREATE INDEX session_summaries_fts ON {SCHEMA}.session_summaries USING GIN (tsv);
"""

# v2: search by meaning. The model the vectors were made with; each item's float16 vector and where its code sits;
# the code blocks, each holding one scope's items (the owner, team, shared and project of the rows it indexes, so
# a scan filters blocks by _VISIBLE exactly as text search filters rows). Codes and item lists are random-looking
# bytes rewritten by appends: stored out of line and never compressed.
_SCHEMA_V2 = f"""
CREATE TABLE {SCHEMA}.memory_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE {SCHEMA}.memory_vector_blocks (
    id BIGSERIAL PRIMARY KEY,
    owner TEXT NOT NULL,
    team TEXT NOT NULL,
    shared BOOLEAN NOT NULL,
    project TEXT NOT NULL,
    count INTEGER NOT NULL,
    items BYTEA NOT NULL,
    codes BYTEA NOT NULL
);
ALTER TABLE {SCHEMA}.memory_vector_blocks ALTER COLUMN items SET STORAGE EXTERNAL;
ALTER TABLE {SCHEMA}.memory_vector_blocks ALTER COLUMN codes SET STORAGE EXTERNAL;
CREATE INDEX memory_vector_blocks_by_scope ON {SCHEMA}.memory_vector_blocks (owner, team, project, id);
CREATE TABLE {SCHEMA}.memory_vectors (
    item BIGINT PRIMARY KEY,
    block BIGINT NOT NULL,
    slot INTEGER NOT NULL,
    vector BYTEA NOT NULL
)
"""

# v3: the blocks' change stamps, so a search's cache of codes catches up by reading only what changed (PgCodeCache).
# `changed` is the vector generation (memory_meta) of the transaction that last wrote the block; the index serves a
# catch-up's `team = %(team)s AND changed > %(since)s` (the rest of the visibility rule filters the few rows found).
# Blocks written before keep stamp 0: a cache loads everything once anyway. `vectors_epoch` is bumped when every
# vector is dropped (a model change): a cache of another epoch starts over.
_SCHEMA_V3 = f"""
ALTER TABLE {SCHEMA}.memory_vector_blocks ADD COLUMN changed BIGINT NOT NULL DEFAULT 0;
CREATE INDEX memory_vector_blocks_by_change ON {SCHEMA}.memory_vector_blocks (team, changed);
INSERT INTO {SCHEMA}.memory_meta (key, value) VALUES ('{GENERATION}', '0'), ('{EPOCH}', '0')
    ON CONFLICT (key) DO NOTHING
"""

# v4: the full-text indexes are updated at each write, not through GIN's pending list: every search scans that
# list, and until (auto)vacuum empties it, text search at 100k took 82 ms instead of 2 (bench_memory_meaning).
# Memory writes happen after the answer, one row at a time: the direct update costs them little.
_SCHEMA_V4 = "".join(
    f"ALTER INDEX {SCHEMA}.{index} SET (fastupdate = off);"
    f"SELECT gin_clean_pending_list('{SCHEMA}.{index}'::regclass);"
    for index in ("user_prompts_fts", "observations_fts", "session_summaries_fts"))

# v5: smaller observation indexes (issue 27: the store within 1.5x its floor). An observation's idempotency key is
# kept as the 16 bytes of its text's MD5 (`OBS_KEY`), a `uuid`, not its 32-to-60-character text (its unique index
# 73 -> ~31 MiB at 1M, and 17 bytes less a row); a session's observations are found by a hash of their session id
# (103 -> ~33 MiB at 1M: the old B-tree held owner, session id and id in every entry; a session's rows are read by
# session id and visibility, and sorted, and a deleted session's rows are found by it for the foreign key). The
# rewrite holds the table's exclusive lock while it runs (~1 min at a million observations here); sidecars queue
# their writes meanwhile (the spool) and searches wait.
_SCHEMA_V5 = f"""
ALTER TABLE {SCHEMA}.observations ALTER COLUMN obs_key TYPE uuid USING md5(obs_key)::uuid;
DROP INDEX {SCHEMA}.observations_by_session;
CREATE INDEX observations_by_session ON {SCHEMA}.observations USING hash (session_id)
"""

MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3, 4: _SCHEMA_V4, 5: _SCHEMA_V5}
# What an observation's key is stored as (v5): the same key always gives the same 16 bytes.
OBS_KEY = "md5(%(key)s)::uuid"

# An item of the vector index: the row's id * 4 + its kind's code, unique across the three tables (never 0, the
# index's tombstone).
KIND_CODES = {"prompt": 1, "observation": 2, "summary": 3}
_KIND_TABLES = {1: ("prompt", "user_prompts", "text"), 2: ("observation", "observations", "text"),
                3: ("summary", "session_summaries", "request || E'\\n' || outcome")}
# The text a write's vector is made of (the SQLite store embeds the same).
_OP_TEXTS: dict[str, Callable[[Op], str]] = {
    "prompt": lambda op: op["text"],
    "observation": lambda op: op["text"],
    "summary": lambda op: f"{op['request']}\n{op['outcome']}".strip(),
}

_CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)


def clean(text: str) -> str:
    """What may leave the machine: no `<private>` or injected sections, no secrets."""
    return redact(strip_tags(text))


def split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def migrate(conn: Conn) -> int:
    """Bring the schema to SCHEMA_VERSION under the advisory lock; returns the version found before."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_version (version INTEGER NOT NULL)")
        row = conn.execute(f"SELECT max(version) AS v FROM {SCHEMA}.schema_version").fetchone()
        found = int((row or {}).get("v") or 0) if isinstance(row, dict) else int((row or (0,))[0] or 0)
        if found > SCHEMA_VERSION:
            raise SchemaTooNewError(f"the memory database has schema {found}; this sidecar knows up to {SCHEMA_VERSION}")
        for target in range(found + 1, SCHEMA_VERSION + 1):
            for statement in split_sql(MIGRATIONS[target]):
                conn.execute(statement)
            conn.execute(f"INSERT INTO {SCHEMA}.schema_version (version) VALUES (%s)", (target,))
        return found


Scope = tuple[str, str, bool, str]
"""(owner, team, shared, project): who may read a row, and so which block its code goes to."""


def item_of(kind: str, row_id: int) -> int:
    return int(row_id) * 4 + KIND_CODES[kind]


def _scope_lock(scope: Scope) -> int:
    digest = hashlib.blake2b(repr(scope).encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass(slots=True)
class Embedded:
    """Texts' unit vectors and binary codes, and the model that made them."""

    model: str
    vectors: np.ndarray
    codes: np.ndarray


def _bump(conn: Conn, key: str) -> int:
    """Inside a write: add one to the memory_meta counter `key` and return the new value. The row stays locked
    until the transaction ends (an upsert: a database whose row is missing gets it)."""
    row = conn.execute("INSERT INTO memory_meta (key, value) VALUES (%s, '1') ON CONFLICT (key) DO UPDATE"
                       " SET value = (memory_meta.value::bigint + 1)::text RETURNING value", (key,)).fetchone()
    assert row is not None
    return int(row["value"] if isinstance(row, dict) else row[0])


class PgVectorIndex:
    """hooks/memory/vectors.py's index in the team database; the caller owns the transaction.

    The same layout (float16 vectors, 32-byte codes packed BLOCK to a row, a Hamming scan then exact cosines), with
    blocks per scope: `nearest` reads only the blocks its caller's visibility rule selects. Appends take the scope's
    advisory lock (several sidecars of one user append to the same last block) and are concatenations on the server.

    With `cache` (the store's), the codes `nearest` scans are kept in memory per (rule, owner, team, project)
    (`PgCodeCache`) and caught up through the blocks' change stamps.

    Stamp ordering. A cache that saw generation G next reads only blocks stamped > G, so once a reader can see G,
    every block stamped <= G must already be committed (and visible to it). A sequence would not give that: a
    writer that drew 5 could commit after one that drew 6, and a reader seeing 6 would never look at 5 again. So a
    writer takes its stamp by updating the generation row (`_bump`: an upsert ... RETURNING), which holds that row's
    lock until it commits: the next writer's update waits for the commit, then (READ COMMITTED) bumps the committed
    value. Stamps are therefore handed out in commit order: if a snapshot sees generation G, the transaction that
    wrote G committed before it, and so did every transaction with a smaller stamp. A search reads the generation
    and the blocks in one REPEATABLE READ snapshot, so it holds exactly the blocks stamped <= G (outside a
    transaction the generation is read first, and what the blocks add beyond it is read again next time: harmless).
    The price is that vector writes of the whole database take turns from their `put` to their commit (a write's
    transaction ends right after its put; a backfill batch is one transaction). Lock order, so no two writers wait
    on each other in a cycle: the model lock (shared), then the generation row, then the scope's advisory lock;
    the model change takes the model lock exclusively and then only the epoch row.
    """

    def __init__(self, *, cache: bool = False) -> None:
        self.cache = PgCodeCache() if cache else None

    def put(self, conn: Conn, scope: Scope, items: list[int], vectors: np.ndarray,
            codes: np.ndarray) -> None:
        """Index `items` (all of `scope`) with their vectors and codes; an item indexed before is replaced in place.
        Every block written is stamped with a new generation (see the class's note on ordering)."""
        stamp = _bump(conn, GENERATION)  # first: before the scope's lock (the lock order above)
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (VECTOR_LOCK_CLASS, _scope_lock(scope)))
        items = [int(i) for i in items]
        known = {int(r["item"]): (int(r["block"]), int(r["slot"])) for r in conn.execute(
            "SELECT item, block, slot FROM memory_vectors WHERE item = ANY(%s)", (items,))}
        fresh: list[int] = []
        for n, item in enumerate(items):
            if item not in known:
                fresh.append(n)
                continue
            block, slot = known[item]
            conn.execute("UPDATE memory_vectors SET vector = %s WHERE item = %s", (pack_vector(vectors[n]), item))
            conn.execute("UPDATE memory_vector_blocks SET codes = overlay(codes PLACING %s FROM %s FOR %s),"
                         " changed = %s WHERE id = %s",
                         (codes[n].tobytes(), slot * CODE_BYTES + 1, CODE_BYTES, stamp, block))
        if not fresh:
            return
        last = conn.execute("SELECT id, count FROM memory_vector_blocks WHERE owner = %s AND team = %s"
                            " AND shared = %s AND project = %s ORDER BY id DESC LIMIT 1", scope).fetchone()
        queue = fresh
        if last is not None and int(last["count"]) < BLOCK:
            room = BLOCK - int(last["count"])
            self._append(conn, int(last["id"]), int(last["count"]), [items[n] for n in queue[:room]],
                         vectors[queue[:room]], codes[queue[:room]], stamp)
            queue = queue[room:]
        while queue:
            take, queue = queue[:BLOCK], queue[BLOCK:]
            block = _scalar(conn, "INSERT INTO memory_vector_blocks (owner, team, shared, project, count, items, codes,"
                                  " changed) VALUES (%s, %s, %s, %s, 0, '', '', %s) RETURNING id", (*scope, stamp))
            self._append(conn, int(block), 0, [items[n] for n in take], vectors[take], codes[take], stamp)

    @staticmethod
    def _append(conn: Conn, block: int, count: int, items: list[int], vectors: np.ndarray,
                codes: np.ndarray, stamp: int) -> None:
        import numpy as np

        conn.execute("UPDATE memory_vector_blocks SET count = count + %s, items = items || %s, codes = codes || %s,"
                     " changed = %s WHERE id = %s", (len(items), np.asarray(items, dtype="<i8").tobytes(),
                                                     np.ascontiguousarray(codes, dtype=np.uint8).tobytes(), stamp,
                                                     block))
        conn.cursor().executemany("INSERT INTO memory_vectors (item, block, slot, vector) VALUES (%s, %s, %s, %s)",
                                  [(item, block, count + i, pack_vector(vectors[i])) for i, item in enumerate(items)])

    @staticmethod
    def clear(conn: Conn) -> None:
        """Forget every vector (the model changed: the backfill embeds everything again); a new epoch, in the same
        transaction, makes every cache start over."""
        conn.execute("DELETE FROM memory_vectors")
        conn.execute("DELETE FROM memory_vector_blocks")
        _bump(conn, EPOCH)

    @staticmethod
    def delete(conn: Conn, items: list[int]) -> int:
        """Forget `items` (the rows already deleted in this transaction): their vectors go, their slots become
        tombstones, a block left with no live item goes whole and `vectors_dropped` says so (hooks/memory/vectors.py,
        "Deletion"). The generation row is taken first, as every vector write takes it, and only then are the
        items' vectors looked up: a backfill that indexed one of them meanwhile has committed by then, and its
        vector is found and removed (a backfill checks its rows still exist once it holds that row: `_put_batch`).
        Before it, the model lock in shared mode, as every vector write: a model change dropping every block never
        runs beside it. Returns how many had a vector."""
        if not items:
            return 0
        conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (MODEL_LOCK,))
        stamp = _bump(conn, GENERATION)
        where: dict[int, list[int]] = {}
        for r in conn.execute("SELECT block, slot FROM memory_vectors WHERE item = ANY(%s)", ([int(i) for i in items],)):
            where.setdefault(int(r["block"]), []).append(int(r["slot"]))
        dropped = 0
        for block, slots in sorted(where.items()):
            row = conn.execute("SELECT items, codes FROM memory_vector_blocks WHERE id = %s", (block,)).fetchone()
            if row is None:
                continue
            items_blob, codes_blob = tombstoned(bytes(row["items"]), bytes(row["codes"]), slots)
            if not any(items_blob):
                conn.execute("DELETE FROM memory_vector_blocks WHERE id = %s", (block,))
                dropped += 1
            else:
                conn.execute("UPDATE memory_vector_blocks SET items = %s, codes = %s, changed = %s WHERE id = %s",
                             (items_blob, codes_blob, stamp, block))
        gone = conn.execute("DELETE FROM memory_vectors WHERE item = ANY(%s)", ([int(i) for i in items],)).rowcount
        if dropped:
            conn.execute("INSERT INTO memory_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE"
                         " SET value = (memory_meta.value::bigint + %s)::text", (DROPPED, str(dropped), dropped))
        return int(gone)

    def nearest(self, conn: Conn, query: np.ndarray, query_code: np.ndarray, *, where: str,
                params: dict[str, Any], k: int, candidates: int = CANDIDATES) -> list[tuple[int, float]]:
        """The `k` items of the blocks matching `where` closest to `query`, as (item, cosine), best first.

        Inside a transaction (one snapshot for the generation, the blocks and the vectors): the blocks are read
        through a server-side cursor, SCAN_BATCH rows at a time; with the cache, only those changed since it looked.
        """
        import numpy as np

        want = max(k, candidates)
        target = np.frombuffer(np.ascontiguousarray(query_code, dtype=np.uint8).tobytes(), dtype=np.uint64)
        if self.cache is not None:
            best_items = self.cache.closest(conn, where, params, target, want, query)
        else:
            best_items = self._scan(conn, where, params, target, want)
        return self._rank(conn, best_items, query, k)

    @staticmethod
    def _scan(conn: Conn, where: str, params: dict[str, Any], target: np.ndarray, want: int) -> np.ndarray:
        """The `want` items of the blocks matching `where` whose codes are nearest `target` (Hamming), read now."""
        import numpy as np

        words = CODE_BYTES // 8
        best_items = np.zeros(0, dtype=np.int64)
        best_dist = np.zeros(0, dtype=np.int64)
        with conn.cursor(name="orion_memory_blocks", row_factory=tuple_row) as cur:
            cur.itersize = SCAN_BATCH
            cur.execute(f"SELECT items, codes FROM memory_vector_blocks WHERE {where}", params)
            while rows := cur.fetchmany(SCAN_BATCH):
                items = np.frombuffer(b"".join(bytes(r[0]) for r in rows), dtype="<i8")
                codes = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.uint64).reshape(-1, words)
                dist = np.bitwise_count(codes ^ target).sum(axis=1, dtype=np.int64)
                items, dist = np.concatenate((best_items, items)), np.concatenate((best_dist, dist))
                if items.size > want:
                    keep = np.argpartition(dist, want - 1)[:want]
                    items, dist = items[keep], dist[keep]
                best_items, best_dist = items, dist
        return best_items

    @staticmethod
    def _rank(conn: Conn, best_items: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The candidates' float16 vectors, read by item, ranked by exact cosine. In binary: 1,024 vectors are 512 KiB
        as bytes, twice that as the hex text PostgreSQL sends a bytea otherwise."""
        if best_items.size == 0:
            return []
        rows = conn.execute("SELECT item, vector FROM memory_vectors WHERE item = ANY(%s)",
                            ([int(i) for i in best_items],), binary=True).fetchall()
        return rank_by_cosine([int(r["item"]) for r in rows], [bytes(r["vector"]) for r in rows], query, k)


CacheKey = tuple[str, tuple[tuple[str, Any], ...]]
"""A cache entry's key: the blocks' filter (the visibility rule, and the project clause when there is one) and its
parameters (the store's owner and team, the project)."""


class PgCodeCache:
    """The codes of the last CACHED_PROJECTS (visibility rule, project) searched, as hooks/memory/vectors.py's
    CodeCache keeps a project's (32 bytes of code an item), caught up with the database at each search. An entry
    holds only the blocks its filter selects, so only what its store may see.

    Thread-safe: the store's searches run on several threads at once, each in its own snapshot; one at a time
    catches up and scans. `catch_ups` and `blocks_read` count the block queries run and the block rows they
    returned (a search when nothing changed runs none)."""

    def __init__(self) -> None:
        self._entries: dict[CacheKey, CodeEntry] = {}
        self._lock = threading.Lock()
        self.catch_ups = 0
        self.blocks_read = 0

    def closest(self, conn: Conn, where: str, params: dict[str, Any], target: np.ndarray, want: int,
                query: np.ndarray | None = None) -> np.ndarray:
        """The `want` cached items the filter selects closest to the query (hooks/memory/vectors.py `choose`)."""
        key: CacheKey = (where, tuple(sorted(params.items())))
        with self._lock:
            return choose(self._current(conn, key, where, params), target, want, query)

    def _current(self, conn: Conn, key: CacheKey, where: str, params: dict[str, Any]) -> CodeEntry:
        # The generation first (outside a transaction the blocks read after it may only be newer: read again later).
        # The database's oid joins the epoch: a database dropped and made again (or restored) under the same URL
        # starts its counters over, and must not be taken for the one cached.
        with conn.cursor(row_factory=tuple_row) as cur:
            meta = dict(cur.execute(
                "SELECT key, value FROM memory_meta WHERE key IN (%s, %s, %s) UNION ALL"
                " SELECT 'oid', oid::text FROM pg_database WHERE datname = current_database()",
                (GENERATION, EPOCH, DROPPED)).fetchall())
        generation, dropped = int(meta.get(GENERATION, 0)), int(meta.get(DROPPED, 0))
        epoch = (int(meta.get("oid", 0)) << 32) + int(meta.get(EPOCH, 0))
        entry = self._entries.pop(key, None)
        # A generation older than the entry's: another search's newer snapshot caught it up, or the database went
        # back (a restore, a lagging replica). Which one cannot be told: start over, correct either way.
        if entry is None or entry.epoch != epoch or generation < entry.generation:
            entry = None
        else:
            # Blocks deleted since (the retention's prune) are forgotten before the catch-up by stamp.
            def live() -> list[int]:
                self.catch_ups += 1
                with conn.cursor(row_factory=tuple_row) as ids:
                    return [r[0] for r in ids.execute(f"SELECT id FROM memory_vector_blocks WHERE {where}", params)]

            entry = sync_dropped(entry, dropped, live)
        if entry is None:
            entry = CodeEntry(epoch)
            entry.dropped = dropped
        self._entries[key] = entry  # the newest at the end: the least recently searched goes first
        while len(self._entries) > CACHED_PROJECTS:
            del self._entries[next(iter(self._entries))]
        if generation != entry.generation:
            # A first load reads every block the filter selects; a catch-up, those changed since (by the change
            # index: team and stamp, the rest of the rule filtering the few found).
            since = "" if entry.generation < 0 else " AND changed > %(orion_since)s"
            with conn.cursor(name="orion_memory_catch_up", row_factory=tuple_row) as cur:
                cur.itersize = SCAN_BATCH
                cur.execute(f"SELECT id, items, codes FROM memory_vector_blocks WHERE ({where}){since} ORDER BY id",
                            {**params, "orion_since": entry.generation})
                self.catch_ups += 1
                while rows := cur.fetchmany(SCAN_BATCH):
                    self.blocks_read += len(rows)
                    for block, items_blob, codes_blob in rows:
                        entry.place(int(block), bytes(items_blob), bytes(codes_blob))
            entry.generation = generation
        return entry

    def forget(self) -> None:
        with self._lock:
            self._entries.clear()


class PostgresMemoryStore:
    """One team database. Same methods as MemoryStore (blocking; `await store.run(...)` from async code)."""

    backend = "postgres"

    def __init__(self, config: MemoryConfig, data_dir: Path, *, clock: Callable[[], float] = time.time,
                 retry_max_s: float = RETRY_MAX_S) -> None:
        assert config.url
        self.config = config
        self.data_dir = Path(data_dir)
        self._clock = clock
        self._retry_max_s = retry_max_s
        self.owner = owner_of(config, self.data_dir, create=True) or ""
        self.team = config.team
        url_key = hashlib.sha256(config.redacted_url.encode()).hexdigest()[:12]
        self.spool = Spool(self.data_dir / "memory-spool" / url_key, config.buffer_limit)
        self._prompt_counts: dict[str, int] = {}
        self._state_lock = threading.Lock()
        self._write_lock = threading.Lock()  # direct writes and the flusher take turns: order is per process
        self._up = False
        self._migrated = False
        self._outage_reported = False
        self._overflow_reported = False
        self._closed = False
        self._vectors = PgVectorIndex(cache=True)
        self._model_checked: str | None = None  # the embedding model this process saw the database's vectors are of
        self._wake = threading.Event()
        self._flushed = threading.Condition()
        self._conn_kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                                             "row_factory": dict_row, "options": f"-c search_path={SCHEMA}"}
        self.pool: ConnectionPool[Any] = ConnectionPool(
            config.url, min_size=1, max_size=POOL_MAX, open=False, timeout=POOL_WAIT_S, kwargs=self._conn_kwargs,
            check=ConnectionPool.check_connection, reconnect_timeout=0, name="orion-memory",
        )
        self.pool.open(wait=False)
        self._flusher = threading.Thread(target=self._flush_loop, name="orion-memory-flusher", daemon=True)
        self._flusher.start()
        self._connect()

    # ------------------------------------------------------------------ plumbing

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(lambda: fn(*args))

    def describe(self) -> str:
        return f"PostgreSQL at {self.config.redacted_url} ({self.config.source})"

    def _connect(self) -> bool:
        """Check the server and migrate once; False (reported once) when it cannot be reached.

        A connection of its own, not the pool's: a refused connection fails at once here, where the pool would
        wait its whole timeout for a background attempt (and the first store is opened under a lock).
        """
        try:
            with psycopg.connect(self.config.url, **self._conn_kwargs) as conn:
                if not self._migrated:
                    migrate(conn)
                    self._migrated = True
                else:
                    conn.execute("SELECT 1")
        except (psycopg.Error, PoolTimeout, SchemaTooNewError) as exc:
            # Any failure to reach or set up the database (a refused or malformed URL, bad credentials, a newer
            # schema) is the same to the session: memory waits, reported once.
            self._went_down(exc)
            return False
        self._came_up()
        return True

    def _went_down(self, exc: BaseException) -> None:
        with self._state_lock:
            self._up = False
            first = not self._outage_reported
            self._outage_reported = True
        if first:
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            log.warning(
                "memory: %s is unavailable (%s); the session goes on without it: memory writes are kept in %s "
                "(at most %d, setting memory.bufferLimit) and written when it answers again, searches answer from "
                "nothing meanwhile. Check %s.",
                self.describe(), detail, self.spool.directory, self.config.buffer_limit, self.config.source)
        if threading.current_thread() is not self._flusher:
            # A write or read noticed: the flusher starts probing now. From the flusher itself a wake would skip
            # its back-off and retry a dead server in a tight loop (a core at 100 % for the whole outage).
            self._wake.set()

    def _came_up(self) -> None:
        with self._state_lock:
            was_reported = self._outage_reported
            self._up = True
            self._outage_reported = False
        if was_reported:
            log.warning("memory: %s answers again; %d buffered writes to go", self.describe(), len(self.spool))
        if len(self.spool):
            self._wake.set()

    def _submit(self, op: Op) -> Any:
        """Write `op` now if the server answers and nothing is queued before it; otherwise queue it."""
        if self._up and not len(self.spool):
            with self._write_lock:
                if not len(self.spool):
                    try:
                        return self._apply_with_retry(op)
                    except _CONNECTION_ERRORS as exc:
                        self._went_down(exc)
        if not self.spool.append(op):
            self._overflowed()
        else:
            self._wake.set()
        return None

    def _overflowed(self) -> None:
        if not self._overflow_reported:
            self._overflow_reported = True
            log.error("memory: %s has been unavailable for too long: the buffer of %d writes (setting "
                      "memory.bufferLimit) is full and new memory is being dropped (%d so far) until it answers",
                      self.describe(), self.config.buffer_limit, self.spool.dropped)

    def _apply_with_retry(self, op: Op) -> Any:
        # The vector is made here, when the write is applied (at once, or replayed from the spool): outside the
        # transaction and before a connection is taken, so CPU work never holds either.
        text_of = _OP_TEXTS.get(op["op"])
        embedded = self._embed([text_of(op)]) if text_of is not None else None
        # The pool hands out a checked connection, but the server can go between check and use: one retry on a
        # fresh connection tells a broken pooled connection from a server that is gone.
        try:
            return self._apply(op, embedded)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            return self._apply(op, embedded)

    def _apply(self, op: Op, embedded: Embedded | None = None) -> Any:
        write = getattr(self, f"_op_{op['op']}")
        with self.pool.connection() as conn:
            if embedded is not None and not self._ensure_model(conn, embedded.model):
                embedded = None
            with conn.transaction():
                return write(conn, op, embedded) if op["op"] in _OP_TEXTS else write(conn, op)

    def _flush_loop(self) -> None:
        delay = RETRY_MIN_S
        while not self._closed:
            self._wake.wait(timeout=delay)
            self._wake.clear()
            if self._closed:
                return
            if not self._up and not self._connect():
                delay = min(delay * 2, self._retry_max_s)
                continue
            delay = RETRY_MIN_S
            if not self.flush_pending():
                delay = min(delay * 2, self._retry_max_s)

    def flush_pending(self) -> bool:
        """Write every queued operation in order; True when the queue is empty."""
        with self._write_lock:
            written = 0
            while (op := self.spool.peek()) is not None:
                try:
                    self._apply_with_retry(op)
                except _CONNECTION_ERRORS as exc:
                    self._went_down(exc)
                    return False
                except psycopg.Error as exc:
                    # A write the server refuses for a reason other than the connection will be refused again:
                    # reported and skipped, so one bad record cannot block everything queued behind it.
                    log.error("memory: %s refused a buffered %s write (%s); skipped", self.describe(), op.get("op"),
                              " ".join(str(exc).split())[:300])
                self.spool.pop()
                written += 1
            if written:
                log.info("memory: wrote %d buffered writes to %s", written, self.describe())
                if not self._up:
                    # A write the flusher began just before a writer noticed the outage went through once the
                    # server was back: it answers, and reads need not wait for the next probe to say so.
                    self._came_up()
            self._overflow_reported = False
        with self._flushed:
            self._flushed.notify_all()
        return True

    def wait_flushed(self, timeout: float) -> bool:
        """Block until nothing is queued (True) or `timeout` passes (False)."""
        deadline = time.monotonic() + timeout
        self._wake.set()
        with self._flushed:
            while len(self.spool):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._flushed.wait(timeout=min(remaining, 0.2))
                self._wake.set()
        return True

    def status(self) -> dict[str, Any]:
        return {"backend": self.backend, "url": self.config.redacted_url, "source": self.config.source,
                "up": self._up, "pending": len(self.spool), "dropped": self.spool.dropped,
                "owner": self.owner, "team": self.team}

    def close(self) -> None:
        if self._closed:
            return
        if len(self.spool) and self._up:
            self.flush_pending()
        self._closed = True
        self._wake.set()
        self._flusher.join(timeout=5)
        self.spool.close()
        self.pool.close(timeout=2)

    def _read(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """Rows as dicts; [] while the server is unavailable (reported once; the flusher probes, not each read)."""
        return self._reading(lambda conn: list(conn.execute(sql, params).fetchall()), [])

    def _reading(self, fn: Callable[[Conn], T], empty: T) -> T:
        """`fn(conn)` on a connection, or `empty` while the server is unavailable."""
        if len(self.spool) and self._up:
            self.flush_pending()  # read your own writes
        if not self._up:
            self._wake.set()
            return empty
        try:
            return self._query(fn)
        except _CONNECTION_ERRORS as exc:
            self._went_down(exc)
            return empty

    def _query(self, fn: Callable[[Conn], T]) -> T:
        try:
            with self.pool.connection() as conn:
                return fn(conn)
        except _CONNECTION_ERRORS:
            # A pooled connection broken by a server restart, or a pool still refilling after one (a loaded
            # machine took longer than POOL_WAIT_S): one more try on a connection of its own tells that from a
            # server that is gone, as writes do (_apply_with_retry).
            with psycopg.connect(self.config.url, **self._conn_kwargs) as conn:
                return fn(conn)

    def _write(self, fn: Callable[[Conn], T]) -> T:
        """Run `fn(conn)` in one transaction (raises on any failure; tests and the importer)."""
        with self._write_lock, self.pool.connection() as conn, conn.transaction():
            return fn(conn)

    # ------------------------------------------------------------------ scope

    def project_key(self, project_id: str, project_dir: str | Path | None) -> str:
        """The key memory of this project is filed under: its shared team name when the user mapped it, else its id."""
        return shared_project(self.config, project_dir) or project_id

    def _row(self, session_id: str, project: str, now: float) -> dict[str, Any]:
        return {"owner": self.owner, "team": self.team, "shared": project.startswith(SHARED_PREFIX) and bool(self.team),
                "session_id": session_id, "project": project, "now": now}

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _ensure_session(conn: Conn, op: Op) -> None:
        # An update, not DO NOTHING: it locks the session's row until the write commits, so a prune deleting the
        # session as emptied either goes first (this then inserts it again) or waits and sees it updated (kept):
        # the write's rows never reference a session deleted under them.
        conn.execute(
            "INSERT INTO sessions (owner, team, shared, session_id, project, started_at, updated_at)"
            " VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(now)s, %(now)s)"
            " ON CONFLICT (owner, session_id) DO UPDATE SET updated_at = GREATEST(sessions.updated_at,"
            " excluded.updated_at)", op)

    def begin_prompt(self, session_id: str, project: str) -> int:
        """Count one more prompt; returns its number. Numbered here, so it works (and replays) while down."""
        known = self._prompt_counts.get(session_id)
        if known is None:
            rows = self._read("SELECT prompt_count FROM sessions WHERE owner = %s AND session_id = %s",
                              (self.owner, session_id))
            known = int(rows[0]["prompt_count"]) if rows else 0
        number = known + 1
        self._prompt_counts[session_id] = number
        self._submit({"op": "prompt_count", **self._row(session_id, project, self._clock()), "number": number})
        return number

    def _op_prompt_count(self, conn: Conn, op: Op) -> None:
        self._ensure_session(conn, op)
        conn.execute("UPDATE sessions SET prompt_count = GREATEST(prompt_count, %(number)s),"
                     " updated_at = GREATEST(updated_at, %(now)s), status = 'active'"
                     " WHERE owner = %(owner)s AND session_id = %(session_id)s", op)

    def add_prompt(self, session_id: str, project: str, prompt_number: int, text: str) -> None:
        self._submit({"op": "prompt", **self._row(session_id, project, self._clock()),
                      "number": prompt_number, "text": clean(text)})

    def _op_prompt(self, conn: Conn, op: Op, embedded: Embedded | None = None) -> None:
        self._ensure_session(conn, op)
        row = conn.execute(
            "INSERT INTO user_prompts (owner, team, shared, session_id, project, prompt_number, text, created_at)"
            " VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(number)s, %(text)s, %(now)s)"
            " ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET text = excluded.text,"
            f" created_at = excluded.created_at RETURNING {_INDEXED}", op).fetchone()
        self._index(conn, "prompt", row, embedded)

    def current_prompt_number(self, session_id: str) -> int:
        if session_id in self._prompt_counts:
            return self._prompt_counts[session_id]
        rows = self._read("SELECT prompt_count FROM sessions WHERE owner = %s AND session_id = %s",
                          (self.owner, session_id))
        return int(rows[0]["prompt_count"]) if rows else 0

    def add_observation(self, session_id: str, project: str, prompt_number: int, tool_name: str, text: str,
                        *, key: str | None = None) -> int:
        """Returns the row id when written at once, 0 when queued."""
        op = {"op": "observation", **self._row(session_id, project, self._clock()), "number": prompt_number,
              "key": key or uuid.uuid4().hex, "tool": clean(tool_name), "text": clean(text)}
        return int(self._submit(op) or 0)

    def _op_observation(self, conn: Conn, op: Op, embedded: Embedded | None = None) -> int:
        self._ensure_session(conn, op)
        row = conn.execute(
            "INSERT INTO observations (obs_key, owner, team, shared, session_id, project, prompt_number, tool_name,"
            f" text, created_at) VALUES ({OBS_KEY}, %(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s,"
            f" %(number)s, %(tool)s, %(text)s, %(now)s) ON CONFLICT (obs_key) DO NOTHING RETURNING {_INDEXED}",
            op).fetchone()
        self._index(conn, "observation", row, embedded)  # a replay inserts nothing and indexes nothing
        return int(row["id"]) if row else 0

    def upsert_summary(self, session_id: str, project: str, prompt_number: int, request: str, outcome: str) -> None:
        self._submit({"op": "summary", **self._row(session_id, project, self._clock()), "number": prompt_number,
                      "request": clean(request), "outcome": clean(outcome)})

    def _op_summary(self, conn: Conn, op: Op, embedded: Embedded | None = None) -> None:
        self._ensure_session(conn, op)
        row = conn.execute(
            "INSERT INTO session_summaries (owner, team, shared, session_id, project, prompt_number, request, outcome,"
            " created_at) VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(number)s,"
            " %(request)s, %(outcome)s, %(now)s) ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET"
            f" request = excluded.request, outcome = excluded.outcome, created_at = excluded.created_at"
            f" RETURNING {_INDEXED}", op).fetchone()
        self._index(conn, "summary", row, embedded)

    def complete_session(self, session_id: str, reason: str | None) -> bool:
        """Mark the session completed; False when it was never recorded (True when queued: not known yet)."""
        op = {"op": "complete", "owner": self.owner, "session_id": session_id, "now": self._clock(),
              "reason": clean(reason) if reason else reason}
        result = self._submit(op)
        return True if result is None else bool(result)

    def _op_complete(self, conn: Conn, op: Op) -> bool:
        cur = conn.execute(
            "UPDATE sessions SET status = 'completed', completed_at = %(now)s, updated_at = GREATEST(updated_at,"
            " %(now)s), end_reason = %(reason)s WHERE owner = %(owner)s AND session_id = %(session_id)s", op)
        return cur.rowcount > 0

    # ------------------------------------------------------------------ reads

    def _scope(self, **extra: Any) -> dict[str, Any]:
        return {"owner": self.owner, "team": self.team, **extra}

    def session(self, session_id: str) -> dict[str, Any] | None:
        rows = self._read(f"SELECT * FROM sessions WHERE session_id = %(sid)s AND {_VISIBLE}"
                          " ORDER BY (owner = %(owner)s) DESC LIMIT 1", self._scope(sid=session_id))
        return rows[0] if rows else None

    def _session_rows(self, table: str, order: str, session_id: str) -> list[dict[str, Any]]:
        return self._read(f"SELECT * FROM {table} WHERE session_id = %(sid)s AND {_VISIBLE} ORDER BY {order}",
                          self._scope(sid=session_id))

    def prompts(self, session_id: str) -> list[dict[str, Any]]:
        return [_without_tsv(r) for r in self._session_rows("user_prompts", "prompt_number", session_id)]

    def observations(self, session_id: str) -> list[dict[str, Any]]:
        return [_without_tsv(r) for r in self._session_rows("observations", "created_at, id", session_id)]

    def summaries(self, session_id: str) -> list[dict[str, Any]]:
        return [_without_tsv(r) for r in self._session_rows("session_summaries", "prompt_number", session_id)]

    def recent_context(self, project: str, *, exclude_session: str | None, summaries: int, observations: int) -> ContextItems:
        scope = self._scope(project=project, exclude=exclude_session or "", s=summaries, o=observations)
        return ContextItems(
            summaries=self._read(
                "SELECT session_id, request, outcome, created_at FROM session_summaries"
                f" WHERE project = %(project)s AND session_id != %(exclude)s AND {_VISIBLE}"
                " ORDER BY created_at DESC, id DESC LIMIT %(s)s", scope),
            observations=self._read(
                "SELECT session_id, tool_name, text, created_at FROM observations"
                f" WHERE project = %(project)s AND session_id != %(exclude)s AND {_VISIBLE}"
                " ORDER BY created_at DESC, id DESC LIMIT %(o)s", scope),
        )

    def search(self, query: str, *, project: str | None = None, limit: int = 20,
               mode: str = "hybrid") -> list[dict[str, Any]]:
        """Prompts, observations and summaries by words (`text`), by meaning (`meaning`) or both fused (`hybrid`),
        best first, each hit saying why it matched: MemoryStore.search's contract. Words: websearch_to_tsquery over
        the quoted words, ranked by ts_rank_cd. Meaning: the visible vector blocks (own rows, the team's shared
        projects). Without the embedding model, `hybrid` ranks by words alone and `meaning` finds nothing."""
        return ranked_search(query, project, limit, mode, self._text_hits, self._meaning_hits)

    def _text_hits(self, query: str, project: str | None, limit: int) -> list[dict[str, Any]]:
        """Full-text hits, best first: of each table, the newest RANK_WINDOW matches (found in steps whose reads do
        not grow with history: hooks/memory/pg_text.py), ranked by ts_rank_cd, the best marked by ts_headline."""
        match = fts_query(query)
        if match is None:
            return []
        # The query is spelled out where it is used, never through a CTE: a CTE hides the constant from the
        # planner, which then guesses a common word as rare (355 ms for "ticket" at 100k).
        q = f"websearch_to_tsquery('{TS_CONFIG}', %(match)s)"
        params = self._scope(match=match, project=project)

        def read(conn: Conn) -> list[tuple[dict[str, Any], float]]:
            best = best_matches(conn, q, _VISIBLE, bool(project), params, RANK_WINDOW, limit)
            if not best:
                return []
            ids: dict[str, list[int]] = {}
            for kind, row_id, _ in best:
                ids.setdefault(f"ids_{kind}", []).append(row_id)
            rows = {(r["kind"], r["id"]): r for r in conn.execute(
                rows_sql(q, TS_CONFIG, {kind for kind, _, _ in best}), {**params, **ids}).fetchall()}
            return [(rows[(kind, row_id)], rank) for kind, row_id, rank in best if (kind, row_id) in rows]

        none: list[tuple[dict[str, Any], float]] = []
        return [make_hit(r, _join_marks(r["snippet"]), rank, {"text": text_why(n, rank)})
                for n, (r, rank) in enumerate(self._reading(read, none), 1)]

    def _meaning_hits(self, query: str, project: str | None, limit: int) -> list[dict[str, Any]]:
        if not query.strip():
            return []
        embedded = self._embed([query])
        if embedded is None or not embedded.vectors.any():
            return []
        where = _VISIBLE + (" AND project = %(project)s" if project else "")
        scope = self._scope(project=project)

        def read(conn: Conn) -> list[dict[str, Any]]:
            if not self._ensure_model(conn, embedded.model):
                return []
            with conn.transaction():
                # One snapshot: the model, the blocks and the vectors read together, whatever a writer commits.
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                if self._stored_model(conn) != embedded.model:
                    return []  # another model's vectors (a sidecar with another model changed them since)
                nearest = self._vectors.nearest(conn, embedded.vectors[0], embedded.codes[0], where=where,
                                                params=scope, k=limit)
                rows = self._rows_of(conn, [item for item, _ in nearest], where, scope)
            hits = []
            for n, (item, similarity) in enumerate(nearest, 1):
                row = rows.get(item)
                if row is not None:
                    hits.append(make_hit(row, meaning_snippet(row["text"]), similarity,
                                     {"meaning": meaning_why(n, similarity)}))
            return hits

        return self._reading(read, [])

    @staticmethod
    def _rows_of(conn: Conn, items: list[int], where: str,
                 scope: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """The rows of `items` that `where` lets this store see (checked again: the blocks were already filtered)."""
        rows: dict[int, dict[str, Any]] = {}
        for code, (kind, table, text) in _KIND_TABLES.items():
            ids = [item // 4 for item in items if item % 4 == code]
            if not ids:
                continue
            for r in conn.execute(
                    f"SELECT id * 4 + {code} AS item, '{kind}' AS kind, session_id, project, {text} AS text,"
                    f" created_at FROM {table} WHERE id = ANY(%(ids)s) AND {where}", {**scope, "ids": ids}):
                rows[int(r["item"])] = r
        return rows

    # ------------------------------------------------------------------ vectors

    def _embed(self, texts: list[str]) -> Embedded | None:
        """The texts' vectors and codes (CPU work: called outside any transaction), or None without the model."""
        embedder = get_embedder()
        if embedder is None:
            return None
        try:
            vectors = embedder.embed(texts)
        except Exception as exc:  # a text the tokenizer chokes on costs its vector, never the row
            log.warning("memory: could not embed a text (%s); the backfill will retry it", exc)
            return None
        return Embedded(embedder.model_id, vectors, embedder.codes(vectors))

    @staticmethod
    def _stored_model(conn: Conn) -> str | None:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = 'embedding_model'").fetchone()
        return row["value"] if row else None

    def _ensure_model(self, conn: Conn, model: str) -> bool:
        """Outside a transaction: make the database's vectors `model`'s (another model's are all dropped, under the
        exclusive model lock), once per process. False when that failed for a reason other than the connection:
        the write goes on without its vector (the backfill makes it)."""
        if self._model_checked == model:
            return True
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MODEL_LOCK,))
                stored = self._stored_model(conn)
                if stored != model:
                    if stored is not None:
                        log.info("memory: the embedding model changed (%s -> %s); the vectors are made again",
                                 stored, model)
                    self._vectors.clear(conn)
                    conn.execute("INSERT INTO memory_meta (key, value) VALUES ('embedding_model', %s)"
                                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (model,))
        except _CONNECTION_ERRORS:
            raise
        except psycopg.Error as exc:
            log.error("memory: %s refused to record the embedding model (%s)", self.describe(),
                      " ".join(str(exc).split())[:300])
            return False
        self._model_checked = model
        return True

    def _index(self, conn: Conn, kind: str, row: dict[str, Any] | None,
               embedded: Embedded | None) -> None:
        """Inside a write: the row's vector, when the model made one and the database holds that model's vectors."""
        if embedded is None or row is None:
            return  # no model: the backfill adds it once there is one (an empty text gets its zero vector)
        if not self._holds_model(conn, embedded.model):
            return
        self._vectors.put(conn, (row["owner"], row["team"], row["shared"], row["project"]),
                          [item_of(kind, row["id"])], embedded.vectors, embedded.codes)

    def _holds_model(self, conn: Conn, model: str) -> bool:
        """Inside a transaction about to write vectors: whether they are `model`'s, held so until the commit."""
        conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (MODEL_LOCK,))
        return self._stored_model(conn) == model

    def usage(self) -> dict[str, Any]:
        """Size, items, growth and largest projects of what this user may read (hooks/memory/usage.py); `bytes` is
        the whole memory schema's on the server (every user's rows: PostgreSQL sizes tables, not owners)."""
        scope = self._scope()

        def read(conn: Conn) -> dict[str, Any]:
            def per_project() -> dict[str, tuple[int, int, float | None]]:
                out: dict[str, tuple[int, int, float | None]] = {}
                for table, at in (("observations", 0), ("session_summaries", 1)):
                    for r in conn.execute(f"SELECT project, count(*) AS n, max(created_at) AS newest FROM {table}"
                                          f" WHERE {_VISIBLE} GROUP BY project", scope):
                        counts = list(out.get(r["project"], (0, 0, None)))
                        counts[at] = int(r["n"])
                        newest = float(r["newest"]) if r["newest"] is not None else None
                        counts[2] = max(x for x in (counts[2], newest) if x is not None) if newest else counts[2]
                        out[r["project"]] = (counts[0], counts[1], counts[2])
                return out

            def since(project: str, t: float) -> int:
                return int(_scalar(conn, "SELECT (SELECT count(*) FROM observations WHERE project = %(p)s AND"
                                         f" created_at >= %(t)s AND {_VISIBLE}) + (SELECT count(*) FROM"
                                         " session_summaries WHERE project = %(p)s AND created_at >= %(t)s"
                                         f" AND {_VISIBLE})", {**scope, "p": project, "t": t}))

            return usage_of(UsageSql(
                per_project=per_project, since=since,
                prompts=lambda: int(_scalar(conn, f"SELECT count(*) FROM user_prompts WHERE {_VISIBLE}", scope)),
                vectors=lambda: int(_scalar(conn, "SELECT count(*) FROM memory_vectors v JOIN memory_vector_blocks b"
                                                  f" ON b.id = v.block WHERE {_VISIBLE}", scope)),
                bytes=lambda: int(_scalar(conn, "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                                                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s"
                                                " AND c.relkind IN ('r', 'm')", {"s": SCHEMA}))),
                time.time(), iso_utc)

        return self._reading(read, {"up": False})

    def vector_status(self) -> dict[str, Any]:
        """How much of the memory this store sees has vectors: {items, embedded, model, available, ...};
        `items` and `embedded` are None while the server is unavailable."""
        embedder = get_embedder()

        def read(conn: Conn) -> tuple[int | None, int | None, str | None]:
            scope = self._scope()
            items = _scalar(conn, f"SELECT (SELECT count(*) FROM user_prompts WHERE {_VISIBLE})"
                                  f" + (SELECT count(*) FROM observations WHERE {_VISIBLE})"
                                  f" + (SELECT count(*) FROM session_summaries WHERE {_VISIBLE})", scope)
            embedded = _scalar(conn, "SELECT count(*) FROM memory_vectors v JOIN memory_vector_blocks b"
                                     f" ON b.id = v.block WHERE {_VISIBLE}", scope)
            return int(items), int(embedded), self._stored_model(conn)

        unknown: tuple[int | None, int | None, str | None] = (None, None, None)
        items, embedded, stored = self._reading(read, unknown)
        status = {**embedder_status(), "items": items, "embedded": embedded, "model": stored}
        if embedder is not None and stored not in (None, embedder.model_id):
            status["embedded"] = 0  # another model's vectors: all made again at the next backfill
        return status

    def backfill(self, *, batch: int = BACKFILL_BATCH, progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> int:
        """Embed every item this store sees (its own rows, the team's shared projects) that has no vector yet,
        `batch` items per transaction: resumable (a stop, a crash or an outage keeps what was committed and the next
        run goes on). Returns how many were embedded; `progress(done, left)` after each batch."""
        embedder = get_embedder()
        if embedder is None or not (self._up or self._connect()):
            return 0
        done = 0
        try:
            with self.pool.connection() as conn:
                if not self._ensure_model(conn, embedder.model_id):
                    return 0
            status = self.vector_status()
            left = max(0, (status["items"] or 0) - (status["embedded"] or 0))
            after = dict.fromkeys(_KIND_TABLES, 0)  # per table, the last row id walked
            while left > 0 and not (should_stop and should_stop()):
                rows = self._missing(after, batch)
                if not rows:
                    break
                vectors = embedder.embed([text for _, _, text in rows])
                codes = embedder.codes(vectors)

                def put(conn: Conn, rows: list[tuple[int, Scope, str]] = rows, vectors: np.ndarray = vectors,
                        codes: np.ndarray = codes) -> bool:
                    return self._put_batch(conn, embedder.model_id, rows, vectors, codes)

                if not self._write(put):
                    break  # a sidecar with another model took the vectors over: this one's would be dropped
                done += len(rows)
                left = max(0, left - len(rows))
                if progress is not None:
                    progress(done, left)
        except _CONNECTION_ERRORS as exc:
            self._went_down(exc)
        return done

    def _missing(self, after: dict[int, int], limit: int) -> list[tuple[int, Scope, str]]:
        """Up to `limit` visible items without a vector, walking each table by row id from `after` (advanced)."""
        out: list[tuple[int, Scope, str]] = []
        with self.pool.connection() as conn:
            for code, (_kind, table, _text) in _KIND_TABLES.items():
                if after[code] < 0 or len(out) >= limit:
                    continue
                text = "text" if table != "session_summaries" else "request, outcome"
                want = limit - len(out)
                rows = conn.execute(
                    f"SELECT id, owner, team, shared, project, {text} FROM {table} t WHERE id > %(after)s"
                    f" AND {_VISIBLE} AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.item = t.id * 4 + {code})"
                    " ORDER BY id LIMIT %(n)s", self._scope(after=after[code], n=want)).fetchall()
                for r in rows:
                    body = r["text"] if "text" in r else f"{r['request']}\n{r['outcome']}".strip()
                    out.append((int(r["id"]) * 4 + code, (r["owner"], r["team"], r["shared"], r["project"]), body))
                after[code] = int(rows[-1]["id"]) if len(rows) == want else -1  # -1: this table is done
        return out

    def _put_batch(self, conn: Conn, model: str, rows: list[tuple[int, Scope, str]],
                   vectors: np.ndarray, codes: np.ndarray) -> bool:
        """Inside a transaction: index a backfill batch; False (nothing written) when the vectors are another model's."""
        if not self._holds_model(conn, model):
            return False
        # The generation row first (the lock order of PgVectorIndex), then whether the rows are still there: a prune
        # that deleted one committed before (its vector would hang in the index alone), or waits for this commit
        # and then finds and removes the vector (PgVectorIndex.delete).
        _bump(conn, GENERATION)
        there: set[int] = set()
        for code, (_kind, table, _text) in _KIND_TABLES.items():
            ids = [item // 4 for item, _, _ in rows if item % 4 == code]
            if ids:
                there.update(int(r["id"]) * 4 + code for r in conn.execute(
                    f"SELECT id FROM {table} WHERE id = ANY(%s)", (ids,)))
        by_scope: dict[Scope, list[int]] = {}
        for n, (item, scope, _) in enumerate(rows):
            if item in there:
                by_scope.setdefault(scope, []).append(n)  # a zero vector too: else it counts as missing forever
        for scope in sorted(by_scope):  # scope locks in one order: two backfills never wait on each other in a cycle
            ns = by_scope[scope]
            # a row a writer indexed meanwhile is replaced by the same vector: harmless
            self._vectors.put(conn, scope, [rows[n][0] for n in ns], vectors[ns], codes[ns])
        return True

    # ------------------------------------------------------------------ retention (hooks/memory/retention.py)

    def retention_projects(self) -> list[str]:
        """Every project this installation has stored something in (its own rows: a prune touches no other)."""
        rows = self._query(lambda conn: conn.execute(
            "SELECT project FROM sessions WHERE owner = %(owner)s UNION SELECT project FROM observations WHERE"
            " owner = %(owner)s UNION SELECT project FROM session_summaries WHERE owner = %(owner)s",
            self._scope()).fetchall())
        return sorted(r["project"] for r in rows)

    def _cut(self, conn: Conn, project: str, rule: RetentionRule) -> Cut | None:
        def nth_newest(n: int) -> tuple[float, int] | None:
            row = conn.execute("SELECT created_at, id FROM observations WHERE owner = %(owner)s AND project = %(p)s"
                               " ORDER BY created_at DESC, id DESC OFFSET %(k)s LIMIT 1",
                               self._scope(p=project, k=n - 1)).fetchone()
            return (float(row["created_at"]), int(row["id"])) if row else None

        return cut_of(rule, self._clock(), nth_newest)

    def preview_prune(self, project: str, rule: RetentionRule, *, with_bytes: bool = True) -> Removed:
        """What `prune(project, rule)` would remove now, changing nothing (`with_bytes`: also bytes and vectors).
        Raises when the server does not answer."""

        def read(conn: Conn) -> Removed:
            out = Removed()
            cut = self._cut(conn, project, rule)
            if cut is None:
                return out
            params = self._scope(p=project, at=cut.at, id=cut.id)
            for kind, (table, size, code) in _PRUNED.items():
                doomed = _DOOMED_OBSERVATIONS if kind == "observations" else _DOOMED_BEFORE
                if with_bytes:
                    row = conn.execute(
                        f"SELECT count(*) AS n, coalesce(sum({size}), 0) AS size, (SELECT count(*) FROM memory_vectors"
                        f" WHERE item IN (SELECT id * 4 + {code} FROM {table} WHERE {doomed})) AS vectors FROM {table}"
                        f" WHERE {doomed}", params).fetchone()
                    assert row is not None
                    out.vectors += int(row["vectors"])
                    out.bytes += int(row["size"]) + int(row["vectors"]) * VECTOR_BYTES
                    setattr(out, kind, int(row["n"]))
                else:
                    setattr(out, kind, int(_scalar(conn, f"SELECT count(*) FROM {table} WHERE {doomed}", params)))
            out.sessions = int(_scalar(conn, f"SELECT count(*) FROM sessions s WHERE {_PREVIEWED_SESSION}", params))
            return out

        return self._query(read)

    def prune(self, project: str, rule: RetentionRule, *, batch: int = PRUNE_BATCH,
              should_stop: Callable[[], bool] | None = None) -> Removed:
        """Remove what `rule` does not keep of this installation's rows of `project` (hooks/memory/retention.py):
        the rows (their full-text entries go with them), their vectors and codes, the sessions left empty; at most
        `batch` rows per transaction. A teammate's rows of a shared project are theirs to keep. Raises when the
        server does not answer (what was committed stays removed; the next run goes on)."""
        cut = self._query(lambda conn: self._cut(conn, project, rule))
        out = Removed()
        if cut is None:
            return out
        params = self._scope(p=project, at=cut.at, id=cut.id, n=batch)

        def step(conn: Conn, kind: str) -> Removed:
            got = Removed()
            if kind == "sessions":
                got.sessions = conn.execute(
                    f"DELETE FROM sessions WHERE id IN (SELECT id FROM sessions s WHERE {_EMPTY_SESSION}"
                    " LIMIT %(n)s) AND updated_at < %(at)s", params).rowcount
                return got
            table, size, code = _PRUNED[kind]
            doomed = _DOOMED_OBSERVATIONS if kind == "observations" else _DOOMED_BEFORE
            # The rows first (their row locks), then the vectors (the generation row): a write updating one of
            # these rows takes the same two in the same order, so the two never wait on each other in a cycle.
            rows = conn.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {doomed} ORDER BY"
                                f" created_at, id LIMIT %(n)s) AND {doomed} RETURNING id, {size} AS size",
                                params).fetchall()
            setattr(got, kind, len(rows))
            got.vectors = self._vectors.delete(conn, [int(r["id"]) * 4 + code for r in rows])
            got.bytes = sum(int(r["size"]) for r in rows) + got.vectors * VECTOR_BYTES
            return got

        for kind in ("observations", "prompts", "summaries", "sessions"):
            while not (should_stop and should_stop()):
                try:
                    got = self._write(functools.partial(step, kind=kind))
                except psycopg.errors.ForeignKeyViolation:
                    # A write replayed from a spool gave an emptied session a row meanwhile: it stays, and so does
                    # the rest of this pass's sessions (the next pass looks again).
                    break
                out.add(got)
                if getattr(got, kind) < batch:
                    break
        return out


# What a retention cut removes of the installation's rows (hooks/memory/retention.py), per kind: the table, a row's
# bytes, its kind's code in a vector item (`id * 4 + code`). `%(p)s` the project, `%(at)s`/`%(id)s` the cut.
_PRUNED: dict[str, tuple[str, str, int]] = {
    "observations": ("observations", "octet_length(text) + octet_length(tool_name)", KIND_CODES["observation"]),
    "prompts": ("user_prompts", "octet_length(text)", KIND_CODES["prompt"]),
    "summaries": ("session_summaries", "octet_length(request) + octet_length(outcome)", KIND_CODES["summary"]),
}
_DOOMED_OBSERVATIONS = ("owner = %(owner)s AND project = %(p)s AND (created_at < %(at)s OR (created_at = %(at)s AND"
                        " id < %(id)s))")
_DOOMED_BEFORE = "owner = %(owner)s AND project = %(p)s AND created_at < %(at)s"
_EMPTIED_SESSION = ("s.owner = %(owner)s AND s.project = %(p)s AND s.started_at < %(at)s AND s.updated_at < %(at)s"
                    " AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.owner = s.owner AND"
                    " o.session_id = s.session_id{obs}) AND NOT EXISTS (SELECT 1 FROM user_prompts u WHERE"
                    " u.owner = s.owner AND u.session_id = s.session_id{prompts}) AND NOT EXISTS (SELECT 1 FROM"
                    " session_summaries m WHERE m.owner = s.owner AND m.session_id = s.session_id{summaries})")
_PREVIEWED_SESSION = _EMPTIED_SESSION.format(
    obs=" AND NOT (o.project = %(p)s AND (o.created_at < %(at)s OR (o.created_at = %(at)s AND o.id < %(id)s)))",
    prompts=" AND NOT (u.project = %(p)s AND u.created_at < %(at)s)",
    summaries=" AND NOT (m.project = %(p)s AND m.created_at < %(at)s)")
_EMPTY_SESSION = _EMPTIED_SESSION.format(obs="", prompts="", summaries="")


def _scalar(conn: Conn, sql: str, params: Any) -> Any:
    """The first column of the one row `sql` returns."""
    row = conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return next(iter(row.values()))


def _without_tsv(row: dict[str, Any]) -> dict[str, Any]:
    """A row as callers get it: without the search column and an observation's idempotency key (bookkeeping, a
    `uuid` since schema 5; the SQLite store returns neither)."""
    row.pop("tsv", None)
    row.pop("obs_key", None)
    return row


_ADJACENT_MARKS = re.compile(r"»((?:_|[^\w\s«»]){1,3})«")


def _join_marks(snippet: str) -> str:
    # ts_headline marks each word of a phrase (`«retry»_«login»`); FTS5 marks the phrase as one (`«retry_login»`).
    return _ADJACENT_MARKS.sub(r"\1", snippet)
