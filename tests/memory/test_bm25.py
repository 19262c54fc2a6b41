"""Full-text ranking without FTS5's pass over every match (hooks/memory/bm25.py): the phrases as FTS5 itself
matched them (its stemmer), BM25's order where the answer is clear, bounded counts that estimate a common word's
rows, snippets that show the marked words."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import hooks.memory.bm25 as bm25
import hooks.memory.store as store_module
from hooks.memory.bm25 import CLOSE, OPEN, TermStats
from hooks.memory.store import MemoryStore


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)  # words only
    return MemoryStore(tmp_path / "memory.sqlite3")


def marked(words: str) -> str:
    """`[x]` marks x as highlight() would."""
    return words.replace("[", OPEN).replace("]", CLOSE)


def test_a_stemmed_instance_counts_for_the_phrase_it_was_matched_for() -> None:
    counts = bm25.phrase_counts(marked("the [charged] card was [charging] again; [retries] and [retry]"),
                                ["charge", "retry"])
    assert counts == {"charge": 2, "retry": 2}
    assert bm25.phrase_counts(marked("[Retry_Login] failed"), ["retry_login"]) == {"retry_login": 1}


def test_the_rare_word_weighs_more_than_the_common_one() -> None:
    stats = TermStats(rows=10_000, holding={"deadlock": 12, "worker": 4_000})
    rare_twice, common_twice = (marked("the [deadlock] in the [worker] and the [deadlock] again"),
                                marked("the [deadlock] in the [worker] and the [worker] again"))
    scores = bm25.score([common_twice, rare_twice], ["deadlock", "worker"], stats)
    assert scores[1] > scores[0] > 0


def test_a_short_row_beats_a_long_one_with_the_same_matches() -> None:
    stats = TermStats(rows=1_000, holding={"timeout": 10})
    short, long_ = marked("[timeout] in the worker"), marked("[timeout] " + "filler words " * 40)
    scores = bm25.score([long_, short], ["timeout"], stats)
    assert scores[1] > scores[0] > 0


def test_a_word_in_every_row_weighs_almost_nothing_as_in_fts5() -> None:
    assert TermStats(rows=100, holding={"the": 100}).idf("the") == pytest.approx(1e-6)


def test_counts_are_exact_below_the_cap_and_estimated_from_density_above() -> None:
    assert bm25.estimate_holding(17, 900, 1_000_000) == 17
    # the newest STATS_CAP matches spread over a tenth of the rows: about a tenth of the table holds it
    assert bm25.estimate_holding(bm25.STATS_CAP, 10 * bm25.STATS_CAP, 100 * bm25.STATS_CAP) == 10 * bm25.STATS_CAP
    assert bm25.estimate_holding(bm25.STATS_CAP, bm25.STATS_CAP, bm25.STATS_CAP) == bm25.STATS_CAP


def test_the_store_estimates_a_common_words_rows_without_reading_them_all(store: MemoryStore,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(1_200):
        text = f"step {i} of the build" + (" flaky" if i % 4 == 0 else "")
        store.add_observation("s1", "p", 1, "Bash", text)
    monkeypatch.setattr(bm25, "STATS_CAP", 100)
    with store._reading() as conn:
        rows, counted, _ = store_module._holding(conn, ['"flaky"', '"build"', '"nowhere"'])
    holding = dict(zip(["flaky", "build", "nowhere"], counted))
    assert rows == 1_200
    assert 240 <= holding["flaky"] <= 360  # 300 hold it; 100 were read
    assert holding["build"] == 1_200 and holding["nowhere"] == 0


def test_ranking_through_the_store_agrees_with_fts5s_own_bm25_on_the_top_hits(store: MemoryStore) -> None:
    texts = ["the cache evicted session keys under memory pressure",
             "session keys expired; the cache evicted them, then the cache evicted more session keys",
             "a cache in front of the database",
             "memory pressure on the build machine",
             "the session cache evicted keys twice: cache evicted, cache evicted",
             "unrelated text about deployments"] + [f"filler note {i} about the cache" for i in range(40)]
    for text in texts:
        store.add_observation("s1", "p", 1, "Note", text)
    ours = [h["text"] for h in store.search("cache evicted session", project="p", limit=3, mode="text")]
    conn = sqlite3.connect(store.path)
    theirs = [r[0] for r in conn.execute(
        "SELECT text FROM memory_fts WHERE memory_fts MATCH '\"cache\" \"evicted\" \"session\"'"
        " ORDER BY bm25(memory_fts, 1.0, 0, 0, 0, 0, 0, 0) LIMIT 3")]
    conn.close()
    assert ours[0] == theirs[0] and set(ours) == set(theirs)


def test_a_snippet_shows_the_marked_stretch_and_where_it_was_cut() -> None:
    text = marked(" ".join(f"w{i}" for i in range(40)) + " the [timeout] hit the [worker] " + "tail " * 30)
    cut = bm25.snippet(text)
    assert cut.startswith("…") and cut.endswith("…") and "«timeout»" in cut and "«worker»" in cut
    assert len(cut.strip("…").split()) == bm25.SNIPPET_WORDS
    assert bm25.snippet(marked("a [short] note")) == "a «short» note"
    # a mark cut by the stretch's end is closed, never left open
    long_mark = marked("[" + " ".join(["x"] * 30) + "]")
    assert bm25.snippet(long_mark).count("«") == bm25.snippet(long_mark).count("»") == 1


def test_a_project_holding_most_of_the_memory_is_filtered_by_its_column_with_the_same_hits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")  # with the model: the vector blocks count each project
    for i in range(160):
        project = "p-big" if i % 5 else "p-small"
        store.add_observation(f"s{i % 7}", project, 1, "Bash", f"the deploy step {i} retried the flaky upload")
    store.add_prompt("s1", "p-big", 1, "why does the upload retry")
    store.add_prompt("s2", "p-small", 1, "the upload retry again")
    chosen = []
    original = store_module._holds_most
    monkeypatch.setattr(store_module, "_holds_most", lambda conn, p: chosen.append(original(conn, p)) or chosen[-1])
    answers = {p: store.search("upload retried", project=p, limit=50, mode="text") for p in ("p-big", "p-small")}
    assert chosen == [True, False]  # 80% of the items: by column; 20%: by its scope token
    for project, hits in answers.items():
        assert hits and all(h["project"] == project for h in hits)
    monkeypatch.setattr(store_module, "_holds_most", lambda conn, p: False)  # the scope token for both
    assert store.search("upload retried", project="p-big", limit=50, mode="text") == answers["p-big"]
    monkeypatch.setattr(store_module, "_holds_most", lambda conn, p: True)  # the column for both
    assert store.search("upload retried", project="p-small", limit=50, mode="text") == answers["p-small"]
