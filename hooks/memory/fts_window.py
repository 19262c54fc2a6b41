"""How many of a full-text query's newest matches the SQLite store may ask FTS5 for, so that its walk ends.

FTS5 answers `MATCH 'a b' ORDER BY rowid DESC LIMIT n` by walking the posting lists of `a` and `b` together from the
newest row and stops at the n-th match. It checks a rowid bound (`rowid > x`) only when it has found a match, so when
the words are each common but (almost) never in the same row, the walk goes to the end of both lists to learn that
there is nothing more: `bash path` at a million observations, each word in half of them and never together, read
~1M list entries per side of the table (85-105 ms), and the side with no matches at all paid as much. A walk ends
early only at its LIMIT. So when the cost is open, the store first counts the query's matches among a side's newest
rows, exactly and within a fixed budget of list entries, and asks for exactly that many (`Plan.limit`): the walk then
stops at the last of them, wherever it lies.

The count comes from each phrase's own posting list, read alone (a single phrase's walk yields a row at every step,
so a rowid bound ends it), and intersected here:

1. each phrase's newest SAMPLE rows on the side (`~1 ms` a phrase): a phrase with fewer is known entirely. When
   every phrase is known, the matches are their intersection. When the samples share RANK_WINDOW rows within the
   span they all cover, the newest RANK_WINDOW matches lie in that span: the plain LIMIT ends there.
2. otherwise every phrase's rows among the side's newest `depth` rows, `depth` chosen so that at most WALK_BUDGET
   list entries are read in all (from each phrase's density in its sample); their intersection is the count. When
   `depth` covers the side, the answer is every match; otherwise it is the matches among the newest `depth` rows
   (`Plan.depth`, said in the search's `why`): for words that each fill a large share of the memory, at least
   WALK_BUDGET / (their shares summed) of the newest rows are searched (50,000 rows of a million for two words in
   half of the rows each), whatever the history.

A project's rows are counted by its scope token (a phrase like the words'), which the store writes in every row of
the project: the count is the same whether the window query filters by the token or by the project's column. The
caller runs the plan and its window query in one read transaction, so the count holds for the query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where rows are read: the sidecar starts without it
    import numpy as np

SAMPLE = 2000
# List entries read at most to count a query's matches when its phrases are all common (at ~0.27 us an entry on this
# machine: ~14 ms). bench/RESULTS.md, "A bounded walk for words that are never together".
WALK_BUDGET = 50_000
# A query whose rarest phrase is in at most this many rows is walked by FTS5 as it is: its walk visits that phrase's
# rows once at most (~0.05 us each, and a seek in the other lists), whatever the others hold.
PLAIN_WALK = 10_000
# With a filter on the project's column, the counted rows are checked against it newest first, CHECK_BATCH at a
# time, CHECK_CAP at most.
CHECK_BATCH = 500
CHECK_CAP = 2000


@dataclass(frozen=True)
class Side:
    """One side of the memory's full-text table: observations count up from 1 (newest: highest rowid), prompts and
    summaries down from -2 (newest: lowest)."""

    bound: str  # the side as a rowid condition
    order: str  # newest first
    at_least_as_new: str  # rows no older than a rowid: a condition with one parameter


OBSERVATIONS = Side("rowid > 0", "DESC", "rowid >= ?")
PROMPTS_AND_SUMMARIES = Side("rowid < 0", "ASC", "rowid <= ?")


@dataclass(frozen=True)
class Plan:
    """`limit`: how many matches to ask for (0: none, skip the query); `depth`: None when every match of the side
    was counted, else how many of the side's newest rows were searched."""

    limit: int
    depth: int | None = None


