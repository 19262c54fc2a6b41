"""Four real sidecars on two simulated machines share one PostgreSQL memory: each answers `memory/search` with its
own memory and its team's shared project, never the other user's private project.

A machine is a data dir plus a user settings file (`memory.user`, `memory.team`, `memory.teamProjects`); the
database is a real server (tests/pg_server.py). Sessions use the scripted model and the real CLI.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

from tests.e2e.conftest import open_sidecar

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

# (machine, sidecar, shared with the team?, the word its session leaves in memory)
PLAN = [("alice", "a1", True, "aardvark"), ("alice", "a2", False, "albatross"),
        ("bob", "b1", True, "bison"), ("bob", "b2", False, "barracuda")]


async def test_four_sidecars_on_two_machines_share_one_database(pg_server, tmp_path: Path) -> None:
    url = pg_server.create_database("team")
    envs: dict[str, dict[str, str]] = {}
    for machine in ("alice", "bob"):
        root = tmp_path / machine
        shared = {str(tmp_path / name / "hooked"): "app" for m, name, is_shared, _ in PLAN if m == machine and is_shared}
        settings = root / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({"memory": {"url": url, "team": "core", "user": machine,
                                                   "teamProjects": shared}}))
        envs[machine] = {"ORION_DATA_DIR": str(root / "data"), "ORION_USER_SETTINGS": str(settings)}

    async with AsyncExitStack() as stack:
        runs = {name: await stack.enter_async_context(open_sidecar(tmp_path / name, "hooked", env=envs[machine]))
                for machine, name, _, _ in PLAN}
        found: dict[str, set[str]] = {}

        async def work(name: str, word: str) -> None:
            run = runs[name]
            sid = (await run.new_session("plain"))["sessionId"]
            for n in range(2):
                assert (await run.prompt(sid, f"note the {word} sighting number {n}"))["stopReason"] == "end_turn"
            await run.end(sid)

        async def search(name: str) -> None:
            seen, near = set(), set()
            for _, _, _, word in PLAN:
                hits = (await runs[name].request("memory/search", {"query": word, "limit": 50, "mode": "text"}))
                if hits["results"]:
                    seen.add(word)
                # by meaning, the nearest items come back whatever the words: only ever visible ones
                nearest = (await runs[name].request("memory/search", {"query": word, "limit": 50}))["results"]
                near |= {w for _, _, _, w in PLAN for h in nearest if w in h["text"]}
            found[name] = seen
            found[f"{name}-near"] = near

        async with anyio.create_task_group() as tg:  # all four write at once
            for _, name, _, word in PLAN:
                tg.start_soon(work, name, word)
        async with anyio.create_task_group() as tg:  # and search at once
            for _, name, _, _ in PLAN:
                tg.start_soon(search, name)

    assert found["a1"] == found["a2"] == {"aardvark", "albatross", "bison"}
    assert found["b1"] == found["b2"] == {"bison", "barracuda", "aardvark"}
    for name in ("a1", "a2", "b1", "b2"):
        assert found[f"{name}-near"] <= found[name], name
