"""Memory search by meaning as memory grows (issue 26): insert, embed, search (hybrid, text, meaning), the SessionStart
memory context, the first pass's recall and the database's size, at 1k, 10k, 100k (and 1M) observations.

    .venv/bin/python -m bench.bench_memory_meaning [--sizes 1000,10000,100000,1000000] [--backend sqlite|postgres]
        [--pg-url postgresql://...]

One database grows from size to size (as a user's does), filled in bulk through the store's own vector index
(hooks/memory/vectors.py; PostgreSQL: PgVectorIndex in the scope's blocks, bench/_pg_fill.py) with embeddings from
the real model; every figure after that goes through the store's public methods. `--backend postgres` starts a
throwaway server as the tests do (tests/pg_server.py, PostgreSQL's default durability) unless --pg-url names an
empty database; its rows also report where a search by meaning spends its time (`pg_meaning_p50_ms`).
The corpus is generated: observations of the kind the memory-observe hook stores (a tool, its input, what came
back), ~150-300 characters, from 40 x 40 x 40 x 40 combinations; the queries are paraphrases in other words plus
a few word-for-word ones. `recall@10` compares the index's answer with an exact scan of every
vector of the project (PostgreSQL: of the same scope; the floor a perfect index would reach). `db_mib`: the SQLite
file and its WAL, or every table of PostgreSQL's `orion_memory` schema with indexes and TOAST.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

SUBJECTS = ["the login endpoint", "the nightly export", "the payment worker", "the search indexer", "the mobile app",
            "the CI pipeline", "the billing job", "the image resizer", "the websocket gateway", "the admin panel",
            "the cache layer", "the report query", "the email sender", "the backup script", "the upload handler",
            "the rate limiter", "the feature flags", "the session store", "the PDF renderer", "the scheduler",
            "the auth middleware", "the data importer", "the API client", "the migration runner", "the log shipper",
            "the checkout page", "the recommendation model", "the DNS resolver", "the load balancer", "the CDN config",
            "the GraphQL resolver", "the message queue consumer", "the Terraform module", "the Helm chart",
            "the cron container", "the webhook receiver", "the settings page", "the analytics ETL",
            "the password reset flow", "the thumbnail service"]
PROBLEMS = ["timed out after 30 seconds", "leaked file descriptors under load", "returned stale data after updates",
            "crashed with a null pointer", "ran out of memory", "double-charged a customer", "dropped messages on restart",
            "deadlocked with the migration", "was slow on cold start", "rejected valid tokens", "garbled unicode text",
            "exhausted the connection pool", "retried forever", "logged secrets in plain text", "skipped rows",
            "misread the timezone", "filled the disk with temp files", "blocked the event loop", "lost the last batch",
            "broke on leap years", "failed TLS verification", "sent duplicate emails", "ignored the cache headers",
            "raced the token refresh", "overflowed a 32-bit counter", "hung on a full pipe", "rounded money wrong",
            "used the wrong locale", "exceeded the rate limit", "corrupted the index", "mixed up two tenants",
            "had an N+1 query", "froze the UI thread", "dropped the websocket", "forgot to close the file",
            "parsed dates as local time", "truncated long names", "looped on redirects", "returned 500 on empty input",
            "read the config too late"]
FIXES = ["added an index on", "raised the limit of", "switched to streaming for", "added a retry with backoff to",
         "moved the work off the loop in", "pinned the version of", "invalidated the cache of", "wrapped in a transaction",
         "added a unique constraint to", "replaced the regex in", "bounded the queue of", "made idempotent",
         "added a timeout to", "split the batch of", "rewrote the query of", "closed the handle in",
         "converted to UTC in", "switched to Decimal in", "added a circuit breaker to", "lowered the concurrency of",
         "vendored the fix for", "added a health check to", "escaped the input of", "added a lock around",
         "precomputed the totals of", "debounced the calls to", "sharded the table of", "compressed the payload of",
         "validated the schema of", "rotated the keys of", "cached the lookup in", "deduplicated the events of",
         "paginated the results of", "rate-limited the clients of", "batched the writes of", "trimmed the logs of",
         "reordered the middleware of", "upgraded the driver of", "tuned the GC of", "mocked the clock in"]
TOOLS = [("Bash", "command", ["pytest -x", "npm test", "make check", "kubectl logs", "psql -c", "git bisect run",
                              "curl -v", "docker compose up", "terraform plan", "cargo test"]),
         ("Edit", "file_path", ["src/app.py", "api/views.py", "web/src/App.tsx", "worker/main.go", "db/schema.sql",
                                "deploy/nginx.conf", "lib/cache.rb", "jobs/cron.py", "mobile/Main.kt", "infra/main.tf"])]
QUERIES = [
    "users got logged out because tokens were refused", "the overnight dump never finished",
    "customers were billed twice", "the page with the grid became unresponsive", "files kept piling up on the server",
    "certificate check failed when calling the API", "database handles ran out when traffic spiked",
    "the job ran at the wrong hour after the clock change", "numbers on invoices were off by a cent",
    "notifications went out more than once", "messages vanished when the service restarted",
    "memory usage kept growing until the process died", "the importer silently skipped records",
    "the query was slow because of many small lookups", "secrets appeared in the logs",
    "payment worker double-charged", "added an index on the report query", "webhook receiver timed out",
    "switched to Decimal in billing", "the scheduler misread the timezone",
]
COMMON = "ticket"  # a word in every observation ("the" is a stop word on PostgreSQL): the worst case of ranking


def observation(rng: random.Random, i: int) -> tuple[str, str]:
    tool, field, args = rng.choice(TOOLS)
    subject, problem, fix, target = (rng.choice(SUBJECTS), rng.choice(PROBLEMS), rng.choice(FIXES),
                                     rng.choice(SUBJECTS))
    return tool, (f'{tool} {{"{field}": "{rng.choice(args)}"}}\n-> {subject} {problem}; {fix} {target} '
                  f'(ticket {i % 9973})')


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def grow_sqlite(store: Any, embedder: Any, rng: random.Random, start: int, end: int, project: str) -> float:
    """Add observations start..end in bulk transactions through the store's vector index; seconds taken."""
    started = time.perf_counter()
    batch = 4096
    for lo in range(start, end, batch):
        hi = min(end, lo + batch)
        rows = [observation(rng, i) for i in range(lo, hi)]
        vectors = embedder.embed([text for _, text in rows])
        codes = embedder.codes(vectors)
        now = time.time()

        def tx(conn: Any) -> None:
            sid = f"bench-{lo // 50_000}"
            conn.execute("INSERT OR IGNORE INTO sessions (session_id, project, started_at, updated_at)"
                         " VALUES (?, ?, ?, ?)", (sid, project, now, now))
            items = []
            for tool, text in rows:
                ref = conn.execute("INSERT INTO observations (session_id, project, prompt_number, tool_name,"
                                   " created_at) VALUES (?, ?, 1, ?, ?)", (sid, project, tool, now)).lastrowid
                conn.execute("INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at,"
                             " scope) VALUES (?, ?, 'observation', ?, ?, ?, ?, 's' || lower(hex(?)) || '0')",
                             (ref, text, ref, sid, project, now, project))
                items.append(ref)
            store._vectors.put(conn, project, items, vectors, codes)

        store._write(tx)
    return time.perf_counter() - started


