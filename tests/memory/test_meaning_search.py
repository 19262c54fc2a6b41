"""Search by meaning on the SQLite memory: paraphrases found, scope kept, vectors in the rows' own transactions,
the backfill resumable, a model change re-embeds. (The same on PostgreSQL: tests/memory/test_meaning_postgres.py;
over the wire: tests/memory/test_meaning_over_the_wire.py.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

import hooks.memory.store as store_module
from hooks.memory.embedder import get_embedder
from hooks.memory.store import MemoryStore
from hooks.memory.vectors import BLOCK, unpack_vectors
from tests.memory.paraphrases import OBSERVATIONS, QUESTIONS


def fill(store: MemoryStore, project: str = "p1", session: str = "s1") -> None:
    for n, (tool, text) in enumerate(OBSERVATIONS):
        store.add_observation(session, project, n // 5 + 1, tool, text)


def found(store: MemoryStore, mode: str, project: str | None = "p1", top: int = 5) -> int:
    hits = 0
    for question, answer in QUESTIONS:
        results = store.search(question, project=project, limit=top, mode=mode)
        hits += any(r["text"] == OBSERVATIONS[answer][1] for r in results)
    return hits


def test_paraphrases_are_found_by_meaning_and_not_by_words(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    fill(store)
    assert found(store, "text") == 0  # no question shares a word with its answer
    assert found(store, "meaning") >= 12
    assert found(store, "hybrid") >= 12
    top = store.search(QUESTIONS[1][0], project="p1", limit=3, mode="hybrid")[0]
    assert top["matchedBy"] == ["meaning"] and top["why"]["meaning"]["rank"] == 1
    assert 0 < top["why"]["meaning"]["similarity"] <= 1 and top["snippet"]


def test_hybrid_puts_what_both_rankings_find_first(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    fill(store)
    hits = store.search("keyset pagination", project="p1", limit=5)
    assert hits[0]["text"] == OBSERVATIONS[12][1]
    assert hits[0]["matchedBy"] == ["text", "meaning"] and "«keyset»" in hits[0]["snippet"]
    assert hits[0]["score"] > max(h["score"] for h in hits[1:])
    with pytest.raises(ValueError, match="mode"):
        store.search("x", mode="vibes")


def test_meaning_search_keeps_to_its_project(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    fill(store, "p1")
    store.add_observation("s2", "p2", 1, "Edit", "an unrelated note about gardening tomatoes in spring")
    hits = store.search("plants and vegetables", project="p2", limit=10, mode="meaning")
    assert [h["project"] for h in hits] == ["p2"]
    assert all(h["project"] == "p1" for h in store.search("plants and vegetables", project="p1", limit=40,
                                                          mode="meaning"))
    assert store.search("anything", project="p3", limit=10, mode="meaning") == []
    everywhere = store.search("plants and vegetables", project=None, limit=1, mode="meaning")
    assert everywhere[0]["project"] == "p2"


def test_every_kind_is_embedded_from_its_stored_text_in_the_same_transaction(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    store.add_prompt("s1", "p1", 1, "why is the build so slow on Mondays")
    store.add_prompt("s1", "p1", 1, "why does the nightly export time out")  # the same prompt, replaced
    store.upsert_summary("s1", "p1", 1, "Request: export", "Outcome: the nightly export now streams rows")
    store.add_observation("s1", "p1", 1, "Bash", "Bash {\"command\": \"make\"}\n-> token sk-ant-api03-" + "A" * 90)
    conn = sqlite3.connect(str(tmp_path / "memory.sqlite3"))
    rows = conn.execute("SELECT f.rowid, f.text, v.vector FROM memory_fts f JOIN memory_vectors v"
                        " ON v.item = f.rowid ORDER BY f.rowid").fetchall()
    assert len(rows) == 3 == conn.execute("SELECT count(*) FROM memory_fts").fetchone()[0]
    embedder = get_embedder()
    for _, text, blob in rows:
        # the vector is the stored (redacted) text's, so nothing redacted or private reaches it
        assert np.allclose(unpack_vectors([blob])[0], embedder.embed_one(text), atol=2e-3)
    assert not any("Monday" in text for _, text, _ in rows)
    assert any("[REDACTED" in text for _, text, _ in rows)
    # the replaced prompt kept its item: one vector, one code
    assert conn.execute("SELECT sum(count) FROM memory_vector_blocks").fetchone()[0] == 3


def test_a_failed_write_leaves_neither_row_nor_vector(tmp_path: Path, monkeypatch) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    store.add_observation("s1", "p1", 1, "Bash", "first")

    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error (test)")

    monkeypatch.setattr(store._vectors, "put", broken)
    with pytest.raises(sqlite3.OperationalError):
        store.add_observation("s1", "p1", 1, "Bash", "second")
    monkeypatch.undo()
    assert [o["text"] for o in store.observations("s1")] == ["first"]
    assert store.vector_status()["embedded"] == 1 and store.vector_status()["items"] == 1


def test_results_are_the_same_after_a_restart(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    fill(store)
    before = [store.search(q, project="p1", limit=5) for q, _ in QUESTIONS]
    store.close()
    again = MemoryStore(tmp_path / "memory.sqlite3")
    assert [again.search(q, project="p1", limit=5) for q, _ in QUESTIONS] == before


def test_blocks_fill_and_overflow_and_every_item_stays_reachable(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3")
    n = BLOCK * 2 + 7
    for i in range(n):
        store.add_observation("s1", "p1", 1, "Bash", f"step {i}: compiled module number {i} of the firmware")
    conn = sqlite3.connect(str(tmp_path / "memory.sqlite3"))
    counts = [c for (c,) in conn.execute("SELECT count FROM memory_vector_blocks ORDER BY id")]
    assert counts == [BLOCK, BLOCK, 7]
    everything = store.search("firmware module compiled", project="p1", limit=100, mode="meaning")
    assert len(everything) == 100 and len({h["text"] for h in everything}) == 100


def test_the_backfill_embeds_what_was_stored_without_vectors_and_resumes(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "memory.sqlite3"
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)  # memory written before the model existed
    store = MemoryStore(path)
    fill(store)
    store.add_prompt("s1", "p1", 1, "what broke the nightly backup")
    store.upsert_summary("s1", "p1", 1, "Request: backup", "Outcome: the dump had no password")
    assert store.search(QUESTIONS[0][0], project="p1", mode="meaning") == []  # nothing to find by meaning
    store.close()
    monkeypatch.undo()

    store = MemoryStore(path)
    assert store.vector_status() | {"items": 32, "embedded": 0} == store.vector_status()
    seen: list[tuple[int, int]] = []
    calls = iter([False, True])  # stop after the first batch: a killed backfill
    assert store.backfill(batch=10, progress=lambda d, l: seen.append((d, l)), should_stop=lambda: next(calls)) == 10
    assert seen == [(10, 22)] and store.vector_status()["embedded"] == 10
    store.close()
    store = MemoryStore(path)  # a new process goes on from there
    assert store.backfill(batch=10) == 22
    assert store.vector_status()["embedded"] == 32
    assert store.backfill(batch=10) == 0  # nothing left
    assert found(store, "meaning") >= 12


def test_a_model_change_embeds_everything_again(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "memory.sqlite3"
    store = MemoryStore(path)
    fill(store)
    store.close()
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE memory_meta SET value = 'another-model/64' WHERE key = 'embedding_model'")
    conn.commit()
    conn.close()
    store = MemoryStore(path)
    assert store.vector_status()["embedded"] == 0  # another model's vectors count for nothing
    assert store.search(QUESTIONS[0][0], project="p1", mode="meaning") == []  # and are dropped when first used
    assert store.vector_status()["model"] == get_embedder().model_id
    assert store.backfill() == 30
    assert found(store, "meaning") >= 12


def test_without_the_model_hybrid_is_text_and_meaning_is_empty(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "get_embedder", lambda: None)
    store = MemoryStore(tmp_path / "memory.sqlite3")
    fill(store)
    assert store.search("keyset", project="p1", mode="meaning") == []
    hits = store.search("keyset", project="p1")
    assert [h["matchedBy"] for h in hits] == [["text"]]
    assert store.backfill() == 0


def test_a_search_sees_what_another_process_wrote_and_dropped(tmp_path: Path) -> None:
    """The codes a store keeps in memory catch up with every change another connection commits: items added,
    a prompt replaced in an old block, every vector dropped for a model change."""
    path = tmp_path / "memory.sqlite3"
    mine, theirs = MemoryStore(path), MemoryStore(path)
    fill(mine)
    question, answer = QUESTIONS[4]
    assert mine.search(question, project="p1", limit=3, mode="meaning")[0]["text"] == OBSERVATIONS[answer][1]
    theirs.add_prompt("s9", "p1", 1, "the TLS handshake failed because the trust path was incomplete")
    assert mine.search(question, project="p1", limit=3, mode="meaning")[0]["kind"] == "prompt"
    theirs.add_prompt("s9", "p1", 1, "tomatoes and cucumbers in the garden")  # the same prompt, replaced
    top = mine.search(question, project="p1", limit=3, mode="meaning")
    assert all("TLS" not in h["text"] for h in top) and top[0]["text"] == OBSERVATIONS[answer][1]
    assert mine.search("vegetables", project="p1", limit=1, mode="meaning")[0]["kind"] == "prompt"
    conn = sqlite3.connect(str(path))
    conn.execute("UPDATE memory_meta SET value = 'another-model/64' WHERE key = 'embedding_model'")
    conn.commit()
    conn.close()
    theirs.close()
    theirs = MemoryStore(path)
    assert theirs.search(question, project="p1", mode="meaning") == []  # the other model's vectors are dropped
    assert mine.search(question, project="p1", mode="meaning") == []  # and this cache knows it
    theirs.backfill()
    assert mine.search(question, project="p1", limit=3, mode="meaning")[0]["text"] == OBSERVATIONS[answer][1]
