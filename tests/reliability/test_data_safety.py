"""Data safety: a writer firing the built-in hooks is SIGKILLed at random moments; the memory DB, the continuity cache and the tracking files stay readable and consistent.

The writer, the killer and the oracle are bench/data_safety.py's (the long run
lives there); here a bounded number of kills, plus proof that the oracle and
the readers catch what they claim to catch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from hooks.tracking import TrackingWriter, read_records

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20


def _bench():
    spec = importlib.util.spec_from_file_location("orion_bench_data_safety", ROOT / "bench" / "data_safety.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.mark.timeout(240)
def test_sigkill_mid_write_leaves_every_file_readable_and_consistent(tmp_path: Path) -> None:
    summary = bench.kill_many(tmp_path, KILLS, seed=7)
    # every kill landed on a writer that was busy writing all three kinds of file
    assert summary["writers_ready"] == KILLS
    assert summary["runs_with_corruption"] == 0, summary["problems"]
    assert summary["observations"] > 0 and summary["json_files"] > 0 and summary["jsonl_records"] > 0
    # and the next sidecar reads on: the store opens and searches, the readers give records
    from hooks.memory.store import MemoryStore

    store = MemoryStore(tmp_path / "data" / "memory.sqlite3")
    try:
        assert store.search("alpha OR beta gamma", limit=5) is not None
    finally:
        store.close()
    stress = tmp_path / "data" / "sessions" / "stress" / "events.jsonl"
    assert len(list(read_records(stress))) > 0


def test_a_torn_tracking_line_stays_alone_and_the_reader_skips_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps({"n": 1}) + "\n" + '{"n": 2, "pad": "cut sho')  # a crash mid-append
    writer = TrackingWriter()
    writer.write(path, {"n": 3})
    writer.close()
    lines = path.read_text().splitlines()
    assert lines == ['{"n": 1}', '{"n": 2, "pad": "cut sho', '{"n": 3}']
    assert [r["n"] for r in read_records(path)] == [1, 3]
    assert bench.check(tmp_path).problems == []


def test_the_oracle_reports_what_a_crash_must_never_leave(tmp_path: Path) -> None:
    data = tmp_path
    (data / "sessions" / "s").mkdir(parents=True)
    # the bug the tracking writer used to have: a torn record with the next one glued on
    (data / "sessions" / "s" / "events.jsonl").write_text('{"n": 1}\n{"n": 2, "pa{"n": 3}\n')
    (data / "continuity").mkdir()
    (data / "continuity" / "conv.json").write_text('{"version": 1, "summ')
    db = sqlite3.connect(str(data / "memory.sqlite3"))
    db.executescript(
        "CREATE TABLE observations (id INTEGER PRIMARY KEY);"
        "CREATE TABLE user_prompts (id INTEGER PRIMARY KEY);"
        "CREATE TABLE session_summaries (id INTEGER PRIMARY KEY);"
        "CREATE VIRTUAL TABLE memory_fts USING fts5 (text, kind UNINDEXED);"
        "INSERT INTO observations DEFAULT VALUES;"  # a row whose full-text entry never made it
    )
    db.close()
    problems = bench.check(data).problems
    assert any("swallowed the next one" in p for p in problems), problems
    assert any(p.startswith("continuity/conv.json") for p in problems), problems
    assert any("observations has 1 rows but memory_fts has 0" in p for p in problems), problems


def test_a_store_killed_before_its_first_commit_is_empty_not_corrupt_and_opens_again(tmp_path: Path) -> None:
    """The store creates its file (private) before SQLite writes the schema in one transaction: a kill between
    the two leaves an empty database, which the oracle accepts and the next open migrates; a schema with a table
    missing is still reported."""
    from hooks.memory.store import MemoryStore
    from hooks.private_files import open_private

    os.close(open_private(tmp_path / "memory.sqlite3", os.O_RDWR))
    assert bench.check(tmp_path).problems == []
    store = MemoryStore(tmp_path / "memory.sqlite3")
    try:
        assert store.search("anything", limit=5) == []
    finally:
        store.close()
    db = sqlite3.connect(str(tmp_path / "memory.sqlite3"))
    db.execute("DROP TABLE observations")
    db.close()
    assert any("no such table: observations" in p for p in bench.check(tmp_path).problems)