def exact_top(store: Any, query_vec: Any, project: str, k: int) -> list[int]:
    """Every vector of the project, read in chunks: the exact answer (bench only)."""
    import heapq

    import numpy as np

    from hooks.memory.vectors import unpack_vectors

    best: list[tuple[float, int]] = []
    cur = store._conn.execute("SELECT v.item, v.vector FROM memory_vectors v JOIN memory_vector_blocks b"
                              " ON b.id = v.block WHERE b.project = ?", (project,))
    while rows := cur.fetchmany(20_000):
        sims = unpack_vectors([r[1] for r in rows]) @ np.asarray(query_vec, dtype=np.float32)
        best = heapq.nlargest(k, best + list(zip(sims.tolist(), (int(r[0]) for r in rows))))
    return [item for _, item in best]


class SqliteBench:
    """The SQLite store (hooks/memory/store.py) in `root`, and what the bench needs of it beyond the public methods."""

    name = "sqlite"

    def __init__(self, root: Path) -> None:
        from hooks.memory.store import MemoryStore

        self.path = root / "memory.sqlite3"
        self.store = MemoryStore(self.path)

    def describe(self) -> str:
        return f"SQLite at {self.path}"

    def count(self) -> int:
        return int(self.store._read("SELECT count(*) AS n FROM observations WHERE project = 'bench-project'")[0]["n"])

    def close(self) -> None:
        self.store.close()

    def grow(self, embedder: Any, rng: random.Random, start: int, end: int, project: str,
             observation: Any = None) -> float:
        return grow_sqlite(self.store, embedder, rng, start, end, project)

    def recall(self, embedder: Any, project: str, queries: list[str], k: int = 10) -> list[float]:
        store = self.store
        recalls = []
        with store._lock:
            for q in queries:
                vec = embedder.embed([q])
                got = [item for item, _ in store._vectors.nearest(store._conn, vec[0], embedder.codes(vec)[0],
                                                                   project=project, k=k)]
                want = exact_top(store, vec[0], project, k)
                recalls.append(len(set(got) & set(want)) / k)
        return recalls

    def size_mib(self) -> float:
        self.store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        path = self.path
        return round(sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p)) / 2**20, 1)

    def extra(self, embedder: Any, project: str, queries: list[str]) -> dict[str, Any]:
        return {}


