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

A search compares the query's code with every code of the project (Hamming distance), keeps the `candidates`
closest, then ranks those by the exact cosine of their float16 vectors. The first pass is a compressed exact scan,
not a graph: recall does not depend on how the index was built, nothing needs training or rebuilding as memory
grows, and an insert is one block update. bench/bench_memory_meaning.py measures its recall and cost from 1k to 1M.

The codes of the projects searched last are kept in memory (`CodeCache`: 32 bytes an item, 32 MiB for a million,
at most `CACHED_PROJECTS` projects), because reading them from the database is most of a search's time at scale.
Every change of a block stamps it with the database's vector generation (`memory_meta`), so a cache catches up by
reading only the blocks changed since it last looked, whoever changed them (another sidecar, the backfill).
Texts and vectors are never held: a search reads the candidates' vectors and the hits' rows.

A tombstone (item 0) marks a slot whose item is gone; item 0 is never a full-text rowid (observations count from
1, prompts and summaries are negative).

Deletion (`delete`, the retention's prune). A deleted item's vector row goes, its slot becomes a tombstone (item 0, a
zero code) and its block is stamped like any change, so a cache patches that block at its next catch-up. A block
left with no live item is deleted whole; a catch-up by stamp cannot see a row that is gone, so every such deletion
also bumps `memory_meta`'s `vectors_dropped`, and a cache that sees it change reads its filter's block ids (ids only)
and turns the slots of the blocks no longer there into tombstones (`sync_dropped`). A cache holding more dropped
blocks than live ones starts over, so its memory follows the index down.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from hooks.memory.embedder import CODE_BYTES, DIM

if TYPE_CHECKING:
    import numpy as np

BLOCK = 128  # codes per block row: 4 KiB of codes; an append rewrites at most that
SCAN_BATCH = 64  # block rows per step of a scan (~8k items, 256 KiB of codes)
CANDIDATES = 1024  # codes kept from the first pass for the exact ranking
# The cached first pass keeps this many by Hamming distance, then the CANDIDATES whose codes agree best with the
# query's vector (recall@10 at 100k, bench corpus: 0.84 with Hamming alone, 0.95 with this step; ~2 ms). At 1M,
# 32,768 rather than 16,384: recall@10 0.82 -> 0.85 for ~2 ms (65,536: 0.85 again, +9 ms; 2,048 candidates: 0.91,
# +12 ms reading vectors). Measured on the 1M database of bench/bench_memory_meaning.py (its recall@10).
SHORTLIST = 32768
TOMBSTONE = 0
FAR = CODE_BYTES * 8 + 1  # a tombstone's distance: beyond any code's
SAMPLE_STRIDE = 16  # the shortlist's boundary is first guessed from every 16th distance
DISTANCE_CHUNK = 1 << 16  # slots per step of the distance pass (its buffers stay in the CPU's cache)
CACHED_PROJECTS = 4
GENERATION = "vectors_generation"  # memory_meta: bumped by every change of a block
EPOCH = "vectors_epoch"  # memory_meta: bumped when vectors are dropped (a cache then starts over)
DROPPED = "vectors_dropped"  # memory_meta: bumped when blocks are deleted (a cache then forgets the missing ones)
ITEM_BYTES = 8  # an item id in a block's `items`


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
    return np.frombuffer(b"".join(blobs), dtype="<f2").reshape(-1, DIM).astype(np.float32)


class VectorIndex:
    """Reads and writes the two tables through a DB-API connection; the caller owns the transaction."""

    def __init__(self, placeholder: str = "?", *, cache: bool = False) -> None:
        """`cache`: keep searched projects' codes in memory, kept current through the generation stamps (the
        blocks table then needs its `changed` column and memory_meta its two keys, as SQLite's schema has)."""
        self.sql = VectorSql(placeholder)
        self.cache = CodeCache() if cache else None

    # ------------------------------------------------------------------ writes (inside the caller's transaction)

    def put(self, conn: Any, project: str, items: Sequence[int], vectors: np.ndarray, codes: np.ndarray) -> None:
        """Index `items` (all of one project) with their vectors and codes; an item indexed before is replaced."""
        import numpy as np

        q = self.sql.q
        stamp = self._bump(conn)
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
            self._stamp(conn, block, stamp)
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
            self._stamp(conn, block, stamp)
        while queue:
            take, queue = queue[:BLOCK], queue[BLOCK:]
            block = self._new_block(conn, project)
            self._fill(conn, block, 0, b"", b"", [items[n] for n in take], vectors[take], codes[take])
            self._stamp(conn, block, stamp)

    def _bump(self, conn: Any) -> int | None:
        if self.cache is None:
            return None
        conn.execute(f"UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = '{GENERATION}'")
        return int(conn.execute(f"SELECT value FROM memory_meta WHERE key = '{GENERATION}'").fetchone()[0])

    def _stamp(self, conn: Any, block: int, stamp: int | None) -> None:
        if stamp is not None:
            conn.execute(self.sql.q("UPDATE memory_vector_blocks SET changed = ? WHERE id = ?"), (stamp, block))

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
        if self.cache is not None:
            conn.execute(f"UPDATE memory_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = '{EPOCH}'")

    def delete(self, conn: Any, items: Sequence[int]) -> int:
        """Forget `items` (any projects): their vectors go, their slots become tombstones, a block left with no live
        item goes whole (module note, "Deletion"). Returns how many of them had a vector."""
        q = self.sql.q
        ids = [int(i) for i in items]
        where: dict[int, list[int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join([self.sql.placeholder] * len(chunk))
            for block, slot in conn.execute(f"SELECT block, slot FROM memory_vectors WHERE item IN ({marks})",
                                            chunk).fetchall():
                where.setdefault(int(block), []).append(int(slot))
        if not where:
            return 0
        stamp = self._bump(conn)
        dropped = 0
        for block, slots in sorted(where.items()):
            row = conn.execute(q("SELECT items, codes FROM memory_vector_blocks WHERE id = ?"), (block,)).fetchone()
            if row is None:
                continue
            items_blob, codes_blob = tombstoned(bytes(row[0]), bytes(row[1]), slots)
            if not any(items_blob):
                conn.execute(q("DELETE FROM memory_vector_blocks WHERE id = ?"), (block,))
                dropped += 1
                continue
            conn.execute(q("UPDATE memory_vector_blocks SET items = ?, codes = ? WHERE id = ?"),
                         (items_blob, codes_blob, block))
            self._stamp(conn, block, stamp)
        gone = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join([self.sql.placeholder] * len(chunk))
            gone += conn.execute(f"DELETE FROM memory_vectors WHERE item IN ({marks})", chunk).rowcount
        if dropped and self.cache is not None:
            conn.execute(q("INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                           " SET value = CAST(memory_meta.value AS INTEGER) + ?"), (DROPPED, str(dropped), dropped))
        return gone

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
        if self.cache is not None:
            best_items = self.cache.closest(conn, self.sql, project, target, want, query)
            return self._rank(conn, best_items, query, k)
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
        return self._rank(conn, best_items, query, k)

    def _rank(self, conn: Any, best_items: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The candidates' float16 vectors, read by item, ranked by exact cosine."""
        import numpy as np

        if best_items.size == 0:
            return []
        ids = [int(i) for i in best_items]
        items: list[int] = []
        blobs: list[bytes] = []
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples: a thousand rows, read as cheaply as the driver can
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join([self.sql.placeholder] * len(chunk))
            for item, blob in cursor.execute(f"SELECT item, vector FROM memory_vectors WHERE item IN ({marks})",
                                             chunk).fetchall():
                items.append(item)
                blobs.append(blob)
        return rank_by_cosine(items, blobs, query, k)

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


class CodeEntry:
    """One project's codes (or every project's, under the key None): BLOCK slots per block, in block order. The
    codes are held by column (one contiguous array per 64-bit word of the code): the Hamming distance is then four
    passes over contiguous memory (~7 ms for a million items, against ~40 ms row by row)."""

    __slots__ = ("epoch", "generation", "dropped", "gone", "slots", "items", "codes", "size", "_dead")

    def __init__(self, epoch: int) -> None:
        import numpy as np

        self.epoch, self.generation = epoch, -1
        self.dropped = -1  # the database's `vectors_dropped` when this entry last checked for deleted blocks
        self.gone = 0  # slot ranges of deleted blocks still held (tombstones until the entry starts over)
        self.slots: dict[int, int] = {}  # block id -> its first slot
        self.items = np.zeros(0, dtype=np.int64)
        self.codes = np.zeros((CODE_BYTES // 8, 0), dtype=np.uint64)
        self.size = 0
        self._dead: np.ndarray | None = None  # the tombstones' slots, found again after a change

    def place(self, block: int, items_blob: bytes, codes_blob: bytes) -> None:
        import numpy as np

        start = self.slots.get(block)
        if start is None:
            start = self.slots[block] = self.size
            self.size += BLOCK
            if self.size > self.items.size:  # grow by doubling: appends cost O(1) amortized
                capacity = max(BLOCK * 64, self.items.size * 2)
                items = np.zeros(capacity, dtype=np.int64)  # zero = a tombstone: never a hit
                codes = np.zeros((self.codes.shape[0], capacity), dtype=np.uint64)
                items[:self.items.size], codes[:, :self.items.size] = self.items, self.codes
                self.items, self.codes = items, codes
        got = np.frombuffer(items_blob, dtype="<i8")
        self._dead = None
        self.items[start:start + got.size] = got
        self.codes[:, start:start + got.size] = np.frombuffer(codes_blob, dtype=np.uint64).reshape(got.size, -1).T
        # The rest of the block's range is empty: a block id SQLite hands out again (a deleted last block) may hold
        # fewer items than the one this range held before.
        self.items[start + got.size:start + BLOCK] = TOMBSTONE
        self.codes[:, start + got.size:start + BLOCK] = 0

    def forget_blocks(self, live: set[int]) -> None:
        """The blocks held that are not in `live` were deleted: their slots become tombstones."""
        for block in [b for b in self.slots if b not in live]:
            start = self.slots.pop(block)
            self.items[start:start + BLOCK] = TOMBSTONE
            self.codes[:, start:start + BLOCK] = 0
            self.gone += 1
            self._dead = None

    @property
    def mostly_gone(self) -> bool:
        return self.gone > len(self.slots)

    def distances(self, target: np.ndarray) -> np.ndarray:
        """Hamming distance of every slot's code to `target` (uint16; a tombstone's is FAR). Computed in chunks
        that stay in the CPU's cache, into preallocated buffers (~7 ms for a million, against ~13 unchunked)."""
        import numpy as np

        n = self.size
        dist = np.empty(n, dtype=np.uint16)
        xor = np.empty(DISTANCE_CHUNK, dtype=np.uint64)
        bits = np.empty(DISTANCE_CHUNK, dtype=np.uint8)
        for start in range(0, n, DISTANCE_CHUNK):
            end = min(n, start + DISTANCE_CHUNK)
            out, x, b = dist[start:end], xor[:end - start], bits[:end - start]
            for word in range(self.codes.shape[0]):
                np.bitwise_xor(self.codes[word, start:end], target[word], out=x)
                np.bitwise_count(x, out=b)
                if word == 0:
                    out[:] = b
                else:
                    np.add(out, b, out=out)
        if self._dead is None:
            self._dead = np.flatnonzero(self.items[:n] == TOMBSTONE)
        dist[self._dead] = FAR
        return dist

    def code_bytes(self, slots: np.ndarray) -> np.ndarray:
        """The codes of `slots` as rows of CODE_BYTES bytes, in the order np.packbits made them."""
        import numpy as np

        return np.stack([np.take(self.codes[word], slots) for word in range(self.codes.shape[0])], axis=1).view(np.uint8)


def tombstoned(items_blob: bytes, codes_blob: bytes, slots: Iterable[int]) -> tuple[bytes, bytes]:
    """A block's `items` and `codes` with `slots` made tombstones (item 0, a zero code: nothing of the item stays)."""
    items, codes = bytearray(items_blob), bytearray(codes_blob)
    for slot in slots:
        items[slot * ITEM_BYTES:(slot + 1) * ITEM_BYTES] = bytes(ITEM_BYTES)
        codes[slot * CODE_BYTES:(slot + 1) * CODE_BYTES] = bytes(CODE_BYTES)
    return bytes(items), bytes(codes)


def sync_dropped(entry: CodeEntry, dropped: int, live_blocks: Callable[[], Iterable[int]]) -> CodeEntry | None:
    """Bring a loaded entry up to the database's `vectors_dropped` count: when it moved, the blocks that are gone
    (`live_blocks()`: the ids the entry's filter selects now) become tombstones. None when the entry holds more
    deleted blocks than live ones: the caller starts it over (a full load), so memory follows the index down."""
    if entry.generation >= 0 and entry.dropped != dropped:
        entry.forget_blocks({int(b) for b in live_blocks()})
        if entry.mostly_gone:
            return None
    entry.dropped = dropped
    return entry


def _nearest_slots(dist: np.ndarray, count: int) -> np.ndarray:
    """The `count` slots of smallest distance (ties at the boundary: the first ones), tombstones never. Distances
    are small integers, so histograms find the boundary instead of a partial sort: first one of a sample (every
    SAMPLE_STRIDE-th slot) guesses a distance that keeps a few more than `count`, then the exact boundary is found
    among those kept (~2 ms for a million, against ~5 for a histogram of all and ~14 for a partial sort)."""
    import numpy as np

    if dist.size > count * SAMPLE_STRIDE:
        hist = np.bincount(dist[::SAMPLE_STRIDE], minlength=FAR + 1)[:FAR]
        guess = int(np.searchsorted(np.cumsum(hist) * SAMPLE_STRIDE, count * 1.25))
        if guess < FAR:
            kept = np.flatnonzero(dist <= guess)
            if kept.size >= count:
                return kept[_first_nearest(dist[kept], count)]
    return _first_nearest(dist, count)


def _first_nearest(dist: np.ndarray, count: int) -> np.ndarray:
    """Positions in `dist` of its `count` smallest (ties at the boundary: the first ones), never FAR."""
    import numpy as np

    hist = np.bincount(dist, minlength=FAR + 1)
    hist[FAR:] = 0
    reach = np.cumsum(hist)
    if reach[-1] <= count:
        return np.flatnonzero(dist < FAR)
    edge = int(np.searchsorted(reach, count))  # the distance at which `count` is reached
    kept = np.flatnonzero(dist <= edge)
    over = int(reach[edge]) - count  # ties at the edge beyond `count`: the last ones go
    if over:
        ties = np.flatnonzero(dist[kept] == edge)
        kept = np.delete(kept, ties[ties.size - over:])
    return kept


@functools.lru_cache(maxsize=1)
def _byte_signs() -> np.ndarray:
    """Row v: the eight bits of byte value v as +1/-1, most significant first (np.packbits' order)."""
    import numpy as np

    return np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32) * 2 - 1


def choose(entry: CodeEntry, target: np.ndarray, want: int, query: np.ndarray | None = None) -> np.ndarray:
    """The `want` items of `entry` whose codes are closest to the query: the SHORTLIST nearest by Hamming distance,
    then, given the query's own vector, those whose codes agree best with it (each bit weighed by the query's value
    on that dimension: the code compared with the vector, not with the vector's code). Both backends' caches."""
    import numpy as np

    if entry.size == 0:
        return np.zeros(0, dtype=np.int64)
    first = max(want, SHORTLIST) if query is not None else want
    keep = _nearest_slots(entry.distances(target), first)
    if query is not None and keep.size > want:
        table = _byte_signs() @ np.asarray(query, dtype=np.float32).reshape(CODE_BYTES, 8).T  # (256 values, 32)
        code = entry.code_bytes(keep)
        agreement = np.zeros(keep.size, dtype=np.float32)
        for byte in range(CODE_BYTES):  # one gather per byte position: ~1.8 ms for 16,384 codes (4.7 at once)
            agreement += table[:, byte].take(code[:, byte])
        keep = keep[np.argpartition(-agreement, want - 1)[:want]]
    return entry.items[keep].copy()


def rank_by_cosine(items: Sequence[int], blobs: Sequence[bytes], query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(item, cosine) of the `k` vectors closest to `query`, best first, from the candidates' float16 blobs."""
    import numpy as np

    if not items:
        return []
    sims = unpack_vectors(list(blobs)) @ np.asarray(query, dtype=np.float32)
    best = np.argsort(-sims, kind="stable")[:k]
    return [(int(items[n]), float(sims[n])) for n in best]


class CodeCache:
    """The codes of the last `CACHED_PROJECTS` projects searched, caught up with the database at each search."""

    def __init__(self) -> None:
        self._entries: dict[str | None, CodeEntry] = {}

    def closest(self, conn: Any, sql: VectorSql, project: str | None, target: np.ndarray, want: int,
                query: np.ndarray | None = None) -> np.ndarray:
        """The `want` cached items of `project` closest to the query (`choose`)."""
        return choose(self._current(conn, sql, project), target, want, query)

    def _current(self, conn: Any, sql: VectorSql, project: str | None) -> CodeEntry:
        meta = dict(conn.execute(f"SELECT key, value FROM memory_meta WHERE key IN ('{GENERATION}', '{EPOCH}',"
                                 f" '{DROPPED}')"))
        generation, epoch = int(meta.get(GENERATION, 0)), int(meta.get(EPOCH, 0))
        entry = self._entries.pop(project, None)
        if entry is not None and entry.epoch == epoch:
            # Blocks deleted since (the retention's prune) are forgotten before the catch-up by stamp.
            mine = "" if project is None else " WHERE project = ?"
            entry = sync_dropped(entry, int(meta.get(DROPPED, 0)), lambda: [r[0] for r in conn.execute(
                sql.q(f"SELECT id FROM memory_vector_blocks{mine}"), () if project is None else (project,))])
        if entry is None or entry.epoch != epoch:
            entry = CodeEntry(epoch)
            entry.dropped = int(meta.get(DROPPED, 0))
        self._entries[project] = entry  # the newest at the end: the least recently searched goes first
        while len(self._entries) > CACHED_PROJECTS:
            del self._entries[next(iter(self._entries))]
        if entry.generation != generation:
            # A first load reads the project's blocks by the project's index; a catch-up, what changed since.
            if entry.generation < 0:
                where, params = ("1 = 1", ()) if project is None else ("project = ?", (project,))
            else:
                where = "changed > ?" + ("" if project is None else " AND project = ?")
                params = (entry.generation,) + (() if project is None else (project,))
            cur = conn.execute(sql.q(f"SELECT id, items, codes FROM memory_vector_blocks WHERE {where} ORDER BY id"),
                               params)
            while rows := cur.fetchmany(SCAN_BATCH):
                for block, items_blob, codes_blob in rows:
                    entry.place(int(block), bytes(items_blob), bytes(codes_blob))
            entry.generation = generation
        return entry

    def forget(self) -> None:
        self._entries.clear()


def group_by_project(rows: Iterable[tuple[int, str, str]]) -> dict[str, list[tuple[int, str]]]:
    grouped: dict[str, list[tuple[int, str]]] = {}
    for item, project, text in rows:
        grouped.setdefault(project, []).append((item, text))
    return grouped


ProgressFn = Callable[[int, int], None]
