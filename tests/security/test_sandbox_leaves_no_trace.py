"""A sandboxed session leaves the user's project as it found it: the empty `.claude/` the CLI's sandbox creates as a
mount point (for the denied path) and the CLI's empty `.cc-writes/` in it are removed at the session's end, and
nothing the project had, or anyone wrote there, is touched."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import fixed_policy

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]


async def test_a_project_without_claude_dir_has_none_after_a_sandboxed_session(sidecar) -> None:
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once")) as run:
        before = sorted(p.name for p in run.project.iterdir())
        assert ".claude" not in before
        created = await run.new_session("config_bash")
        assert created["sandbox"]["enabled"] is True
        await run.prompt(created["sessionId"], "run it")
        await run.end(created["sessionId"])
        after = sorted(p.name for p in run.project.iterdir())
        assert after == sorted([*before, "from-bash.txt"])  # only what the agent's command made


async def test_an_existing_claude_dir_is_left_alone(sidecar) -> None:
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once")) as run:
        (run.project / ".claude").mkdir()
        created = await run.new_session("config_bash")
        await run.prompt(created["sessionId"], "run it")
        await run.end(created["sessionId"])
        assert (run.project / ".claude").is_dir()
