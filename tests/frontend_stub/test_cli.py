"""`python -m frontend_stub` (the `orion` CLI): subcommands launch the real sidecar and render a timeline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from frontend_stub.commands import discover
from frontend_stub.timeline import describe_event

ROOT = Path(__file__).resolve().parents[2]


def orion(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "frontend_stub", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_ping_shows_handshake_pings_and_a_clean_exit():
    result = orion("ping", "-n", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("⇠ initialize ok orion-sidecar" in line for line in lines)
    assert sum("⇠ ping ok" in line for line in lines) == 2
    assert lines[-1].endswith("sidecar exited with code 0")


def test_raw_sends_the_line_verbatim_and_prints_the_answer():
    result = orion("raw", "not json at all", "--wait", "0.5")
    assert result.returncode == 0, result.stderr
    assert '"code": -32700' in result.stdout


def test_subcommands_are_discovered_from_the_package():
    assert {"ping", "raw", "demo"} <= set(discover())


def test_timeline_describes_known_events():
    line = describe_event("hook_response", {"hookName": "audit", "outcome": "blocked", "exitCode": 2, "durationMs": 12})
    assert line == "hook ■ audit → blocked exit=2 12 ms"
    update = describe_event("session/update", {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "text": "hi"}})
    assert update == "agent_message_chunk: hi"
