"""Retention through real sessions: an open session's data survives every sidecar's pruning and goes once it has
ended; a project's settings cannot change what is kept (hooks/retention.py, sidecar/janitor.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from frontend_stub.client import SidecarClient
from tests.e2e.conftest import E2ESidecar
from tests.hooks.test_retention import data_dir, session, user_settings
from tests.sidecar.test_spine import ROOT, child_env
from tests.waiting import until

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]


async def pruned_after(run: E2ESidecar, sid: str) -> str:
    """The line the sidecar logged for the retention pass that followed `sid`'s end."""
    mark = f"retention (after session {sid})"
    await until(lambda: mark in run.client.stderr_text(), 30, f"the retention pass after {sid} ended")
    return next(line for line in run.client.stderr_text().splitlines() if mark in line)


async def test_an_open_sessions_data_survives_every_sidecars_pruning_and_goes_once_it_has_ended(sidecar) -> None:
    # A cap no session fits under: every session's data is due, whatever its age; only being open keeps it.
    user_settings({"retention": {"maxTotalMiB": 0.001, "maxAgeDays": 0}})
    data = data_dir()
    async with sidecar() as run:
        await until(lambda: "retention (start-up)" in run.client.stderr_text(), 30, "the start-up pass")
        sid = (await run.new_session("plain"))["sessionId"]
        await run.prompt(sid, "Hello.")
        await run.request("hooks/stats", {"sessionId": sid})  # its tracking is on disk now
        tracked = data / "sessions" / sid / "events.jsonl"
        assert tracked.stat().st_size > 0 and (data / "cli-home" / sid).is_dir()

        with anyio.fail_after(60):
            async with SidecarClient.launch(cwd=ROOT, env=child_env()) as other:
                await until(lambda: "retention (start-up)" in other.stderr_text(), 30, "the other sidecar's pass")
                assert "1 due but open in a sidecar" in other.stderr_text()
        assert tracked.stat().st_size > 0 and (data / "cli-home" / sid).is_dir()

        brief = (await run.new_session("plain"))["sessionId"]
        await run.prompt(brief, "Hello.")
        await run.end(brief)
        assert "removed 1 session(s)" in await pruned_after(run, brief)
        assert not (data / "sessions" / brief).exists() and not (data / "transcripts" / f"{brief}.jsonl").exists()
        assert tracked.stat().st_size > 0, "the open session's data stays"

        await run.end(sid)
        assert "removed 1 session(s)" in await pruned_after(run, sid)
        assert not (data / "sessions" / sid).exists() and not (data / "cli-home" / sid).exists()


async def test_a_projects_settings_cannot_change_retention(sidecar, tmp_path: Path) -> None:
    recent = session("ended-an-hour-ago", days=1 / 24)
    older = session("ended-last-week", days=7)
    hostile_user_settings = tmp_path / "hostile.json"
    hostile_user_settings.write_text(json.dumps({"retention": {"maxAgeDays": 0.00001, "maxTotalMiB": 0.00001}}))
    async with sidecar() as run:
        claude = run.project / ".claude"
        for name in ("settings.json", "settings.local.json"):
            path = claude / name
            settings = json.loads(path.read_text()) if path.exists() else {}
            settings["retention"] = {"maxAgeDays": 0.00001, "maxTotalMiB": 0.00001, "rotateMiB": 0.00001}
            settings["env"] = {"ORION_USER_SETTINGS": str(hostile_user_settings)}  # reaches the CLI, never the sidecar
            path.write_text(json.dumps(settings))
        await run.trust()  # trusted as it is now: its settings are read for everything they may decide
        sid = (await run.new_session("plain"))["sessionId"]
        await run.prompt(sid, "Hello.")
        await run.prompt(sid, "Hello again.")
        await run.end(sid)
        line = await pruned_after(run, sid)
    assert "removed 0 session(s)" in line and "max age 30 days, size cap 512 MiB, rotation at 32 MiB" in line
    assert all(p.exists() for p in recent + older)
    events = data_dir() / "sessions" / sid / "events.jsonl"
    assert events.stat().st_size > 0 and not os.path.lexists(events.with_name("events.jsonl.1"))
