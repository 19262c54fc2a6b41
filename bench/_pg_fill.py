"""The PostgreSQL side of bench/bench_memory_meaning.py (`--backend postgres`): a throwaway server as the tests start
one (tests/pg_server.py, with PostgreSQL's default durability as a benchmark keeps it) or a given empty database,
the generated corpus grown in bulk exactly as PostgresMemoryStore writes it, and the figures that read the database
directly (recall's exact scan, the size, where a search by meaning spends its time).

Rows: the store's own session insert, then COPY of the observations with ids taken from their table's sequence and
every column the store writes (obs_key a fresh uuid4 hex, owner/team/shared of the store's scope, the cleaned tool
and text, created_at); their vectors go through the store's backfill write (`_put_batch`: the shared model lock,
then PgVectorIndex.put per scope), so the store's own search reads them. ANALYZE after each fill.
"""

from __future__ import annotations

import heapq
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BATCH = 4096  # observations per transaction (as the SQLite fill)


class PgBench:
    """A PostgresMemoryStore on a fresh database, and what the bench needs of it beyond the public methods."""

    name = "postgres"

    def __init__(self, root: Path, url: str | None = None) -> None:
        from hooks.memory.config import load_config
        from hooks.memory.pg_store import PostgresMemoryStore

        self.server: Any = None
        if url is None:
            from tests.pg_server import PgServer

            self.server = PgServer(durable=True)
            url = self.server.create_database("bench_meaning")
        env = {"ORION_MEMORY_URL": url, "ORION_MEMORY_TEAM": "bench", "ORION_MEMORY_USER": "bench"}
        # A settings path that does not exist: nothing of the user's own memory settings applies.
        self.store = PostgresMemoryStore(load_config(env, root / "no-settings.json"), root / "data")
        if not self.store.status()["up"]:
            raise SystemExit(f"the memory database does not answer: {self.store.describe()}")
        # Empty, or grown by an earlier run of this bench (re-measured, as --dir does on SQLite): nothing else.
        rows = self.store._read("SELECT count(*) AS n FROM (SELECT project FROM observations UNION ALL"
                                " SELECT project FROM user_prompts UNION ALL SELECT project FROM session_summaries)"
                                " AS p WHERE project NOT IN ('bench-project', 'another-project')")
        if rows[0]["n"]:
            raise SystemExit("--pg-url must name an empty database or one this bench grew (its memory would mix"
                             " with the bench's)")

    def count(self) -> int:
        return int(self.store._read("SELECT count(*) AS n FROM observations WHERE project = 'bench-project'")[0]["n"])

    def describe(self) -> str:
        where = "a throwaway server (tests/pg_server.py, durable)" if self.server else "the given database"
        version = self.store._read("SHOW server_version")[0]["server_version"]
        buffers = self.store._read("SHOW shared_buffers")[0]["shared_buffers"]
        return f"PostgreSQL {version} on {where}, shared_buffers {buffers}"

    def close(self) -> None:
        self.store.close()
        if self.server is not None:
            self.server.destroy()

    # ------------------------------------------------------------------ fill

    def grow(self, embedder: Any, rng: Any, start: int, end: int, project: str,
             observation: Callable[[Any, int], tuple[str, str]]) -> float:
        """Add observations start..end, BATCH to a transaction, as the store writes them; seconds taken."""
        from hooks.memory.pg_store import clean, item_of

        store = self.store
        started = time.perf_counter()
        for lo in range(start, end, BATCH):
            hi = min(end, lo + BATCH)
            rows = [observation(rng, i) for i in range(lo, hi)]
            tools = [clean(tool) for tool, _ in rows]
            texts = [clean(text) for _, text in rows]  # what the store keeps, and embeds
            vectors = embedder.embed(texts)
            codes = embedder.codes(vectors)
            now = time.time()
            op = store._row(f"bench-{lo // 50_000}", project, now)
            scope = (op["owner"], op["team"], op["shared"], op["project"])

            def tx(conn: Any, op: dict[str, Any] = op, tools: list[str] = tools, texts: list[str] = texts,
                   vectors: Any = vectors, codes: Any = codes, scope: tuple = scope) -> None:
                store._ensure_session(conn, op)
                ids = [int(r["id"]) for r in conn.execute(
                    "SELECT nextval(pg_get_serial_sequence('observations', 'id')) AS id"
                    " FROM generate_series(1, %s)", (len(texts),))]
                with conn.cursor().copy("COPY observations (id, obs_key, owner, team, shared, session_id, project,"
                                        " prompt_number, tool_name, text, created_at) FROM STDIN") as copy:
                    for row_id, tool, text in zip(ids, tools, texts):
                        copy.write_row((row_id, uuid.uuid4().hex, op["owner"], op["team"], op["shared"],
                                        op["session_id"], op["project"], 1, tool, text, op["now"]))
                indexed = store._put_batch(conn, embedder.model_id,
                                           [(item_of("observation", row_id), scope, text)
                                            for row_id, text in zip(ids, texts)], vectors, codes)
                assert indexed, "the database holds another model's vectors"

            store._write(tx)
        with store.pool.connection() as conn:
            conn.execute("ANALYZE")
        return time.perf_counter() - started

    # ------------------------------------------------------------------ figures

    def _visible(self, project: str) -> tuple[str, dict[str, Any]]:
        """The rule the store's search by meaning filters blocks with (its own rows and shared ones, one project)."""
        from hooks.memory.pg_store import _VISIBLE

        return _VISIBLE + " AND project = %(project)s", self.store._scope(project=project)

    def recall(self, embedder: Any, project: str, queries: list[str], k: int = 10) -> list[float]:
        """Per query, the share of the store index's top k (PgVectorIndex.nearest, as search runs it) that an exact
        scan of every vector of the same scope also ranks top k."""
        import numpy as np

        where, params = self._visible(project)
        store = self.store
        vecs = embedder.embed(queries)
        qcodes = embedder.codes(vecs)
        with store.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            got = [[item for item, _ in store._vectors.nearest(conn, vecs[n], qcodes[n], where=where, params=params,
                                                                k=k)] for n in range(len(queries))]
            want = exact_top(conn, np.asarray(vecs, dtype=np.float32), where, params, k)
        return [len(set(g) & set(w)) / k for g, w in zip(got, want)]

    def size_mib(self) -> float:
        """Every table of the store's schema with its indexes and TOAST (pg_total_relation_size)."""
        from hooks.memory.pg_store import SCHEMA

        rows = self.store._read("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS b FROM pg_class c"
                                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                                " WHERE n.nspname = %s AND c.relkind = 'r'", (SCHEMA,))
        return round(int(rows[0]["b"]) / 2**20, 1)

    def extra(self, embedder: Any, project: str, queries: list[str]) -> dict[str, Any]:
        """Where a search by meaning spends its time (p50 over the queries, ms): the query's embedding, the index
        (PgVectorIndex.nearest) and of that the read of the scope's code blocks alone and the read of the candidates'
        vectors; the blocks' and the vectors' sizes."""
        import numpy as np
        from psycopg.rows import tuple_row

        from hooks.memory.vectors import CANDIDATES, SCAN_BATCH

        where, params = self._visible(project)
        store = self.store
        parts: dict[str, list[float]] = {"embed": [], "nearest": [], "read_blocks": [], "read_candidates": []}
        with store.pool.connection() as conn:
            for q in queries:
                started = time.perf_counter()
                vec = embedder.embed([q])
                code = embedder.codes(vec)
                parts["embed"].append((time.perf_counter() - started) * 1000)
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    started = time.perf_counter()
                    nearest = store._vectors.nearest(conn, vec[0], code[0], where=where, params=params, k=10)
                    parts["nearest"].append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    items: list[bytes] = []
                    with conn.cursor(name="bench_blocks", row_factory=tuple_row) as cur:
                        cur.itersize = SCAN_BATCH
                        cur.execute(f"SELECT items, codes FROM memory_vector_blocks WHERE {where}", params)
                        while rows := cur.fetchmany(SCAN_BATCH):
                            items.extend(bytes(r[0]) for r in rows)
                            _ = [bytes(r[1]) for r in rows]
                    parts["read_blocks"].append((time.perf_counter() - started) * 1000)
                    # as many candidates as nearest reads (any of the scope's items: the same random lookups)
                    pool = np.frombuffer(b"".join(items), dtype="<i8")
                    pick = np.random.default_rng(len(parts["embed"])).choice(pool, min(CANDIDATES, pool.size),
                                                                             replace=False)
                    started = time.perf_counter()
                    conn.execute("SELECT item, vector FROM memory_vectors WHERE item = ANY(%s)",
                                 ([int(i) for i in pick],)).fetchall()
                    parts["read_candidates"].append((time.perf_counter() - started) * 1000)
                    assert nearest
            sizes = conn.execute("SELECT pg_total_relation_size('memory_vector_blocks') AS blocks,"
                                 " pg_total_relation_size('memory_vectors') AS vectors").fetchone()
        return {"pg_meaning_p50_ms": {name: round(statistics.median(v), 2) for name, v in parts.items()},
                "pg_blocks_mib": round(int(sizes["blocks"]) / 2**20, 1),
                "pg_vectors_mib": round(int(sizes["vectors"]) / 2**20, 1)}


def exact_top(conn: Any, queries: Any, where: str, params: dict[str, Any], k: int) -> list[list[int]]:
    """For each query vector, the k items of the scope's every vector with the highest cosine (bench only): one
    pass over memory_vectors joined to the blocks `where` selects, 20,000 at a time."""
    import numpy as np
    from psycopg.rows import tuple_row

    from hooks.memory.vectors import unpack_vectors

    best: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
    with conn.cursor(name="bench_exact", row_factory=tuple_row) as cur:
        cur.itersize = 20_000
        cur.execute("SELECT v.item, v.vector FROM memory_vectors v JOIN memory_vector_blocks b ON b.id = v.block"
                    f" WHERE {where}", params)
        while rows := cur.fetchmany(20_000):
            sims = unpack_vectors([bytes(r[1]) for r in rows]) @ np.asarray(queries, dtype=np.float32).T
            items = [int(r[0]) for r in rows]
            for n in range(len(queries)):
                best[n] = heapq.nlargest(k, best[n] + list(zip(sims[:, n].tolist(), items)))
    return [[item for _, item in b] for b in best]
