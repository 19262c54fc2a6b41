"""The scripted model in a long offline session: what a server remembers stays bounded (issue 26/27).

The sidecar's servers are the ones ``get_or_start`` shares; these tests use that path, so they hold the settings the
sidecar really runs with. Nothing here measures time or memory: they count what the server keeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sidecar.scripted_model import ScriptedModelServer, get_or_start, parse_scenario, shared_server
from sidecar.scripted_model.server import (
    SHARED_SERVER_CONVERSATIONS,
    SHARED_SERVER_KEEP,
    SHARED_SERVER_KEEP_BYTES,
)

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]
TURNS = [f"turn {i}" for i in range(12)]


def cli_request(session: str, text: str = "hi", *, padding: int = 0) -> tuple[dict[str, Any], dict[str, str]]:
    """A main-loop request as the CLI sends it (its session id in a header), optionally padded to a larger body."""
    body: dict[str, Any] = {"model": "claude-x", "stream": False, "tools": TOOLS,
                            "messages": [{"role": "user", "content": text}]}
    if padding:
        body["system"] = "x" * padding
    return body, {"x-claude-code-session-id": session}


def shared(tmp_path: Path, name: str) -> ScriptedModelServer:
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps({"turns": TURNS, "default": "no more", "side_reply": "A title"}))
    get_or_start(path)
    server = shared_server(path)
    assert server is not None
    return server


def answered(server: ScriptedModelServer, session: str) -> str:
    body, headers = cli_request(session)
    label, _reply, _key = server.choose(body, headers)
    return label


def test_sidecar_server_keeps_a_bounded_request_log_by_count_and_bytes(tmp_path: Path) -> None:
    server = shared(tmp_path, "log-bounds")
    # Bodies of ~100 KB, as a long session's requests are (each resends the conversation): more than the byte bound.
    big = 100_000
    n_big = SHARED_SERVER_KEEP_BYTES // big + 20
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for i in range(n_big):
            body, headers = cli_request(f"big-{i}", padding=big)
            assert http.post("/v1/messages", json=body, headers=headers).status_code == 200
        kept = server.requests
        assert sum(r.size for r in kept) <= SHARED_SERVER_KEEP_BYTES
        assert 0 < len(kept) < n_big
        assert [r.index for r in kept] == list(range(n_big - len(kept), n_big))  # the newest, in order
        assert kept[-1].conversation == f"session:big-{n_big - 1}"
        # Small bodies: the count bound holds.
        for i in range(SHARED_SERVER_KEEP + 30):
            body, headers = cli_request(f"small-{i}")
            assert http.post("/v1/messages", json=body, headers=headers).status_code == 200
    assert len(server.requests) == SHARED_SERVER_KEEP
    assert server.requests[-1].conversation == f"session:small-{SHARED_SERVER_KEEP + 29}"


def test_sidecar_server_remembers_a_bounded_number_of_conversations(tmp_path: Path) -> None:
    server = shared(tmp_path, "conversation-bounds")
    assert answered(server, "live") == "turn:0"
    others = 3 * SHARED_SERVER_CONVERSATIONS
    live_turns = []
    for i in range(others):
        assert answered(server, f"short-{i}") == "turn:0"
        assert server.conversation_count() <= SHARED_SERVER_CONVERSATIONS
        if i % (SHARED_SERVER_CONVERSATIONS // 2) == 0:
            # A live session keeps its place in the script however many sessions come and go around it.
            live_turns.append(answered(server, "live"))
    assert live_turns == [f"turn:{n}" for n in range(1, len(live_turns) + 1)]
    assert server.conversation_count() == SHARED_SERVER_CONVERSATIONS
    # A recent short session still has its place; the oldest ones (sessions long ended) were forgotten.
    assert answered(server, f"short-{others - 1}") == "turn:1"
    assert answered(server, "short-0") == "turn:0"


def test_bounds_of_a_directly_built_server() -> None:
    server = ScriptedModelServer(parse_scenario({"turns": TURNS}), keep=10, keep_bytes=1000, max_conversations=3)
    for name in ("a", "b", "c"):
        assert answered(server, name) == "turn:0"
    assert answered(server, "a") == "turn:1"  # a is now the most recently used: b goes first
    assert answered(server, "d") == "turn:0"
    assert server.conversation_count() == 3
    assert answered(server, "a") == "turn:2"
    assert answered(server, "c") == "turn:1"
    assert answered(server, "b") == "turn:0"  # forgotten, so it starts the script again
    with pytest.raises(ValueError):
        ScriptedModelServer(parse_scenario({"turns": TURNS}), max_conversations=0)


@pytest.mark.asyncio
async def test_byte_bound_keeps_the_newest_record_even_when_it_alone_is_larger() -> None:
    server = ScriptedModelServer(parse_scenario({"turns": TURNS}), keep=10, keep_bytes=1000)
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            for i in range(5):
                body, headers = cli_request(f"s{i}", padding=300)
                await http.post("/v1/messages", json=body, headers=headers)
            assert 1 < len(server.requests) < 5 and sum(r.size for r in server.requests) <= 1000
            body, headers = cli_request("huge", padding=5000)
            await http.post("/v1/messages", json=body, headers=headers)
    assert [r.conversation for r in server.requests] == ["session:huge"]
    assert server.requests[0].size > 5000 and server.requests[0].index == 5


@pytest.mark.asyncio
async def test_unbounded_by_default_for_tests_that_read_every_request() -> None:
    server = ScriptedModelServer(parse_scenario({"turns": TURNS}))
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            for i in range(30):
                body, headers = cli_request("one", padding=50_000)
                await http.post("/v1/messages", json=body, headers=headers)
    assert len(server.requests) == 30
    assert [r.answered_by for r in server.requests][:12] == [f"turn:{i}" for i in range(12)]
