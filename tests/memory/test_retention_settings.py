"""Who sets retention and when it runs: the user's settings only (a project's own files claiming one change nothing),
by default nothing is deleted; `python -m hooks.memory prune --dry-run` changes nothing and says what would go,
`prune` removes exactly that; `status` shows the retention in force and what it would remove; the background pass a
sidecar starts runs at most once a day, through the real clock. (The deletion path: tests/memory/test_retention.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hooks.memory.backfill as backfill_module
from hooks.memory.config import MemoryConfigError, RetentionRule, load_config, load_retention
from hooks.memory.identity import project_identity
from hooks.memory.prune import EVERY_S, due, read_stamp, run_if_due, stamp_path
from hooks.memory.retention import DAY
from hooks.memory.store import MemoryStore, close_all_stores

ROOT = Path(__file__).resolve().parents[2]
NOW = time.time()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def user_settings(retention: Any) -> Path:
    """Write the user's Orion settings (the file tests/conftest.py points ORION_USER_SETTINGS at)."""
    path = Path(os.environ["ORION_USER_SETTINGS"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"memory": {"retention": retention}} if retention is not None else {}))
    return path


def cli(*args: str, cwd: Path) -> tuple[int, Any, str]:
    done = subprocess.run([sys.executable, "-P", "-m", "hooks.memory", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        out = done.stdout
    return done.returncode, out, done.stderr


def fill(store: Any, clock: Clock, project: str) -> None:
    """`project`: 5 observations 40 days old (and a prompt), 4 ten days old, 3 from an hour ago; a session each
    (the four of ten days share an instant, and so do the three of the hour: ties broken by id)."""
    for days, n in ((40, 5), (10, 4), (1 / 24, 3)):
        clock.now = NOW - days * DAY
        for i in range(n):
            store.add_observation(f"{project}-{days}", project, 1, "Bash", f"ran the {days} day old build step {i}")
        if days == 40:
            store.add_prompt(f"{project}-{days}", project, 1, "rebuild the release notes")
    clock.now = NOW


def count(path: Path, sql: str = "SELECT count(*) FROM observations") -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


# ---------------------------------------------------------------------- the setting


def test_the_retention_setting_its_defaults_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert not load_retention(tmp_path / "absent.json").limits  # no setting: nothing is ever deleted
    path.write_text(json.dumps({"memory": {"url": None}}))
    assert not load_retention(path).limits
    folder = tmp_path / "app"
    folder.mkdir()
    path.write_text(json.dumps({"memory": {"retention": {
        "maxAgeDays": 90, "maxObservations": 50000,
        "projects": {str(folder): {"maxAgeDays": 7}, "proj_abc": {"maxAgeDays": None, "maxObservations": None},
                     "team:web": {"maxObservations": 10}}}}}))
    retention = load_retention(path)
    assert retention.default == RetentionRule(90.0, 50000)
    assert retention.projects == {str(folder.resolve()): RetentionRule(7.0, 50000),  # a key left out: the default's
                                  "proj_abc": RetentionRule(None, None),  # null lifts a limit: kept for ever
                                  "team:web": RetentionRule(90.0, 10)}
    assert retention.source == f"{path}: $.memory.retention"
    for bad, names in (({"maxAgeDays": 0}, "maxAgeDays"), ({"maxAgeDays": "30"}, "maxAgeDays"),
                       ({"maxObservations": 2.5}, "maxObservations"), ({"maxObservations": True}, "maxObservations"),
                       ({"keep": "forever"}, "retention"), ({"projects": {"app": {"maxAgeDays": 1}}}, '"app"'),
                       ({"projects": {"/abs": {"projects": {}}}}, '"/abs"'), ({"projects": []}, "projects")):
        path.write_text(json.dumps({"memory": {"retention": bad}}))
        with pytest.raises(MemoryConfigError, match="memory.retention") as err:
            load_retention(path)
        assert names in str(err.value), (bad, str(err.value))


def test_a_projects_own_files_cannot_set_or_shorten_retention(tmp_path: Path) -> None:
    data = Path(os.environ["ORION_DATA_DIR"])
    folder = tmp_path / "cloned-repo"
    (folder / ".claude").mkdir(parents=True)
    claim = {"memory": {"retention": {"maxAgeDays": 0.01, "maxObservations": 1}},
             "env": {"ORION_USER_SETTINGS": str(folder / ".claude" / "settings.json")}}
    for name in ("settings.json", "settings.local.json"):
        (folder / ".claude" / name).write_text(json.dumps(claim))
    (folder / "orion.json").write_text(json.dumps(claim))
    project = project_identity(data, folder).id
    clock = Clock(NOW)
    store = MemoryStore(data / "memory.sqlite3", clock=clock)
    fill(store, clock, project)
    store.close()
    path = data / "memory.sqlite3"

    user_settings(None)  # the user set nothing: everything is kept, whatever the project says
    for args in (("prune",), ("prune", "--project", str(folder)), ("status",)):
        code, out, err = cli(*args, cwd=folder)
        assert code == 0, err
        assert out["retention"]["inForce"] is False
        assert (out["retention"] if args[0] == "status" else out)["projects"] == []
    code, _, err = cli("backfill", "--prune", "--progress", "json", cwd=folder)  # the background pass's entry
    assert code == 0, err
    assert count(path) == 12 and count(path, "SELECT count(*) FROM user_prompts") == 1
    assert not stamp_path(data, load_config()).exists()  # not even a pass was recorded

    user_settings({"maxAgeDays": 30})  # the user's 30 days hold; the project's "1 observation, 15 minutes" does not
    code, out, err = cli("prune", "--project", str(folder), cwd=folder)
    assert code == 0, err
    assert out["removed"] == {**out["removed"], "observations": 5, "prompts": 1, "sessions": 1}
    assert [p["rule"] for p in out["projects"]] == [{"maxAgeDays": 30.0, "maxObservations": None}]
    assert out["projects"][0]["folder"] == str(folder.resolve()) and out["projects"][0]["project"] == project
    assert count(path) == 7


def test_a_rule_for_one_project_names_its_folder_and_leaves_the_others_to_the_default(tmp_path: Path) -> None:
    data = Path(os.environ["ORION_DATA_DIR"])
    folders = {name: tmp_path / name for name in ("app", "notes", "scratch")}
    clock = Clock(NOW)
    store = MemoryStore(data / "memory.sqlite3", clock=clock)
    ids = {}
    for name, folder in folders.items():
        folder.mkdir()
        ids[name] = project_identity(data, folder).id
        fill(store, clock, ids[name])
    store.close()
    user_settings({"maxAgeDays": 30, "projects": {str(folders["app"]): {"maxAgeDays": 5},
                                                  str(folders["notes"]): {"maxAgeDays": None}}})
    code, out, err = cli("prune", "--dry-run", cwd=tmp_path)
    assert code == 0, err
    would = {p["project"]: p["wouldRemove"]["observations"] for p in out["projects"]}
    assert would == {ids["app"]: 9, ids["scratch"]: 5}  # notes keeps everything: it is not even listed
    code, out, err = cli("prune", cwd=tmp_path)
    assert code == 0, err
    assert {p["project"]: p["removed"]["observations"] for p in out["projects"]} == would
    for name, left in (("app", 3), ("notes", 12), ("scratch", 7)):
        assert count(data / "memory.sqlite3", f"SELECT count(*) FROM observations WHERE project = '{ids[name]}'") == left


# ---------------------------------------------------------------------- the command line, on both backends


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The user's memory on each backend: the local SQLite file, or a fresh database on a real PostgreSQL server
    (tests/pg_server.py), named in the environment the CLI inherits."""
    if request.param == "postgres":
        monkeypatch.setenv("ORION_MEMORY_URL", request.getfixturevalue("pg_server").create_database())
        monkeypatch.setenv("ORION_MEMORY_TEAM", "core")
        monkeypatch.setenv("ORION_MEMORY_USER", "alice")
    yield request.param
    close_all_stores()


def filled(backend: str, data: Path, *projects: str) -> None:
    """A memory on `backend` holding `fill`'s records for each project, written and closed."""
    clock = Clock(NOW)
    store = open_memory(backend, data, clock)
    for project in projects:
        fill(store, clock, project)
    store.wait_flushed(10)
    store.close()


def open_memory(backend: str, data: Path, clock: Clock) -> Any:
    if backend == "sqlite":
        return MemoryStore(data / "memory.sqlite3", clock=clock)
    from hooks.memory.pg_store import PostgresMemoryStore

    return PostgresMemoryStore(load_config(), data, clock=clock)


def digest(backend: str, data: Path) -> dict[str, str]:
    """Every table's rows (SQLite: the full-text index's own tables too), hashed: any change shows."""
    out = {}
    if backend == "sqlite":
        conn = sqlite3.connect(str(data / "memory.sqlite3"))
        try:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"'))
                out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        finally:
            conn.close()
        return out
    import psycopg

    with psycopg.connect(os.environ["ORION_MEMORY_URL"]) as conn:
        for (table,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'orion_memory'").fetchall():
            rows = sorted(repr(r) for r in conn.execute(f"SELECT * FROM orion_memory.{table}"))
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def test_prune_dry_run_changes_nothing_and_prune_removes_what_it_said(backend: str, tmp_path: Path) -> None:
    data = Path(os.environ["ORION_DATA_DIR"])
    filled(backend, data, "proj_old", "proj_other")
    user_settings({"maxAgeDays": 30, "maxObservations": 5})
    before = digest(backend, data)
    code, dry, err = cli("prune", "--dry-run", "--project", "proj_old", cwd=tmp_path)
    assert code == 0, err
    assert digest(backend, data) == before
    assert dry["dryRun"] is True and "removed" not in dry
    # By age the five of 40 days go (and their prompt and session); by size the newest 5 stay (the hour's 3 and
    # the last 2 of ten days): the later cut wins, 7 observations.
    assert dry["wouldRemove"] == {**dry["wouldRemove"], "observations": 7, "prompts": 1, "sessions": 1,
                                  "vectors": 8}
    assert dry["wouldRemove"]["bytes"] > 8 * 512
    code, done, err = cli("prune", "--project", "proj_old", cwd=tmp_path)
    assert code == 0, err
    assert done["removed"] == dry["wouldRemove"] and done["projects"][0]["removed"] == dry["wouldRemove"]
    after = digest(backend, data)
    assert after != before
    code, again, err = cli("prune", "--dry-run", cwd=tmp_path)  # every project now: proj_other's turn
    assert code == 0, err
    assert [(p["project"], p["wouldRemove"]["observations"]) for p in again["projects"]] == [("proj_old", 0),
                                                                                          ("proj_other", 7)]
    assert digest(backend, data) == after


def test_status_shows_the_retention_in_force_and_what_it_would_remove(backend: str, tmp_path: Path) -> None:
    data = Path(os.environ["ORION_DATA_DIR"])
    filled(backend, data, "proj_a", "proj_b")
    code, out, err = cli("status", cwd=tmp_path)
    assert code == 0, err
    assert out["retention"] == {**out["retention"], "inForce": False, "projects": [], "lastRun": None}
    user_settings({"maxAgeDays": 30, "projects": {"b": {"maxAgeDays": 1}}})  # a bare name: which folder?
    code, out, err = cli("status", cwd=tmp_path)
    assert code == 0, err
    assert out["retention"]["inForce"] is False and '$.memory.retention.projects["b"]' in out["retention"]["error"]
    code, out, err = cli("prune", cwd=tmp_path)  # refused, naming the setting: a typo deletes nothing
    assert code == 2 and '$.memory.retention.projects["b"]' in err
    user_settings({"maxAgeDays": 30, "projects": {"proj_b": {"maxObservations": 2, "maxAgeDays": None}}})
    code, out, err = cli("status", cwd=tmp_path)
    assert code == 0, err
    retention = out["retention"]
    assert retention["inForce"] is True and retention["default"] == {"maxAgeDays": 30.0, "maxObservations": None}
    assert retention["projectRules"] == {"proj_b": {"maxAgeDays": None, "maxObservations": 2}}
    assert retention["projects"] == [
        {"project": "proj_a", "folder": None, "rule": {"maxAgeDays": 30.0, "maxObservations": None},
         "wouldRemove": {"observations": 5, "prompts": 1, "summaries": 0, "sessions": 1}},
        {"project": "proj_b", "folder": None, "rule": {"maxAgeDays": None, "maxObservations": 2},
         "wouldRemove": {"observations": 10, "prompts": 1, "summaries": 0, "sessions": 2}}]
    assert out["usage"]["items"]["observations"] == 24  # status counted, changed nothing


def test_compact_gives_a_pruned_files_free_pages_back_and_keeps_what_is_left(backend: str, tmp_path: Path) -> None:
    """After a prune the SQLite file keeps its pages for reuse: `status` says how many bytes, `compact` gives them
    back (the file shrinks by about that) and what is left is found as before. PostgreSQL's own vacuum reuses free
    space: `compact` says so and does nothing."""
    data = Path(os.environ["ORION_DATA_DIR"])
    if backend == "postgres":
        filled(backend, data, "proj_a")
        code, out, err = cli("compact", cwd=tmp_path)
        assert code == 2 and "PostgreSQL" in err and out is None
        return
    clock = Clock(NOW - 40 * DAY)
    store = MemoryStore(data / "memory.sqlite3", clock=clock)
    for i in range(1500):  # the old ones: ~1 KiB each, so their pages are many
        store.add_observation("old", "proj_big", 1, "Bash", f"old build log {i} " + "warning: unused import " * 40)
    clock.now = NOW
    store.add_observation("new", "proj_big", 1, "Bash", "the albatross release was tagged")
    store.close()
    user_settings({"maxAgeDays": 30})
    code, done, err = cli("prune", cwd=tmp_path)
    assert code == 0 and done["removed"]["observations"] == 1500, err
    code, out, err = cli("status", cwd=tmp_path)
    assert code == 0, err
    free, size = out["usage"]["freeBytes"], (data / "memory.sqlite3").stat().st_size
    assert free > 1_000_000, out["usage"]
    code, report, err = cli("compact", cwd=tmp_path)
    assert code == 0, err
    assert report["before"] >= size and report["after"] == (data / "memory.sqlite3").stat().st_size
    assert report["freed"] >= free * 0.9, (report, free)
    code, out, err = cli("status", cwd=tmp_path)
    assert code == 0 and out["usage"]["freeBytes"] == 0 and out["usage"]["items"]["observations"] == 1, out
    store = MemoryStore(data / "memory.sqlite3")
    try:
        assert [h["text"] for h in store.search("albatross", project="proj_big", mode="text")] == [
            "the albatross release was tagged"]
    finally:
        store.close()


# ---------------------------------------------------------------------- the daily pass


@pytest.fixture(autouse=True)
def closed_stores() -> Iterator[None]:
    """The process-wide stores the pass and the job open (hooks/memory/store.py open_store), closed after each test."""
    yield
    close_all_stores()


def test_the_background_pass_runs_at_most_once_a_day(tmp_path: Path) -> None:
    data = Path(os.environ["ORION_DATA_DIR"])
    clock = Clock(NOW)
    store = MemoryStore(data / "memory.sqlite3", clock=clock)
    fill(store, clock, "p1")
    assert not due(data, now=NOW)  # no retention set: the default keeps everything
    assert run_if_due(data, now=NOW) is None and count(data / "memory.sqlite3") == 12
    user_settings({"maxAgeDays": 30})
    assert due(data, now=NOW)
    first = run_if_due(data, now=NOW)
    assert first is not None and first["removed"]["observations"] == 5
    stamp = read_stamp(stamp_path(data, load_config()))
    assert stamp == {**stamp, "at": NOW, "state": "done", "removed": first["removed"]}

    fill(store, clock, "p1")  # five more 40 days old
    for later in (NOW + 60, NOW + EVERY_S / 2, NOW + EVERY_S - 1):
        assert not due(data, now=later) and run_if_due(data, now=later) is None
    assert count(data / "memory.sqlite3") == 19
    second = run_if_due(data, now=NOW + EVERY_S)
    assert second is not None and second["removed"]["observations"] == 5
    store.close()


def test_a_sidecar_prunes_in_the_background_through_the_real_clock(tmp_path: Path, monkeypatch) -> None:
    """The job a sidecar kicks when memory is used (hooks/memory/backfill.py) starts the process that prunes; it
    runs on the real clock, and a second kick the same day finds the pass done."""
    data = Path(os.environ["ORION_DATA_DIR"])
    old = Clock(NOW - 40 * DAY)
    store = MemoryStore(data / "memory.sqlite3", clock=old)
    for i in range(4):
        store.add_observation("s-old", "p1", 1, "Bash", f"an old build step {i}")
    store.close()
    store = MemoryStore(data / "memory.sqlite3")  # the real clock
    store.add_observation("s-new", "p1", 1, "Bash", "a build step of today")
    store.close()
    user_settings({"maxAgeDays": 30})
    monkeypatch.setattr(backfill_module, "PRUNE_CHECK_S", 0.0)  # every kick may look again (the stamp decides)
    job = backfill_module.BackfillJob()
    job.enable()
    try:
        job.kick(data)
        assert job.wait_idle(data, 180)
        assert count(data / "memory.sqlite3") == 1
        assert job.status(data)["pruned"] == {**job.status(data)["pruned"], "observations": 4, "sessions": 1}
        stamp = read_stamp(stamp_path(data, load_config()))
        assert stamp is not None and stamp["state"] == "done" and abs(stamp["at"] - time.time()) < DAY

        again = MemoryStore(data / "memory.sqlite3", clock=old)
        again.add_observation("s-old", "p1", 1, "Bash", "another old build step")
        again.close()
        job.kick(data)  # the same day: looked at, not run
        assert job.wait_idle(data, 180)
        assert count(data / "memory.sqlite3") == 2
        assert read_stamp(stamp_path(data, load_config())) == stamp
    finally:
        job.stop()
