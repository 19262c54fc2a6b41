"""Memory is keyed by the project's identity, not its folder name: a stranger's folder called `app` never receives another `app`'s memory.

In-process through the hook runner with the built-in memory hooks, then real
sessions through `python -m sidecar` (what the model is sent at SessionStart).
Documented behaviour (docs/SECURITY.md, hooks/memory/identity.py): a symlink
is the same project; a folder moved with `mv` keeps its memory; a copy, or a
new folder at an old project's path, starts empty; nothing inside the project
(git remote, marker files) can claim another project's memory.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from hooks.builtin import builtin_registry
from hooks.hookset import load_hookset
from hooks.memory.identity import forget_cache, project_identity, registry_path
from hooks.memory.search import search_memory
from hooks.runner import HookRunner
from hooks.types import SessionContext
from tests.e2e.conftest import fixed_policy, open_sidecar, request_text
from tests.security.test_redaction_writers import SCENARIO


class Sessions:
    """Built-in hooks over one data dir; each call runs a short session in a given project folder."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.count = 0

    @asynccontextmanager
    async def _runner(self, project: Path) -> AsyncIterator[tuple[HookRunner, SessionContext]]:
        hookset = load_hookset(project, None, registry=builtin_registry(None, data_dir=self.data))
        runner = HookRunner(hookset, data_dir=self.data)
        self.count += 1

        async def emit(event: str, payload: dict[str, Any]) -> None:
            return None

        ctx = SessionContext(session_id=f"s{self.count}", project_dir=project, data_dir=self.data, emit=emit)
        try:
            yield runner, ctx
        finally:
            with anyio.fail_after(60):  # liveness only: CI machines run this under heavy load
                await runner.aclose()

    async def work(self, project: Path, word: str) -> None:
        """A session that leaves `word` in memory (prompt, observation, summary)."""
        async with self._runner(project) as (runner, ctx):
            base = {"session_id": ctx.session_id, "cwd": str(project), "transcript_path": ""}
            with anyio.fail_after(60):
                await runner.fire("UserPromptSubmit", {**base, "prompt": f"look at {word}"}, ctx)
                await runner.fire("PostToolUse", {**base, "tool_name": "Bash", "tool_input": {"command": f"grep {word}"},
                                                  "tool_response": {"stdout": f"{word} found"}, "tool_use_id": "t1"},
                                  ctx, tool_use_id="t1")
                await runner.fire("Stop", {**base, "stop_hook_active": False, "last_assistant_message": f"{word} done"},
                                  ctx)

    async def recall(self, project: Path) -> str:
        """What memory-context injects at the start of a new session in `project` ('' for nothing)."""
        async with self._runner(project) as (runner, ctx):
            base = {"session_id": ctx.session_id, "cwd": str(project), "transcript_path": ""}
            with anyio.fail_after(60):
                agg = await runner.fire("SessionStart", {**base, "source": "startup"}, ctx)
        return agg.additional_context or ""


def folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("app\n")
    return path


