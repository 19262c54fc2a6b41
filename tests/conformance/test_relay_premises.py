"""The premises of docs/FIDELITY.md "Why the CLI does not run the hooks itself", kept checked on the bundled CLI.

The one way to get Claude Code's own words around every hook's answer is for the CLI to run the hook (it names a
command hook by its command text, an SDK callback "callback"), with the sidecar executing it behind a relay. Round 12
designed that relay so that nothing the agent's commands can reach could choose a hook's input: the sidecar would
run a relayed hook only for the exact input the CLI had given it on its own channel, the SDK callback for the same
event. What decided against it, measured here so that a CLI update that changes it is noticed:

- the input the CLI gives the callback is the hook's stdin, key for key (what the design needed);
- but the only hooks the CLI runs beside Orion's flag settings (`disableAllHooks`, the one switch that keeps hook
  files the agent can write out of the CLI) are a managed settings file's, and those it runs to the end *before* it
  calls the SDK back for the event: the trusted input arrives after the hook has run. A project's hooks it runs
  side by side with the callback (the callback first), but those it reads from files the agent can write;
- a hook the CLI starts has the CLI's sockets as its stdio and runs in the agent's box, beside the agent's commands
  (whose output goes to a file): its process is in the agent's reach.

If the managed ordering ever reverses, FIDELITY says what else the relay would need.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.harness import ScriptedServer, cli_path, offline_cli_env, prompt_once
from tests.managed_settings import managed_launcher, needs_managed_namespace

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolBatch", "Stop")
HOOK_SECONDS = 3.0  # the callback comes 20-40 ms after the hook starts; a loaded machine gets room
# Records the hook's input, when it started and ended, and what its stdout is (a socket the CLI holds, or a file).
RECORDER = """import json, os, sys, time
data = json.load(sys.stdin)
started = time.time()
time.sleep(float(sys.argv[2]))
data["_started"], data["_ended"] = started, time.time()
data["_stdout"] = os.readlink("/proc/self/fd/1")
with open(sys.argv[1], "a") as out:
    out.write(json.dumps(data) + "\\n")
"""
# The agent's command: what its stdout is.
BASH = {"tool_use": {"name": "Bash", "input": {"command": "readlink /proc/self/fd/1 > bash-stdout.txt",
                                               "description": "where my output goes"}}}


async def _run(root: Path, managed: bool) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], Path]:
    """One session on the bare CLI, a recording command hook on each of EVENTS (in the project's settings, or in a
    managed file with Orion's flag settings beside it) and an SDK callback on each. Returns (each event's hook
    record, each event's first callback input with its time, the project)."""
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

    project, home = root / "project", root / "home"
    (project / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    recorder, records = root / "recorder.py", root / "hooks.jsonl"
    recorder.write_text(RECORDER)
    command = f"{sys.executable} {recorder} {records} {HOOK_SECONDS}"
    hooks = {"hooks": {event: [{"hooks": [{"type": "command", "command": command}]}] for event in EVENTS}}
    cli, extra = cli_path(), {}
    if managed:
        etc = root / "etc-claude-code"
        etc.mkdir()
        (etc / "managed-settings.json").write_text(json.dumps(hooks))
        script = root / "managed-cli"
        script.write_text("#!/bin/sh\nexec " + shlex.join([*managed_launcher(etc), cli_path()]) + ' "$@"\n')
        script.chmod(0o755)
        cli, extra = str(script), {"settings": json.dumps({"disableAllHooks": True})}  # Orion's flag settings
    else:
        (project / ".claude" / "settings.json").write_text(json.dumps(hooks))
    scenario = root / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"name": "premises", "turns": [[BASH], "All done."], "default": "All done.",
                                        "side_reply": "Scripted title"}))
    called: dict[str, dict[str, Any]] = {}

    async def callback(payload: dict[str, Any], _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        called.setdefault(str(payload.get("hook_event_name")), {**payload, "_called": time.time()})
        return {}

    server = ScriptedServer(scenario, root / "requests.jsonl")
    options = ClaudeAgentOptions(
        cwd=str(project), cli_path=cli, setting_sources=["project"], allowed_tools=["Bash"], extra_args=extra,
        session_id=str(uuid.uuid4()), system_prompt={"type": "preset", "preset": "claude_code"},
        hooks={event: [HookMatcher(hooks=[callback])] for event in EVENTS},  # type: ignore[misc]
        env=offline_cli_env(server, home))
    await prompt_once(options, "please do the task", server, 180)
    ran = {record["hook_event_name"]: record for record in map(json.loads, records.read_text().splitlines())}
    assert set(ran) == set(EVENTS) == set(called), (ran.keys(), called.keys())
    for event in EVENTS:  # the callback's input is the hook's stdin, key for key
        assert _plain(called[event]) == _plain(ran[event]), event
        # The hook's stdout is one of the CLI's sockets; the agent's command writes to a file.
        assert ran[event]["_stdout"].startswith("socket:["), ran[event]["_stdout"]
    assert not (project / "bash-stdout.txt").read_text().startswith("socket:")
    return ran, called, project


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if not key.startswith("_")}


async def test_a_projects_command_hooks_run_beside_the_callback_with_the_same_input(tmp_path: Path) -> None:
    ran, called, _ = await _run(tmp_path, managed=False)
    for event in EVENTS:  # the callback came while the hook was still running
        assert called[event]["_called"] < ran[event]["_ended"], event


@needs_managed_namespace
async def test_a_managed_files_command_hooks_run_to_the_end_before_the_callback(tmp_path: Path) -> None:
    ran, called, _ = await _run(tmp_path, managed=True)
    for event in EVENTS:  # the callback came only once the hook had exited
        assert called[event]["_called"] >= ran[event]["_ended"], event
