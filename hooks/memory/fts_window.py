"""How many of a full-text query's newest matches the SQLite store asks FTS5 for, so that no walk runs to the end.

FTS5 answers `MATCH 'a b' ORDER BY rowid DESC LIMIT n` by walking the posting lists of `a` and `b` together from the
newest row, and stops at the n-th match. It checks a rowid bound (`rowid > x`) only when it has found a match, so when
the words are each common but (almost) never in the same row, the walk goes to the end of both lists to learn that
there is nothing more: `bash path` at a million observations (each word in half of them, never together) walked ~1M
list entries on each side of the table (85-105 ms), and the side with no rows at all paid as much. Only the LIMIT
ends such a walk early. So, where the walk's length is open, the store first counts the query's matches among a
side's newest rows, exactly and within a fixed budget, and asks for that many (`Plan.limit`; none: no query): the
walk then stops at the last of them, wherever it lies.

A plan, per side (observations; prompts and summaries), from the cheapest test to the dearest:

1. one phrase, or a rarest phrase in at most PLAIN_WALK rows of the table: FTS5's walk as it is (it steps through
   the rarest phrase's list once at most, seeking in the others');
2. each phrase's newest SAMPLE rows on the side (read with the words' weights, `~1 ms` a phrase): every phrase known
   entirely, the matches are their intersection; RANK_WINDOW matches within the span all samples cover, the walk
   ends in that span; found together at least EVIDENCE times there, at a rate that brings the window within
   PLAIN_EXPECTED list entries, the walk as it is (a history in which they stopped meeting would make it longer:
   the one estimate here, docs/MEMORY.md);
3. otherwise each phrase's rows among the side's newest `depth` rows, `depth` chosen from the phrases' densities so
   that WALK_BUDGET list entries are read in all, intersected: the count. When `depth` covers the side it is every
   match; otherwise the matches among the newest `depth` rows (`Plan.depth`): for words that each fill a large share
   of the memory, at least WALK_BUDGET / (their shares summed) of the newest rows are searched (30,000 rows for two
   words in half of the rows each), whatever the history.

Each phrase's list is read alone (a single phrase's walk yields a row at every step, so a rowid bound ends it). A
project's rows are counted by its scope token when the window query uses the token, and checked row by row
(CHECK_BATCH at a time, CHECK_CAP at most) when it filters the project's column. The caller runs the plan and the
window query in one read transaction, so the count holds for the query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where rows are read: the sidecar starts without it
    import numpy as np

SAMPLE = 2000
# List entries read at most to count a query's matches when its phrases are all common (~0.3 us an entry on this
# machine: ~9 ms). bench/RESULTS.md, "SQLite: words each common and never together".
WALK_BUDGET = 30_000
# A query whose rarest phrase is in at most this many rows is walked by FTS5 as it is: its walk visits that phrase's
# rows once at most, seeking in the others' at each (~0.5 us a step: ~5 ms a side), whatever the others hold.
PLAIN_WALK = 10_000
# With a filter on the project's column, the counted rows are checked against it newest first, CHECK_BATCH at a
# time, CHECK_CAP at most.
CHECK_BATCH = 500
CHECK_CAP = 2000
# Phrases found together at least EVIDENCE times among the newest rows, at a rate that brings the window within
# PLAIN_EXPECTED list entries of walking, are walked by FTS5 as they are (the count would cost about as much).
EVIDENCE = 8
PLAIN_EXPECTED = 100_000


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
         project: str | None = None, newest_rows: Sequence[np.ndarray] | None = None) -> Plan:
    """The plan for the newest `window` rows of `side` matching every one of `phrases` (each an FTS5 phrase
    expression: `"word"`, or `scope : "token"` for a project's rows), `holding` the rows of the whole table holding
    each (estimated beyond a bounded count, as the store weighs words), and, when the query also filters the
    project's column, of `project`. `newest_rows`: each phrase's newest rows on `side`, newest first, SAMPLE of
    them at least or all it has, when the caller read them already."""
    if len(phrases) == 1 and project is None:
        return Plan(window)  # one phrase: every step of the walk is a match, the LIMIT or the bound ends it
    if min(holding) <= PLAIN_WALK:
        return Plan(window)  # the walk steps through the rarest phrase's list once at most, seeking in the others'
    samples = [_rows(conn, phrase, side, limit=SAMPLE) if newest is None else newest[:SAMPLE]
               for phrase, newest in zip(phrases, newest_rows or [None] * len(phrases))]
    partial = [s for s in samples if len(s) >= SAMPLE]
    if not partial:  # every phrase known entirely
        return Plan(_passing(conn, _common(samples), side, window, project)[0])
    # the span every partial sample covers: rows at least as new as the oldest row of the one reaching least far
    top = _end(conn, side)
    edge = _newest(side, [s[-1] for s in partial])
    together = _passing(conn, _common([_no_older(side, s, edge) for s in samples]), side, window, project)[0]
    if together >= window:
        return Plan(window)
    # each partial sample's density: its rows over the span from the side's newest row to its oldest
    shares = sum(len(s) / (abs(int(s[-1]) - top) + 1) for s in partial)
    if together >= EVIDENCE:
        # found together often enough in the newest rows to expect the window within a walk the budget would pay
        # for counting: the plain walk (which a history where they stop meeting makes longer: docs/MEMORY.md)
        expected_rows = window * (abs(edge - top) + 1) / together
        if expected_rows * shares <= PLAIN_EXPECTED:
            return Plan(window)
    known = sum(len(s) for s in samples if len(s) < SAMPLE)
    depth = max(SAMPLE, int(max(0, WALK_BUDGET - known) / shares))
    size = _side_size(side, top)
    # the oldest row searched (None: the whole side)
    last = None if depth >= size else top - depth + 1 if side.order == "DESC" else top + depth - 1
    lists = [_rows(conn, phrase, side, last=last) if len(s) >= SAMPLE
             else s if last is None else _no_older(side, s, last) for phrase, s in zip(phrases, samples)]
    count, reached = _passing(conn, _common(lists), side, window, project)
    if reached is not None:  # the project's rows were checked up to a cap: the answer ends at the last checked
        return Plan(count, abs(reached - top) + 1)
    return Plan(count, None if last is None else depth)


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


def newest_in_table(conn: sqlite3.Connection, phrase: str, limit: int) -> np.ndarray:
    """A phrase's `limit` highest rowids in the whole table, highest first: its newest observations, then (when it
    has fewer than `limit` of them) prompts and summaries from the oldest."""
    return _rows(conn, phrase, Side("1", "DESC", ""), limit=limit)


def observations_sample(newest: np.ndarray, limit: int) -> np.ndarray | None:
    """The OBSERVATIONS side's sample from `newest_in_table(..., limit)`: its positive rows, which are all of the
    phrase's observations when the read ended among prompts or was short. None when it cannot serve (a smaller read
    than SAMPLE)."""
    if limit < SAMPLE:
        return None
    return newest[newest > 0]


def _rows(conn: sqlite3.Connection, phrase: str, side: Side, *, limit: int | None = None,
          last: int | None = None) -> np.ndarray:
    """A phrase's rows on `side`, newest first: its newest `limit`, or those no older than rowid `last`. Read as
    one string and parsed by numpy: a Python object per row would triple the cost."""
    # one rowid condition: given two, FTS5 takes one as its bound and leaves the other for SQLite to test on every
    # row the walk yields
    params: tuple = (phrase,) if last is None else (phrase, last)
    where = side.bound if last is None else side.at_least_as_new
    sql = f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND {where}"
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