@pytest.fixture(autouse=True)
def _fresh_identity_cache():
    forget_cache()
    yield
    forget_cache()


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_two_folders_named_app_get_separate_memory(tmp_path: Path) -> None:
    mine, theirs = folder(tmp_path / "work" / "app"), folder(tmp_path / "downloads" / "app")
    sessions = Sessions(tmp_path / "data")
    await sessions.work(mine, "quartzfalcon")
    assert "quartzfalcon" in await sessions.recall(mine)
    assert "quartzfalcon" not in await sessions.recall(theirs)
    assert project_identity(sessions.data, mine).id != project_identity(sessions.data, theirs).id
    # Searching by the other folder finds nothing of mine; by mine, it does.
    assert await search_memory(sessions.data, "quartzfalcon", project=str(theirs)) == []
    assert await search_memory(sessions.data, "quartzfalcon", project=str(mine))
    # And a bare name is refused, with the reason: it names no folder in particular.
    with pytest.raises(ValueError, match="absolute path"):
        await search_memory(sessions.data, "quartzfalcon", project="app")


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_a_cloned_project_cannot_claim_another_projects_memory(tmp_path: Path) -> None:
    victim, attacker = folder(tmp_path / "src" / "app"), folder(tmp_path / "clones" / "app")
    for project in (victim, attacker):
        (project / ".git").mkdir()
        # Same remote, same HEAD, same name: everything a project can write about itself.
        (project / ".git" / "config").write_text('[remote "origin"]\n\turl = git@example.org:acme/app.git\n')
        (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    sessions = Sessions(tmp_path / "data")
    await sessions.work(victim, "privateledger")
    # The victim's id even written into the attacker's folder changes nothing.
    (attacker / ".orion-project-id").write_text(project_identity(sessions.data, victim).id)
    assert "privateledger" not in await sessions.recall(attacker)


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_a_symlink_to_the_project_is_the_same_project(tmp_path: Path) -> None:
    real = folder(tmp_path / "work" / "app")
    link = tmp_path / "shortcut"
    link.symlink_to(real)
    sessions = Sessions(tmp_path / "data")
    await sessions.work(link, "amberkite")
    assert "amberkite" in await sessions.recall(real)
    assert project_identity(sessions.data, link) == project_identity(sessions.data, real)


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_a_moved_folder_keeps_its_memory_and_a_copy_starts_empty(tmp_path: Path) -> None:
    original = folder(tmp_path / "old" / "app")
    sessions = Sessions(tmp_path / "data")
    await sessions.work(original, "tealbadger")
    before = project_identity(sessions.data, original).id
    moved = tmp_path / "new" / "renamed-app"
    moved.parent.mkdir()
    os.rename(original, moved)  # `mv`: same file system, same directory
    forget_cache()  # as a new sidecar process would see it
    assert project_identity(sessions.data, moved).id == before
    assert "tealbadger" in await sessions.recall(moved)
    copy = tmp_path / "copy" / "renamed-app"
    shutil.copytree(moved, copy)
    assert "tealbadger" not in await sessions.recall(copy)


def xattrs_supported(path: Path) -> bool:
    try:
        os.setxattr(path, "user.orion.probe", b"1")
    except OSError:
        return False
    return True


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_a_new_folder_at_an_old_projects_path_starts_empty(tmp_path: Path) -> None:
    if not xattrs_supported(tmp_path):
        # Without extended attributes the inode stands in, and a re-created folder may reuse it (documented).
        pytest.skip("the file system under tmp_path keeps no user xattrs")
    path = folder(tmp_path / "src" / "app")
    sessions = Sessions(tmp_path / "data")
    await sessions.work(path, "rustyanchor")
    shutil.rmtree(path)
    folder(path)  # deleted and re-cloned: another project now lives here
    assert "rustyanchor" not in await sessions.recall(path)


@pytest.mark.usefixtures("memory_backend")  # on SQLite and on PostgreSQL
@pytest.mark.asyncio
async def test_a_corrupt_registry_costs_memory_continuity_not_the_session(tmp_path: Path) -> None:
    app = folder(tmp_path / "app")
    sessions = Sessions(tmp_path / "data")
    await sessions.work(app, "firstword")
    registry_path(sessions.data).write_text("{not json")
    forget_cache()
    assert "firstword" not in await sessions.recall(app)  # a fresh identity: nothing is handed out wrongly
    await sessions.work(app, "secondword")
    assert "secondword" in await sessions.recall(app)
    assert json.loads(registry_path(sessions.data).read_text())["version"] == 1


@pytest.mark.cli
@pytest.mark.asyncio
async def test_real_sessions_in_two_folders_named_app(tmp_path: Path) -> None:
    mine, theirs = folder(tmp_path / "work" / "app"), folder(tmp_path / "downloads" / "app")
    link = tmp_path / "app-link"
    link.symlink_to(mine)
    (mine / "deploy.log").write_text("cobaltheron deployed\n")
    (theirs / "deploy.log").write_text("nothing here\n")
    # The word sits in the first session's prompt (its summary) and in its Bash output (an observation).
    env = {"ORION_DATA_DIR": str(tmp_path / "data")}
    async with open_sidecar(tmp_path, "notes", trust=False, permission=fixed_policy("allow_once"), env=env) as run:

        async def session(project: Path, word: str) -> str:
            sid = (await run.request("session/new", {"projectDir": str(project), "model": f"scripted:{SCENARIO}",
                                                     "allowedTools": ["Bash"]}, timeout=60.0))["sessionId"]
            assert (await run.prompt(sid, f"Check the {word} deploy."))["stopReason"] == "end_turn"
            await run.end(sid)
            return sid

        await session(mine, "cobaltheron")
        seen = len(run.model_requests("secret_output"))
        await session(theirs, "plain")
        theirs_saw = request_text(run.model_requests("secret_output")[seen])
        seen = len(run.model_requests("secret_output"))
        await session(link, "again")
        mine_saw = request_text(run.model_requests("secret_output")[seen])
        mine_hits = (await run.request("memory/search", {"query": "cobaltheron", "project": str(mine)}))["results"]
        their_hits = (await run.request("memory/search", {"query": "cobaltheron", "project": str(theirs),
                                                          "mode": "text"}))["results"]
        # by meaning, their project's own items come back (nearest is not a match), never the other folder's
        their_near = (await run.request("memory/search", {"query": "cobaltheron", "project": str(theirs)}))["results"]
    assert "<memory-context>" in mine_saw and "cobaltheron" in mine_saw
    assert "cobaltheron" not in theirs_saw
    assert mine_hits and their_hits == []
    assert not any("cobaltheron" in h["text"] for h in their_near)
    assert {h["project"] for h in their_near} <= {project_identity(tmp_path / "data", theirs).id}
