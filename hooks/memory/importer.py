"""Copy an existing SQLite memory into the team's PostgreSQL database, as this installation's rows; safe to run again.

Every row keeps its session, prompt number and times; projects stay private
unless the user's `memory.teamProjects` shares their folder (the folder is
found through this data dir's project registry). Each observation is keyed
by this installation and its SQLite row id, prompts and summaries by their
session and number, so a second run (or a run interrupted and restarted)
adds nothing twice. Every text is stripped of `<private>` sections and
redacted again on the way, whatever the older version that wrote it did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.memory.config import MemoryConfig, install_id, shared_project
from hooks.memory.identity import _load, registry_path
from hooks.memory.pg_store import OBS_KEY, SCHEMA, PostgresMemoryStore, clean
from hooks.memory.store import OBSERVATIONS_IN_ORDER, MemoryStore, memory_db_path

BATCH = 1000


@dataclass(slots=True)
class ImportReport:
    """Rows read from the SQLite memory, per kind; `added`: how many of them the database did not hold yet (a second
    run reads the same rows and adds none)."""

    sessions: int = 0
    prompts: int = 0
    observations: int = 0
    summaries: int = 0
    added: dict[str, int] | None = None

    def as_dict(self) -> dict[str, int]:
        return {"sessions": self.sessions, "prompts": self.prompts, "observations": self.observations,
                "summaries": self.summaries}


_TABLES = {"sessions": "sessions", "prompts": "user_prompts", "observations": "observations",
           "summaries": "session_summaries"}


def _owned(store: PostgresMemoryStore) -> dict[str, int]:
    """This installation's rows per kind, in the database."""
    rows = store._read("SELECT " + ", ".join(f"(SELECT count(*) FROM {table} WHERE owner = %(owner)s) AS {kind}"
                                             for kind, table in _TABLES.items()), {"owner": store.owner})
    return {kind: int(rows[0][kind]) for kind in _TABLES} if rows else dict.fromkeys(_TABLES, 0)


def _rows(conn: sqlite3.Connection, sql: str) -> Iterator[list[dict[str, Any]]]:
    cur = conn.execute(sql)
    while batch := cur.fetchmany(BATCH):
        yield [dict(r) for r in batch]


def import_sqlite(data_dir: Path, config: MemoryConfig) -> ImportReport:
    """Import `<data_dir>/memory.sqlite3` into `config`'s database (raises on a connection failure: nothing is buffered)."""
    source = memory_db_path(Path(data_dir))
    if not source.exists():
        raise FileNotFoundError(f"no SQLite memory at {source}")
    store = PostgresMemoryStore(config, Path(data_dir))
    try:
        if not store.status()["up"]:
            raise ConnectionError(f"cannot reach {store.describe()}")
        return _copy(source, store, config, Path(data_dir))
    finally:
        store.close()


def _copy(source: Path, store: PostgresMemoryStore, config: MemoryConfig, data_dir: Path) -> ImportReport:
    paths = {entry.get("id"): path for path, entry in _load(registry_path(data_dir)).items() if isinstance(entry, dict)}
    inst = install_id(data_dir, create=True)

    def key(project: str) -> str:
        return shared_project(config, paths.get(project)) or project

    def scope(project: str) -> dict[str, Any]:
        k = key(project)
        return {"owner": store.owner, "team": store.team, "project": k,
                "shared": k.startswith("team:") and bool(store.team)}

    report = ImportReport()
    before = _owned(store)
    MemoryStore(source).close()  # brings an older file to this schema first: the reads below are written for it
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        for batch in _rows(conn, "SELECT * FROM sessions ORDER BY id"):
            store._write(lambda pg, b=batch: pg.cursor().executemany(
                "INSERT INTO sessions (owner, team, shared, session_id, project, status, prompt_count, started_at,"
                " updated_at, completed_at, end_reason) VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s,"
                " %(project)s, %(status)s, %(prompt_count)s, %(started_at)s, %(updated_at)s, %(completed_at)s,"
                " %(end_reason)s) ON CONFLICT (owner, session_id) DO UPDATE SET"
                " prompt_count = GREATEST(sessions.prompt_count, excluded.prompt_count),"
                " updated_at = GREATEST(sessions.updated_at, excluded.updated_at),"
                " status = excluded.status, completed_at = excluded.completed_at, end_reason = excluded.end_reason",
                [{**r, **scope(r["project"]), "end_reason": clean(r["end_reason"]) if r["end_reason"] else None}
                 for r in b]))
            report.sessions += len(batch)
        projects = {r["session_id"]: r["project"] for r in conn.execute("SELECT session_id, project FROM sessions")}
        for batch in _rows(conn, "SELECT * FROM user_prompts ORDER BY id"):
            store._write(lambda pg, b=batch: pg.cursor().executemany(
                "INSERT INTO user_prompts (owner, team, shared, session_id, project, prompt_number, text, created_at)"
                " VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s, %(prompt_number)s, %(text)s,"
                " %(created_at)s) ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET text = excluded.text",
                [{**r, **scope(projects.get(r["session_id"], "")), "text": clean(r["text"])} for r in b]))
            report.prompts += len(batch)
        for batch in _rows(conn, OBSERVATIONS_IN_ORDER):
            store._write(lambda pg, b=batch: pg.cursor().executemany(
                "INSERT INTO observations (obs_key, owner, team, shared, session_id, project, prompt_number,"
                f" tool_name, text, created_at) VALUES ({OBS_KEY}, %(owner)s, %(team)s, %(shared)s, %(session_id)s,"
                " %(project)s, %(prompt_number)s, %(tool_name)s, %(text)s, %(created_at)s)"
                " ON CONFLICT (obs_key) DO NOTHING",
                [{**r, **scope(r["project"]), "key": f"import:{inst}:{r['id']}", "tool_name": clean(r["tool_name"]),
                  "text": clean(r["text"])} for r in b]))
            report.observations += len(batch)
        for batch in _rows(conn, "SELECT * FROM session_summaries ORDER BY id"):
            store._write(lambda pg, b=batch: pg.cursor().executemany(
                "INSERT INTO session_summaries (owner, team, shared, session_id, project, prompt_number, request,"
                " outcome, created_at) VALUES (%(owner)s, %(team)s, %(shared)s, %(session_id)s, %(project)s,"
                " %(prompt_number)s, %(request)s, %(outcome)s, %(created_at)s)"
                " ON CONFLICT (owner, session_id, prompt_number) DO UPDATE SET request = excluded.request,"
                " outcome = excluded.outcome",
                [{**r, **scope(r["project"]), "request": clean(r["request"]), "outcome": clean(r["outcome"])}
                 for r in b]))
            report.summaries += len(batch)
    finally:
        conn.close()
    # The planner's statistics, now: until autovacuum gets to it, a fresh import looks empty to the planner and
    # a project's memory context read every row of the project (58 ms at 100k, issue 27).
    store._write(lambda pg: [pg.execute(f"ANALYZE {SCHEMA}.{table}") for table in
                             ("sessions", "user_prompts", "observations", "session_summaries")])
    after = _owned(store)
    report.added = {kind: after[kind] - before[kind] for kind in _TABLES}
    return report