def plan(conn: sqlite3.Connection, phrases: Sequence[str], holding: Sequence[int], side: Side, window: int,
         project: str | None = None) -> Plan:
    """The plan for the newest `window` rows of `side` matching every one of `phrases` (each an FTS5 phrase
    expression: `"word"`, or `scope : "token"` for a project's rows), `holding` the rows of the whole table holding
    each (estimated beyond a bounded count, as the store weighs words), and, when the query also filters the
    project's column, of `project`."""
    if len(phrases) == 1 and project is None:
        return Plan(window)  # one phrase: every step of the walk is a match, the LIMIT or the bound ends it
    if min(holding) <= PLAIN_WALK:
        return Plan(window)  # the walk steps through the rarest phrase's list once at most, seeking in the others'
    samples = [_rows(conn, phrase, side, limit=SAMPLE) for phrase in phrases]
    partial = [s for s in samples if len(s) >= SAMPLE]
    if not partial:  # every phrase known entirely
        return Plan(_passing(conn, _common(samples), side, window, project)[0])
    # the span every partial sample covers: rows at least as new as the oldest row of the one reaching least far
    edge = _newest(side, [s[-1] for s in partial])
    if _passing(conn, _common([_no_older(side, s, edge) for s in samples]), side, window, project)[0] >= window:
        return Plan(window)
    top = _end(conn, side)
    # each partial sample's density: its rows over the span from the side's newest row to its oldest
    shares = sum(len(s) / (abs(int(s[-1]) - top) + 1) for s in partial)
    known = sum(len(s) for s in samples if len(s) < SAMPLE)
    depth = max(SAMPLE, int(max(0, WALK_BUDGET - known) / shares))
    size = _side_size(side, top)
    last = top - depth + 1 if side.order == "DESC" else top + depth - 1  # the oldest row searched
    lists = [s if len(s) < SAMPLE else _rows(conn, phrase, side, last=None if depth >= size else last)
             for phrase, s in zip(phrases, samples)]
    if depth < size:
        lists = [_no_older(side, rows, last) for rows in lists]
    count, reached = _passing(conn, _common(lists), side, window, project)
    if reached is not None:  # the project's rows were checked up to a cap: the answer ends at the last checked
        return Plan(count, abs(reached - top) + 1)
    return Plan(count, depth if depth < size else None)


def _passing(conn: sqlite3.Connection, rows: np.ndarray, side: Side, window: int,
             project: str | None) -> tuple[int, int | None]:
    """How many of `rows` the window query returns, at most `window`, and, when the project's rows were checked
    only up to CHECK_CAP, the oldest row checked. Without a project filter every row counts; with one, rows are
    read newest first, in batches, until `window` are the project's (~4 us a row)."""
    if project is None:
        return min(window, len(rows)), None
    ordered = rows[::-1] if side.order == "DESC" else rows  # `rows` ascend
    passing = 0
    for start in range(0, len(ordered), CHECK_BATCH):
        if start >= CHECK_CAP:
            return passing, int(ordered[start - 1])
        batch = [int(r) for r in ordered[start:start + CHECK_BATCH]]
        marks = ",".join("?" * len(batch))
        passing += conn.execute(f"SELECT count(*) FROM memory_fts WHERE rowid IN ({marks}) AND project = ?",
                                (*batch, project)).fetchone()[0]
        if passing >= window:
            return window, None
    return passing, None


def _rows(conn: sqlite3.Connection, phrase: str, side: Side, *, limit: int | None = None,
          last: int | None = None) -> np.ndarray:
    """A phrase's rows on `side`, newest first: its newest `limit`, or those no older than rowid `last`. Read as
    one string and parsed by numpy: a Python object per row would triple the cost."""
    # one rowid condition: given two, FTS5 takes one as its bound and leaves the other for SQLite to test on every
    # row the walk yields
    params: tuple = (phrase,) if last is None else (phrase, last)
    sql = f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND {side.bound if last is None else side.at_least_as_new}"
    sql += f" ORDER BY rowid {side.order}"
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    import numpy as np

    joined = conn.execute(f"SELECT group_concat(rowid) FROM ({sql})", params).fetchone()[0]
    rows = np.fromstring(joined, dtype=np.int64, sep=",") if joined else np.empty(0, dtype=np.int64)
    rows.sort()
    return rows[::-1] if side.order == "DESC" else rows


def _no_older(side: Side, rows: np.ndarray, than: int) -> np.ndarray:
    return rows[rows >= than] if side.order == "DESC" else rows[rows <= than]


def _newest(side: Side, rowids: Sequence[int]) -> int:
    return int(max(rowids) if side.order == "DESC" else min(rowids))


def _end(conn: sqlite3.Connection, side: Side) -> int:
    """The side's newest rowid."""
    row = conn.execute(f"SELECT rowid FROM memory_fts WHERE {side.bound} ORDER BY rowid {side.order} LIMIT 1"
                       ).fetchone()
    return int(row[0]) if row else 0


def _side_size(side: Side, top: int) -> int:
    """Rows from the side's newest to its oldest possible rowid (ids are never reused: an upper bound)."""
    return top if side.order == "DESC" else max(0, -top - 1)


def _common(lists: list[np.ndarray]) -> np.ndarray:
    """The rows every list holds, ascending."""
    import numpy as np

    smallest, *others = sorted(lists, key=len)
    common = np.sort(smallest)
    for other in others:
        if not len(common):
            break
        common = np.intersect1d(common, other, assume_unique=True)
    return common
