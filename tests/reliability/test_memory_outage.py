"""The team database goes away: sessions go on, the outage is reported once, and no memory is lost (real PostgreSQL, stopped and started)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from hooks.memory.config import load_config
from hooks.memory.pg_store import SCHEMA, PostgresMemoryStore
from hooks.memory.search import search_memory
from hooks.memory.store import close_all_stores, open_store
from tests.builtin.harness import sandbox
from tests.pg_server import PASSWORD, PgServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def own_pg():
    """A server of this test's own: it is stopped and started mid-test."""
    server = PgServer()
    yield server
    close_all_stores()
    server.destroy()


def counts(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [conn.execute(f"SELECT count(*) FROM {SCHEMA}.{t}").fetchone()[0]
                for t in ("sessions", "user_prompts", "observations", "session_summaries")]


def outage_reports(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "is unavailable" in r.getMessage()]


@pytest.mark.asyncio
async def test_a_restart_mid_session_loses_nothing_and_is_reported_once(own_pg, tmp_path: Path, monkeypatch,
                                                                        caplog) -> None:
    caplog.set_level(logging.INFO, logger="hooks.memory")
    url = own_pg.create_database()
    monkeypatch.setenv("ORION_MEMORY_URL", url)
    async with sandbox(tmp_path) as sb:
        await sb.fire("UserPromptSubmit", {"prompt": "trace the walrus bug"})
        await sb.tool("PostToolUse", "Bash", {"command": "grep walrus"}, {"stdout": "walrus.py:1"})
        assert counts(url) == [1, 1, 1, 0]

        own_pg.stop()
        started = time.monotonic()
        aggs = [await sb.tool("PostToolUse", "Read", {"file_path": f"walrus{i}.py"}, f"walrus part {i}")
                for i in range(3)]
        aggs.append(await sb.fire("UserPromptSubmit", {"prompt": "and the second walrus"}))
        aggs.append(await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "walrus fixed"}))
        aggs.append(await sb.fire("SessionEnd", {"reason": "other"}))
        down_for = time.monotonic() - started
        store = open_store(sb.data)
        status = store.status()
        assert [sb.errors(a) for a in aggs] == [[]] * len(aggs)  # every hook succeeded: the session went on
        assert down_for < 8, "only the first write waits for the pool; the rest are queued at once"
        assert status["up"] is False and status["pending"] == 7 and status["dropped"] == 0
        assert await search_memory(sb.data, "walrus") == []  # searches answer from nothing meanwhile
        reports = outage_reports(caplog)
        assert len(reports) == 1, reports  # once, not per hook
        assert [r.name for r in caplog.records if r.levelno >= logging.WARNING] == ["hooks.memory"]
        assert "ORION_MEMORY_URL" in reports[0] and PASSWORD not in caplog.text
        spooled = "".join(p.read_text() for p in (sb.data / "memory-spool").rglob("*.jsonl"))
        assert spooled.count("\n") == 7 and "walrus part 2" in spooled

        own_pg.start()
        assert store.wait_flushed(30)
        assert counts(url) == [1, 2, 4, 1]
        hits = await search_memory(sb.data, "walrus", limit=50)
        assert {h["kind"] for h in hits} == {"prompt", "observation", "summary"}
        assert store.session("sess-1")["status"] == "completed" and store.session("sess-1")["prompt_count"] == 2
        assert any("answers again" in r.getMessage() for r in caplog.records)
        assert not "".join(p.read_text() for p in (sb.data / "memory-spool").rglob("*.jsonl"))


def test_writes_buffered_by_a_process_that_died_are_written_by_the_next(own_pg, tmp_path: Path) -> None:
    url = own_pg.create_database()
    data = tmp_path / "data"
    PostgresMemoryStore(load_config({"ORION_MEMORY_URL": url}), data).close()  # schema in place
    own_pg.stop()
    code = ("import os; from hooks.memory.config import load_config; from hooks.memory.pg_store import PostgresMemoryStore;"
            f"s = PostgresMemoryStore(load_config({{'ORION_MEMORY_URL': {url!r}}}), __import__('pathlib').Path({str(data)!r}));"
            "[s.add_observation('dead', 'p', 1, 'Bash', f'orphan {i}') for i in range(3)];"
            "assert s.status()['pending'] == 3; os._exit(0)")  # dies without closing anything
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    own_pg.start()
    store = PostgresMemoryStore(load_config({"ORION_MEMORY_URL": url}), data)
    try:
        assert store.wait_flushed(30)
        assert sorted(o["text"] for o in store.observations("dead")) == ["orphan 0", "orphan 1", "orphan 2"]
    finally:
        store.close()
    assert counts(url)[2] == 3


