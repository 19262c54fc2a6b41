"""The vector index of the memory store: nearest items by meaning, in plain tables of the memory's own database.

Why not a database extension: SQLite's `sqlite-vec` needs `enable_load_extension`, which many Pythons are built
without (pyenv's default build, python.org's macOS builds, this project's reference machine), and PostgreSQL's
`pgvector` is a server package a team may not have. Plain tables work on every Python and every server, live in
the same database and the same transaction as the rows they index, and follow the store's privacy and ownership
rules because they are filtered by the same project key.

Layout. Every embedded item (an observation, a prompt or a summary, keyed by its full-text rowid) has
- its unit vector, float16 (512 bytes), in `memory_vectors`, with where its code sits; and
- a 32-byte binary code (one bit per dimension: its sign) packed with up to `BLOCK` others
  of the same project in one `memory_vector_blocks` row.

A search scans the project's blocks (32 bytes an item, read in large sequential rows, `SCAN_BATCH` blocks at a
time so memory stays bounded), keeps the `candidates` closest codes by Hamming distance, then ranks those by the
exact cosine of their float16 vectors. The first pass is a compressed exact scan, not a graph: recall does not
depend on how the index was built, nothing needs training or rebuilding as memory grows, and an insert is one
block update. bench/bench_memory_meaning.py measures its recall and cost from 1k to 1M items.

A tombstone (item 0) marks a slot whose item is gone; item 0 is never a full-text rowid (observations count from
1, prompts and summaries are negative).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from hooks.memory.embedder import CODE_BYTES, DIM

if TYPE_CHECKING:
    import numpy as np

BLOCK = 128  # codes per block row: 4 KiB of codes; an append rewrites at most that
SCAN_BATCH = 64  # block rows per step of a scan (~8k items, 256 KiB of codes)
CANDIDATES = 256  # codes kept from the first pass for the exact ranking
TOMBSTONE = 0


@dataclass(frozen=True)
class VectorSql:
    """The SQL of one backend; `{p}` is its placeholder."""

    placeholder: str

    def q(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)


def pack_vector(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f2").tobytes()


def unpack_vectors(blobs: Sequence[bytes]) -> np.ndarray:
    import numpy as np

    if not blobs:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.frombuffer(b"".join(bytes(b) for b in blobs), dtype="<f2").reshape(-1, DIM).astype(np.float32)


class VectorIndex:
    """Reads and writes the two tables through a DB-API connection; the caller owns the transaction."""

    def __init__(self, placeholder: str = "?") -> None:
        self.sql = VectorSql(placeholder)

    # ------------------------------------------------------------------ writes (inside the caller's transaction)

    def put(self, conn: Any, project: str, items: Sequence[int], vectors: np.ndarray, codes: np.ndarray) -> None:
        """Index `items` (all of one project) with their vectors and codes; an item indexed before is replaced."""
        import numpy as np

        q = self.sql.q
        fresh: list[int] = []
        for n, item in enumerate(items):
            row = conn.execute(q("SELECT block, slot FROM memory_vectors WHERE item = ?"), (int(item),)).fetchone()
            if row is None:
                fresh.append(n)
                continue
            block, slot = int(row[0]), int(row[1])
            conn.execute(q("UPDATE memory_vectors SET vector = ? WHERE item = ?"), (pack_vector(vectors[n]), int(item)))
            codes_blob = bytearray(conn.execute(q("SELECT codes FROM memory_vector_blocks WHERE id = ?"),
                                                (block,)).fetchone()[0])
            codes_blob[slot * CODE_BYTES:(slot + 1) * CODE_BYTES] = codes[n].tobytes()
            conn.execute(q("UPDATE memory_vector_blocks SET codes = ? WHERE id = ?"), (bytes(codes_blob), block))
        if not fresh:
            return
        last = conn.execute(q("SELECT id, count, items, codes FROM memory_vector_blocks WHERE project = ?"
                              " ORDER BY id DESC LIMIT 1"), (project,)).fetchone()
        queue = list(fresh)
        if last is not None and int(last[1]) < BLOCK:
            block, count = int(last[0]), int(last[1])
            take, queue = queue[:BLOCK - count], queue[BLOCK - count:]
            self._fill(conn, block, count, bytes(last[2]), bytes(last[3]), [items[n] for n in take],
                       vectors[take], codes[take])
        while queue:
            take, queue = queue[:BLOCK], queue[BLOCK:]
            block = self._new_block(conn, project)
            self._fill(conn, block, 0, b"", b"", [items[n] for n in take], vectors[take], codes[take])

    def _new_block(self, conn: Any, project: str) -> int:
        row = conn.execute(self.sql.q("INSERT INTO memory_vector_blocks (project, count, items, codes)"
                                      " VALUES (?, 0, ?, ?) RETURNING id"), (project, b"", b"")).fetchone()
        return int(row[0])

    def _fill(self, conn: Any, block: int, count: int, items_blob: bytes, codes_blob: bytes, items: list[int],
              vectors: np.ndarray, codes: np.ndarray) -> None:
        import numpy as np

        q = self.sql.q
        items_blob += np.asarray(items, dtype="<i8").tobytes()
        codes_blob += np.ascontiguousarray(codes, dtype=np.uint8).tobytes()
        conn.execute(q("UPDATE memory_vector_blocks SET count = ?, items = ?, codes = ? WHERE id = ?"),
                     (count + len(items), items_blob, codes_blob, block))
        conn.executemany(q("INSERT INTO memory_vectors (item, block, slot, vector) VALUES (?, ?, ?, ?)"),
                         [(int(item), block, count + i, pack_vector(vectors[i])) for i, item in enumerate(items)])

    def clear(self, conn: Any) -> None:
        """Forget every vector (the model changed: the backfill embeds everything again)."""
        conn.execute("DELETE FROM memory_vectors")
        conn.execute("DELETE FROM memory_vector_blocks")

    # ------------------------------------------------------------------ reads

    def count(self, conn: Any) -> int:
        return int(conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0])

    def nearest(self, conn: Any, query: np.ndarray, query_code: np.ndarray, *, project: str | None, k: int,
                candidates: int = CANDIDATES) -> list[tuple[int, float]]:
        """The `k` items closest in meaning to `query` (a unit vector), as (item, cosine similarity), best first."""
        import numpy as np

        q = self.sql.q
        want = max(k, candidates)
        target = np.frombuffer(np.ascontiguousarray(query_code, dtype=np.uint8).tobytes(), dtype=np.uint64)
        words = CODE_BYTES // 8
        if project is None:
            cur = conn.execute("SELECT items, codes FROM memory_vector_blocks")
        else:
            cur = conn.execute(q("SELECT items, codes FROM memory_vector_blocks WHERE project = ?"), (project,))
        best_items = np.zeros(0, dtype=np.int64)
        best_dist = np.zeros(0, dtype=np.int64)
        while True:
            rows = cur.fetchmany(SCAN_BATCH)
            if not rows:
                break
            items = np.frombuffer(b"".join(bytes(r[0]) for r in rows), dtype="<i8")
            codes = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.uint64).reshape(-1, words)
            dist = np.bitwise_count(codes ^ target).sum(axis=1, dtype=np.int64)
            live = items != TOMBSTONE
            items, dist = np.concatenate((best_items, items[live])), np.concatenate((best_dist, dist[live]))
            if items.size > want:
                keep = np.argpartition(dist, want - 1)[:want]
                items, dist = items[keep], dist[keep]
            best_items, best_dist = items, dist
        if best_items.size == 0:
            return []
        ids = [int(i) for i in best_items]
        found: list[tuple[int, bytes]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join([self.sql.placeholder] * len(chunk))
            found.extend((int(r[0]), bytes(r[1])) for r in
                         conn.execute(f"SELECT item, vector FROM memory_vectors WHERE item IN ({marks})", chunk))
        if not found:
            return []
        sims = unpack_vectors([blob for _, blob in found]) @ np.asarray(query, dtype=np.float32)
        ranked = heapq.nlargest(k, zip(sims.tolist(), (item for item, _ in found)))
        return [(item, float(sim)) for sim, item in ranked]

    def missing(self, conn: Any, *, after: int | None, limit: int, texts_sql: str) -> list[tuple[int, str, str]]:
        """Up to `limit` (item, project, text) not yet indexed, in item order after `after` (a resumable walk).

        `texts_sql` selects (item, project, text) rows with item > ? ordered by item, limit ?: the store's own.
        """
        out: list[tuple[int, str, str]] = []
        cursor = after
        while len(out) < limit:
            rows = conn.execute(self.sql.q(texts_sql), (cursor if cursor is not None else -(1 << 62), limit * 4)).fetchall()
            if not rows:
                break
            items = [int(r[0]) for r in rows]
            marks = ", ".join([self.sql.placeholder] * len(items))
            have = {int(r[0]) for r in conn.execute(f"SELECT item FROM memory_vectors WHERE item IN ({marks})", items)}
            out.extend((int(r[0]), str(r[1]), str(r[2])) for r in rows if int(r[0]) not in have)
            cursor = items[-1]
        return out[:limit]


def group_by_project(rows: Iterable[tuple[int, str, str]]) -> dict[str, list[tuple[int, str]]]:
    grouped: dict[str, list[tuple[int, str]]] = {}
    for item, project, text in rows:
        grouped.setdefault(project, []).append((item, text))
    return grouped


ProgressFn = Callable[[int, int], None]
