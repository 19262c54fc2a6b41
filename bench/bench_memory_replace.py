"""A prompt's and a summary's write as the memory grows (issue 27): the full-text row replaced by its rowid (schema
2, hooks/memory/store.py) against the same replace filtered on UNINDEXED columns (schema 1), side by side on one
database of N observations.

    .venv/bin/python -m bench.bench_memory_replace [--observations 100000] [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hooks.memory.store import MemoryStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    print(f"command: .venv/bin/python -m bench.bench_memory_replace --observations {args.observations} --runs {args.runs}")
    print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        store = MemoryStore(Path(tmp) / "m.sqlite3")
        rows = [(f"s{i // 50}", "/p", i % 50, "Bash", f"observation {i} about caching, redis and eviction {i % 997}", 1.0)
                for i in range(args.observations)]

        def fill(conn):  # type: ignore[no-untyped-def]
            for sid in {r[0] for r in rows}:
                conn.execute("INSERT OR IGNORE INTO sessions (session_id, project, started_at, updated_at)"
                             " VALUES (?, '/p', 1, 1)", (sid,))
            conn.executemany("INSERT INTO observations (id, session_id, project, prompt_number, tool_name, created_at)"
                             " VALUES (?, ?, ?, ?, ?, ?)", [(i, *r[:4], r[5]) for i, r in enumerate(rows, 1)])
            conn.executemany("INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
                             " VALUES (?, ?, 'observation', ?, ?, ?, ?, 's' || lower(hex(?)) || '0')",
                             [(i, r[4], i, r[0], r[1], r[5], r[1]) for i, r in enumerate(rows, 1)])

        store._write(fill)
        new, old = [], []
        for run in range(args.runs):
            started = time.perf_counter()
            store.add_prompt("bench", "/p", 1, f"the prompt, take {run}")
            new.append((time.perf_counter() - started) * 1000)

            def schema_1(conn):  # type: ignore[no-untyped-def]
                conn.execute("DELETE FROM memory_fts WHERE kind = 'prompt' AND session_id = ? AND ref_id = ?",
                             ("bench-old", 1))
                conn.execute("INSERT INTO memory_fts (text, kind, ref_id, session_id, project, created_at)"
                             " VALUES (?, 'prompt', 1, 'bench-old', '/p', 1)", (f"the prompt, take {run}",))

            started = time.perf_counter()
            store._write(schema_1)
            old.append((time.perf_counter() - started) * 1000)
        store.close()
    for label, times in (("replace by rowid (schema 2)", new), ("replace by UNINDEXED filter (schema 1)", old)):
        ordered = sorted(times)
        print(f"{label:40s} p50 {statistics.median(ordered):8.2f} ms  p90 {ordered[int(len(ordered) * 0.9) - 1]:8.2f} ms"
              f"  at {args.observations} observations")


if __name__ == "__main__":
    main()
