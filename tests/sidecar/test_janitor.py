"""A sidecar prunes its data directory by the user's retention policy once it has answered `initialize` (sidecar/janitor.py)."""

from __future__ import annotations

import os

import anyio
import pytest

from frontend_stub.client import SidecarClient
from tests.hooks.test_retention import data_dir, session, user_settings
from tests.sidecar.test_spine import ROOT, child_env
from tests.waiting import until

pytestmark = pytest.mark.asyncio


async def started_and_pruned() -> str:
    """Launch a sidecar, wait for its start-up retention pass, and return what it logged."""
    with anyio.fail_after(60):
        async with SidecarClient.launch(cwd=ROOT, env=child_env()) as client:
            await until(lambda: "retention (start-up)" in client.stderr_text(), 30, "the start-up retention pass")
            assert await client.request("ping") == {}
            return client.stderr_text()


async def test_old_sessions_data_is_pruned_at_start_up_with_the_default_policy() -> None:
    old = session("ended-long-ago", days=31)
    recent = session("ended-last-week", days=7)
    logged = await started_and_pruned()
    assert "removed 1 session(s)" in logged and "kept 1 session(s)" in logged
    assert not any(os.path.lexists(p) for p in old)
    assert all(p.exists() for p in recent)


async def test_at_start_up_a_size_cap_prunes_the_least_recently_used_first() -> None:
    user_settings({"retention": {"maxTotalMiB": 1, "maxAgeDays": 0}})
    for days in (9, 3, 6, 1):
        session(f"used-{days}-days-ago", days=days, size=400_000, scripted=False)
    session("ancient-but-small", days=400, size=10, scripted=False)  # no age limit: only the cap counts
    logged = await started_and_pruned()
    assert "removed 3 session(s)" in logged
    left = sorted(p.name for p in (data_dir() / "sessions").iterdir())
    assert left == ["used-1-days-ago", "used-3-days-ago"]

