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
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from hooks.memory.config import SHARED_PREFIX, MemoryConfig, owner_of, shared_project
from hooks.memory.spool import Op, Spool
from hooks.memory.store import ContextItems, SchemaTooNewError, fts_query, iso_utc
from hooks.memory.tags import strip_tags
from hooks.redaction import redact

T = TypeVar("T")
log = logging.getLogger("hooks.memory")
# The pool logs every failed connection attempt as a warning: while the server is down that would be a line (and a
# `log` event to the frontend) every few seconds. The store reports an outage once itself.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

SCHEMA = "orion_memory"
SCHEMA_VERSION = 1
# pg_advisory_xact_lock's key: any constant every sidecar agrees on ("orion_me" as a big-endian int64).
MIGRATION_LOCK = 0x6F72696F6E5F6D65
CONNECT_TIMEOUT_S = 3
POOL_WAIT_S = 2.0  # how long a write waits for a connection before it is queued instead (hooks time out at 10 s)
POOL_MAX = 4
RETRY_MIN_S = 0.2
RETRY_MAX_S = 5.0
TS_CONFIG = "english"  # stemming like FTS5's porter tokenizer

_VISIBLE = "team = %(team)s AND (owner = %(owner)s OR shared)"

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

MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1}

_CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)


def clean(text: str) -> str:
    """What may leave the machine: no `<private>` or injected sections, no secrets."""
    return redact(strip_tags(text))


