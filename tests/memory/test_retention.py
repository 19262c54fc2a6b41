"""Retention's deletion path on both backends (a real SQLite file, a real PostgreSQL server): records pruned by age
or by size never come back through any search (words, meaning, hybrid), from this store's cache of codes or from
another process's; the kept ones still do; another project's and a teammate's records are untouched; counts agree;
a prune pass deletes in bounded batches (SQLite's own change counter); a backfill racing a prune leaves no vector
behind. (The setting, the command line and the daily pass: tests/memory/test_retention_settings.py.)"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hooks.memory.pg_store as pg_module
import hooks.memory.store as store_module
from hooks.memory.config import RetentionRule, load_config
from hooks.memory.embedder import get_embedder
from hooks.memory.retention import DAY, PRUNE_BATCH, Removed
from hooks.memory.store import MemoryStore
from tests.memory.paraphrases import OBSERVATIONS, QUESTIONS

NOW = time.time()
OLD, NEW = OBSERVATIONS[:15], OBSERVATIONS[15:]
OLD_PROMPT = "why does the container keep restarting on the staging cluster"
NEW_PROMPT = "make the invoice totals exact to the cent"
OLD_SUMMARY = ("Request: staging restarts", "Outcome: the liveness probe timed out before the JVM warmed up")
NEW_SUMMARY = ("Request: invoice totals", "Outcome: money is Decimal now, rounded the banker's way")
OTHER = ["the gardening planner forgot which seeds were sown in March",
         "watering reminders fired at 3 am because the timezone was unset",
         "the greenhouse sensor reported humidity above one hundred percent"]
MODES = ("text", "meaning", "hybrid")


class Clock:
    """The stores' clock seam: rows are stamped with `now`, which a test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Memory:
    """One memory of either backend, and ways to open stores on it (each its own connection and cache of codes)."""

    backend: str
    root: Path
    url: str | None = None
    opened: list[Any] = field(default_factory=list)

    def open(self, clock: Callable[[], float] = time.time, user: str = "alice") -> Any:
        data = self.root / user
        if self.backend == "sqlite":
            store: Any = MemoryStore(data / "memory.sqlite3", clock=clock)
        else:
            env = {"ORION_MEMORY_URL": self.url or "", "ORION_MEMORY_TEAM": "core", "ORION_MEMORY_USER": user}
            store = pg_module.PostgresMemoryStore(load_config(env, self.root / "no-settings.json"), data, clock=clock)
        self.opened.append(store)
        return store

    def sql(self, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """A query on the database itself, on a connection of its own (`?` placeholders, both backends)."""
        if self.backend == "sqlite":
            conn = sqlite3.connect(str(self.root / "alice" / "memory.sqlite3"))
            try:
                return conn.execute(query, params).fetchall()
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.url or "", options=f"-c search_path={pg_module.SCHEMA}") as conn:
            return conn.execute(query.replace("?", "%s"), params).fetchall()


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """Each test once per backend: a SQLite file, and a fresh database on a real PostgreSQL (tests/pg_server.py)."""
    assert get_embedder() is not None, "the embedding model (the wordllama wheel) is part of the test environment"
    url = request.getfixturevalue("pg_server").create_database() if request.param == "postgres" else None
    mem = Memory(request.param, tmp_path, url)
    yield mem
    for store in mem.opened:
        store.close()


def outcome(text: str) -> str:
    """Words a text search finds a record by on both backends: plain words of what it says after its tool call
    (PostgreSQL's parser keeps `json.loads` or `5432` whole where FTS5 splits them)."""
    plain = [w.strip(",;:.") for w in text.split("-> ", 1)[-1].split()]
    return " ".join([w for w in plain if w.isalpha()][:8])


def pairs(hits: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(h["project"], h["text"]) for h in hits}


