"""The sidecar's own log records reach the frontend as `log` events, and secrets in them are redacted there and on stderr."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from frontend_stub.client import SidecarClient

FAKE_KEY = "sk-ant-api03-" + "Q" * 40


@pytest.mark.asyncio
async def test_log_records_reach_the_frontend_redacted() -> None:
    env = dict(os.environ, ORION_LOG_FORWARD_LEVEL="INFO")
    async with SidecarClient.launch(env=env, initialize=False) as client:
        logs = client.events("log")
        with anyio.fail_after(20):
            await client.request(
                "initialize",
                {"protocolVersion": "2026-11-01", "clientInfo": {"name": f"stub {FAKE_KEY}", "version": "1"},
                 "capabilities": {}},
            )
            async for event in logs:
                if "initialized by" in event.params["message"]:
                    break
        assert event.params["level"] == "info"
        assert event.params["logger"] == "sidecar.methods.core"
        assert FAKE_KEY not in event.params["message"]
        assert "stub" in event.params["message"]
        await client.close()
    assert "initialized by stub" in client.stderr_text()
    assert FAKE_KEY not in client.stderr_text()


@pytest.mark.asyncio
async def test_default_level_forwards_no_info_records() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORION_LOG_FORWARD_LEVEL"}
    async with SidecarClient.launch(env=env) as client:
        with anyio.fail_after(20):
            await client.ping()
        await client.close()
    # The record was written to stderr, but at the default level (WARNING) it is not forwarded.
    assert "initialized by" in client.stderr_text()
    assert [e for e in client.history if e.name == "log" and e.params.get("level") == "info"] == []


def test_the_sidecar_logs_at_warning_unless_asked(tmp_path: Path) -> None:
    """ACP clients show what an agent writes on stderr (some as error notices): by default only warnings and errors
    go there; ORION_LOG_LEVEL=INFO brings the session timings back."""
    import subprocess
    import sys

    def stderr_of(level: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "ORION_LOG_LEVEL"}
        if level:
            env["ORION_LOG_LEVEL"] = level
        first = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        done = subprocess.run([sys.executable, "-m", "sidecar"], input=first + "\n", capture_output=True, text=True,
                              timeout=60, env=env, cwd=Path(__file__).resolve().parents[2])
        assert '"protocolVersion":1' in done.stdout.replace(" ", "")
        return done.stderr

    quiet, chatty = stderr_of(None), stderr_of("INFO")
    assert " INFO " in chatty and "initialized by" in chatty
    assert " INFO " not in quiet and "initialized by" not in quiet
