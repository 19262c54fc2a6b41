"""`python -m hooks test` and the JSON-RPC `hooks/test` run every hook type: command, python, http (against a real
local server), prompt and agent (against a scripted model running the real Claude Code CLI), with the same results."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from frontend_stub.client import SidecarClient
from ipc.errors import RemoteError
from tests.hooks.support import Project, script
from tests.hooks.test_cli import run_cli

RM = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
LS = {"tool_name": "Bash", "tool_input": {"command": "ls"}}


@contextmanager
def policy_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real HTTP policy server: denies `rm -rf`, says nothing otherwise; keeps what it received."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"body": body, "token": self.headers.get("X-Token")})
            answer: dict[str, Any] = {}
            if "rm -rf" in json.dumps(body):
                answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                 "permissionDecisionReason": "policy server: no recursive deletes"}}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def scenario(tmp_path: Path, policy: Path) -> Path:
    """The prompt hook's judge answers from a rule; the agent hook's subagent reads POLICY.md with Read, then answers."""
    path = tmp_path / "judges.yaml"
    path.write_text(f"""
rules:
  - name: prompt-judge
    when: {{has_tools: false, any_message_contains: "rm -rf"}}
    reply: '{{"ok": false, "reason": "prompt judge: destructive"}}'
side_reply: '{{"ok": true, "reason": "fine"}}'
turns:
  - - tool_use: {{name: Read, input: {{file_path: "{policy}"}}}}
  - '{{"ok": false, "reason": "agent judge: POLICY.md forbids deleting build"}}'
default: '{{"ok": true, "reason": "fine"}}'
""")
    return path


def every_type_project(project: Project, url: str) -> None:
    script(project.hooks_dir / "gate.sh", "#!/bin/sh\ngrep -q 'rm -rf' && { echo 'shell gate: no' >&2; exit 2; }\nexit 0\n")
    script(project.hooks_dir / "gate.py", "def run(payload):\n    return None\n")
    (project.root / "POLICY.md").write_text("Never delete build/: it holds the signed release.\n")
    project.settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/gate.sh', "name": "shell-gate"},
        {"type": "python", "script": "gate.py", "name": "py-gate"},
        {"type": "http", "url": url, "name": "policy-server", "headers": {"X-Token": "$HOOK_TOKEN"},
         "allowedEnvVars": ["HOOK_TOKEN"]},
        {"type": "prompt", "prompt": "Is this Bash call safe? $ARGUMENTS", "name": "judge"},
        {"type": "agent", "prompt": "Check that POLICY.md allows this call: $ARGUMENTS", "name": "auditor"},
    ]}]}})
    assert run_cli("trust", "--project", str(project.root)).returncode == 0


def cli_test(project: Project, hook: str, payload: dict[str, Any], *extra: str) -> dict[str, Any]:
    out = run_cli("test", "PreToolUse", "--payload", "-", "--hook", hook, "--project", str(project.root),
                  "--no-builtin", *extra, stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    got: dict[str, Any] = json.loads(out.stdout)
    return got


# What each hook must decide for `rm -rf build` (for `ls` every one lets the call proceed without a decision).
EXPECTED = {
    "shell-gate": ("blocked", "deny", "shell gate: no"),
    "py-gate": ("success", None, None),
    "policy-server": ("blocked", "deny", "policy server: no recursive deletes"),
    "judge": ("blocked", "deny", "prompt judge: destructive"),
    "auditor": ("blocked", "deny", "agent judge: POLICY.md forbids deleting build"),
}


def assert_decides(hook: str, results: list[dict[str, Any]], aggregate: dict[str, Any]) -> None:
    outcome, decision, reason = EXPECTED[hook]
    assert [r["outcome"] for r in results] == [outcome], results
    assert aggregate["decision"] == decision
    if reason is not None:
        assert reason in aggregate["reason"]


@pytest.mark.cli
def test_cli_runs_every_type(project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t-123")
    monkeypatch.setenv("ORION_SCRIPTED_LOG_DIR", str(tmp_path / "model-log"))
    judges = scenario(tmp_path, project.root / "POLICY.md")
    with policy_server() as (url, received):
        every_type_project(project, url)
        for hook in EXPECTED:
            got = cli_test(project, hook, RM, "--model", f"scripted:{judges}")
            assert_decides(hook, got["results"], got["aggregate"])
        assert received[0]["body"]["tool_input"] == RM["tool_input"] and received[0]["token"] == "t-123"
        calm = cli_test(project, "policy-server", LS)
        assert calm["results"][0]["outcome"] == "success" and calm["aggregate"]["decision"] is None
    # The agent hook's subagent really read the file (its second request carries the Read result).
    records = [json.loads(line) for line in (tmp_path / "model-log" / "judges.jsonl").read_text().splitlines()]
    agent_turns = [r for r in records if r["has_tools"]]
    assert [r["answered_by"] for r in agent_turns] == ["turn:0", "turn:1"]
    assert "it holds the signed release" in json.dumps(agent_turns[1]["body"]["messages"])
    assert not (Path(os.environ["ORION_DATA_DIR"]) / "cli-home" / "hooks-test").exists()  # scratch removed


def test_cli_prompt_hook_without_a_model_says_what_to_set(project: Project) -> None:
    with policy_server() as (url, _received):
        every_type_project(project, url)
    got = cli_test(project, "judge", RM)
    [result] = got["results"]
    assert result["outcome"] == "error" and "no credentials for a real model" in result["error"]
    assert "scripted:<scenario>" in result["error"] and got["aggregate"]["decision"] is None  # fail-open
    bad = run_cli("test", "PreToolUse", "--payload", "-", "--hook", "judge", "--project", str(project.root),
                  "--no-builtin", "--model", "scripted:no-such-scenario", stdin=json.dumps(RM))
    assert bad.returncode == 2 and "scenario 'no-such-scenario' not found" in bad.stderr


@pytest.mark.cli
@pytest.mark.asyncio
async def test_json_rpc_hooks_test_runs_every_type(project: Project, tmp_path: Path) -> None:
    judges = scenario(tmp_path, project.root / "POLICY.md")
    env = {**os.environ, "HOOK_TOKEN": "t-456", "ORION_SCRIPTED_LOG_DIR": str(tmp_path / "model-log")}
    with policy_server() as (url, received):
        every_type_project(project, url)
        async with SidecarClient.launch(env=env) as client:
            with anyio.fail_after(120):
                for hook in EXPECTED:
                    got = await client.request("hooks/test", {
                        "projectDir": str(project.root), "event": "PreToolUse", "payload": RM, "hookName": hook,
                        "model": f"scripted:{judges}"})
                    assert_decides(hook, got["results"], got["aggregate"])
                with pytest.raises(RemoteError) as refused:
                    await client.request("hooks/test", {"projectDir": str(project.root), "event": "PreToolUse",
                                                        "payload": RM, "hookName": "judge",
                                                        "model": "scripted:no-such-scenario"})
                assert refused.value.data["reason"] == "scenarioNotFound"
            await client.close()
    assert received[0]["token"] == "t-456"
    records = [json.loads(line) for line in (tmp_path / "model-log" / "judges.jsonl").read_text().splitlines()]
    assert "it holds the signed release" in json.dumps([r["body"]["messages"] for r in records if r["has_tools"]])
