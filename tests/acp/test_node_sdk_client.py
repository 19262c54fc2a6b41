"""A full session through the official ACP TypeScript SDK (`@agentclientprotocol/sdk`) as the client.

tests/acp/node/client.mjs drives the sidecar; the SDK parses every notification and request the sidecar sends with
its generated zod schemas, and the script parses the answers with the same schemas. The package is installed by
scripts/bootstrap.sh (`npm ci` in tests/acp/node), so `./dev test` runs this on a fresh machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acp.conftest import child_env, model, project
from tests.acp.test_python_sdk_client import PNG, hook_calls, model_requests
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.cli, pytest.mark.slow]

NODE_DIR = Path(__file__).with_name("node")


def run_node_client(tmp_path: Path, *, events: bool, permissions: list[str], scenario: str) -> dict:
    node = shutil.which("node")
    assert node, "Node.js is needed for the ACP TypeScript SDK test (scripts/bootstrap.sh installs the package)"
    assert (NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(), (
        "run scripts/bootstrap.sh: it installs tests/acp/node's @agentclientprotocol/sdk")
    project_dir = project(tmp_path)
    readme = project_dir / "README.md"
    readme.write_text("# hooked\n")
    trust = subprocess.run([sys.executable, "-m", "hooks", "trust", str(project_dir)], cwd=REPO_ROOT,
                           env=child_env(tmp_path), capture_output=True, text=True, timeout=60)
    config = {"python": sys.executable, "repo": str(REPO_ROOT), "project": str(project_dir), "events": events,
              "model": model(scenario), "png": PNG, "readme": readme.as_uri(), "permissions": permissions}
    done = subprocess.run([node, "client.mjs", json.dumps(config)], cwd=NODE_DIR, env=child_env(tmp_path),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    summary["project"] = project_dir
    summary["trustOutput"] = trust.stdout + trust.stderr
    return summary


def test_a_full_session_through_the_typescript_sdk_with_orion_events(tmp_path: Path) -> None:
    summary = run_node_client(tmp_path, events=True, permissions=["allow_once"], scenario="ask")
    assert summary["errors"] == [], (summary["errors"], summary["stderrTail"])
    assert summary["results"]["initialize"]["protocolVersion"] == 1
    assert summary["results"]["prompt"]["stopReason"] == "end_turn"
    [asked] = summary["permissions"]
    assert "E2E-ASK" in json.dumps(asked["toolCall"]["content"])
    assert (summary["project"] / "asked-marker").exists()
    kinds = [u["sessionUpdate"] for u in summary["updates"]]
    assert {"tool_call", "tool_call_update", "agent_message_chunk", "current_mode_update"} <= set(kinds)
    assert any(m.startswith("_orion/hook_") for m in summary["extensions"]), summary["extensions"][:5]
    request = json.dumps(model_requests(tmp_path, "ask")[0])
    assert PNG in request  # the image reached the model
    assert hook_calls(summary["project"])


def test_a_plain_typescript_client_gets_no_orion_events_and_no_errors(tmp_path: Path) -> None:
    summary = run_node_client(tmp_path, events=False, permissions=["reject_once"], scenario="deny")
    assert summary["errors"] == [], (summary["errors"], summary["stderrTail"])
    assert summary["extensions"] == []
    assert not (summary["project"] / "denied-marker").exists()
    failed = [u for u in summary["updates"] if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "failed"]
    assert failed and "E2E-DENY" in json.dumps(failed)
