"""Full sessions through the official ACP TypeScript SDK (`@agentclientprotocol/sdk`) as the client.

tests/acp/node/client.mjs drives the sidecar; the SDK parses every notification and request the sidecar sends with
its generated zod schemas, and the script parses the answers with the same schemas. The package is installed by
scripts/bootstrap.sh (`npm ci` in tests/acp/node), so `./dev test` runs this on a fresh machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import child_env, model, project
from tests.acp.test_python_sdk_client import PNG, hook_calls, model_requests
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.cli, pytest.mark.slow]

NODE_DIR = Path(__file__).with_name("node")


def run_node_client(tmp_path: Path, project_dir: Path, *, events: bool, permissions: list[str],
                    steps: list[dict[str, Any]], session_capabilities: dict[str, Any] | None = None,
                    subagents: bool = False) -> dict:
    node = shutil.which("node")
    assert node, "Node.js is needed for the ACP TypeScript SDK test (scripts/bootstrap.sh installs the package)"
    assert (NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(), (
        "run scripts/bootstrap.sh: it installs tests/acp/node's @agentclientprotocol/sdk")
    readme = project_dir / "README.md"
    readme.write_text("# hooked\n")
    config = {"python": sys.executable, "repo": str(REPO_ROOT), "project": str(project_dir), "events": events,
              "png": PNG, "readme": readme.as_uri(), "permissions": permissions, "steps": steps,
              "sessionCapabilities": session_capabilities, "subagents": subagents, "unstable": subagents}
    done = subprocess.run([node, "client.mjs", json.dumps(config)], cwd=NODE_DIR, env=child_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["errors"] == [], (summary["errors"], summary["stderrTail"])
    return summary


def results(summary: dict, name: str) -> list[dict]:
    return [r["value"] for r in summary["results"] if r["name"] == name]


def test_a_full_session_through_the_typescript_sdk(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    summary = run_node_client(tmp_path, project_dir, events=True, permissions=["allow_once", "reject_once"], steps=[
        {"do": "new", "model": model("ask")},
        {"do": "prompt", "text": "run the probe", "image": True, "link": True},
        {"do": "mode", "modeId": "acceptEdits"},
        {"do": "list"},
    ])
    assert results(summary, "initialize")[0]["protocolVersion"] == 1
    assert results(summary, "session/prompt")[0]["stopReason"] == "end_turn"
    [asked] = summary["permissions"]  # the hook's ask, allowed
    assert "E2E-ASK" in json.dumps(asked["toolCall"]["content"])
    assert (project_dir / "asked-marker").exists()
    kinds = [u["sessionUpdate"] for u in summary["updates"]]
    assert {"tool_call", "tool_call_update", "agent_message_chunk", "current_mode_update"} <= set(kinds)
    assert any(m.startswith("_orion/hook_") for m in summary["extensions"]), summary["extensions"][:5]
    request = json.dumps(model_requests(tmp_path, "ask")[0])
    assert PNG in request and (project_dir / "README.md").as_uri() in request  # the image and the link reached Claude
    assert results(summary, "session/list")[0]["sessions"][0]["sessionId"] == summary["sessionId"]


def test_a_plain_typescript_client_sees_a_hook_deny_a_reject_and_no_orion_events(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    summary = run_node_client(tmp_path, project_dir, events=False, permissions=["reject_once"], steps=[
        {"do": "new", "model": model("deny")},
        {"do": "prompt", "text": "make the marker"},
        {"do": "new", "model": model("ask")},
        {"do": "prompt", "text": "run the probe"},
    ])
    assert summary["extensions"] == []
    assert hook_calls(project_dir)
    assert not (project_dir / "denied-marker").exists() and not (project_dir / "asked-marker").exists()
    failed = [u for u in summary["updates"] if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "failed"]
    assert len(failed) == 2 and "E2E-DENY" in json.dumps(failed[0])
    assert len(summary["permissions"]) == 1  # the ask, rejected; the deny needed nobody


def test_cancel_load_after_restart_and_an_mcp_server_through_the_typescript_sdk(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    server = {"name": "probe", "command": sys.executable,
              "args": [str(Path(__file__).with_name("mcp_probe_server.py"))],
              "env": [{"name": "PROBE_MARKER", "value": str(project_dir / "mcp-calls.txt")}]}  # inside the box: the project is writable
    first = run_node_client(tmp_path, project_dir, events=False, permissions=["allow_once"] * 4, steps=[
        {"do": "new", "model": model("cancel")},
        {"do": "cancel", "text": "wait a while"},
        {"do": "new", "model": model("acp_mcp"), "mcpServers": [server]},
        {"do": "prompt", "text": "use the probe"},
    ])
    assert results(first, "session/prompt(cancelled)")[0]["stopReason"] == "cancelled"
    assert (project_dir / "mcp-calls.txt").read_text().strip() == "hello from the agent"
    assert "PROBE-SAYS: HELLO FROM THE AGENT" in json.dumps(first["updates"])

    second = run_node_client(tmp_path, project_dir, events=False, permissions=[], steps=[
        {"do": "load", "sessionId": first["sessionId"]},
        {"do": "prompt", "text": "and again"},
    ])
    replayed = [u for u in second["updates"] if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["content"]["text"] for u in replayed][:1] == ["use the probe"]
    assert results(second, "session/prompt")[0]["stopReason"] == "end_turn"


def system_texts(tmp_path: Path, scenario: str) -> list[str]:
    """The `system` prompt of each main-loop request the scripted model got, as one text each."""
    out = []
    for logged in model_requests(tmp_path, scenario):
        request = logged.get("body") or {}
        if not request.get("tools"):
            continue  # a side request (title): not the agent's loop
        system = request.get("system")
        out.append(system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system or []))
    return out


def test_a_client_system_prompt_is_appended_or_replaces_and_survives_load_and_fork(tmp_path: Path) -> None:
    """ACP's `systemPrompt` (append and override), advertised in the handshake, checked against the SDK's unstable
    schema both ways; on load and fork a new one replaces what the session had, and a missing one keeps it."""
    project_dir = project(tmp_path)
    append = {"mode": "append", "content": [{"type": "text", "text": "ORION-CLIENT-APPEND: answer like a pirate."}]}
    override = {"mode": "override", "content": [{"type": "text", "text": "ORION-CLIENT-OVERRIDE: you are terse."},
                                                {"type": "text", "text": "Second block."}]}
    first = run_node_client(tmp_path, project_dir, events=False, permissions=[], steps=[
        {"do": "new", "model": model("plain"), "systemPrompt": {"mode": "shout", "content": [{"type": "text", "text": "x"}]},
         "expectError": True},
        {"do": "new", "model": model("plain"), "systemPrompt": {"mode": "append", "content": []}, "expectError": True},
        {"do": "new", "model": model("plain"), "expectError": True, "systemPrompt": {
            "mode": "append", "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}},
        {"do": "new", "model": model("plain"), "systemPrompt": append},
        {"do": "prompt", "text": "hello"},
        {"do": "fork"},  # no systemPrompt: the fork keeps the source's
        {"do": "prompt", "text": "and in the fork"},
        {"do": "fork", "systemPrompt": override},
        {"do": "prompt", "text": "and in the second fork"},
    ])
    caps = results(first, "initialize")[0]["agentCapabilities"]["sessionCapabilities"]
    assert caps["systemPrompt"] == {"mode": {"override": {}}}
    refusals = results(first, "session/new(error)")
    assert [r["code"] for r in refusals] == [-32602, -32602, -32602], refusals
    assert "'shout' is not supported" in json.dumps(refusals[0]) and "empty" in json.dumps(refusals[1])
    assert "only text blocks" in json.dumps(refusals[2])

    systems = system_texts(tmp_path, "plain")
    assert len(systems) == 3, systems
    for system in systems[:2]:  # the session and its first fork: Claude Code's prompt, then the client's words
        assert "ORION-CLIENT-APPEND: answer like a pirate." in system and "Claude Code" in system
        assert system.index("Claude Code") < system.index("ORION-CLIENT-APPEND")
    # override: the client's blocks in place of Claude Code's prompt (the CLI keeps its one-line identity and billing
    # header before any custom prompt); the earlier append is gone, though the CLI had recorded it for the conversation
    assert systems[2].endswith("ORION-CLIENT-OVERRIDE: you are terse.\n\nSecond block."), systems[2][:400]
    assert "ORION-CLIENT-APPEND" not in systems[2] and "You are Claude Code" not in systems[2]

    second = run_node_client(tmp_path, project_dir, events=False, permissions=[], steps=[
        {"do": "load", "sessionId": first["sessionId"]},  # the override fork, loaded again without a systemPrompt
        {"do": "prompt", "text": "after a restart"},
    ])
    assert results(second, "session/prompt")[0]["stopReason"] == "end_turn"
    assert system_texts(tmp_path, "plain")[-1].endswith("ORION-CLIENT-OVERRIDE: you are terse.\n\nSecond block.")


def test_notices_and_compaction_as_acp_updates_for_a_client_that_shows_them(tmp_path: Path) -> None:
    """ACP's `notice` and `compaction_update` (the SDK parses both with its schemas) go to a client that advertised
    `session.notices` / `session.compaction`; a client that did not gets the message line marked as Orion's notice
    and nothing for the compaction (ACP: MUST only send them when advertised)."""
    project_dir = project(tmp_path)
    steps = [{"do": "new", "model": model("compact")},
             {"do": "prompt", "text": "a forbidden-prompt"},  # the project's UserPromptSubmit hook blocks it
             {"do": "prompt", "text": "Remember the codename amber-kite."},
             {"do": "prompt", "text": "/compact"}]
    shown = run_node_client(tmp_path, project_dir, events=False, permissions=[], steps=steps,
                            session_capabilities={"notices": {}, "compaction": {}})
    [notice] = [u for u in shown["updates"] if u["sessionUpdate"] == "notice"]
    assert notice["severity"] == "error" and "E2E-PROMPT-BLOCKED" in notice["title"] + notice.get("description", "")
    assert notice["_meta"]["orion"]["notice"] == {"level": "error", "source": "hook", "event": "UserPromptSubmit"}
    assert not [u for u in shown["updates"] if u.get("_meta", {}).get("orion", {}).get("notice")
                and u["sessionUpdate"] == "agent_message_chunk"]  # not twice
    [compaction] = [u for u in shown["updates"] if u["sessionUpdate"] == "compaction_update"]
    assert compaction["status"] == "completed" and compaction["compactionId"]
    assert "E2E-SUMMARY" in compaction["summary"][0]["text"] and compaction["_meta"]["orion"]["trigger"] == "manual"

    plain = run_node_client(tmp_path, project_dir, events=False, permissions=[], steps=steps)
    kinds = {u["sessionUpdate"] for u in plain["updates"]}
    assert "notice" not in kinds and "compaction_update" not in kinds
    assert [u for u in plain["updates"] if u.get("_meta", {}).get("orion", {}).get("notice")]


def test_a_subagent_is_a_child_session_for_a_client_that_knows_subagents(tmp_path: Path) -> None:
    """ACP's subagent sessions (unstable RFD; the SDK's unstable client parses every update): the Agent tool call
    announces a child on its session, what the subagent does (its tool calls, the hooks run for them) arrives on the
    child, and the child goes idle when the call is over. A client without the capability sees none of it."""
    project_dir = project(tmp_path, "notes")
    agents = project_dir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "prober.md").write_text("---\nname: prober\ndescription: Runs the probe.\ntools: Bash\n---\nRun it.\n")
    steps = [{"do": "new", "model": model("subagent"), "allowedTools": ["Bash", "Agent"]}, {"do": "prompt", "text": "go"}]
    summary = run_node_client(tmp_path, project_dir, events=True, permissions=["allow_once"] * 4, steps=steps,
                              subagents=True)
    parent = summary["sessionId"]
    by_session: dict[str, list[dict]] = {}
    for note in summary["notifications"]:
        by_session.setdefault(note["sessionId"], []).append(note["update"])
    announced = [u for u in by_session[parent] if u["sessionUpdate"] == "subagent_update"]
    agent_call = next(u for u in by_session[parent] if u["sessionUpdate"] == "tool_call"
                      and u["rawInput"].get("subagent_type") == "prober")
    child = announced[0]["sessionId"]
    assert child != parent and announced[0]["state"] == {"state": "running"}
    assert announced[0]["title"] == "Run the probe" and "SUBTASK-7" in announced[0]["description"]
    assert announced[0]["_meta"]["orion"]["toolCallId"] == agent_call["toolCallId"]
    assert announced[-1]["sessionId"] == child and announced[-1]["state"]["state"] == "idle"
    # announced before anything arrives on the child
    order = [(n["sessionId"], n["update"]["sessionUpdate"]) for n in summary["notifications"]]
    assert order.index((parent, "subagent_update")) < min(i for i, (s, _) in enumerate(order) if s == child)
    child_calls = [u for u in by_session[child] if u["sessionUpdate"] == "tool_call"]
    assert [c["rawInput"]["command"] for c in child_calls] == ["echo from-the-subagent"]
    parent_calls = [u for u in by_session[parent] if u["sessionUpdate"] == "tool_call"]
    assert "echo from-the-main-agent" in [c["rawInput"].get("command") for c in parent_calls]
    assert "echo from-the-subagent" not in [c["rawInput"].get("command") for c in parent_calls]
    # the hooks run for the subagent's Bash are the child's too
    hook_sessions = {n["params"]["sessionId"] for n in summary["extensionNotifications"]
                     if n["params"].get("toolCallId") == child_calls[0]["toolCallId"]}
    assert hook_sessions == {child}, hook_sessions

    plain = run_node_client(tmp_path, project_dir, events=False, permissions=["allow_once"] * 4, steps=steps)
    assert {n["sessionId"] for n in plain["notifications"]} == {plain["sessionId"]}
    assert "subagent_update" not in {n["update"]["sessionUpdate"] for n in plain["notifications"]}
