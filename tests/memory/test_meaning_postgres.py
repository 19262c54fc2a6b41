"""Search by meaning on the team's PostgreSQL memory (a real server): paraphrases found, the owners guarantee kept,
shared projects found by teammates, project scope, the same answers after a reopen, vectors made when a spooled write
is replayed, a resumable backfill, a model change re-embeds; the in-memory cache of codes (PgCodeCache) catches up
with what other processes and teammates write, starts over on a model change, keeps the visibility rule, reads no
block when nothing changed, and misses no write when writers commit out of order. (SQLite:
tests/memory/test_meaning_search.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

import hooks.memory.pg_store as pg_module
from hooks.memory.config import load_config
from hooks.memory.embedder import get_embedder
from hooks.memory.pg_store import SCHEMA, PostgresMemoryStore
from tests.memory.paraphrases import OBSERVATIONS, QUESTIONS
from hooks.memory.vectors import BLOCK
from tests.pg_server import PgServer

REPO = Path(__file__).resolve().parents[2]


def open_as(url: str, data: Path, user: str, team: str = "core") -> PostgresMemoryStore:
    """A store of `user` in `team`; the data dir is the installation (its own owner)."""
    env = {"ORION_MEMORY_URL": url, "ORION_MEMORY_TEAM": team, "ORION_MEMORY_USER": user}
    return PostgresMemoryStore(load_config(env, data.parent / "no-settings.json"), data)


@pytest.fixture
def stores():
    opened: list[PostgresMemoryStore] = []

    def keep(store: PostgresMemoryStore) -> PostgresMemoryStore:
        opened.append(store)
        return store

    yield keep
    for store in opened:
        store.close()


def fill(store: PostgresMemoryStore, project: str = "p1", session: str = "s1") -> None:
    for n, (tool, text) in enumerate(OBSERVATIONS):
        store.add_observation(session, project, n // 5 + 1, tool, text)


def found(store: PostgresMemoryStore, mode: str, project: str | None = None, top: int = 5) -> int:
    hits = 0
    for question, answer in QUESTIONS:
        results = store.search(question, project=project, limit=top, mode=mode)
        hits += any(r["text"] == OBSERVATIONS[answer][1] for r in results)
    return hits


VERSIONS = [(v,) for v in range(1, pg_module.SCHEMA_VERSION + 1)]


def sql(url: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, options=f"-c search_path={SCHEMA}") as conn:
        return conn.execute(query, params).fetchall()


class RenamedModel:
    """The same embedder under another model id: what a new wordllama release looks like to the store."""

    def __init__(self, inner: Any, model_id: str) -> None:
        self.inner = inner
        self.model_id = model_id

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        return self.inner.codes(vectors)


def test_paraphrases_are_found_by_meaning_and_not_by_words(pg_server, tmp_path: Path, stores) -> None:
    assert get_embedder() is not None, "the embedding model (the wordllama wheel) is part of the test environment"
    store = stores(open_as(pg_server.create_database(), tmp_path / "alice", "alice"))
    fill(store)
    assert found(store, "text") == 0  # no question shares a word with its answer
    assert found(store, "meaning") >= 12
    assert found(store, "hybrid") >= 12
    top = store.search(QUESTIONS[1][0], limit=3, mode="meaning")[0]
    assert set(top) == {"kind", "sessionId", "project", "text", "snippet", "createdAt", "score", "why", "matchedBy"}
    assert top["matchedBy"] == ["meaning"] and top["why"]["meaning"]["rank"] == 1
    assert top["score"] == top["why"]["meaning"]["similarity"] and 0 < top["score"] <= 1
    hybrid = store.search("keyset pagination", limit=5)
    assert hybrid[0]["text"] == OBSERVATIONS[12][1]
    assert hybrid[0]["matchedBy"] == ["text", "meaning"] and "«keyset»" in hybrid[0]["snippet"]
    text = store.search("keyset pagination", limit=5, mode="text")
    assert [h["matchedBy"] for h in text] == [["text"]] and text[0]["why"]["text"]["rank"] == 1
    with pytest.raises(ValueError, match="mode"):
        store.search("x", mode="vibes")


def test_prompts_and_summaries_are_found_by_meaning_and_a_replaced_one_keeps_one_vector(pg_server, tmp_path: Path,
                                                                                         stores) -> None:
    url = pg_server.create_database()
    store = stores(open_as(url, tmp_path / "alice", "alice"))
    store.add_prompt("s1", "p1", 1, "the nightly database dump is empty")
    store.add_prompt("s1", "p1", 1, "the nightly backup file has zero bytes")  # the same prompt, written again
    store.upsert_summary("s1", "p1", 1, "why are the backups empty", "pg_dump had no password")
    store.upsert_summary("s1", "p1", 1, "why are the backups empty", "pg_dump lacked a password; added .pgpass")
    hits = store.search("archive of the data store contains nothing", limit=5, mode="meaning")
    assert {h["kind"] for h in hits} == {"prompt", "summary"}
    assert {h["text"] for h in hits} == {"the nightly backup file has zero bytes",
                                         "why are the backups empty\npg_dump lacked a password; added .pgpass"}
    assert sql(url, "SELECT count(*) FROM memory_vectors") == [(2,)]
    assert store.vector_status()["items"] == store.vector_status()["embedded"] == 2


def test_another_owners_unshared_rows_are_never_found_by_meaning(pg_server, tmp_path: Path, stores) -> None:
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    alice_again = stores(open_as(url, tmp_path / "alice-new-install", "alice"))  # a fresh installation: another owner
    fill(bob, "app")  # Bob's private project, named like Alice's
    alice.add_observation("a1", "app", 1, "Edit", "Alice renamed the settings loader")
    assert bob.vector_status()["embedded"] == len(OBSERVATIONS)  # the vectors are there: absence below is the filter
    for question, _ in QUESTIONS:
        for who in (alice, alice_again):
            for project in (None, "app"):
                hits = who.search(question, project=project, limit=50, mode="meaning")
                assert all(h["sessionId"] == "a1" for h in hits), (question, hits)
                assert all(h["sessionId"] == "a1" for h in who.search(question, project=project, limit=50))
    assert alice.vector_status()["embedded"] == 1 and alice_again.vector_status()["items"] == 0


def test_a_shared_projects_rows_are_found_by_a_teammate_and_nobody_else(pg_server, tmp_path: Path, stores) -> None:
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    carol = stores(open_as(url, tmp_path / "carol", "carol", team="other"))  # her team also has a "team:app"
    fill(alice, "team:app")
    bob.add_observation("b1", "team:app", 1, "Bash", "Bob added a health check endpoint")
    assert found(bob, "meaning", project="team:app") >= 12  # Alice's shared records, found by Bob
    assert found(bob, "meaning") >= 12
    hits = alice.search("heartbeat route for monitoring", limit=3, mode="meaning")
    assert hits[0]["text"] == "Bob added a health check endpoint"  # and Bob's, found by Alice
    assert found(carol, "meaning") == 0 and found(carol, "hybrid", project="team:app") == 0
    assert carol.search("heartbeat route for monitoring", limit=50, mode="meaning") == []
    # Blocks are per writer: each scans only what its rule lets it see, and a teammate's blocks are visible.
    assert sorted(sql(url, "SELECT shared, project, count FROM memory_vector_blocks")) == [
        (True, "team:app", 1), (True, "team:app", len(OBSERVATIONS))]


def test_meaning_search_keeps_to_its_project(pg_server, tmp_path: Path, stores) -> None:
    store = stores(open_as(pg_server.create_database(), tmp_path / "alice", "alice"))
    fill(store, "p1")
    store.add_observation("s2", "p2", 1, "Edit", "an unrelated note about gardening tomatoes in spring")
    hits = store.search("plants and vegetables", project="p2", limit=10, mode="meaning")
    assert [h["project"] for h in hits] == ["p2"]
    assert found(store, "meaning", project="p2") == 0 and found(store, "meaning", project="p1") >= 12
    assert {h["project"] for h in store.search("plants and vegetables", limit=50, mode="meaning")} == {"p1", "p2"}


def test_answers_are_the_same_after_the_store_is_reopened(pg_server, tmp_path: Path, stores) -> None:
    url = pg_server.create_database()
    store = open_as(url, tmp_path / "alice", "alice")
    fill(store)
    before = {(q, mode): store.search(q, limit=10, mode=mode) for q, _ in QUESTIONS for mode in ("meaning", "hybrid")}
    store.close()
    again = stores(open_as(url, tmp_path / "alice", "alice"))
    after = {(q, mode): again.search(q, limit=10, mode=mode) for q, _ in QUESTIONS for mode in ("meaning", "hybrid")}
    assert after == before
    assert {k: again.vector_status()[k] for k in ("items", "embedded", "model", "available")} == {
        "items": len(OBSERVATIONS), "embedded": len(OBSERVATIONS), "model": get_embedder().model_id, "available": True}
    assert sql(url, "SELECT version FROM schema_version ORDER BY version") == VERSIONS


def test_backfill_embeds_rows_written_without_the_model_and_resumes(pg_server, tmp_path: Path, stores,
                                                                   monkeypatch) -> None:
    url = pg_server.create_database()
    store = stores(open_as(url, tmp_path / "alice", "alice"))
    with monkeypatch.context() as m:
        m.setattr(pg_module, "get_embedder", lambda: None)  # no model: rows are written, vectors are not
        fill(store)
        store.add_prompt("s1", "p1", 1, "the report is slow")
        store.upsert_summary("s1", "p1", 1, "speed up the report", "an index on orders")
        assert store.backfill() == 0
    total = len(OBSERVATIONS) + 2
    assert {k: store.vector_status()[k] for k in ("items", "embedded")} == {"items": total, "embedded": 0}
    assert found(store, "meaning") == 0 and found(store, "text") == 0

    progress: list[tuple[int, int]] = []
    batches = iter(range(100))
    assert store.backfill(batch=8, progress=lambda done, left: progress.append((done, left)),
                          should_stop=lambda: next(batches) >= 2) == 16  # stopped after two batches
    assert progress == [(8, total - 8), (16, total - 16)]
    assert store.vector_status()["embedded"] == 16
    assert sql(url, "SELECT count(*) FROM memory_vectors") == [(16,)]
    assert store.backfill(batch=8) == total - 16  # the next run goes on where the first stopped
    assert store.backfill(batch=8) == 0
    assert store.vector_status()["embedded"] == total
    assert found(store, "meaning") >= 12
    kinds = {h["kind"] for h in store.search("make the orders report faster", limit=10, mode="meaning")}
    assert {"prompt", "summary", "observation"} <= kinds


def test_a_version_1_database_is_migrated_and_its_rows_backfilled(pg_server, tmp_path: Path, stores) -> None:
    url = pg_server.create_database()
    with psycopg.connect(url, autocommit=True) as conn:  # what the previous release left: schema 1, rows, no vectors
        with conn.transaction():
            for statement in pg_module.split_sql(pg_module.MIGRATIONS[1]):
                conn.execute(statement)
            conn.execute(f"CREATE TABLE {SCHEMA}.schema_version (version INTEGER NOT NULL)")
            conn.execute(f"INSERT INTO {SCHEMA}.schema_version VALUES (1)")
    old = stores(open_as(url, tmp_path / "alice", "alice"))
    with psycopg.connect(url) as conn:
        conn.execute(f"INSERT INTO {SCHEMA}.sessions (owner, team, shared, session_id, project, started_at, updated_at)"
                     " VALUES (%s, 'core', false, 's1', 'p1', 0, 0)", (old.owner,))
        for n, (tool, text) in enumerate(OBSERVATIONS):
            conn.execute(f"INSERT INTO {SCHEMA}.observations (obs_key, owner, team, shared, session_id, project,"
                         " prompt_number, tool_name, text, created_at) VALUES (md5(%s)::uuid, %s, 'core', false, 's1',"
                         " 'p1', 1, %s, %s, %s)", (f"k{n}", old.owner, tool, text, n))
    assert sql(url, "SELECT version FROM schema_version ORDER BY version") == VERSIONS
    assert found(old, "meaning") == 0
    assert old.backfill() == len(OBSERVATIONS)
    assert found(old, "meaning") >= 12


def test_a_new_embedding_model_re_embeds_everything(pg_server, tmp_path: Path, stores, monkeypatch, caplog) -> None:
    url = pg_server.create_database()
    first = stores(open_as(url, tmp_path / "alice", "alice"))
    fill(first)
    model = get_embedder().model_id
    assert sql(url, "SELECT value FROM memory_meta WHERE key = 'embedding_model'") == [(model,)]

    monkeypatch.setattr(pg_module, "get_embedder", lambda: RenamedModel(get_embedder(), "wordllama-next/256"))
    caplog.set_level("INFO", logger="hooks.memory")
    upgraded = stores(open_as(url, tmp_path / "alice", "alice"))  # a sidecar of the next release starts
    assert upgraded.search(QUESTIONS[0][0], limit=5, mode="meaning") == []  # the old vectors are dropped, not mixed
    assert sql(url, "SELECT value FROM memory_meta WHERE key = 'embedding_model'") == [("wordllama-next/256",)]
    assert sql(url, "SELECT count(*) FROM memory_vectors") == [(0,)]
    assert any("embedding model changed" in r.getMessage() for r in caplog.records)
    assert {k: upgraded.vector_status()[k] for k in ("model", "embedded")} == {"model": "wordllama-next/256",
                                                                                "embedded": 0}

    # The sidecar that still runs the old model writes its row, but never an old model's vector among the new ones.
    monkeypatch.setattr(pg_module, "get_embedder", lambda: RenamedModel(get_embedder(), model))
    first.add_observation("s2", "p1", 1, "Bash", "written by the old release")
    assert sql(url, "SELECT count(*) FROM memory_vectors") == [(0,)]
    monkeypatch.setattr(pg_module, "get_embedder", lambda: RenamedModel(get_embedder(), "wordllama-next/256"))

    assert upgraded.backfill() == len(OBSERVATIONS) + 1
    assert upgraded.vector_status()["embedded"] == len(OBSERVATIONS) + 1
    assert found(upgraded, "meaning") >= 12


def test_concurrent_writers_of_one_owner_keep_every_block_whole(pg_server, tmp_path: Path, stores) -> None:
    """Two sidecars of one installation append to the same scope's last block at once: every item ends in exactly
    one slot, and every slot points back at its item. A third searches all along: its cache ends equal to the
    database, every item in it once."""
    url = pg_server.create_database()
    writers = [stores(open_as(url, tmp_path / "alice", "alice")) for _ in range(2)]
    reader = stores(open_as(url, tmp_path / "alice", "alice"))
    errors: list[BaseException] = []
    searches = 0
    done = threading.Event()

    def read() -> None:
        nonlocal searches
        try:
            while not done.is_set():
                reader.search(QUESTIONS[searches % len(QUESTIONS)][0], project="p1", limit=5, mode="meaning")
                searches += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def write(store: PostgresMemoryStore, name: str) -> None:
        try:
            for n in range(150):
                store.add_observation(name, "p1", 1, "Bash", f"{name} step {n}: {OBSERVATIONS[n % 30][1]}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, f"w{i}")) for i, s in enumerate(writers)]
    searching = threading.Thread(target=read)
    searching.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    searching.join(timeout=60)
    assert errors == [] and searches > 0
    assert reader.search("step", project="p1", limit=5, mode="meaning")
    assert_cache_is_the_database(reader, url)
    (entry,) = reader._vectors.cache._entries.values()
    live = entry.items[:entry.size][entry.items[:entry.size] != 0]
    assert live.size == len(set(live.tolist())) == 300
    slots = {}
    for block, count, items in sql(url, "SELECT id, count, items FROM memory_vector_blocks"):
        ids = np.frombuffer(bytes(items), dtype="<i8")
        assert len(ids) == count
        slots.update({int(item): (block, slot) for slot, item in enumerate(ids)})
    vectors = {item: (block, slot) for item, block, slot in sql(url, "SELECT item, block, slot FROM memory_vectors")}
    assert len(vectors) == 300 and slots == vectors


def test_a_write_spooled_in_an_outage_gets_its_vector_when_replayed(tmp_path: Path, stores) -> None:
    server = PgServer()
    try:
        url = server.create_database()
        store = stores(open_as(url, tmp_path / "alice", "alice"))
        server.stop()
        store.add_observation("s1", "p1", 1, "Edit", OBSERVATIONS[6][1])
        assert store.status()["pending"] == 1
        spooled = "".join(p.read_text() for p in (tmp_path / "alice" / "memory-spool").rglob("*.jsonl"))
        assert "client_max_body_size" in spooled and "vector" not in spooled  # the spool holds the text, as before
        server.start()
        assert store.wait_flushed(30)
        assert store.vector_status()["embedded"] == 1
        assert store.search(QUESTIONS[1][0], limit=1, mode="meaning")[0]["text"] == OBSERVATIONS[6][1]
    finally:
        server.destroy()


# ---------------------------------------------------------------------- the cache of codes (PgCodeCache)

def assert_cache_is_the_database(store: PostgresMemoryStore, url: str, only: str | None = None) -> None:
    """Every entry of the store's cache (or only the one of project `only`) holds exactly the blocks its filter
    selects in the database now, slot for slot (an entry is current once searched with nothing written since)."""
    cache = store._vectors.cache
    assert cache is not None and cache._entries
    for (where, params), entry in cache._entries.items():
        if only is not None and dict(params).get("project") != only:
            continue
        rows = sql(url, f"SELECT id, count, items, codes FROM memory_vector_blocks WHERE {where}", dict(params))
        assert set(entry.slots) == {r[0] for r in rows}, (where, params)
        for block, count, items, codes in rows:
            start = entry.slots[block]
            assert entry.items[start:start + count].tolist() == np.frombuffer(bytes(items), dtype="<i8").tolist()
            assert not entry.items[start + count:start + BLOCK].any()
            assert entry.code_bytes(np.arange(start, start + count)).tobytes() == bytes(codes)


def cached_scopes(store: PostgresMemoryStore, url: str) -> set[tuple[str, str, bool, str]]:
    """The (owner, team, shared, project) of every block the store's cache holds."""
    ids = [block for entry in store._vectors.cache._entries.values() for block in entry.slots]
    return set(sql(url, "SELECT owner, team, shared, project FROM memory_vector_blocks WHERE id = ANY(%s)", (ids,)))