def measure(bench: Any, embedder: Any, rng: random.Random, n: int, project: str) -> dict[str, Any]:
    store = bench.store
    out: dict[str, Any] = {"observations": n}
    for mode in ("hybrid", "text", "meaning"):
        for q in QUERIES[:3]:
            store.search(q, project=project, limit=10, mode=mode)  # warm the page cache as a used memory is
        times = []
        for q in QUERIES:
            started = time.perf_counter()
            store.search(q, project=project, limit=10, mode=mode)
            times.append((time.perf_counter() - started) * 1000)
        out[f"search_{mode}_p50_ms"] = round(statistics.median(times), 2)
        out[f"search_{mode}_p95_ms"] = round(pct(times, 0.95), 2)
    times = []
    for _ in range(5):
        started = time.perf_counter()
        store.search(COMMON, project=project, limit=10, mode="text")
        times.append((time.perf_counter() - started) * 1000)
    out["search_common_word_text_p50_ms"] = round(statistics.median(times), 2)
    out["recall_at_10"] = round(statistics.mean(bench.recall(embedder, project, QUERIES[:10], 10)), 3)
    times = []
    for _ in range(20):
        started = time.perf_counter()
        store.recent_context(project, exclude_session="now", summaries=3, observations=8)
        times.append((time.perf_counter() - started) * 1000)
    out["session_start_context_p95_ms"] = round(pct(times, 0.95), 3)
    times = []
    for i in range(100):
        tool, text = observation(rng, n + i)
        started = time.perf_counter()
        store.add_observation("bench-live", project, 1, tool, text)
        times.append((time.perf_counter() - started) * 1000)
    out["insert_p50_ms"] = round(statistics.median(times), 3)
    out["insert_p95_ms"] = round(pct(times, 0.95), 3)
    out["db_mib"] = bench.size_mib()
    out.update(bench.extra(embedder, project, QUERIES))
    out["max_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def embed_cost(embedder: Any, rng: random.Random) -> dict[str, float]:
    texts = [observation(rng, i)[1] for i in range(2000)]
    embedder.embed(texts[:10])
    one = []
    for text in texts[:500]:
        started = time.perf_counter()
        embedder.embed([text])
        one.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    embedder.embed(texts)
    batched = (time.perf_counter() - started) * 1000 / len(texts)
    long_text = " ".join(texts[:20])[:3000]  # the longest an observation is stored (input + response)
    longs = []
    for _ in range(100):
        started = time.perf_counter()
        embedder.embed([long_text])
        longs.append((time.perf_counter() - started) * 1000)
    return {"embed_one_p50_ms": round(statistics.median(one), 3), "embed_one_p95_ms": round(pct(one, 0.95), 3),
            "embed_batched_ms_each": round(batched, 3), "embed_3000_chars_p50_ms": round(statistics.median(longs), 3),
            "mean_chars": round(statistics.mean(len(t) for t in texts), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default=None,
                        help="postgres: an empty database to grow in, or one an earlier run grew (measured again; default: a throwaway server, tests/pg_server.py)")
    parser.add_argument("--dir", type=Path, default=None, help="where the database grows (default: a temp dir)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from hooks.memory.embedder import get_embedder

    sizes = [int(s) for s in args.sizes.split(",")]
    backend = f" --backend {args.backend}" if args.backend != "sqlite" else ""
    print(f"command: .venv/bin/python -m bench.bench_memory_meaning --sizes {args.sizes}{backend}")
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    rng = random.Random(26)
    started = time.perf_counter()
    embedder = get_embedder()
    print(f"model load: {(time.perf_counter() - started) * 1000:.0f} ms ({embedder.model_id})")
    print("embedding:", json.dumps(embed_cost(embedder, rng)))
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_meaning_"))
    if args.backend == "postgres":
        from bench._pg_fill import PgBench

        bench: Any = PgBench(root, args.pg_url)
        print(f"database: {bench.describe()}")
    else:
        bench = SqliteBench(root)
    store = bench.store
    try:
        store.add_observation("other", "another-project", 1, "Bash", "a row of another project")
        # A --dir grown by an earlier run is measured again, not grown again (a code change re-measured at 1M).
        have, rows = len(store.search("ticket", project="bench-project", limit=1, mode="text")) and bench.count(), []
        for n in sizes:
            if n <= have:
                row = {"fill_s": 0.0, **measure(bench, embedder, rng, have, "bench-project")}
                have += 100
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            took = bench.grow(embedder, rng, have, n, "bench-project", observation)
            have = n
            row = {"fill_s": round(took, 1), **measure(bench, embedder, rng, n, "bench-project")}
            have += 100  # measure() inserted these through the store
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    finally:
        bench.close()
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