def fill_old_and_new(store: Any, clock: Clock) -> None:
    """p1: 15 observations, a prompt and a summary 40 days old, 15 and another prompt and summary a day old; p2:
    three observations 40 days old (another project, under no rule)."""
    clock.now = NOW - 40 * DAY
    for tool, text in OLD:
        store.add_observation("s-old", "p1", 1, tool, text)
    store.add_prompt("s-old", "p1", 1, OLD_PROMPT)
    store.upsert_summary("s-old", "p1", 1, *OLD_SUMMARY)
    for text in OTHER:
        store.add_observation("s-p2", "p2", 1, "Edit", text)
    clock.now = NOW - DAY
    for tool, text in NEW:
        store.add_observation("s-new", "p1", 1, tool, text)
    store.add_prompt("s-new", "p1", 1, NEW_PROMPT)
    store.upsert_summary("s-new", "p1", 1, *NEW_SUMMARY)
    clock.now = NOW


def answers(store: Any) -> dict[tuple[str, str, str | None], list[tuple[str, str]]]:
    """Every question's hits, by mode and project filter: what a user would see."""
    return {(q, mode, project): [(h["project"], h["text"]) for h in store.search(q, project=project, limit=10,
                                                                                 mode=mode)]
            for q, _ in QUESTIONS for mode in MODES for project in ("p1", None)}


def test_an_age_limit_removes_old_records_from_every_search_and_keeps_the_rest(memory: Memory) -> None:
    clock = Clock(NOW)
    store = memory.open(clock)
    fill_old_and_new(store, clock)
    another = memory.open()  # another sidecar on the same memory, its cache of codes loaded before the prune
    for s in (store, another):
        answers(s)
    gone = {("p1", t) for _, t in OLD} | {("p1", OLD_PROMPT), ("p1", "\n".join(OLD_SUMMARY))}
    kept = {("p1", t) for _, t in NEW} | {("p1", NEW_PROMPT), ("p1", "\n".join(NEW_SUMMARY))}
    found_before = {q for q, answer in QUESTIONS if answer >= 15 and ("p1", OBSERVATIONS[answer][1]) in pairs(
        store.search(q, project="p1", limit=5, mode="meaning"))}
    assert len(found_before) >= 5

    rule = RetentionRule(max_age_days=30)
    preview = store.preview_prune("p1", rule)
    assert preview.as_dict() == {**preview.as_dict(), "observations": 15, "prompts": 1, "summaries": 1,
                                 "sessions": 1, "vectors": 17}
    assert preview.bytes > 17 * 512
    assert store.prune("p1", rule) == preview
    assert store.preview_prune("p1", rule) == Removed() and store.prune("p1", rule) == Removed()

    for s in (store, another, memory.open()):  # patched caches, and a cache loaded after the prune
        for q in [q for q, _ in QUESTIONS] + [outcome(t) for _, t in OLD] + [OLD_PROMPT, OLD_SUMMARY[1]]:
            for mode in MODES:
                for project in ("p1", None):
                    assert not pairs(s.search(q, project=project, limit=50, mode=mode)) & gone, (q, mode, project)
        for _, text in NEW:  # every kept record is found by its words
            assert ("p1", text) in pairs(s.search(outcome(text), project="p1", limit=5, mode="text"))
        for q in found_before:  # and by meaning, as before
            answer = next(OBSERVATIONS[a][1] for qq, a in QUESTIONS if qq == q)
            assert ("p1", answer) in pairs(s.search(q, project="p1", limit=5, mode="meaning"))
            assert ("p1", answer) in pairs(s.search(q, project="p1", limit=5, mode="hybrid"))
        assert {t for _, t in pairs(s.search("gardening seeds timezone greenhouse", project="p2", limit=10,
                                             mode="meaning"))} == set(OTHER)  # p2 was under no rule
    assert answers(store) == answers(another) == answers(memory.open())
    for text in (NEW_PROMPT, "\n".join(NEW_SUMMARY)):  # the kept prompt and summary too
        assert ("p1", text) in pairs(store.search(outcome(text), project="p1", limit=5, mode="text"))
    assert {("p1", NEW_PROMPT)} <= kept

    status = store.vector_status()
    assert status["items"] == status["embedded"] == 15 + 2 + 3
    usage = store.usage()
    assert usage["items"] == {**usage["items"], "observations": 18, "summaries": 1, "prompts": 1, "vectors": 20}
    assert memory.sql("SELECT count(*) FROM memory_vectors") == [(20,)]
    assert sorted(r[0] for r in memory.sql("SELECT session_id FROM sessions")) == ["s-new", "s-p2"]
    # The emptied session is gone; writing to it again records it anew.
    store.add_observation("s-old", "p1", 2, "Edit", "the staging probe now waits ninety seconds")
    assert store.search("staging probe ninety seconds", project="p1", limit=3, mode="text")[0]["sessionId"] == "s-old"


