"""Memory search by kind of query on a database bench/bench_memory_meaning.py grew (issue 27): rare, medium and common
words, each in hybrid, text and meaning mode, p50 / p95 per kind and mode, with the load average before and after.

    .venv/bin/python -m bench.bench_memory_search_kinds --backend postgres --pg-url postgresql://... [--repeats 4]
    .venv/bin/python -m bench.bench_memory_search_kinds --dir <the SQLite bench database's directory>
        [--kinds rare,medium,common] [--modes hybrid,text,meaning] [--per-query]

The kinds, on the bench's generated corpus at 1M observations (counts of matching observations):
- rare: a ticket number (each in ~100 rows) alone or with a common word (5-100 matches);
- medium: word-for-word queries of three or four corpus words (each word in 2.5-5% of the rows, together 600-2,500:
  the searches PostgreSQL ranked slowest at 1M before round 5);
- common: one word in every row (`ticket`), words in 5-10% of the rows, and two common words never seen together
  (`bash path`: ~50% each, no match at all, the worst case for a plan that guesses from each word's frequency).
Every query runs `--repeats` times per mode after three warm-up searches (a memory in use has its pages warm).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.bench_memory_meaning import pct

KINDS = {
    "rare": ["4711", "ticket 17", "9001 timed out", "kubectl 523", "webhook 77"],
    "medium": ["payment worker double-charged", "webhook receiver timed out", "the scheduler misread the timezone",
               "added an index on the report query", "login timed out"],
    "common": ["ticket", "login", "timed out", "pytest", "bash path"],
}
MODES = ("hybrid", "text", "meaning")
PROJECT = "bench-project"


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def measure(store: Any, repeats: int, kinds: list[str], modes: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        for q in KINDS["medium"][:3]:
            store.search(q, project=PROJECT, limit=10, mode=mode)
        for kind in kinds:
            queries = KINDS[kind]
            times = []
            for _ in range(repeats):
                for q in queries:
                    started = time.perf_counter()
                    store.search(q, project=PROJECT, limit=10, mode=mode)
                    times.append((time.perf_counter() - started) * 1000)
            out.setdefault(kind, {})[mode] = {"p50_ms": round(statistics.median(times), 1),
                                              "p95_ms": round(pct(times, 0.95), 1),
                                              "max_ms": round(max(times), 1), "n": len(times)}
    return out


def per_query(store: Any, repeats: int, kinds: list[str]) -> None:
    """`--per-query`: each query's text search, min-max of `repeats` warm runs, and on SQLite the plan each side of
    the full-text table took (hooks/memory/fts_window.py)."""
    plans: list[str] = []
    try:
        from hooks.memory import fts_window

        real = fts_window.plan

        def spy(*args: Any, **kwargs: Any) -> Any:
            planned = real(*args, **kwargs)
            plans.append(f"{args[3].bound}: limit {planned.limit}, depth {planned.depth or 'all'}")
            return planned
    except ImportError:  # pragma: no cover
        spy = None
    for kind in kinds:
        for q in KINDS[kind]:
            store.search(q, project=PROJECT, limit=10, mode="text")
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                store.search(q, project=PROJECT, limit=10, mode="text")
                times.append((time.perf_counter() - started) * 1000)
            plans.clear()
            if spy is not None and getattr(store, "backend", "") == "sqlite":
                fts_window.plan = spy
                try:
                    store.search(q, project=PROJECT, limit=10, mode="text")
                finally:
                    fts_window.plan = real
            shown = f"  [{'; '.join(plans)}]" if plans else ""
            print(f"  {kind} {q!r}: text {min(times):.1f}-{max(times):.1f} ms{shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default=None, help="postgres: the database bench_memory_meaning grew")
    parser.add_argument("--dir", type=Path, default=None, help="sqlite: the directory bench_memory_meaning grew in")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--kinds", default=",".join(KINDS), help="which kinds of query (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help="which modes (default: all)")
    parser.add_argument("--per-query", action="store_true", help="also each query's text time and plan")
    args = parser.parse_args()
    print(f"load average before: {loadavg()}", flush=True)
    if args.backend == "postgres":
        from bench._pg_fill import PgBench

        if not args.pg_url:
            raise SystemExit("--pg-url names the database bench_memory_meaning grew")
        bench: Any = PgBench(Path(args.dir or "/tmp"), args.pg_url)
    else:
        from bench.bench_memory_meaning import SqliteBench

        if args.dir is None:
            raise SystemExit("--dir names the directory bench_memory_meaning grew in")
        bench = SqliteBench(args.dir)
    try:
        print(f"observations: {bench.count()}", flush=True)
        counts = {q: len(bench.store.search(q, project=PROJECT, limit=100, mode="text"))
                  for kind in args.kinds.split(",") for q in KINDS[kind]}
        print("text hits (limit 100):", json.dumps(counts), flush=True)
        result = measure(bench.store, args.repeats, args.kinds.split(","), args.modes.split(","))
        if args.per_query:
            per_query(bench.store, max(args.repeats, 6), args.kinds.split(","))
    finally:
        bench.close()
    for kind, modes in result.items():
        print(kind, json.dumps(modes))
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
