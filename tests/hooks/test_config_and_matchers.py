"""Settings parsing (errors name file and JSON path; one bad entry or file drops only itself), the legacy flat form, and matchers."""

from __future__ import annotations

import pytest

from hooks.config import CommandHookConfig, PythonHookConfig
from hooks.matchers import MatcherError, compile_matcher, match_target
from tests.hooks.support import cmd, settings, write_json


def test_each_type_is_validated_with_its_fields(project):
    project.settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        cmd("echo hi", timeout=3, name="a", failClosed=True, **{"async": True}),
        {"type": "prompt", "prompt": "Is $ARGUMENTS safe?", "model": "haiku", "timeout": 9},
        {"type": "agent", "prompt": "check", "maxTurns": 3},
        {"type": "http", "url": "http://127.0.0.1:9/x", "headers": {"A": "$TOKEN"}, "allowedEnvVars": ["TOKEN"]},
        {"type": "python", "script": "x.py"},
    ]}]}})
    hs = project.load()
    by_type = {s.type: s for s in hs.entries}
    assert set(by_type) == {"command", "prompt", "agent", "http", "python"}
    c = by_type["command"]
    assert (c.name, c.timeout_s, c.fail_closed, c.run_async, c.matcher) == ("a", 3.0, True, True, "Bash")
    assert c.config.command == "echo hi" and c.config.failClosed is True and getattr(c.config, "async") is True
    assert by_type["prompt"].config.model == "haiku" and by_type["prompt"].timeout_s == 9.0
    assert by_type["agent"].config.maxTurns == 3 and by_type["agent"].timeout_s == 60.0
    assert by_type["http"].config.allowedEnvVars == ["TOKEN"] and by_type["http"].config.headers == {"A": "$TOKEN"}
    assert by_type["python"].script == project.hooks_dir / "x.py"


def test_a_bad_entry_drops_only_itself_and_the_error_names_file_and_path(project):
    path = project.settings({"hooks": {"PreToolUse": [{"hooks": [
        cmd("echo ok", name="good"),
        {"type": "command", "timeout": -1, "command": "x"},
        {"type": "teleport"},
        {"type": "prompt"},
    ]}], "NoSuchEvent": []}})
    hs = project.load()
    states = [(s.name, s.state) for s in hs.entries]
    assert states[0] == ("good", "untrusted")
    assert [s for _, s in states[1:]] == ["invalid", "invalid", "invalid"]
    text = "\n".join(hs.warnings)
    assert f"{path}: $.hooks.PreToolUse[0].hooks[1]: timeout: Input should be greater than 0" in text
    assert f"{path}: $.hooks.PreToolUse[0].hooks[2]: unknown type 'teleport'" in text
    assert f"{path}: $.hooks.PreToolUse[0].hooks[3]: prompt: Field required" in text
    assert f"{path}: $.hooks.NoSuchEvent: unknown event 'NoSuchEvent'" in text


def test_a_file_that_is_not_json_is_skipped_and_the_others_still_load(project, tmp_path):
    project.settings("{ this is not json")
    project.settings(settings("Stop", cmd("echo from-local", name="local-hook")), local=True)
    user = write_json(tmp_path / "user.json", settings("Stop", {"type": "prompt", "prompt": "ok?", "name": "user-prompt"}))
    hs = project.load(user_settings=user)
    assert [s.name for s in hs.entries] == ["user-prompt", "local-hook"]
    assert any("settings.json: not valid JSON (line 1" in w and "file skipped" in w for w in hs.warnings)


def test_legacy_flat_form_is_converted_with_its_meaning(project):
    script_path = project.hooks_dir / "session-register.sh"
    script_path.write_text("#!/bin/sh\necho hi\n")
    script_path.chmod(0o755)
    project.settings({"hooks": {
        "SessionStart": [
            {"command": "session-register.sh --fast", "timeout": 5000, "continueOnError": False},
            {"command": "uv run python hook_launcher.py session_start.py", "timeout": 10000},
        ]
    }})
    hs = project.load()
    first, second = hs.entries
    assert isinstance(first.config, CommandHookConfig)
    assert first.config.command == f"{script_path} --fast"
    assert first.timeout_s == 5.0 and first.fail_closed is True and first.cwd == project.hooks_dir
    assert isinstance(second.config, PythonHookConfig) and second.type == "python"
    assert second.script == project.hooks_dir / "session_start.py" and second.fail_closed is False and second.timeout_s == 10.0
    assert any("deprecated" in w for w in hs.warnings)


@pytest.mark.parametrize(
    ("matcher", "matches", "misses"),
    [
        (None, ["Bash", "anything", ""], []),
        ("", ["Bash", ""], []),
        ("*", ["Write"], []),
        ("Bash", ["Bash"], ["bash", "BashOutput", "xBash"]),
        ("Edit|Write", ["Edit", "Write"], ["MultiEdit", "Edit|Write"]),
        ("mcp__github__create_issue", ["mcp__github__create_issue"], ["mcp__github__create"]),
        ("mcp__github__.*", ["mcp__github__create_issue", "mcp__github__x"], ["mcp__gitlab__x"]),
        ("Notebook.*", ["NotebookEdit", "xNotebookEdit"], ["Notes"]),
        ("^Read$", ["Read"], ["ReadFile"]),
    ],
)
def test_matchers_behave_like_claude_code(matcher, matches, misses):
    m = compile_matcher(matcher)
    assert all(m(v) for v in matches)
    assert not any(m(v) for v in misses)


def test_a_bad_regex_invalidates_only_its_entry(project):
    project.settings({"hooks": {"PreToolUse": [
        {"matcher": "Bash(", "hooks": [cmd("echo a", name="broken")]},
        {"matcher": "Bash", "hooks": [cmd("echo b", name="fine")]},
    ]}})
    with pytest.raises(MatcherError):
        compile_matcher("Bash(")
    hs = project.load()
    assert [(s.name, s.state) for s in hs.entries] == [("broken", "invalid"), ("fine", "untrusted")]
    assert "not a valid regular expression" in hs.entries[0].reason


def test_match_targets_per_event():
    assert match_target("PreToolUse", {"tool_name": "Bash"}) == "Bash"
    assert match_target("SessionStart", {"source": "resume"}) == "resume"
    assert match_target("PreCompact", {"trigger": "manual"}) == "manual"
    assert match_target("Notification", {"notification_type": "idle"}) == "idle"
    assert match_target("UserPromptSubmit", {"prompt": "x"}) is None
    assert match_target("Stop", {}) is None