def split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def migrate(conn: psycopg.Connection) -> int:
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
        self._wake = threading.Event()
        self._flushed = threading.Condition()
        self._conn_kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                                             "row_factory": dict_row, "options": f"-c search_path={SCHEMA}"}
        self.pool = ConnectionPool(
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
        # The pool hands out a checked connection, but the server can go between check and use: one retry on a
        # fresh connection tells a broken pooled connection from a server that is gone.
        try:
            return self._apply(op)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            return self._apply(op)

    def _apply(self, op: Op) -> Any:
        with self.pool.connection() as conn, conn.transaction():
            return getattr(self, f"_op_{op['op']}")(conn, op)

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
        if len(self.spool) and self._up:
            self.flush_pending()  # read your own writes
        if not self._up:
            self._wake.set()
            return []
        try:
            return self._query(sql, params)
        except _CONNECTION_ERRORS as exc:
            self._went_down(exc)
            return []

    def _query(self, sql: str, params: Any) -> list[dict[str, Any]]:
        try:
            with self.pool.connection() as conn:
                return list(conn.execute(sql, params).fetchall())
        except _CONNECTION_ERRORS:
            # A pooled connection broken by a server restart, or a pool still refilling after one (a loaded
            # machine took longer than POOL_WAIT_S): one more try on a connection of its own tells that from a
            # server that is gone, as writes do (_apply_with_retry).
            with psycopg.connect(self.config.url, **self._conn_kwargs) as conn:
                return list(conn.execute(sql, params).fetchall())

    def _write(self, fn: Callable[[psycopg.Connection], T]) -> T:
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
    def _ensure_session(conn: psycopg.Connection, op: Op) -> None:
        conn.execute(
            "INSERT INTO sessions (owner, team, shared, session_id, project, started_at, updated_at)"
            " VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(now)s, %(now)s)"
            " ON CONFLICT (owner, session_id) DO NOTHING", op)

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

    def _op_prompt_count(self, conn: psycopg.Connection, op: Op) -> None:
        self._ensure_session(conn, op)
        conn.execute("UPDATE sessions SET prompt_count = GREATEST(prompt_count, %(number)s),"
                     " updated_at = GREATEST(updated_at, %(now)s), status = 'active'"
                     " WHERE owner = %(owner)s AND session_id = %(session_id)s", op)

    def add_prompt(self, session_id: str, project: str, prompt_number: int, text: str) -> None:
        self._submit({"op": "prompt", **self._row(session_id, project, self._clock()),
                      "number": prompt_number, "text": clean(text)})

    def _op_prompt(self, conn: psycopg.Connection, op: Op) -> None:
        self._ensure_session(conn, op)
        conn.execute(
            "INSERT INTO user_prompts (owner, team, shared, session_id, project, prompt_number, text, created_at)"
            " VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(number)s, %(text)s, %(now)s)"
            " ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET text = excluded.text,"
            " created_at = excluded.created_at", op)

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

    def _op_observation(self, conn: psycopg.Connection, op: Op) -> int:
        self._ensure_session(conn, op)
        row = conn.execute(
            "INSERT INTO observations (obs_key, owner, team, shared, session_id, project, prompt_number, tool_name,"
            " text, created_at) VALUES (%(key)s, %(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s,"
            " %(number)s, %(tool)s, %(text)s, %(now)s) ON CONFLICT (obs_key) DO NOTHING RETURNING id", op).fetchone()
        return int(row["id"]) if row else 0

    def upsert_summary(self, session_id: str, project: str, prompt_number: int, request: str, outcome: str) -> None:
        self._submit({"op": "summary", **self._row(session_id, project, self._clock()), "number": prompt_number,
                      "request": clean(request), "outcome": clean(outcome)})

    def _op_summary(self, conn: psycopg.Connection, op: Op) -> None:
        self._ensure_session(conn, op)
        conn.execute(
            "INSERT INTO session_summaries (owner, team, shared, session_id, project, prompt_number, request, outcome,"
            " created_at) VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(number)s,"
            " %(request)s, %(outcome)s, %(now)s) ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET"
            " request = excluded.request, outcome = excluded.outcome, created_at = excluded.created_at", op)

    def complete_session(self, session_id: str, reason: str | None) -> bool:
        """Mark the session completed; False when it was never recorded (True when queued: not known yet)."""
        op = {"op": "complete", "owner": self.owner, "session_id": session_id, "now": self._clock(),
              "reason": clean(reason) if reason else reason}
        result = self._submit(op)
        return True if result is None else bool(result)

    def _op_complete(self, conn: psycopg.Connection, op: Op) -> bool:
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

    def search(self, query: str, *, project: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Full-text search, best first: websearch_to_tsquery over the quoted words, ranked by ts_rank_cd."""
        match = fts_query(query)
        if match is None:
            return []
        where = f"tsv @@ q AND {_VISIBLE}" + (" AND project = %(project)s" if project else "")
        sql = (
            f"WITH query AS (SELECT websearch_to_tsquery('{TS_CONFIG}', %(match)s) AS q),"
            " hits AS ("
            f" SELECT 'prompt' AS kind, session_id, project, text, created_at, ts_rank_cd(tsv, q) AS rank"
            f"  FROM user_prompts, query WHERE {where}"
            " UNION ALL"
            f" SELECT 'observation', session_id, project, text, created_at, ts_rank_cd(tsv, q)"
            f"  FROM observations, query WHERE {where}"
            " UNION ALL"
            f" SELECT 'summary', session_id, project, request || E'\\n' || outcome, created_at, ts_rank_cd(tsv, q)"
            f"  FROM session_summaries, query WHERE {where}"
            " ORDER BY rank DESC, created_at DESC LIMIT %(limit)s)"
            f" SELECT hits.*, ts_headline('{TS_CONFIG}', text, q, 'StartSel=«, StopSel=», MaxWords=16, MinWords=6,"
            " ShortWord=2, MaxFragments=1, FragmentDelimiter=…') AS snippet FROM hits, query ORDER BY rank DESC,"
            " created_at DESC"
        )
        rows = self._read(sql, self._scope(match=match, project=project, limit=limit))
        return [
            {
                "kind": r["kind"],
                "sessionId": r["session_id"],
                "project": r["project"],
                "text": r["text"],
                "snippet": _join_marks(r["snippet"]),
                "createdAt": iso_utc(float(r["created_at"])),
                "score": round(float(r["rank"]), 6),
            }
            for r in rows
        ]


def _without_tsv(row: dict[str, Any]) -> dict[str, Any]:
    row.pop("tsv", None)
    return row


_ADJACENT_MARKS = re.compile(r"»((?:_|[^\w\s«»]){1,3})«")


def _join_marks(snippet: str) -> str:
    # ts_headline marks each word of a phrase (`«retry»_«login»`); FTS5 marks the phrase as one (`«retry_login»`).
    return _ADJACENT_MARKS.sub(r"\1", snippet)
