"""The memory store's size against its floor (issue 27: "a store <= 1.5x its floor"), on a database
bench/bench_memory_meaning.py grew, SQLite or PostgreSQL.

    .venv/bin/python -m bench.bench_memory_store_size --dir <the SQLite bench database's directory>
    .venv/bin/python -m bench.bench_memory_store_size --backend postgres --pg-url postgresql://...

The floor is what any store of the same memory must keep, in the same engine: the same rows (every column the
store writes except what it derives from them: PostgreSQL's stored `tsv`) and the same float16 vectors, in plain
tables with no index but their primary key, written in one go (no free space). What the store holds beyond that
is its full-text index, its vector codes and its secondary indexes; the report shows each part, so the ratio can be
read against what it buys (search by word and by meaning in tens of milliseconds at 1M).

SQLite: pages in use from `dbstat` (free pages are reported apart: a pruned file keeps them for reuse), the floor
built in a temporary file and measured the same way. PostgreSQL: `pg_total_relation_size` of every table of the
store's schema (indexes and TOAST included) against the same of the floor's tables, built in a schema of their own
in the same database and dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

MIB = 2**20


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def _sqlite_parts(conn: sqlite3.Connection, schema: str = "main") -> dict[str, int]:
    """Bytes in use per table or index (dbstat's pages), for one attached database."""
    rows = conn.execute(f"SELECT name, sum(pgsize) FROM dbstat('{schema}') GROUP BY name").fetchall()
    return {str(name): int(size) for name, size in rows}


def _sqlite_group(name: str) -> str:
    if name.startswith("memory_fts"):
        return "full-text index"
    if name.startswith("memory_vector_blocks"):
        return "vector codes"
    if name == "memory_vectors":
        return "vectors"
    if name.startswith("sqlite_autoindex") or name in ("sqlite_schema", "sqlite_master", "sqlite_stat1"):
        return "rows"  # primary and unique keys, as the floor's tables have theirs
    if name in ("observations", "user_prompts", "session_summaries", "sessions", "memory_meta"):
        return "rows"
    return "secondary indexes"


_SQLITE_FLOOR = [
    ("sessions", "CREATE TABLE {f}.sessions AS SELECT * FROM main.sessions"),
    ("user_prompts", "CREATE TABLE {f}.user_prompts AS SELECT * FROM main.user_prompts"),
    ("observations", "CREATE TABLE {f}.observations (id INTEGER PRIMARY KEY, session_id TEXT, project TEXT,"
                     " prompt_number INTEGER, tool_name TEXT, text TEXT, created_at REAL)"),
    ("session_summaries", "CREATE TABLE {f}.session_summaries AS SELECT * FROM main.session_summaries"),
    ("vectors", "CREATE TABLE {f}.vectors (item INTEGER PRIMARY KEY, vector BLOB)"),
]


def sqlite_sizes(db: Path) -> dict[str, Any]:
    from hooks.memory.store import OBSERVATIONS_IN_ORDER

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        parts = _sqlite_parts(conn)
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("observations", "user_prompts", "session_summaries", "memory_vectors")}
        with tempfile.TemporaryDirectory(prefix="orion-floor-") as tmp:
            floor_path = Path(tmp) / "floor.sqlite3"
            conn.execute("ATTACH DATABASE ? AS floor", (str(floor_path),))
            started = time.perf_counter()
            for _, sql in _SQLITE_FLOOR:
                conn.execute(sql.format(f="floor"))
            conn.execute(f"INSERT INTO floor.observations {OBSERVATIONS_IN_ORDER}")
            conn.execute("INSERT INTO floor.vectors SELECT item, vector FROM main.memory_vectors ORDER BY item")
            conn.commit()
            floor_parts = _sqlite_parts(conn, "floor")
            built_s = time.perf_counter() - started
            conn.execute("DETACH DATABASE floor")
    finally:
        conn.close()
    groups: dict[str, int] = {}
    for name, size in parts.items():
        groups[_sqlite_group(name)] = groups.get(_sqlite_group(name), 0) + size
    ours = sum(parts.values())
    floor = sum(floor_parts.values())
    return {
        "backend": "sqlite", "path": str(db), "counts": counts,
        "file_mib": round(pages * page_size / MIB, 1), "free_mib": round(free * page_size / MIB, 1),
        "ours_mib": round(ours / MIB, 1), "floor_mib": round(floor / MIB, 1), "ratio": round(ours / floor, 2),
        "ours_by_part_mib": {k: round(v / MIB, 1) for k, v in sorted(groups.items(), key=lambda kv: -kv[1])},
        "ours_by_table_mib": {k: round(v / MIB, 1) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
                              if v >= MIB},
        "floor_by_table_mib": {k: round(v / MIB, 1) for k, v in sorted(floor_parts.items(), key=lambda kv: -kv[1])},
        "floor_built_s": round(built_s, 1),
    }


