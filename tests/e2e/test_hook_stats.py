"""`hooks/stats` through the sidecar: a live session's figures, its project's, and the time range."""

from __future__ import annotations

import pytest


@pytest.mark.asyncio
@pytest.mark.cli
async def test_hooks_stats_counts_a_live_sessions_block(sidecar) -> None:
    async with sidecar() as run:
        session = await run.new_session("deny")
        await run.prompt(session["sessionId"], "make the marker")
        stats = await run.request("hooks/stats", {"sessionId": session["sessionId"]})
        project = await run.request("hooks/stats", {"projectDir": str(run.project), "since": "1h"})
    gate = [r for r in stats["hooks"] if r["name"] == "e2e-bash-gate"]
    assert gate and gate[0]["blocks"] == 1 and gate[0]["runs"] == 1
    assert any(r["name"] == "e2e-bash-gate" and r["blocks"] == 1 for r in project["hooks"])
