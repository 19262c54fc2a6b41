"""Text search's bounded ranking on the team's PostgreSQL memory (a real server), through the public search: of each
table only the newest RANK_WINDOW matches are ranked, whichever step finds them (hooks/memory/pg_text.py: the newest
rows walked, the GIN index's matches, or the newest matches of a table with many), with fewer matches every one is
ranked (an old best match comes first), words common apart but never together find nothing, and a project's window
holds only its own rows. The thresholds are made small so a few rows show what a million would. (SQLite:
tests/memory/test_bm25.py and tests/memory/test_bounded_cost.py.)"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import hooks.memory.pg_store as pg_module
import hooks.memory.pg_text as pg_text
from hooks.memory.config import load_config
from hooks.memory.pg_store import PostgresMemoryStore

WINDOW, WALK, DENSE = 4, 6, 10
BEST = "login login login failed on the login page"


@pytest.fixture
def store(pg_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(pg_module, "RANK_WINDOW", WINDOW)
    monkeypatch.setattr(pg_text, "WALK", WALK)
    monkeypatch.setattr(pg_text, "DENSE", DENSE)
    monkeypatch.setattr(pg_text, "WALK_MAX", WALK)  # the walk goes no further (each test reaches the step it means)
    monkeypatch.setattr(pg_text, "SORTED_MAX", 4 * DENSE)
    env = {"ORION_MEMORY_URL": pg_server.create_database(), "ORION_MEMORY_TEAM": "core", "ORION_MEMORY_USER": "alice"}
    opened = PostgresMemoryStore(load_config(env, tmp_path / "no-settings.json"), tmp_path / "data")
    yield opened
    opened.close()


def analyzed(store: PostgresMemoryStore, analyze: bool) -> None:
    """With `analyze`, the tables' sizes are known to the planner (step 2 may then read every match and sort)."""
    if analyze:
        with psycopg.connect(store.config.url or "", autocommit=True) as conn:
            conn.execute("ANALYZE")


def observe(store: PostgresMemoryStore, texts: list[str], project: str = "p1") -> None:
    """Observations in the order given, each stored later than the one before."""
    for n, text in enumerate(texts):
        store.add_observation("s1", project, n + 1, "Bash", text)


def matches(n: int, start: int = 0) -> list[str]:
    return [f"note {start + i}: the login took a while" for i in range(n)]


def others(n: int) -> list[str]:
    return [f"note {i}: the build went fine" for i in range(n)]


def by_words(store: PostgresMemoryStore, query: str, mode: str = "text", project: str | None = "p1") -> list[str]:
    return [h["text"] for h in store.search(query, project=project, limit=20, mode=mode) if "text" in h["matchedBy"]]


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_with_few_matches_every_one_is_ranked_and_the_best_old_one_comes_first(store, mode: str) -> None:
    observe(store, [BEST] + matches(WINDOW - 1) + others(WALK))
    found = by_words(store, "login", mode)
    assert len(found) == WINDOW and found[0] == BEST
    hits = store.search("login", project="p1", limit=1, mode=mode)
    assert "«login»" in hits[0]["snippet"]


@pytest.mark.parametrize("analyze", [False, True], ids=["sizes-unknown", "sizes-known"])
@pytest.mark.parametrize("behind", [0, WALK - 1, WALK], ids=["among-the-newest-rows", "behind-newer-rows",
                                                           "none-among-the-newest-rows"])
def test_only_the_newest_window_of_many_matches_is_ranked(store, behind: int, analyze: bool) -> None:
    """Matches dense among the newest rows (found by the walk) or behind newer rows (found in the GIN index: all of
    them read and sorted when the walk met one and the sizes are known, else at most DENSE)."""
    newer = matches(DENSE - 3)
    observe(store, [BEST] + newer + others(behind))
    analyzed(store, analyze)
    assert sorted(by_words(store, "login")) == sorted(newer[-WINDOW:])


def test_matches_met_often_enough_in_the_newest_rows_are_found_by_walking_further(store, monkeypatch) -> None:
    monkeypatch.setattr(pg_text, "WALK_MAX", 4 * WALK)
    rows = [BEST] + [text for n in range(WALK) for text in (matches(1, n)[0], others(1)[0])]
    observe(store, rows)  # every second row matches: half a window among the newest WALK rows
    newer = [text for text in rows if "login" in text]
    assert sorted(by_words(store, "login")) == sorted(newer[-WINDOW:])


@pytest.mark.parametrize("analyze", [False, True], ids=["sizes-unknown", "sizes-known"])
@pytest.mark.parametrize("behind", [WALK - 1, WALK], ids=["behind-newer-rows", "none-among-the-newest-rows"])
def test_a_table_with_more_matches_than_the_index_step_takes_ranks_its_newest(store, behind: int,
                                                                              analyze: bool) -> None:
    newer = matches(DENSE + 3)
    observe(store, [BEST] + newer + others(behind))
    analyzed(store, analyze)
    assert sorted(by_words(store, "login")) == sorted(newer[-WINDOW:])
    assert sorted(by_words(store, "login", "hybrid")) == sorted(newer[-WINDOW:])


def test_words_common_apart_but_never_together_find_nothing(store) -> None:
    observe(store, [f"note {i}: bash ran the script" for i in range(DENSE + 2)]
            + [f"note {i}: the path was wrong" for i in range(DENSE + 2)])
    assert by_words(store, "bash path") == []
    assert len(by_words(store, "bash")) == WINDOW


def test_a_dense_table_and_a_sparse_one_in_one_search(store) -> None:
    newer = [f"note {n}: deploy of the gateway" for n in range(DENSE + 4)]
    observe(store, newer)
    number = store.begin_prompt("s1", "p1")
    store.add_prompt("s1", "p1", number, "why did the gateway deploy fail last week")
    store.upsert_summary("s1", "p1", number, "fix the gateway deploy", "the gateway deploy works again")
    hits = store.search("gateway deploy", project="p1", limit=20, mode="text")
    kinds = [h["kind"] for h in hits]
    assert kinds.count("observation") == WINDOW  # the newest window of the table with many
    assert kinds.count("prompt") == 1 and kinds.count("summary") == 1  # every match of the others
    assert sorted(h["text"] for h in hits if h["kind"] == "observation") == sorted(newer[-WINDOW:])


def test_a_projects_window_holds_its_own_matches_whatever_other_projects_add(store) -> None:
    mine = [BEST, "the login worked"]
    observe(store, mine, project="p1")
    observe(store, matches(DENSE + WALK), project="p2")  # newer, and many more
    assert by_words(store, "login") == mine
    everywhere = by_words(store, "login", project=None)  # no project: the newest window of every project's
    assert len(everywhere) == WINDOW and not set(everywhere) & set(mine)