FLOOR_SCHEMA = "orion_floor_bench"
_PG_FLOOR = {
    "sessions": "SELECT * FROM {s}.sessions",
    "user_prompts": "SELECT id, owner, team, shared, session_id, prompt_number, text, created_at FROM {s}.user_prompts",
    "observations": "SELECT id, obs_key, owner, team, shared, session_id, project, prompt_number, tool_name, text,"
                    " created_at FROM {s}.observations ORDER BY id",
    "session_summaries": "SELECT id, owner, team, shared, session_id, project, prompt_number, request, outcome,"
                         " created_at FROM {s}.session_summaries",
    "vectors": "SELECT item, vector FROM {s}.memory_vectors ORDER BY item",
}


def pg_sizes(url: str) -> dict[str, Any]:
    import psycopg

    from hooks.memory.pg_store import SCHEMA

    def sizes(conn: Any, schema: str) -> dict[str, int]:
        rows = conn.execute("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n"
                            " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", (schema,)).fetchall()
        return {str(name): int(size) for name, size in rows}

    def parts_of(conn: Any, schema: str) -> dict[str, int]:
        """Heap (with TOAST) and each index apart, so the report can say what the bytes are."""
        out: dict[str, int] = {}
        for table, heap, idx in conn.execute(
                "SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'", (schema,)).fetchall():
            out[f"{table} (rows)"] = int(heap)
            out[f"{table} (indexes)"] = int(idx)
        return out

    with psycopg.connect(url, autocommit=True) as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {SCHEMA}.{t}").fetchone()[0]
                  for t in ("observations", "user_prompts", "session_summaries", "memory_vectors")}
        ours_tables = sizes(conn, SCHEMA)
        ours_parts = parts_of(conn, SCHEMA)
        conn.execute(f"DROP SCHEMA IF EXISTS {FLOOR_SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {FLOOR_SCHEMA}")
        try:
            started = time.perf_counter()
            for table, select in _PG_FLOOR.items():
                conn.execute(f"CREATE TABLE {FLOOR_SCHEMA}.{table} AS {select.format(s=SCHEMA)}")
                key = "item" if table == "vectors" else "id"
                conn.execute(f"ALTER TABLE {FLOOR_SCHEMA}.{table} ADD PRIMARY KEY ({key})")
            conn.execute("VACUUM ANALYZE")  # visibility maps and statistics, as a settled table has them
            built_s = time.perf_counter() - started
            floor_tables = sizes(conn, FLOOR_SCHEMA)
        finally:
            conn.execute(f"DROP SCHEMA IF EXISTS {FLOOR_SCHEMA} CASCADE")
    ours = sum(ours_tables.values())
    floor = sum(floor_tables.values())
    return {
        "backend": "postgres", "counts": counts,
        "ours_mib": round(ours / MIB, 1), "floor_mib": round(floor / MIB, 1), "ratio": round(ours / floor, 2),
        "ours_by_part_mib": {k: round(v / MIB, 1) for k, v in sorted(ours_parts.items(), key=lambda kv: -kv[1])
                             if v >= MIB},
        "floor_by_table_mib": {k: round(v / MIB, 1) for k, v in sorted(floor_tables.items(), key=lambda kv: -kv[1])},
        "floor_built_s": round(built_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dir", type=Path, default=None, help="sqlite: the directory bench_memory_meaning grew in")
    parser.add_argument("--pg-url", default=None, help="postgres: the database bench_memory_meaning grew")
    args = parser.parse_args()
    print(f"load average before: {loadavg()}", flush=True)
    if args.backend == "sqlite":
        if args.dir is None:
            parser.error("--dir is required for sqlite")
        result = sqlite_sizes(args.dir / "memory.sqlite3")
    else:
        if not args.pg_url:
            parser.error("--pg-url is required for postgres")
        result = pg_sizes(args.pg_url)
    print(json.dumps(result, indent=1))
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