def test_a_size_limit_keeps_the_newest_and_every_cache_forgets_the_rest(memory: Memory) -> None:
    clock = Clock(NOW - 10 * DAY)
    store = memory.open(clock)
    texts = [f"note {i}: {OBSERVATIONS[i % 30][1]}" for i in range(300)]
    for i, text in enumerate(texts):
        clock.now += 60
        store.add_observation(f"s{i // 100}", "p1", 1 + i % 7, "Edit", text)
        if i % 50 == 0:
            store.add_prompt(f"s{i // 100}", "p1", 1 + i // 50, f"prompt number {i} about the release")
    store.add_observation("s-p2", "p2", 1, "Edit", OTHER[0])
    another = memory.open()
    for s in (store, another):
        for project in ("p1", None):
            s.search(QUESTIONS[0][0], project=project, limit=5, mode="meaning")  # caches of codes loaded

    removed = store.prune("p1", RetentionRule(max_observations=100))
    # The newest 100 stay; the prompts older than the oldest kept observation go with the history (0, 50, ..., 150).
    assert (removed.observations, removed.prompts, removed.vectors) == (200, 4, 204)
    kept = set(texts[200:]) | {"prompt number 200 about the release", "prompt number 250 about the release"}
    for s in (store, another, memory.open()):
        hits = s.search(QUESTIONS[0][0], project="p1", limit=100, mode="meaning")
        assert len(hits) == 100 and {h["text"] for h in hits} <= kept
        assert {h["text"] for h in s.search(QUESTIONS[0][0], limit=100, mode="meaning")} <= kept | {OTHER[0]}
    assert_caches_hold_only_what_is_indexed(memory, (store, another))

    # The index goes on after tombstones and deleted blocks: new records are found, and a second prune keeps 100.
    for i in range(300, 340):
        clock.now += 60
        texts.append(f"note {i}: {OBSERVATIONS[i % 30][1]}")
        store.add_observation("s3", "p1", 1, "Edit", texts[-1])
    assert store.prune("p1", RetentionRule(max_observations=100)).observations == 40
    for s in (store, another):
        hits = s.search("note 339", project="p1", limit=100, mode="meaning")
        assert {h["text"] for h in hits} <= set(texts[240:]) | {"prompt number 250 about the release"}
        assert texts[339] in {h["text"] for h in s.search(outcome(texts[339]), project="p1", limit=100)}
    assert answers(store) == answers(another) == answers(memory.open())
    assert_caches_hold_only_what_is_indexed(memory, (store, another))
    status = store.vector_status()
    assert status["items"] == status["embedded"] == 100 + 1 + 1  # 100 observations, the 250th prompt, p2's note


def assert_caches_hold_only_what_is_indexed(memory: Memory, stores: tuple[Any, ...]) -> None:
    """Each store's cached codes (searched with nothing written since) are the index's items, no deleted one."""
    indexed = {int(r[0]) for r in memory.sql("SELECT item FROM memory_vectors")}
    for store in stores:
        store.search(QUESTIONS[1][0], project="p1", limit=1, mode="meaning")
        store.search(QUESTIONS[1][0], limit=1, mode="meaning")
        cache = store._vectors.cache
        for entry in cache._entries.values():
            live = {int(i) for i in entry.items[:entry.size] if i}
            assert live <= indexed
        assert {int(i) for entry in cache._entries.values() for i in entry.items[:entry.size] if i} == indexed


def test_a_block_id_handed_out_again_is_not_mistaken_for_the_old_one(tmp_path: Path) -> None:
    """SQLite reuses the largest rowid once its row is gone: the last block's id, deleted with its project's
    records, comes back for the next new block; a cache that held the old block must hold the new one, slot for
    slot (and a cache left with nothing but deleted blocks starts over)."""
    clock = Clock(NOW)
    memory = Memory("sqlite", tmp_path)
    store = memory.open(clock)
    for tool, text in OBSERVATIONS:
        store.add_observation("s1", "p1", 1, tool, text)
    clock.now = NOW - 5 * DAY
    for text in OTHER:
        store.add_observation("s2", "p2", 1, "Edit", text)
    reader = memory.open()
    for project in ("p2", None):
        assert reader.search(OTHER[0], project=project, limit=3, mode="meaning")
    last = store._conn.execute("SELECT max(id) FROM memory_vector_blocks").fetchone()[0]
    clock.now = NOW
    assert store.prune("p2", RetentionRule(max_age_days=1)).observations == len(OTHER)
    store.add_observation("s3", "p2", 1, "Edit", OLD[5][1])
    assert memory.sql("SELECT id FROM memory_vector_blocks WHERE project = 'p2'") == [(last,)]
    for s in (reader, store):
        assert [h["text"] for h in s.search(OTHER[0], project="p2", limit=50, mode="meaning")] == [OLD[5][1]]
        assert not {h["text"] for h in s.search(OTHER[0], limit=50, mode="hybrid")} & set(OTHER)
    assert_caches_hold_only_what_is_indexed(memory, (reader, store))

    assert store.prune("p1", RetentionRule(max_observations=1)).observations == len(OBSERVATIONS) - 1
    assert_caches_hold_only_what_is_indexed(memory, (reader, store))
    for s in (reader, store):
        assert {h["text"] for h in s.search(QUESTIONS[0][0], limit=50, mode="meaning")} == {
            OBSERVATIONS[-1][1], OLD[5][1]}
    for s in memory.opened:
        s.close()
    memory.opened.clear()


def test_a_teammates_rows_of_a_shared_project_are_theirs_to_keep(pg_server, tmp_path: Path) -> None:
    memory = Memory("postgres", tmp_path, pg_server.create_database())
    try:
        clock = Clock(NOW - 40 * DAY)
        alice, bob = memory.open(clock, "alice"), memory.open(clock, "bob")
        alice.add_observation("a1", "team:app", 1, "Edit", OLD[0][1])
        bob.add_observation("b1", "team:app", 1, "Edit", OLD[1][1])
        clock.now = NOW
        assert alice.prune("team:app", RetentionRule(max_age_days=30)).observations == 1
        for s in (alice, bob):
            texts = {h["text"] for h in s.search(QUESTIONS[0][0], project="team:app", limit=10, mode="meaning")}
            assert texts == {OLD[1][1]}
        assert alice.retention_projects() == [] and bob.retention_projects() == ["team:app"]
    finally:
        for store in memory.opened:
            store.close()


def test_a_prune_pass_deletes_in_bounded_batches(tmp_path: Path) -> None:
    """Counted with SQLite's own counter (`total_changes`, rows changed per transaction) and a second connection
    (observations left when each transaction begins): no transaction removes more than a batch."""
    clock = Clock(NOW - 100 * DAY)
    path = tmp_path / "memory.sqlite3"
    store = MemoryStore(path, clock=clock)
    total = 2 * PRUNE_BATCH + 150
    for i in range(total):
        store.add_observation(f"s{i // 200}", "p1", 1, "Bash", f"step {i} of the nightly build")
    clock.now = NOW
    transactions: list[tuple[int, int]] = []  # (rows changed, observations left before it) per transaction
    watcher = sqlite3.connect(str(path))
    begun: list[tuple[int, int]] = []

    def trace(statement: str) -> None:
        if statement.startswith("BEGIN"):
            begun.append((store._conn.total_changes,
                          watcher.execute("SELECT count(*) FROM observations").fetchone()[0]))
        elif statement == "COMMIT":
            changes, left = begun[-1]
            transactions.append((store._conn.total_changes - changes, left))

    store._conn.set_trace_callback(trace)
    removed = store.prune("p1", RetentionRule(max_age_days=30))
    store._conn.set_trace_callback(None)
    left_after = watcher.execute("SELECT count(*) FROM observations").fetchone()[0]
    watcher.close()
    assert removed.observations == total and removed.sessions == 6 and left_after == 0
    lefts = [left for _, left in transactions] + [left_after]
    steps = [a - b for a, b in zip(lefts, lefts[1:])]
    assert len(transactions) >= 3 and sum(steps) == total
    assert max(steps) <= PRUNE_BATCH  # observations removed per transaction
    # Rows changed per transaction: an observation's own row, its vector's, its full-text rows (FTS5 counts the
    # writes to its own tables, ~3 a row), and a share of its block's rewrite: about 5 each, 8 is the bound.
    assert max(changes for changes, _ in transactions) <= PRUNE_BATCH * 8
    store.close()


def test_a_prune_pass_on_postgres_deletes_in_bounded_batches(pg_server, tmp_path: Path, monkeypatch) -> None:
    memory = Memory("postgres", tmp_path, pg_server.create_database())
    try:
        clock = Clock(NOW - 100 * DAY)
        store = memory.open(clock)
        with monkeypatch.context() as m:
            m.setattr(pg_module, "get_embedder", lambda: None)  # words only: the fill stays quick
            for i in range(260):
                store.add_observation(f"s{i // 100}", "p1", 1, "Bash", f"step {i} of the nightly build")
        clock.now = NOW
        per_transaction: list[int] = []
        real_write = store._write

        def counted(fn: Callable[[Any], Any]) -> Any:
            before = memory.sql("SELECT count(*) FROM observations")[0][0]
            result = real_write(fn)
            per_transaction.append(before - memory.sql("SELECT count(*) FROM observations")[0][0])
            return result

        monkeypatch.setattr(store, "_write", counted)
        assert store.prune("p1", RetentionRule(max_age_days=30), batch=100).observations == 260
        assert per_transaction[:3] == [100, 100, 60] and max(per_transaction) <= 100
    finally:
        for store in memory.opened:
            store.close()


class PruningEmbedder:
    """The real model, which runs `between()` once, the first time the backfill embeds (after it read its rows and
    before it writes their vectors): a prune landing in that gap."""

    def __init__(self, between: Callable[[], None]) -> None:
        self.inner = get_embedder()
        self.model_id = self.inner.model_id
        self.between: Callable[[], None] | None = between

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.between is not None and len(texts) > 1:
            between, self.between = self.between, None
            between()
        return self.inner.embed(texts)

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        return self.inner.codes(vectors)


def test_a_backfill_racing_a_prune_leaves_no_vector_behind(memory: Memory, monkeypatch) -> None:
    clock = Clock(NOW - 40 * DAY)
    store = memory.open(clock)
    module = store_module if memory.backend == "sqlite" else pg_module
    with monkeypatch.context() as m:
        m.setattr(module, "get_embedder", lambda: None)  # rows without vectors, as before search by meaning existed
        for tool, text in OLD:
            store.add_observation("s-old", "p1", 1, tool, text)
        clock.now = NOW - DAY
        for tool, text in NEW:
            store.add_observation("s-new", "p1", 1, tool, text)
    clock.now = NOW
    pruned: list[Removed] = []
    embedder = PruningEmbedder(lambda: pruned.append(store.prune("p1", RetentionRule(max_age_days=30))))
    monkeypatch.setattr(module, "get_embedder", lambda: embedder)
    store.backfill()
    assert pruned and pruned[0].observations == 15
    status = store.vector_status()
    assert status["items"] == status["embedded"] == 15
    assert memory.sql("SELECT count(*) FROM memory_vectors") == [(15,)]
    assert not pairs(store.search(QUESTIONS[0][0], project="p1", limit=50, mode="meaning")) & {
        ("p1", t) for _, t in OLD}
