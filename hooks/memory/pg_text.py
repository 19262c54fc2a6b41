"""PostgreSQL full-text search over each table's newest matches, found in steps whose heap reads do not grow with history.

Ranking is bounded as on SQLite (hooks/memory/bm25.py): of each table (prompts, observations, summaries), only the
newest RANK_WINDOW matches of a query are ranked (by `ts_rank_cd`), so a word in every row costs what a rare one does.
What costs on PostgreSQL is reading a match's heap page (its scope, its time, its `tsvector`): a GIN index says which
rows match, not which are newest, and the planner, left alone, picks its plan from each word's frequency, which for
words seen often but never together ("bash path") is a walk of every row of the project (1.6 s at 1M) and for words
seen together more often than chance a bitmap of every match and a sort. So the window is found in steps, each with a
plan fixed by how it is written and a bound on the rows it reads, and each row is scored where it is read:

1. `walk`: the newest WALK rows of the table (by the (project, created_at) index, or by id without a project), the
   matches among them. Matches dense there (RANK_WINDOW of them: a project's name, a word in every row) are the
   window. Matches found but fewer say how dense the query is: when RANK_WINDOW of them are expected within
   WALK_MAX rows (a word in 4% of the rows or more), the walk goes on that far, once.
2. `gin`: the matches from the GIN index alone (a bitmap: no sequential scan, no index walk). When the walk met some
   and the table's size says there are at most SORTED_MAX in all, every one is read once and the newest RANK_WINDOW
   kept. Otherwise at most DENSE are taken: fewer than that, every match is in hand and the newest RANK_WINDOW are
   the window.
3. `newest`: only a table with DENSE matches or more that steps 1 and 2 did not settle (a query matching 0.2-4% of the
   rows at 1M, its newest rows holding none or few): its newest RANK_WINDOW matches, by the plan the planner chooses
   (the walk of the time index for the common words of this band, a bitmap of every match and a sort for the rarer).

The windows' best `limit` rows are read once more for their text and `ts_headline`'s marks. The GIN bitmap is the part
that still grows with history: its posting lists (bench/RESULTS.md, "PostgreSQL hybrid search at 1M, round 5").
"""

from __future__ import annotations

import math
from typing import Any

WALK = 2000  # the newest rows of a table read first
WALK_MAX = 20000  # how far the walk goes on when its first rows say the window lies within this many
DENSE = 2000  # matches taken from the GIN index at most: fewer means every match was taken
SORTED_MAX = 4 * DENSE  # matches expected (from the walk's share) up to which step 2 reads them all and sorts

_SUMMARY_TEXT = "request || E'\\n' || outcome"  # a summary's searchable text, as SQLite's full-text row holds it
# (table, kind, its kind's code in a vector item, its searchable text)
TABLES = (("user_prompts", "prompt", 1, "text"), ("observations", "observation", 2, "text"),
          ("session_summaries", "summary", 3, _SUMMARY_TEXT))
_TABLE_OF = {kind: table for table, kind, _, _ in TABLES}
# Step 2's plan is a GIN bitmap whatever the words' statistics say: plain index walks and sequential scans are off
# for its one statement (set_config(..., true): until its transaction ends), and no parallel workers are started.
_GIN_ONLY = ("SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true),"
             " set_config('max_parallel_workers_per_gather', '0', true)")

Scored = tuple[float, float, int]  # (created_at, rank, id) of one match


def _walk_order(table: str, project: bool) -> str | None:
    """How step 1 reads a table's newest rows through an index, or None when no index serves it (a project's prompts:
    user_prompts is indexed by time alone, and its newest rows may all be other projects')."""
    if table == "user_prompts":
        return None if project else "created_at DESC"
    return "created_at DESC" if project else "id DESC"


