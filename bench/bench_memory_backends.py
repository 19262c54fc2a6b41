"""Memory backends side by side: memory-observe write latency and `memory/search` latency, SQLite vs PostgreSQL, at 10k and 1M observations.

Run: .venv/bin/python bench/bench_memory_backends.py [--sizes 10000,1000000] [--writes 300] [--searches 40]
(from the repository root; a throwaway PostgreSQL server in a temp dir with its default durability: fsync and
synchronous_commit on; SQLite as the store opens it: WAL, synchronous=NORMAL.)

Both stores are filled the same way: N observations of 30 words drawn from a 5000-word vocabulary with a Zipf-like
distribution (1 % of them in sessions of 100), loaded in bulk (SQLite: executemany in one transaction, FTS5 rows
alongside; PostgreSQL: COPY, then the GIN indexes built). Then, through the stores' public methods as the hooks
call them: `add_observation` (one transaction each, the memory-observe write) and `search` (what `memory/search`
runs) for a common word (in ~1/3 of the rows), a medium one (~1 %), a rare one (~0.02 %) and two words together.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hooks.memory.config import load_config  # noqa: E402
from hooks.memory.pg_store import PostgresMemoryStore  # noqa: E402
from hooks.memory.store import MemoryStore, scope_token  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

VOCAB = [f"w{k}x" for k in range(5000)]
WEIGHTS = [1 / (k + 1) for k in range(5000)]
QUERIES = {"common": VOCAB[0], "medium": VOCAB[60], "rare": VOCAB[3500], "two words": f"{VOCAB[5]} {VOCAB[200]}"}
PROJECT = "proj_bench"


def texts(n: int, seed: int = 7):
    rng = random.Random(seed)
    for i in range(n):
        yield f"Bash grep {i}\n-> " + " ".join(rng.choices(VOCAB, WEIGHTS, k=30))


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))] * 1e3


def summary(samples: list[float]) -> str:
    return f"p50 {pct(samples, 0.5):8.3f} ms  p95 {pct(samples, 0.95):8.3f} ms"


def fill_sqlite(store: MemoryStore, n: int) -> None:
    conn = store._conn
    now = time.time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO sessions (session_id, project, started_at, updated_at) VALUES (?, ?, ?, ?)",
                     [(f"s{k}", PROJECT, now, now) for k in range(n // 100 + 1)])
    batch: list[tuple] = []

    def flush() -> None:
        conn.executemany("INSERT INTO observations (id, session_id, project, prompt_number, tool_name, created_at)"
                         " VALUES (?, ?, ?, 1, 'Bash', ?)", [(b[0], b[1], b[2], b[4]) for b in batch])
        conn.executemany("INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
                         " VALUES (?, ?, 'observation', ?, ?, ?, ?, ?)",
                         [(b[0], b[3], b[0], b[1], b[2], b[4], scope_token(b[2])) for b in batch])
        batch.clear()

    for i, text in enumerate(texts(n), start=1):
        batch.append((i, f"s{i // 100}", PROJECT, text, now - n + i))
        if len(batch) == 10_000:
            flush()
    flush()
    conn.execute("COMMIT")


def fill_postgres(store: PostgresMemoryStore, n: int) -> None:
    now = time.time()
    scope = (store.owner, store.team, "f")
    with store.pool.connection() as conn:
        with conn.transaction():
            with conn.cursor().copy("COPY sessions (owner, team, shared, session_id, project, started_at, updated_at)"
                                    " FROM STDIN") as copy:
                for k in range(n // 100 + 1):
                    copy.write_row((*scope, f"s{k}", PROJECT, now, now))
        conn.execute("DROP INDEX observations_fts")
        with conn.transaction():
            with conn.cursor().copy("COPY observations (obs_key, owner, team, shared, session_id, project,"
                                    " prompt_number, tool_name, text, created_at) FROM STDIN") as copy:
                for i, text in enumerate(texts(n), start=1):
                    key = hashlib.md5(f"bench{i}".encode()).hexdigest()  # as the store keeps a key (pg_store.OBS_KEY)
                    copy.write_row((key, *scope, f"s{i // 100}", PROJECT, 1, "Bash", text, now - n + i))
        conn.execute("CREATE INDEX observations_fts ON observations USING GIN (tsv)")
        conn.execute("VACUUM ANALYZE observations")


def measure(store, writes: int, searches: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"observe": []}
    rng = random.Random(1)
    for i in range(writes):
        text = "Read notes.md\n-> " + " ".join(rng.choices(VOCAB, WEIGHTS, k=30))
        start = time.perf_counter()
        store.add_observation("live", PROJECT, 1, "Read", text)
        out["observe"].append(time.perf_counter() - start)
    for name, query in QUERIES.items():
        store.search(query, limit=20)  # warm the cache once
        samples = []
        for _ in range(searches):
            start = time.perf_counter()
            hits = store.search(query, limit=20)
            samples.append(time.perf_counter() - start)
        assert hits, (name, query)
        out[f"search {name}"] = samples
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,1000000")
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--searches", type=int, default=40)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# {os.cpu_count()} CPUs, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    server = PgServer(durable=True)
    results: dict[tuple[int, str], dict[str, list[float]]] = {}
    load_s: dict[tuple[int, str], float] = {}
    try:
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="orion-bench-") as tmp:
                sq = MemoryStore(Path(tmp) / "sqlite" / "memory.sqlite3")
                start = time.perf_counter()
                fill_sqlite(sq, n)
                load_s[(n, "sqlite")] = time.perf_counter() - start
                results[(n, "sqlite")] = measure(sq, args.writes, args.searches)
                size_sq = os.path.getsize(sq.path)
                sq.close()

                url = server.create_database("bench")
                pg = PostgresMemoryStore(load_config({"ORION_MEMORY_URL": url}), Path(tmp) / "pg")
                start = time.perf_counter()
                fill_postgres(pg, n)
                load_s[(n, "postgres")] = time.perf_counter() - start
                results[(n, "postgres")] = measure(pg, args.writes, args.searches)
                size_pg = pg._read("SELECT pg_database_size(current_database()) AS b")[0]["b"]
                pg.close()
            print(f"\n## {n:,} observations (load: SQLite {load_s[(n, 'sqlite')]:.1f} s, {size_sq / 2**20:.0f} MiB; "
                  f"PostgreSQL {load_s[(n, 'postgres')]:.1f} s, {size_pg / 2**20:.0f} MiB)", flush=True)
            for metric in results[(n, "sqlite")]:
                print(f"{metric:<18} SQLite {summary(results[(n, 'sqlite')][metric])}   "
                      f"PostgreSQL {summary(results[(n, 'postgres')][metric])}", flush=True)
    finally:
        server.destroy()
    print(f"\n# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