def test_a_full_buffer_drops_new_writes_and_says_so_once(tmp_path: Path, caplog) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"memory": {"url": f"postgresql://me:{PASSWORD}@127.0.0.1:9/memory",
                                               "bufferLimit": 5}}))
    store = PostgresMemoryStore(load_config({}, settings), tmp_path / "data")
    try:
        for i in range(8):
            store.add_observation("s", "p", 1, "Bash", f"record {i}")
        status = store.status()
    finally:
        store.close()
    assert status["pending"] == 5 and status["dropped"] == 3
    full = [r.getMessage() for r in caplog.records if "is full" in r.getMessage()]
    assert len(full) == 1 and "memory.bufferLimit" in full[0] and str(settings) in full[0]
    assert PASSWORD not in caplog.text and "me:***@127.0.0.1:9" in caplog.text


@pytest.mark.asyncio
async def test_an_unreachable_database_at_start_costs_the_session_nothing(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("ORION_MEMORY_URL", f"postgresql://orion:{PASSWORD}@127.0.0.1:9/memory?sslmode=disable")
    started = time.monotonic()
    async with sandbox(tmp_path) as sb:
        aggs = [await sb.fire("SessionStart", {"source": "startup"}),
                await sb.fire("UserPromptSubmit", {"prompt": "hello"}),
                await sb.tool("PostToolUse", "Bash", {"command": "ls"}, {"stdout": "a"}),
                await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})]
        assert await search_memory(sb.data, "hello") == []
    assert time.monotonic() - started < 10
    assert [sb.errors(a) for a in aggs] == [[]] * 4
    reports = outage_reports(caplog)
    assert len(reports) == 1 and "ORION_MEMORY_URL" in reports[0] and "orion:***@127.0.0.1:9" in reports[0]
    assert PASSWORD not in caplog.text


@pytest.mark.cli
@pytest.mark.asyncio
async def test_a_real_sidecar_goes_on_without_the_database_and_says_so_once(tmp_path: Path) -> None:
    from tests.e2e.conftest import open_sidecar

    env = {"ORION_MEMORY_URL": f"postgresql://orion:{PASSWORD}@127.0.0.1:9/memory"}
    async with open_sidecar(tmp_path, "hooked", env=env) as run:
        sid = (await run.new_session("plain"))["sessionId"]
        answers = [await run.prompt(sid, f"remember the {word} heron") for word in ("grey", "blue")]
        await run.end(sid)
        memory_hooks = [e for e in run.named("hook_response", sid) if e["hookName"].startswith("memory-")]
        logs = run.named("log")
        await run.client.close()
    assert [a["stopReason"] for a in answers] == ["end_turn", "end_turn"]
    assert memory_hooks and {e["outcome"] for e in memory_hooks} == {"success"}, [(e["hookName"], e["outcome"], e.get("durationMs")) for e in memory_hooks]
    about_memory = [e for e in logs if "memory:" in json.dumps(e)]
    assert len(about_memory) == 1 and "ORION_MEMORY_URL" in json.dumps(about_memory[0]), about_memory
    assert PASSWORD not in json.dumps(run.events and [e.params for e in run.events]) + run.client.stderr_text()


def test_a_dead_server_is_probed_with_back_off_not_in_a_tight_loop(tmp_path: Path) -> None:
    """Nothing listens on the port: the flusher's probes back off (0.2, 0.4, 0.8 s ...). It used to wake itself on
    every failed probe and retry at once: a core at 100 % for as long as the server was down (a full CI run slowed
    to a crawl behind one such store)."""
    import socket
    import threading

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = PostgresMemoryStore(load_config({"ORION_MEMORY_URL": f"postgresql://orion@127.0.0.1:{port}/none"}),
                                tmp_path / "data")
    attempts: list[str] = []
    real = store._connect

    def counted() -> bool:
        attempts.append(threading.current_thread().name)
        return real()

    store._connect = counted  # type: ignore[method-assign]
    try:
        time.sleep(2.0)
    finally:
        store.close()
    # 0.2 + 0.4 + 0.8 = 1.4 s: about four probes in two seconds, where the loop made thousands.
    assert 1 <= len(attempts) <= 8, len(attempts)
    assert set(attempts) == {"orion-memory-flusher"}