def best_matches(conn: Any, q: str, visible: str, project: bool, params: dict[str, Any], window: int,
                 limit: int) -> list[tuple[str, int, float]]:
    """The `limit` best of each table's newest `window` matches, as (kind, id, rank), best first (rank, then newer,
    then the smaller vector item), read on `conn` (autocommit, dict rows). See the module's note for the steps."""
    where = f"tsv @@ {q} AND {visible}" + (" AND project = %(project)s" if project else "")
    scoped = "WHERE project = %(project)s" if project else ""
    params = {**params, "window": window, "dense": DENSE}
    columns = f"id, created_at, ts_rank_cd(tsv, {q}) AS rank"
    found: dict[str, list[Scored]] = {}

    def read(sql: str, extra: dict[str, Any] | None = None) -> dict[str, list[Scored]]:
        got: dict[str, list[Scored]] = {}
        for r in conn.execute(sql, {**params, **(extra or {})}).fetchall():
            got.setdefault(r["kind"], []).append((float(r["created_at"]), float(r["rank"]), int(r["id"])))
        return got

    def walk(budgets: dict[str, int]) -> dict[str, list[Scored]]:
        return read(" UNION ALL ".join(
            f"(SELECT '{kind}' AS kind, {columns} FROM (SELECT id, created_at, tsv, owner, team, shared, project"
            f" FROM {_TABLE_OF[kind]} {scoped} ORDER BY {_walk_order(_TABLE_OF[kind], project)}"
            f" LIMIT %(walk_{kind})s) AS newest WHERE {where} ORDER BY created_at DESC, id DESC LIMIT %(window)s)"
            for kind in budgets), {f"walk_{kind}": n for kind, n in budgets.items()})

    walkable = {kind: WALK for table, kind, _, _ in TABLES if _walk_order(table, project) is not None}
    found.update(walk(walkable))
    seen = {kind: len(found.get(kind, ())) for kind in walkable}
    further = {}
    for kind, m in seen.items():
        if 0 < m < window:
            budget = math.ceil(1.5 * window * WALK / m)
            if budget <= WALK_MAX:
                further[kind] = budget
    if further:
        found.update({kind: hits for kind, hits in walk(further).items() if len(hits) >= window})
    rest = [kind for _, kind, _, _ in TABLES if len(found.get(kind, ())) < window]
    if not rest:
        return _best(found, window, limit)

    # Step 2. A kind whose walk met matches, expected to have at most SORTED_MAX in all, has every match read once
    # and its newest window kept (no second read); any other takes at most DENSE, and step 3 if it has more.
    met = [kind for kind in rest if seen.get(kind, 0) > 0]
    sizes = _sizes(conn, met) if met else {}
    # (`seen` counts the project's newest rows, `sizes` the whole table's: an estimate erring towards the cap)
    sorted_kinds = {kind for kind in met if 0 < seen[kind] * sizes.get(kind, -1) / WALK <= SORTED_MAX}
    dense: list[str] = []
    with conn.transaction():
        conn.execute(_GIN_ONLY)
        got = read(" UNION ALL ".join(
            f"(SELECT '{kind}' AS kind, {columns} FROM {_TABLE_OF[kind]} WHERE {where}"
            + (" ORDER BY created_at DESC LIMIT %(window)s)" if kind in sorted_kinds else " LIMIT %(dense)s)")
            for kind in rest))
    for kind in rest:
        hits = got.get(kind, [])
        if kind not in sorted_kinds and len(hits) >= DENSE:
            dense.append(kind)
        else:
            found[kind] = hits
    if dense:
        found.update(read(" UNION ALL ".join(
            f"(SELECT '{kind}' AS kind, {columns} FROM {_TABLE_OF[kind]} WHERE {where}"
            " ORDER BY created_at DESC LIMIT %(window)s)" for kind in dense)))
    return _best(found, window, limit)


def _sizes(conn: Any, kinds: list[str]) -> dict[str, float]:
    """The planner's row count of each kind's table (pg_class.reltuples: -1 before its first ANALYZE)."""
    return {r["kind"]: float(r["reltuples"]) for r in conn.execute(" UNION ALL ".join(
        f"SELECT '{kind}' AS kind, reltuples FROM pg_class WHERE oid = '{_TABLE_OF[kind]}'::regclass"
        for kind in kinds)).fetchall()}


def _best(found: dict[str, list[Scored]], window: int, limit: int) -> list[tuple[str, int, float]]:
    """Each kind's newest `window` matches, ranked together: the best `limit` as (kind, id, rank)."""
    codes = {kind: code for _, kind, code, _ in TABLES}
    ranked = [(kind, row_id, rank, created_at) for kind, hits in found.items()
              for created_at, rank, row_id in sorted(hits, key=lambda h: (h[0], h[2]), reverse=True)[:window]]
    ranked.sort(key=lambda h: (-h[2], -h[3], h[1] * 4 + codes[h[0]]))
    return [(kind, row_id, rank) for kind, row_id, rank, _ in ranked[:limit]]


def rows_sql(q: str, ts_config: str, kinds: set[str]) -> str:
    """The rows of `%(ids_<kind>)s` for each kind in `kinds`, with their text and `ts_headline`'s marks."""
    return " UNION ALL ".join(
        f"(SELECT id * 4 + {code} AS item, '{kind}' AS kind, id, session_id, project, {text} AS text, created_at,"
        f" ts_headline('{ts_config}', {text}, {q}, 'StartSel=«, StopSel=», MaxWords=16, MinWords=6, ShortWord=2,"
        f" MaxFragments=1, FragmentDelimiter=…') AS snippet FROM {table} WHERE id = ANY(%(ids_{kind})s))"
        for table, kind, code, text in TABLES if kind in kinds)
