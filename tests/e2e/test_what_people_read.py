"""A person reads what the agent asked for, not env-isolation's `unset …;` prefix: in the permission prompt's title
and in the memory's records; what will run (the prompt's `toolInput`) stays exact."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import fixed_policy

pytestmark = [pytest.mark.asyncio, pytest.mark.cli]

ASKED = "touch asked-marker # ask-user-probe"


async def test_the_permission_title_and_the_memory_show_the_agents_own_command(sidecar) -> None:
    async with sidecar(permission=fixed_policy("allow_once")) as run:
        session = await run.new_session("ask")
        await run.prompt(session["sessionId"], "run the probe")
        hits = (await run.request("memory/search", {"query": "asked marker"}))["results"]
    [asked] = run.permission_requests
    assert asked["toolInput"]["command"].startswith("unset ") and asked["toolInput"]["command"].endswith(ASKED)
    assert asked["title"] == ASKED
    observed = [h for h in hits if h["kind"] == "observation"]
    assert observed and all("unset ANTHROPIC" not in h["text"] for h in observed), observed
    assert any(ASKED in h["text"] for h in observed)
