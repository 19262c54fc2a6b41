"""Bad input on an ACP connection gets a specific error, and the sidecar carries on: nothing crashes, nothing but
protocol reaches stdout (the client below parses every line it reads)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from frontend_stub.client import SidecarClient
from ipc.errors import RemoteError
from tests.e2e.conftest import REPO_ROOT

pytestmark = pytest.mark.asyncio


async def refused(client: SidecarClient, method: str, params: dict) -> RemoteError:
    with pytest.raises(RemoteError) as caught:
        await client.request(method, params, timeout=30)
    return caught.value


async def test_malformed_acp_requests_are_refused_by_name_and_the_connection_lives_on(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    with anyio.fail_after(60):
        async with SidecarClient.launch([sys.executable, "-m", "sidecar"], env=env, cwd=str(REPO_ROOT),
                                        initialize=False) as client:
            init = await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            assert init["protocolVersion"] == 1
            again = await refused(client, "initialize", {"protocolVersion": 1})
            assert again.code == -32600  # once per connection
            no_cwd = await refused(client, "session/new", {"mcpServers": []})
            assert no_cwd.code == -32602 and ["cwd"] in [e["loc"] for e in no_cwd.data["errors"]]
            bad_server = await refused(client, "session/new", {"cwd": str(tmp_path), "mcpServers": [{"type": "ftp"}]})
            assert bad_server.code == -32602
            missing_dir = await refused(client, "session/new", {"cwd": str(tmp_path / "nope"), "mcpServers": []})
            assert missing_dir.code == -32602 and "nope" in missing_dir.message
            not_blocks = await refused(client, "session/prompt", {"sessionId": "x", "prompt": "just a string"})
            assert not_blocks.code == -32602
            empty = await refused(client, "session/prompt", {"sessionId": "x", "prompt": []})
            assert empty.code == -32602
            unknown_block = await refused(client, "session/prompt", {"sessionId": "x", "prompt": [{"type": "video"}]})
            assert unknown_block.code == -32602
            no_session = await refused(client, "session/prompt", {"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]})
            assert no_session.code == -31001
            plain_orion = await refused(client, "hooks/list", {"projectDir": str(tmp_path)})
            assert plain_orion.code == -32601  # on ACP, Orion's methods carry the _orion/ prefix
            old_shape = await refused(client, "_orion/session/new", {"projectDir": str(tmp_path)})
            assert old_shape.code == -32601  # ACP's own session methods exist once, in ACP's shape
            bad_ext = await refused(client, "_orion/hooks/list", {})
            assert bad_ext.code == -32602
            for method in ("session/load", "session/resume", "session/delete"):  # an id that would be a path
                bad_id = await refused(client, method, {"sessionId": "../../etc", "cwd": str(tmp_path), "mcpServers": []})
                assert bad_id.code == -32602 and "invalid session id" in bad_id.message, (method, bad_id)
            unknown = await refused(client, "session/delete", {"sessionId": "never-was"})
            assert unknown.code == -32002
            await client.notify("session/cancel", {"sessionId": 12})  # a bad notification gets no answer and breaks nothing
            await client.notify("_orion/no-such-notification", {})
            listed = await client.request("_orion/hooks/list", {"projectDir": str(tmp_path)}, timeout=30)
            assert listed["hooks"]
            assert await client.request("_orion/ping", {}) == {}
    assert client.returncode == 0
