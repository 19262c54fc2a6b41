"""The planned full-text window (hooks/memory/fts_window.py) returns the rows FTS5's own walk would, and, where it
bounds the walk, exactly the matches among the newest rows it says it searched.

The store is real (SQLite, FTS5, its writes); the plan's limits are scaled down so that a few thousand rows reach
every branch: a query walked as it is, every phrase known from its sample, the samples sharing a full window, the
bounded walk, and a project filtered by its token or by its column."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import hooks.memory.store as store_module
from hooks.memory import fts_window
from hooks.memory.store import RANK_WINDOW, MemoryStore, scope_token

OBSERVATIONS = 3_000
PROMPTS = 1_200


def words(i: int) -> str:
    """Row i's words: `alpha` and `beta` alternate (never together), `gamma` every third row, `delta` every
    fiftieth (always with alpha), `eta` every 40th and `theta` every 35th (fewer than a sample's prompts each),
    `omega` every 400th (rare: walked as it is), `common` in every row."""
    out = ["common", "alpha" if i % 2 == 0 else "beta"]
    for word, every in (("gamma", 3), ("delta", 50), ("eta", 40), ("theta", 35), ("omega", 400)):
        if i % every == 0:
            out.append(word)
    return " ".join(out)


def project_of(i: int) -> str:
    return "p-small" if i % 10 == 0 else "p-big"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fts") / "memory.sqlite3"
    mp = pytest.MonkeyPatch()
    mp.setattr(store_module, "get_embedder", lambda: None)  # words only: the fill stays quick
    store = MemoryStore(path)
    for i in range(PROMPTS):  # prompts: the side counting down from -2
        store.add_prompt(f"s-{project_of(i)}-{i}", project_of(i), 1, words(i))
    for i in range(OBSERVATIONS):
        store.add_observation(f"s-{project_of(i)}-{i}", project_of(i), 1, "Bash", words(i))
    store.close()
    mp.undo()
    return path


@pytest.fixture
def store(filled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)
    copy = tmp_path / "memory.sqlite3"
    src, dst = sqlite3.connect(filled), sqlite3.connect(copy)
    src.backup(dst)
    src.close(), dst.close()
    opened = MemoryStore(copy)
    yield opened
    opened.close()


def expected_window(store: MemoryStore, query: str, project: str | None, *, depth: int | None = None) -> set[int]:
    """The newest RANK_WINDOW rows of each side holding every word (and of the project), found without FTS5's
    AND: each row's text read and tested here."""
    wanted = set(query.split())
    rows = store._conn.execute("SELECT rowid, text, project FROM memory_fts").fetchall()
    out: set[int] = set()
    for side_rows in ([r for r in rows if r[0] > 0], [r for r in rows if r[0] < 0]):
        newest_first = sorted(side_rows, key=lambda r: -abs(r[0]) if r[0] > 0 else r[0])
        if depth is not None and side_rows and side_rows[0][0] > 0:
            newest_first = newest_first[:depth]
        hits = [r[0] for r in newest_first if wanted <= set(r[1].split()) and (project is None or r[2] == project)]
        out.update(hits[:store_module.RANK_WINDOW])
    return out


QUERIES = ["alpha beta", "alpha gamma", "beta delta", "alpha delta", "common alpha", "gamma delta", "alpha",
           "common", "common gamma delta", "beta gamma common", "eta theta", "omega alpha", "eta common"]


@pytest.fixture(params=[RANK_WINDOW, 20], ids=["window-500", "window-20"])
def small_limits(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "RANK_WINDOW", request.param)  # 20: a window the samples can fill
    monkeypatch.setattr(fts_window, "SAMPLE", 40)
    monkeypatch.setattr(fts_window, "PLAIN_WALK", 30)
    monkeypatch.setattr(fts_window, "CHECK_BATCH", 25)
    monkeypatch.setattr(fts_window, "CHECK_CAP", 10_000)
    monkeypatch.setattr(fts_window, "PLAIN_EXPECTED", 1_000)


def item_of(hit: dict) -> int:
    return int(hit["key"])  # the row's full-text rowid


@pytest.mark.parametrize("project", [None, "p-small", "p-big"])
@pytest.mark.parametrize("query", QUERIES)
def test_the_planned_window_is_the_walks_own(store: MemoryStore, small_limits: None, query: str,
                                              project: str | None) -> None:
    hits = store._text_hits(query, project, limit=10_000)
    assert {item_of(h) for h in hits} == expected_window(store, query, project)


@pytest.mark.parametrize("query", QUERIES)
def test_a_project_filtered_by_its_column_gets_the_same_window(store: MemoryStore, small_limits: None,
                                                               monkeypatch: pytest.MonkeyPatch, query: str) -> None:
    # p-big holds 90% of the rows; without vectors the store cannot tell (it counts vector blocks) and uses the
    # token: here it is told, so the column filter and the plan's row checks run (CHECK_BATCH rows at a time)
    monkeypatch.setattr(store_module, "_holds_most", lambda conn, project: project == "p-big")
    hits = store._text_hits(query, "p-big", limit=10_000)
    assert {item_of(h) for h in hits} == expected_window(store, query, "p-big")


def test_the_bounded_walk_answers_with_the_matches_among_the_rows_it_says_it_searched(
        store: MemoryStore, small_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_window, "WALK_BUDGET", 300)
    with store._reading() as conn:
        holding = store_module._holding(conn, ['"alpha"', '"delta"'])[1]
        planned = fts_window.plan(conn, ['"alpha"', '"delta"'], holding, fts_window.OBSERVATIONS, RANK_WINDOW)
    # alpha in half of the rows, delta in a fiftieth: 300 entries reach ~300 / 0.52 rows deep
    assert planned.depth is not None and 400 <= planned.depth <= 800, planned
    hits = store._text_hits("alpha delta", None, limit=10_000)
    observations = {item_of(h) for h in hits if item_of(h) > 0}
    assert observations == {r for r in expected_window(store, "alpha delta", None, depth=planned.depth) if r > 0}
    assert len(observations) == planned.limit > 0
    # words never together: nothing counted, no window query at all
    with store._reading() as conn:
        never = fts_window.plan(conn, ['"alpha"', '"beta"'], [1500, 1500], fts_window.OBSERVATIONS, RANK_WINDOW)
    assert never.limit == 0


def test_a_column_filter_checks_at_most_its_cap_and_says_how_deep(store: MemoryStore, small_limits: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # p-small's rows are a tenth: with a cap of 50 rows checked, 5 of them are p-small's, the rest unread
    monkeypatch.setattr(fts_window, "CHECK_CAP", 50)
    with store._reading() as conn:
        holding = store_module._holding(conn, ['"common"'])[1]
        planned = fts_window.plan(conn, ['"common"'], holding, fts_window.OBSERVATIONS, RANK_WINDOW, "p-small")
    assert planned.limit == 5 and planned.depth == 50, planned
    monkeypatch.setattr(store_module, "_holds_most", lambda conn, project: True)
    hits = store._text_hits("common", "p-small", limit=10_000)
    observations = sorted((item_of(h) for h in hits if item_of(h) > 0), reverse=True)
    assert observations == [r for r in range(OBSERVATIONS, OBSERVATIONS - 50, -1) if project_of(r - 1) == "p-small"]


def test_the_scope_phrase_is_the_projects_token(store: MemoryStore) -> None:
    with store._reading() as conn:
        n = conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                         (f'scope : "{scope_token("p-small")}"',)).fetchone()[0]
    assert n == (OBSERVATIONS + PROMPTS) // 10
