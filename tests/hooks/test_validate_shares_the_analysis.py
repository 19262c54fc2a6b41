"""`python -m hooks validate` and `session/new` report what `hooks list` reports: one analysis of a project's hooks.
validate exits 1 on errors (an invalid matcher, a missing or non-executable script: a hook that can never work)
and, with --strict, on warnings (an override naming no hook)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "hooks", "validate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def project_with(tmp_path: Path, settings: dict) -> Path:
    claude = tmp_path / "proj" / ".claude"
    claude.mkdir(parents=True)
    (claude / "settings.json").write_text(json.dumps(settings))
    return claude.parent


@pytest.mark.parametrize("hook,expected", [
    ({"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}, "is not a valid regular expression"),
    ({"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gone.sh"}]},
     "does not exist"),
    ({"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 .claude/hooks/typo.py"}]}, "does not exist"),
])
def test_a_hook_that_can_never_work_is_an_error_with_file_and_json_path(tmp_path: Path, hook: dict, expected: str) -> None:
    project = project_with(tmp_path, {"hooks": {"PreToolUse": [hook]}})
    done = validate(".claude/settings.json", cwd=project)
    assert done.returncode == 1, done
    assert expected in done.stderr and "$.hooks.PreToolUse[0]" in done.stderr and "settings.json" in done.stderr
    assert "1 error(s)" in done.stdout


def test_a_script_that_is_not_executable_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gate.sh"}]}]}})
    script = project / ".claude" / "hooks" / "gate.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    done = validate(".claude/settings.json", cwd=project)
    assert done.returncode == 1 and "chmod +x" in done.stderr


def test_a_good_file_passes_and_strict_fails_on_warnings(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    assert validate(".claude/settings.json", cwd=project).returncode == 0
    (project / ".claude" / "hook-overrides.json").write_text(json.dumps({"disabled": ["no-such-hook"]}))
    relaxed = validate(".claude/hook-overrides.json", cwd=project)
    assert relaxed.returncode == 0 and "no-such-hook" in relaxed.stderr and "1 warning(s)" in relaxed.stdout
    assert validate("--strict", ".claude/hook-overrides.json", cwd=project).returncode == 1


def test_a_bare_program_that_is_nowhere_is_an_error_and_shell_words_are_not(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "audit-typo.sh --strict"},
        {"type": "command", "command": "echo ok && true"},
        {"type": "command", "command": "LC_ALL=C sh -c true"}]}]}})
    done = validate(".claude/settings.json", cwd=project)
    assert done.returncode == 1 and "1 error(s)" in done.stdout, done
    assert "'audit-typo.sh' is not on PATH" in done.stderr and "$.hooks.Stop[0].hooks[0]" in done.stderr
