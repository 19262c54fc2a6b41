"""hooks.sdk through the real engine: each builder's answer, from a command script, a `type: python` hook and a
programmatic callable, read by `python -m hooks test` / HookRunner exactly as Claude Code's output JSON."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.sdk import InputError, SdkUsageError, ask, context, deny, parse_input
from hooks.types import SessionContext
from tests.hooks.support import Project, script, write_json
from tests.hooks.test_cli import ROOT, run_cli

PY = shlex.quote(sys.executable)
BASH = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build", "description": "clean"}}
PROMPT = {"prompt": "ship it"}
STOP = {"stop_hook_active": False, "last_assistant_message": "done"}

# (case id, event, payload, shell builder args, python builder call, what our engine must derive)
CASES: list[tuple[str, str, dict[str, Any], str, str, dict[str, Any]]] = [
    ("deny", "PreToolUse", BASH, "deny 'no rm here'", "deny('no rm here')",
     {"decision": "deny", "reason": "no rm here"}),
    ("ask", "PreToolUse", BASH, "ask 'sure?'", "ask('sure?')", {"decision": "ask", "reason": "sure?"}),
    ("allow", "PreToolUse", BASH, "allow 'reviewed'", "allow('reviewed')", {"decision": "allow", "reason": "reviewed"}),
    ("rewrite", "PreToolUse", BASH, "rewrite command='rm -rf ./build' description=clean",
     "parse_input(payload).rewrite(command='rm -rf ./build')",
     {"decision": None, "updatedInput": {"command": "rm -rf ./build", "description": "clean"}}),
    ("context", "UserPromptSubmit", PROMPT, "context 'branch: main'", "context('branch: main', event='UserPromptSubmit')",
     {"decision": None, "additionalContext": "branch: main"}),
    ("block-prompt", "UserPromptSubmit", PROMPT, "block 'not today'", "block('not today')",
     {"decision": "block", "reason": "not today"}),
    ("deny-prompt", "UserPromptSubmit", PROMPT, "deny 'not today'", "parse_input(payload).deny('not today')",
     {"decision": "block", "reason": "not today"}),
    ("block-stop", "Stop", STOP, "block 'tests fail'", "block('tests fail')", {"decision": "block", "reason": "tests fail"}),
    ("stop", "PostToolUse", {**BASH, "tool_response": {"stdout": ""}}, "stop 'enough'", "stop('enough')",
     {"continue": False, "stopReason": "enough"}),
    ("system-message", "SessionStart", {"source": "startup"}, "system-message 'hello'", "system_message('hello')",
     {"systemMessages": ["hello"]}),
    ("deny-permission", "PermissionRequest", BASH, "deny 'never'", "deny('never', event='PermissionRequest')",
     {"decision": "deny", "reason": "never"}),
]


def _project(tmp_path: Path, event: str, shell_args: str, python_call: str) -> Project:
    project = Project((tmp_path / "proj").resolve())
    # The shell hook pipes its own stdin to the helper, which reads the event from it.
    shell = f"{PY} -m hooks.sdk {shell_args}"
    script(project.hooks_dir / "answer.py",
           "from hooks.sdk import *\n\n\ndef run(payload):\n    return " + python_call + "\n")
    project.settings({"hooks": {event: [{"hooks": [
        {"type": "command", "command": shell, "name": "shell"},
        {"type": "python", "script": "answer.py", "name": "python"},
    ]}]}})
    assert run_cli("trust", "--project", str(project.root)).returncode == 0
    return project


def _fire(project: Project, event: str, payload: dict[str, Any], hook: str) -> dict[str, Any]:
    out = run_cli("test", event, "--payload", "-", "--hook", hook, "--project", str(project.root), "--no-builtin",
                  stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    got: dict[str, Any] = json.loads(out.stdout)
    assert [r["outcome"] for r in got["results"]] in (["success"], ["blocked"]), got["results"]
    return got


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_builder_is_read_by_the_engine_as_claude_code_reads_it(tmp_path, case):
    _id, event, payload, shell_args, python_call, expected = case
    project = _project(tmp_path, event, shell_args, python_call)
    for hook in ("shell", "python"):
        got = _fire(project, event, payload, hook)
        for key, value in expected.items():
            assert got["aggregate"][key] == value, (hook, key, got["aggregate"])


def test_the_printed_json_is_claude_codes_schema(tmp_path):
    """What a shell helper prints is the documented shape per event, byte for byte what the Python builder returns."""
    def helper(*args: str, stdin: str = "") -> dict[str, Any]:
        out = subprocess.run([sys.executable, "-m", "hooks.sdk", *args], input=stdin, capture_output=True, text=True,
                             timeout=30, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    pre = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", **BASH})
    assert helper("deny", "no", stdin=pre) == deny("no") == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}
    assert helper("ask", "sure?", "--event", "PreToolUse") == ask("sure?")
    assert helper("context", "x", stdin=json.dumps({"hook_event_name": "SessionStart", "session_id": "s",
                                                    "source": "startup"})) == context("x", event="SessionStart")
    assert helper("deny", "no", "--event", "Stop") == {"decision": "block", "reason": "no"}
    raw = subprocess.run([sys.executable, "-m", "hooks.sdk", "get", "tool_input.command"], input=pre,
                         capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert raw.stdout == "rm -rf build\n"
    # What an event cannot express is refused, not turned into something else.
    bad = subprocess.run([sys.executable, "-m", "hooks.sdk", "ask", "?", "--event", "Stop"], capture_output=True,
                         text=True, timeout=30, cwd=ROOT)
    assert bad.returncode == 1 and "ask is a PreToolUse decision" in bad.stderr and not bad.stdout


def test_a_command_script_reads_typed_input_and_a_bad_input_names_the_field(project):
    guard = script(project.hooks_dir / "guard.py", (
        "from hooks.sdk import PreToolUseInput, deny, run_hook\n\n"
        "def decide(i):\n"
        "    if isinstance(i, PreToolUseInput) and 'rm -rf' in i.arg('command'):\n"
        "        return deny('no recursive deletes')\n"
        "    return None\n\n"
        "run_hook(decide)\n"))
    project.settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"{PY} {shlex.quote(str(guard))}", "name": "guard"}]}]}})
    assert run_cli("trust", "--project", str(project.root)).returncode == 0
    got = _fire(project, "PreToolUse", BASH, "guard")
    assert got["aggregate"]["decision"] == "deny" and got["aggregate"]["reason"] == "no recursive deletes"
    harmless = _fire(project, "PreToolUse", {**BASH, "tool_input": {"command": "ls"}}, "guard")
    assert harmless["aggregate"]["decision"] is None and harmless["hookJson"] == {}
    broken = run_cli("test", "PreToolUse", "--payload", "-", "--hook", "guard", "--project", str(project.root),
                     "--no-builtin", stdin=json.dumps({"tool_name": "Bash", "tool_input": "rm -rf /"}))
    result = json.loads(broken.stdout)["results"][0]
    assert result["outcome"] == "error" and result["exitCode"] == 1
    assert "PreToolUse input: field 'tool_input' must be an object, got a string" in result["stderr"]


@pytest.mark.asyncio
async def test_a_programmatic_hook_returns_the_builders_answer(tmp_path):
    from examples.hooks.typed_guard import guard_callable

    registry = HookRegistry()
    registry.register("PreToolUse", guard_callable, matcher="Bash", name="typed-guard")
    project = Project((tmp_path / "p").resolve())
    project.root.mkdir()
    runner = HookRunner(project.load(registry=registry), data_dir=tmp_path / "data")
    session = SessionContext(session_id="sdk-test", project_dir=project.root)
    try:
        denied = await runner.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}, session)
        rewritten = await runner.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "pytest"}}, session)
    finally:
        await runner.aclose()
    assert denied.decision == "deny" and "'rm -rf /' is not allowed" in (denied.reason or "")
    assert rewritten.decision is None and rewritten.updated_input == {"command": "pytest -q"}


def test_parse_errors_name_the_event_and_field():
    with pytest.raises(InputError, match="Stop input: field 'stop_hook_active' must be true or false, got a string"):
        parse_input({"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": "yes"})
    with pytest.raises(InputError, match="SessionEnd input: field 'reason' is missing"):
        parse_input({"hook_event_name": "SessionEnd", "session_id": "s"})
    with pytest.raises(InputError, match="field 'hook_event_name' names no event"):
        parse_input({"hook_event_name": "PreToolUze", "session_id": "s"})
    with pytest.raises(SdkUsageError, match="cannot add context"):
        context("x", event="Stop")


def test_the_sdk_and_a_typed_example_are_mypy_strict_clean():
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "hooks/sdk",
                          "examples/hooks/typed_guard.py"], capture_output=True, text=True, timeout=170, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout


# One input per event, with the keys the CLI sends (REFERENCE.md "Hook input payloads").
COMMON = {"session_id": "s1", "transcript_path": "/t/s1.jsonl", "cwd": "/p", "permission_mode": "default"}
SAMPLES: list[tuple[str, dict[str, Any], str, Any]] = [
    ("PreToolUse", {**BASH, "tool_use_id": "tu1"}, "tool_use_id", "tu1"),
    ("PostToolUse", {**BASH, "tool_response": {"stdout": "x"}, "duration_ms": 12}, "duration_ms", 12),
    ("PostToolUseFailure", {**BASH, "error": "exit 1", "is_interrupt": False}, "error", "exit 1"),
    ("PermissionRequest", {**BASH, "permission_suggestions": []}, "permission_suggestions", []),
    ("UserPromptSubmit", PROMPT, "prompt", "ship it"),
    ("Stop", {**STOP, "stop_hook_active": True}, "stop_hook_active", True),
    ("SubagentStop", {**STOP, "agent_id": "a1", "agent_type": "Explore", "agent_transcript_path": "/t/a1.jsonl"},
     "agent_type", "Explore"),
    ("SubagentStart", {"agent_id": "a1", "agent_type": "general-purpose"}, "agent_id", "a1"),
    ("SessionStart", {"source": "resume", "model": "claude-x"}, "source", "resume"),
    ("SessionEnd", {"reason": "prompt_input_exit"}, "reason", "prompt_input_exit"),
    ("Notification", {"message": "needs you", "title": "Claude", "notification_type": "idle_prompt"},
     "notification_type", "idle_prompt"),
    ("PreCompact", {"trigger": "auto", "custom_instructions": None}, "trigger", "auto"),
    ("PostCompact", {"trigger": "manual", "compact_summary": "so far"}, "compact_summary", "so far"),
]


@pytest.mark.parametrize("event,extra,field,value", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_every_event_parses_into_its_typed_input(event, extra, field, value):
    parsed = parse_input({**COMMON, "hook_event_name": event, **extra, "future_key": 1})
    assert type(parsed).__name__ == f"{event}Input" and parsed.hook_event_name == event
    assert getattr(parsed, field) == value and parsed.session_id == "s1" and parsed.cwd == "/p"
    assert parsed.raw["future_key"] == 1  # keys this SDK does not model are kept, not refused
