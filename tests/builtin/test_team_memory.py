"""Team memory on a real PostgreSQL: concurrent migrations, four writer processes on two machines, scope, privacy, import.

The server is tests/pg_server.py's (a real `postgres`, no mocks). A "machine"
is a data dir (its own install id and project registry) with its own user
settings naming the user, the team and the projects shared with it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from hooks.memory.config import load_config
from hooks.memory.pg_store import SCHEMA, SCHEMA_VERSION, PostgresMemoryStore
from hooks.memory.search import search_memory
from hooks.memory.store import close_all_stores, open_store
from tests.builtin.harness import sandbox

REPO = Path(__file__).resolve().parents[2]
TEXT_COLUMNS = {"sessions": ["end_reason", "project"], "user_prompts": ["text"], "observations": ["tool_name", "text"],
                "session_summaries": ["request", "outcome"]}


def db_text(url: str) -> str:
    """Every text the memory tables hold, read straight from the server."""
    parts = []
    with psycopg.connect(url) as conn:
        for table, cols in TEXT_COLUMNS.items():
            for row in conn.execute(f"SELECT {', '.join(cols)} FROM {SCHEMA}.{table}"):
                parts.extend(str(v) for v in row)
    return "\n".join(parts)


def count(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(f"SELECT count(*) FROM {SCHEMA}.{table}").fetchone()[0]


class Machine:
    """One simulated machine: a data dir, a user settings file (user, team, shared projects) and its projects."""

    def __init__(self, root: Path, url: str, user: str, team: str, shared: dict[str, str]) -> None:
        self.root = root
        self.url = url
        self.data = root / "data"
        self.settings = root / "settings.json"
        self.projects: dict[str, Path] = {}
        for name in ("app", "secret"):
            path = root / "work" / name
            path.mkdir(parents=True)
            self.projects[name] = path
        memory = {"team": team, "user": user,
                  "teamProjects": {str(self.projects[name]): key for name, key in shared.items()}}
        self.settings.write_text(json.dumps({"memory": memory}))

    def env(self) -> dict[str, str]:
        return {"ORION_DATA_DIR": str(self.data), "ORION_USER_SETTINGS": str(self.settings), "ORION_MEMORY_URL": self.url}

    def use(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for key, value in self.env().items():
            monkeypatch.setenv(key, value)


def test_sidecars_starting_together_migrate_once(pg_server, tmp_path: Path) -> None:
    url = pg_server.create_database()
    config = load_config({"ORION_MEMORY_URL": url})
    barrier = threading.Barrier(8)
    stores: list[PostgresMemoryStore] = []
    errors: list[BaseException] = []

    def start(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            stores.append(PostgresMemoryStore(config, tmp_path / f"d{n}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    try:
        assert errors == [] and len(stores) == 8
        assert all(s.status()["up"] for s in stores)
        with psycopg.connect(url) as conn:
            assert conn.execute(f"SELECT version FROM {SCHEMA}.schema_version").fetchall() == [
                (v,) for v in range(1, SCHEMA_VERSION + 1)]
            # schema 4: the full-text indexes take each write at once (no pending list for every search to scan)
            options = conn.execute("SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n"
                                   " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname LIKE '%%_fts'",
                                   (SCHEMA,)).fetchall()
            assert sorted(options) == [(name, ["fastupdate=off"]) for name in
                                       ("observations_fts", "session_summaries_fts", "user_prompts_fts")]
    finally:
        for s in stores:
            s.close()


def test_a_newer_schema_is_refused_and_nothing_is_lost(pg_server, tmp_path: Path, caplog) -> None:
    url = pg_server.create_database()
    config = load_config({"ORION_MEMORY_URL": url})
    PostgresMemoryStore(config, tmp_path / "old").close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {SCHEMA}.schema_version VALUES (99)")
    store = PostgresMemoryStore(config, tmp_path / "d")
    try:
        store.add_observation("s", "p", 1, "Bash", "kept for later")
        assert store.status()["up"] is False and store.status()["pending"] == 1
        assert "schema 99" in caplog.text and "ORION_MEMORY_URL" in caplog.text
    finally:
        store.close()
    assert count(url, "observations") == 0
    assert list((tmp_path / "d" / "memory-spool").rglob("*.jsonl")), "the write waits on disk for a sidecar that can"


def _writer(machine: Machine, project: str, word: str, tmp: Path) -> subprocess.Popen:
    spec = tmp / f"{word}.json"
    spec.write_text(json.dumps({"project": str(machine.projects[project]), "sessions": 5, "word": word,
                                "searches": [word]}))
    env = {**os.environ, **machine.env(), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.memory_writer", str(spec)], env=env, cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.asyncio
async def test_four_writers_on_two_machines_share_only_what_their_users_shared(pg_server, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    url = pg_server.create_database()
    alice = Machine(tmp_path / "alice", url, "alice", "core", {"app": "app"})
    bob = Machine(tmp_path / "bob", url, "bob", "core", {"app": "app"})
    plan = [(alice, "app", "alphaapp"), (alice, "secret", "alphasecret"),
            (bob, "app", "bravoapp"), (bob, "secret", "bravosecret")]
    procs = [_writer(m, project, word, tmp_path) for m, project, word in plan]
    try:
        for p in procs:  # every writer has connected (and migrated, or waited for the one migrating)
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outputs = [p.communicate(timeout=90) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for (out, err), p in zip(outputs, procs):
        assert p.returncode == 0, err
    results = [json.loads(out.splitlines()[-1]) for out, _ in outputs]
    for (_, _, word), result in zip(plan, results):
        # Each writer reads its own writes back at once: 5 prompts, 15 observations, 5 summaries.
        assert len(result["searches"][word]) == 25, (word, result)
        assert result["status"]["pending"] == 0 and result["status"]["dropped"] == 0

    assert [count(url, t) for t in ("sessions", "user_prompts", "observations", "session_summaries")] == [20, 20, 60, 20]
    everything = db_text(url)
    assert "8812" not in everything and "private" not in everything.lower()  # <private> never left the machines

    async def hits(machine: Machine, query: str) -> list[dict]:
        machine.use(monkeypatch)
        return await search_memory(machine.data, query, limit=100, mode="text")

    # Alice reads her own private project and the team's shared one, never Bob's private project; and vice versa.
    assert len(await hits(alice, "alphasecret")) == 25
    assert await hits(alice, "bravosecret") == []
    shared = await hits(alice, "bravoapp")
    assert len(shared) == 25 and {h["project"] for h in shared} == {"team:app"}
    assert await hits(bob, "alphasecret") == []
    assert len(await hits(bob, "alphaapp")) == 25
    # The shared project answers to either user's own folder as the filter.
    assert len(await search_memory(bob.data, "alphaapp", project=str(bob.projects["app"]), limit=100,
                                   mode="text")) == 25
    assert await search_memory(bob.data, "alphaapp", project=str(bob.projects["secret"]), limit=100,
                               mode="text") == []
    # By meaning, the nearest items come back whatever the words: never one of a row the searcher may not read.
    for machine, unseen in ((alice, "bravosecret"), (bob, "alphasecret")):
        machine.use(monkeypatch)
        near = await search_memory(machine.data, unseen, limit=100)
        assert near and not any(unseen in h["text"] for h in near)

    # Someone in another team, who happens to call a project "app" too, sees none of it.
    carol = Machine(tmp_path / "carol", url, "carol", "other", {"app": "app"})
    assert await hits(carol, "alphaapp") == [] and await hits(carol, "bravoapp") == []

    # A new session in Bob's copy of the shared project is told what Alice did there.
    bob.use(monkeypatch)
    async with sandbox(tmp_path / "bob-session") as sb:
        sb.project = bob.projects["app"]
        sb.data = bob.data
        agg = await sb.fire("SessionStart", {"source": "startup", "cwd": str(bob.projects["app"])}, session_id="b-new")
    close_all_stores()
    assert "alphaapp" in (agg.additional_context or "") or "bravoapp" in (agg.additional_context or "")


def test_import_an_existing_sqlite_memory_twice(pg_server, tmp_path: Path, monkeypatch) -> None:
    import anyio

    async def local_session() -> Path:
        async with sandbox(tmp_path) as sb:
            await sb.fire("UserPromptSubmit", {"prompt": "migrate the zebra schema"})
            await sb.tool("PostToolUse", "Bash", {"command": "ls zebra"}, {"stdout": "zebra.sql"})
            await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "zebra migrated"})
            await sb.fire("SessionEnd", {"reason": "other"})
            return sb.data

    data = anyio.run(local_session)
    close_all_stores()
    assert (data / "memory.sqlite3").exists()
    # What an older version might have let through: the import strips it on the way out.
    with sqlite3.connect(data / "memory.sqlite3") as db:
        db.execute("INSERT INTO observations (session_id, project, prompt_number, tool_name, created_at)"
                   " SELECT session_id, project, 1, 'Read', 0 FROM sessions LIMIT 1")
        db.execute("INSERT INTO memory_fts (rowid, text, kind, ref_id, session_id, project, created_at, scope)"
                   " SELECT id, 'zebra notes <private>card 4111</private> end', 'observation', id, session_id,"
                   " project, 0, 's' || lower(hex(project)) || '0' FROM observations ORDER BY id DESC LIMIT 1")
    url = pg_server.create_database()
    env = {**os.environ, "ORION_DATA_DIR": str(data), "PYTHONPATH": str(REPO), "ORION_MEMORY_URL": ""}
    argv = [sys.executable, "-m", "hooks.memory", "import-to-postgres", "--data-dir", str(data), "--url", url]
    everything = {"sessions": 1, "prompts": 1, "observations": 2, "summaries": 1}
    for run in range(2):  # a second run reads the same rows and adds nothing, and says so
        done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["read"] == everything
        assert json.loads(done.stdout)["imported"] == (everything if run == 0 else dict.fromkeys(everything, 0))
        assert "s3cret" not in done.stdout + done.stderr  # the URL's password is never printed
    assert [count(url, t) for t in ("sessions", "user_prompts", "observations", "session_summaries")] == [1, 1, 2, 1]
    assert "4111" not in db_text(url) and "zebra notes  end" in db_text(url)
    # The imported memory is this installation's: found from the same data dir through the team database.
    monkeypatch.setenv("ORION_MEMORY_URL", url)
    hits = open_store(data).search("zebra", limit=10)
    assert {h["kind"] for h in hits} == {"prompt", "observation", "summary"}
    assert open_store(data).session("sess-1")["status"] == "completed"