def reads(store: PostgresMemoryStore) -> tuple[int, int]:
    """(block queries run, block rows they returned) by the store's cache so far."""
    return store._vectors.cache.catch_ups, store._vectors.cache.blocks_read


_WRITER = """
import json, sys
from pathlib import Path
from tests.memory.test_meaning_postgres import open_as
store = open_as(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
assert store.status()["up"]
for op, *args in json.loads(sys.argv[4]):
    getattr(store, op)(*args)
assert store.status()["pending"] == 0
store.close()
"""


def in_another_process(url: str, data: Path, user: str, calls: list[list[Any]]) -> None:
    """`calls` ([method, *args]) made by another sidecar process of `user` on the installation `data`."""
    done = subprocess.run([sys.executable, "-c", _WRITER, url, str(data), user, json.dumps(calls)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr


GC_NOTE = ("Bash {\"command\": \"crontab -l\"}\n-> the invoice mailer ran twice every night because two hosts had the"
           " same cron line; moved it to the single scheduler")
INGRESS = "the kubernetes ingress drops websocket connections after sixty seconds"
STAGING = "the staging database password expired overnight and every deploy failed"


def top(store: PostgresMemoryStore, question: str, project: str | None = None) -> str:
    return store.search(question, project=project, limit=5, mode="meaning")[0]["text"]


def test_the_cache_sees_what_another_process_and_a_teammate_add_and_replace(pg_server, tmp_path: Path,
                                                                           stores) -> None:
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    fill(alice, "p1")
    alice.add_prompt("s1", "p1", 1, "the nightly database dump is empty")
    bob.add_prompt("b1", "team:app", 1, "the css grid collapses on small phones")
    for project in (None, "p1", "team:app"):  # three entries loaded
        assert alice.search("screen layout breaks on mobile", project=project, limit=5, mode="meaning") is not None
    assert reads(alice) == (3, 4)  # None: p1 + team:app; p1; team:app

    # Another sidecar process of Alice's installation appends to p1's block and replaces a prompt in it.
    in_another_process(url, tmp_path / "alice", "alice", [
        ["add_observation", "s9", "p1", 2, "Bash", GC_NOTE],
        ["add_prompt", "s1", "p1", 1, INGRESS]])
    assert top(alice, "billing emails were sent two times each day") == GC_NOTE
    assert top(alice, "realtime socket links cut by the cluster's entry proxy after a minute") == INGRESS
    assert reads(alice) == (4, 5)  # one catch-up, one block read (the changed one), then nothing for the 2nd search
    assert top(alice, "billing emails were sent two times each day", "p1") == GC_NOTE
    assert reads(alice) == (5, 6)
    assert_cache_is_the_database(alice, url)  # the replaced prompt's code too, not only its vector

    # A teammate replaces his prompt in the shared project (no new item), then adds one.
    bob.add_prompt("b1", "team:app", 1, STAGING)
    assert top(alice, "credentials of the pre-production store ran out; releases broke", "team:app") == STAGING
    assert reads(alice) == (6, 7)
    assert_cache_is_the_database(alice, url, only="team:app")  # the others catch up when they are searched
    bob.add_observation("b1", "team:app", 1, "Bash", "Bob added a health check endpoint")
    assert top(alice, "heartbeat route for monitoring") == "Bob added a health check endpoint"
    assert top(alice, "heartbeat route for monitoring", "team:app") == "Bob added a health check endpoint"
    assert top(alice, "billing emails were sent two times each day", "p1") == GC_NOTE
    assert reads(alice) == (9, 9)  # None and team:app read Bob's block once each; p1 ran a catch-up that read none
    assert_cache_is_the_database(alice, url)
    assert found(alice, "meaning") >= 12


def test_a_model_change_makes_the_cache_start_over(pg_server, tmp_path: Path, stores, monkeypatch) -> None:
    url = pg_server.create_database()
    first = stores(open_as(url, tmp_path / "alice", "alice"))
    fill(first)
    assert found(first, "meaning") >= 12
    assert_cache_is_the_database(first, url)
    epoch = sql(url, "SELECT value FROM memory_meta WHERE key = 'vectors_epoch'")

    monkeypatch.setattr(pg_module, "get_embedder", lambda: RenamedModel(get_embedder(), "wordllama-next/256"))
    upgraded = stores(open_as(url, tmp_path / "alice", "alice"))
    assert upgraded.search(QUESTIONS[0][0], limit=5, mode="meaning") == []  # drops every vector: a new epoch
    assert sql(url, "SELECT value FROM memory_meta WHERE key = 'vectors_epoch'") == [(str(int(epoch[0][0]) + 1),)]
    assert first.search(QUESTIONS[0][0], limit=5, mode="meaning") == []  # the first sidecar follows the new model
    (entry,) = first._vectors.cache._entries.values()
    assert entry.size == 0 and not entry.slots  # started over: none of the dropped blocks is kept

    assert upgraded.backfill() == len(OBSERVATIONS)  # the same items again, in new blocks
    blocks, read = reads(first)
    assert found(first, "meaning") >= 12
    assert reads(first) == (blocks + 1, read + 1)
    assert_cache_is_the_database(first, url)
    hits = first.search(QUESTIONS[0][0], limit=50, mode="meaning")
    assert len(hits) == len(OBSERVATIONS) == len({h["text"] for h in hits})  # each item once


def test_the_visibility_rule_holds_through_the_cache(pg_server, tmp_path: Path, stores) -> None:
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    alice_again = stores(open_as(url, tmp_path / "alice-new-install", "alice"))  # another owner
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    carol = stores(open_as(url, tmp_path / "carol", "carol", team="other"))  # her team also has a "team:app"
    alice.add_observation("a1", "app", 1, "Edit", "Alice renamed the settings loader")
    alice.add_observation("a2", "team:app", 1, "Edit", "Alice moved the feature flags to the database")
    for who in (alice, alice_again):
        for project in (None, "app", "team:app"):
            who.search("configuration", project=project, limit=50, mode="meaning")
    loaded = reads(alice)

    # Written after the caches were loaded: rows Alice may not read, and one she may.
    fill(bob, "app")  # Bob's private project, named like Alice's
    alice_again.add_observation("n1", "app", 1, "Bash", OBSERVATIONS[3][1])
    fill(carol, "team:app")
    bob.add_observation("b1", "team:app", 1, "Bash", "Bob added a health check endpoint")

    mine = {"a1", "a2", "b1"}
    for question, _ in QUESTIONS + [("heartbeat route for monitoring", 0)]:
        for project in (None, "app", "team:app"):
            hits = alice.search(question, project=project, limit=50, mode="meaning")
            assert {h["sessionId"] for h in hits} <= mine, (question, project, hits)
            assert {h["sessionId"] for h in alice_again.search(question, project=project, limit=50,
                                                               mode="meaning")} <= {"n1", "a2", "b1"}
    assert top(alice, "heartbeat route for monitoring", "team:app") == "Bob added a health check endpoint"
    assert_cache_is_the_database(alice, url)
    assert_cache_is_the_database(alice_again, url)
    assert cached_scopes(alice, url) == {(alice.owner, "core", False, "app"), (alice.owner, "core", True, "team:app"),
                                         (bob.owner, "core", True, "team:app")}
    assert cached_scopes(alice_again, url) == {(alice_again.owner, "core", False, "app"),
                                               (alice.owner, "core", True, "team:app"),
                                               (bob.owner, "core", True, "team:app")}
    # Alice's catch-ups read only what she may see: Bob's shared block, once for None and once for team:app.
    assert reads(alice) == (loaded[0] + 3, loaded[1] + 2)
    assert found(carol, "meaning", project="team:app") >= 12  # Carol's own team sees her rows
    assert all(h["sessionId"] == "s1" for h in carol.search("heartbeat route for monitoring", limit=50,
                                                            mode="meaning"))


def test_a_second_search_reads_no_block_when_nothing_changed(pg_server, tmp_path: Path, stores,
                                                             monkeypatch) -> None:
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    fill(alice, "p1")
    statements: list[str] = []
    for cls in (psycopg.Cursor, psycopg.ServerCursor):
        def counted(self: Any, query: Any, *args: Any, _real: Any = cls.execute, **kwargs: Any) -> Any:
            statements.append(query if isinstance(query, str) else repr(query))
            return _real(self, query, *args, **kwargs)
        monkeypatch.setattr(cls, "execute", counted)

    assert alice.search(QUESTIONS[0][0], limit=5, mode="meaning")
    assert reads(alice) == (1, 1)
    assert sum("memory_vector_blocks" in s for s in statements) == 1  # the first load
    statements.clear()
    for question, _ in QUESTIONS:
        for mode in ("meaning", "hybrid"):
            assert alice.search(question, limit=5, mode=mode)
    assert reads(alice) == (1, 1)  # no catch-up ran: the generation had not moved
    assert statements and not any("memory_vector_blocks" in s for s in statements)

    bob.add_observation("b1", "p1", 1, "Bash", "Bob's private note")  # moves the generation, invisible to Alice
    statements.clear()
    assert alice.search(QUESTIONS[0][0], limit=5, mode="meaning")
    assert alice.search(QUESTIONS[1][0], limit=5, mode="meaning")
    assert reads(alice) == (2, 1)  # one catch-up, which returned no block
    assert sum("memory_vector_blocks" in s for s in statements) == 1


def test_a_write_that_takes_its_stamp_first_and_commits_last_is_not_missed(pg_server, tmp_path: Path,
                                                                            stores) -> None:
    """Two writers at once, in different scopes: the one holding the generation makes the other wait until it
    commits, so stamps commit in order, and a search in between sees neither write and later both."""
    url = pg_server.create_database()
    alice = stores(open_as(url, tmp_path / "alice", "alice"))
    bob = stores(open_as(url, tmp_path / "bob", "bob"))
    alice.add_observation("a1", "p1", 1, "Edit", OBSERVATIONS[0][1])
    bob.add_observation("b1", "team:app", 1, "Edit", OBSERVATIONS[1][1])
    assert len(alice.search("anything", limit=50, mode="meaning")) == 2

    late, early = OBSERVATIONS[6][1], OBSERVATIONS[8][1]
    errors: list[BaseException] = []

    def bob_writes() -> None:
        try:
            bob.add_observation("b2", "team:app", 1, "Edit", early)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with psycopg.connect(url, autocommit=True, row_factory=dict_row, options=f"-c search_path={SCHEMA}") as slow:
        with slow.transaction():  # a write of Alice's that takes its stamp and is slow to commit
            op = {"op": "observation", **alice._row("a2", "p1", time.time()), "number": 1, "key": "slow",
                  "tool": "Write", "text": late}
            alice._op_observation(slow, op, alice._embed([late]))
            writer = threading.Thread(target=bob_writes)
            writer.start()
            deadline = time.monotonic() + 30
            while not sql(url, "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                               " AND query LIKE '%%memory_meta%%'"):
                assert time.monotonic() < deadline, "Bob's write never waited for the generation"
                time.sleep(0.05)
            assert writer.is_alive()
            texts = {h["text"] for h in alice.search(QUESTIONS[1][0], limit=50, mode="meaning")}
            assert texts == {OBSERVATIONS[0][1], OBSERVATIONS[1][1]}  # neither write is visible yet
        writer.join(timeout=30)
    assert errors == [] and not writer.is_alive()
    texts = {h["text"] for h in alice.search(QUESTIONS[1][0], limit=50, mode="meaning")}
    assert texts == {OBSERVATIONS[0][1], OBSERVATIONS[1][1], late, early}
    assert_cache_is_the_database(alice, url)
    stamps = dict(sql(url, "SELECT owner, max(changed) FROM memory_vector_blocks GROUP BY owner"))
    assert stamps[alice.owner] < stamps[bob.owner]  # the stamp taken first committed first
