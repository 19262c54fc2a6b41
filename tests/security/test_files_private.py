"""Orion's data files are the user's alone: after a real session every file under the data dir is 0600 and every directory 0700.

Attacks: a permissive umask (000), files an older version left 0644 (the
sqlite database and its -wal/-shm, tracking JSONL, continuity), a data dir
created 0755 by someone else, and a shared sticky directory that must not be
locked by mistake.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from hooks.memory.store import open_store
from hooks.private_files import private_dir, write_private_json
from tests.builtin.harness import sandbox
from tests.e2e.conftest import fixed_policy, open_sidecar
from tests.security.test_redaction_writers import SCENARIO


def modes_under(root: Path) -> dict[str, str]:
    """`relative path -> octal mode` of everything below root (root itself included as '.')."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for path in sorted(root.rglob("*")):
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue  # removed while we looked (the watchdog sweeps the sidecar's runtime record after it exits)
        if stat.S_ISLNK(st.st_mode):
            continue
        found[str(path.relative_to(root))] = oct(stat.S_IMODE(st.st_mode))
    return found


def not_private(root: Path) -> dict[str, str]:
    wrong = {}
    for rel, mode in modes_under(root).items():
        path = root / rel
        expected = 0o700 if path.is_dir() else 0o600
        if int(mode, 8) != expected:
            wrong[rel] = mode
    return wrong


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.cli
@pytest.mark.asyncio
async def test_after_a_real_session_everything_under_the_data_dir_is_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"ORION_DATA_DIR": str(data)}
    async with open_sidecar(tmp_path, "notes", trust=True, permission=fixed_policy("allow_once"), env=env) as run:
        (run.project / "deploy.log").write_text("deploy started\nall good\n")
        sid = (await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}",
                                                 "allowedTools": ["Bash"]}, timeout=60.0))["sessionId"]
        assert (await run.prompt(sid, "Check the deploy."))["stopReason"] == "end_turn"
        await run.end(sid)
        assert (await run.request("memory/search", {"query": "deploy"}))["results"]
        await run.client.close()
    written = modes_under(data)
    # The session really wrote the files this test is about.
    for expected in ("memory.sqlite3", f"sessions/{sid}/events.jsonl", "analytics/hook-timing.jsonl", "projects.json"):
        assert expected in written, sorted(written)
    assert not_private(data) == {}


@pytest.mark.asyncio
async def test_a_permissive_umask_changes_nothing(tmp_path: Path) -> None:
    with umask(0):
        async with sandbox(tmp_path) as sb:
            sb.data.rmdir()  # let the writers create it
            await sb.fire("SessionStart", {"source": "startup"})
            await sb.fire("UserPromptSubmit", {"prompt": "hello"})
            await sb.tool("PostToolUse", "Write", {"file_path": "a.txt", "content": "x"}, {"ok": True})
            await sb.fire("PreCompact", {"trigger": "manual"})
            for _ in range(5):  # turn-activity writes its file every fifth turn
                await sb.fire("Stop", {"stop_hook_active": False, "last_assistant_message": "done"})
            await sb.fire("SessionEnd", {"reason": "other"})
            with anyio.fail_after(10):
                await sb.runner.flush_tracking()
            # WAL mode: the -wal and -shm companions exist while the store is open.
            open_store(sb.data)
            written = modes_under(sb.data)
            wrong = not_private(sb.data)
    for expected in ("memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3-shm", "sessions/sess-1/events.jsonl",
                     "analytics/hook-timing.jsonl", "continuity", "session-activity", ".stale-cache-cleanup"):
        assert any(rel == expected or rel.startswith(expected + "/") for rel in written), (expected, sorted(written))
    assert wrong == {}


@pytest.mark.asyncio
async def test_files_an_older_version_left_readable_are_narrowed_on_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    legacy = {name: data / name for name in ("memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3-shm")}
    legacy["events"] = data / "sessions" / "sess-1" / "events.jsonl"
    legacy["timing"] = data / "analytics" / "hook-timing.jsonl"
    for path in legacy.values():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        os.chmod(path.parent, 0o755)
        if not path.name.startswith("memory.sqlite3-"):
            path.write_bytes(b"")
        os.chmod(path, 0o644) if path.exists() else None
    # An empty 0644 database file stands in for an old one; companions are recreated by SQLite.
    async with sandbox(tmp_path) as sb:
        await sb.fire("UserPromptSubmit", {"prompt": "hello again"})
        await sb.tool("PostToolUse", "Bash", {"command": "ls"}, {"stdout": "a\nb"})
        with anyio.fail_after(10):
            await sb.runner.flush_tracking()
        wrong = not_private(sb.data)
    assert wrong == {}


def test_a_shared_sticky_directory_is_never_narrowed(tmp_path: Path) -> None:
    # ORION_DATA_DIR=/tmp must not lock every other user out of /tmp; Orion's own files inside are still private.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    write_private_json(shared / "orion" / "projects.json", {"x": 1})
    assert stat.S_IMODE((shared / "orion").stat().st_mode) == 0o700
    assert stat.S_IMODE((shared / "orion" / "projects.json").stat().st_mode) == 0o600


def test_private_dir_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    with pytest.raises(NotADirectoryError):
        private_dir(blocker)
