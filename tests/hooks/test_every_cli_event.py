"""Every one of Claude Code's 33 hook events through `python -m hooks`: accepted, matched on its own sub-type, and
answered with the CLI's rules (exit 2 blocks only where the CLI's table says so; an answer naming another event is
refused; event-specific keys pass on)."""

from __future__ import annotations

import json

import pytest

from hooks.types import ALL_EVENTS
from tests.hooks.support import cmd, settings, write_json
from tests.hooks.test_cli import run_cli

CLI_EVENTS = (
    "PreToolUse PostToolUse PostToolUseFailure PostToolBatch PermissionRequest PermissionDenied Notification "
    "UserPromptSubmit UserPromptExpansion Stop StopFailure SubagentStart SubagentStop PreCompact PostCompact "
    "Elicitation ElicitationResult TeammateIdle TaskCreated TaskCompleted Setup InstructionsLoaded CwdChanged "
    "FileChanged ConfigChange WorktreeCreate WorktreeRemove SessionStart SessionEnd PreModelSwitch PostModelSwitch "
    "MessageDisplay DirectoryAdded"
).split()


def test_the_engine_knows_exactly_the_clis_events():
    assert sorted(ALL_EVENTS) == sorted(CLI_EVENTS) and len(CLI_EVENTS) == 33


def test_validate_accepts_a_hook_on_every_event(tmp_path):
    data = {"hooks": {event: [{"hooks": [{"type": "command", "command": "true"}]}] for event in CLI_EVENTS}}
    out = run_cli("validate", str(write_json(tmp_path / "all.json", data)))
    assert out.returncode == 0, out.stderr
    assert "unknown event" not in out.stderr


def _test(project, event: str, payload: dict, *hooks, matcher: str | None = None) -> dict:
    project.settings(settings(event, *hooks, matcher=matcher) if matcher else settings(event, *hooks))
    assert run_cli("trust", "--project", str(project.root)).returncode == 0
    out = run_cli("test", event, "--payload", "-", "--project", str(project.root), "--no-builtin",
                  stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_matcher_selects_on_the_events_own_sub_type(project):
    got = _test(project, "InstructionsLoaded", {"load_reason": "session_start", "file_path": "/x/CLAUDE.md"},
                cmd("echo loaded", name="on-start"), matcher="session_start")
    assert [r["hook"] for r in got["results"]] == ["on-start"]
    got = _test(project, "InstructionsLoaded", {"load_reason": "compact", "file_path": "/x/CLAUDE.md"},
                cmd("echo loaded", name="on-start"), matcher="session_start")
    assert got["results"] == []


@pytest.mark.parametrize("event,blocks", [("PostToolBatch", True), ("TaskCreated", True), ("ConfigChange", True),
                                          ("PermissionRequest", False), ("SessionStart", False), ("Setup", False)])
def test_exit_2_blocks_only_where_the_cli_says(project, event, blocks):
    payload = {"tool_name": "Bash", "tool_input": {"command": "ls"}} if event == "PermissionRequest" else {}
    got = _test(project, event, payload, cmd("echo 'stop here' >&2; exit 2", name="gate"))
    outcome = got["results"][0]["outcome"]
    assert outcome == ("blocked" if blocks else "error"), got
    assert (got["aggregate"]["decision"] in ("block", "deny")) is blocks


def test_an_answer_naming_another_event_is_refused(project):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "wrong place"}})
    got = _test(project, "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}},
                cmd(f"echo '{answer}'", name="confused"), matcher="Bash")
    result = got["results"][0]
    assert result["outcome"] == "error" and "incorrect event name" in result["error"]
    assert "hookSpecificOutput" not in got["hookJson"]


def test_event_specific_keys_pass_on_to_the_cli(project):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}})
    got = _test(project, "PermissionDenied", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "reason": "auto"},
                cmd(f"echo '{answer}'", name="retry"), matcher="Bash")
    assert got["hookJson"]["hookSpecificOutput"] == {"hookEventName": "PermissionDenied", "retry": True}
