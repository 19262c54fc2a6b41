"""What a retention pass costs (issue 27): a memory of N observations spread over 100 days, pruned by age to its newest
half, with another writer writing throughout.

    .venv/bin/python -m bench.bench_memory_prune [--observations 100000] [--backend sqlite|postgres] [--pg-url ...]

The memory is grown in bulk exactly as bench/bench_memory_meaning.py grows it (the same corpus and fill, vectors
from the real model), then its rows' times are spread evenly over the last 100 days (bench only: a direct UPDATE).
Figures, all through the store's own methods: the preview (`prune --dry-run`: counts and bytes; `status`: counts
only), the pass itself (`prune`, batches of PRUNE_BATCH rows: each transaction's duration is what another writer
of the file may wait at most), the latency of another writer's `add_observation` while the pass runs, a search by
meaning on a store whose cache of codes was loaded before the pass (its first search after patches the cache:
`vectors_dropped`, the stamped blocks) and on a store opened after, and the size on disk before and after.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.bench_memory_meaning import QUERIES, SqliteBench, observation, pct

DAY = 86_400.0
PROJECT = "bench-project"


def spread(bench: Any, n: int, span_days: float = 100.0) -> None:
    """Every observation's created_at moved to its place in the last `span_days`, oldest first (bench only)."""
    now = time.time()
    step = span_days * DAY / max(1, n)
    if bench.name == "sqlite":
        conn = bench.store._conn
        top = conn.execute("SELECT max(id) FROM observations").fetchone()[0]
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE observations SET created_at = ? - (? - id) * ?", (now, top, step))
        conn.execute("UPDATE memory_fts SET created_at = ? - (? - rowid) * ? WHERE rowid > 0", (now, top, step))
        conn.execute("UPDATE sessions SET started_at = ? - ? * ?, updated_at = ? - ? * ?",
                     (now, n, step, now, n, step))
        conn.execute("COMMIT")
    else:
        with bench.store.pool.connection() as conn, conn.transaction():
            top = conn.execute("SELECT max(id) AS m FROM observations").fetchone()["m"]
            conn.execute("UPDATE observations SET created_at = %s - (%s - id) * %s", (now, top, step))
            conn.execute("UPDATE sessions SET started_at = %s - %s * %s, updated_at = %s - %s * %s",
                         (now, n, step, now, n, step))
            conn.execute("ANALYZE observations")


def other_store(bench: Any) -> Any:
    """Another store on the same memory, as another sidecar of the same user opens it (its own connection and
    cache of codes; on PostgreSQL the same installation, so it reads the same rows)."""
    if bench.name == "sqlite":
        from hooks.memory.store import MemoryStore

        return MemoryStore(bench.path)
    return type(bench.store)(bench.store.config, bench.store.data_dir)


def search_times(store: Any, mode: str) -> list[float]:
    times = []
    for q in QUERIES:
        started = time.perf_counter()
        store.search(q, project=PROJECT, limit=10, mode=mode)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default=None)
    args = parser.parse_args()
    from hooks.memory.config import RetentionRule
    from hooks.memory.embedder import get_embedder

    backend = f" --backend {args.backend}" if args.backend != "sqlite" else ""
    print(f"command: .venv/bin/python -m bench.bench_memory_prune --observations {args.observations}{backend}")
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    embedder = get_embedder()
    root = Path(tempfile.mkdtemp(prefix="bench_prune_"))
    if args.backend == "postgres":
        from bench._pg_fill import PgBench

        bench: Any = PgBench(root, args.pg_url)
    else:
        bench = SqliteBench(root)
    store = bench.store
    out: dict[str, Any] = {"backend": bench.name, "observations": args.observations}
    try:
        rng = random.Random(27)
        # Through the store first: it records which model the file's vectors are of (a bulk fill does not).
        store.add_observation("other", "another-project", 1, "Bash", "a row of another project")
        out["fill_s"] = round(bench.grow(embedder, rng, 0, args.observations, PROJECT, observation), 1)
        spread(bench, args.observations)
        out["db_mib_before"] = bench.size_mib()
        rule = RetentionRule(max_age_days=50)

        started = time.perf_counter()
        preview = store.preview_prune(PROJECT, rule)
        out["dry_run_s"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        store.preview_prune(PROJECT, rule, with_bytes=False)
        out["status_counts_s"] = round(time.perf_counter() - started, 3)
        out["would_remove"] = preview.as_dict()

        store.search(QUERIES[0], project=PROJECT, limit=10, mode="meaning")  # this store's cache of codes loaded
        out["search_meaning_before_p50_ms"] = round(statistics.median(search_times(store, "meaning")), 2)

        writer = other_store(bench)
        writes: list[float] = []
        stop = threading.Event()

        def write() -> None:
            i = 0
            while not stop.is_set():
                tool, text = observation(rng, 10_000_000 + i)
                started = time.perf_counter()
                writer.add_observation("bench-writer", "another-project", 1, tool, text)
                writes.append((time.perf_counter() - started) * 1000)
                i += 1

        batches: list[float] = []
        real_write = store._write

        def timed(fn: Any) -> Any:
            started = time.perf_counter()
            try:
                return real_write(fn)
            finally:
                batches.append((time.perf_counter() - started) * 1000)

        store._write = timed
        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        started = time.perf_counter()
        removed = store.prune(PROJECT, rule)
        out["prune_s"] = round(time.perf_counter() - started, 2)
        stop.set()
        thread.join()
        del store._write
        out["removed"] = removed.as_dict()
        out["transactions"] = len(batches)
        out["transaction_p50_ms"] = round(statistics.median(batches), 1)
        out["transaction_p95_ms"] = round(pct(batches, 0.95), 1)
        out["transaction_max_ms"] = round(max(batches), 1)
        out["other_writes"] = len(writes)
        out["other_write_p50_ms"] = round(statistics.median(writes), 2) if writes else None
        out["other_write_p95_ms"] = round(pct(writes, 0.95), 2) if writes else None
        out["other_write_max_ms"] = round(max(writes), 1) if writes else None
        writer.close()

        started = time.perf_counter()
        store.search(QUERIES[1], project=PROJECT, limit=10, mode="meaning")  # patches the cache
        out["first_search_after_ms"] = round((time.perf_counter() - started) * 1000, 1)
        out["search_meaning_after_p50_ms"] = round(statistics.median(search_times(store, "meaning")), 2)
        fresh = other_store(bench)
        fresh.search(QUERIES[0], project=PROJECT, limit=10, mode="meaning")
        out["search_meaning_fresh_store_p50_ms"] = round(statistics.median(search_times(fresh, "meaning")), 2)
        out["same_answers_as_a_fresh_store"] = all(
            store.search(q, project=PROJECT, limit=10, mode="meaning") == fresh.search(q, project=PROJECT, limit=10,
                                                                                        mode="meaning")
            for q in QUERIES)
        fresh.close()
        out["db_mib_after"] = bench.size_mib()
        print(json.dumps(out), flush=True)
        print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    finally:
        bench.close()


if __name__ == "__main__":
    main()
