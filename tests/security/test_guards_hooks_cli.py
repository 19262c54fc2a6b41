"""The guards through `python -m hooks test` (the command users try hooks with): the same deny / ask / nothing as in a session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _fire(project: Path, command: str) -> dict:
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(project)})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "hooks", "test", "PreToolUse", "--payload", "-", "--project", str(project)],
                         input=payload, capture_output=True, text=True, timeout=60, cwd=REPO, env=env, check=True)
    return json.loads(out.stdout[out.stdout.index("{"):])


@pytest.mark.parametrize(("command", "expected"), [
    ("cd / && rm -rf *", "deny"),
    ("timeout 5 sh -c 'sed -i s/A/B/ .env'", "deny"),
    ("eval \"$PAYLOAD\"", "ask"),
    ("git status", None),
])
def test_python_m_hooks_gives_the_guards_answer(tmp_path, command, expected):
    result = _fire(tmp_path, command)
    specific = result["hookJson"].get("hookSpecificOutput", {})
    assert specific.get("permissionDecision") == expected
    if expected != "deny":  # a deny carries no rewrite; otherwise env-isolation's rewrite goes along
        assert specific["updatedInput"]["command"].endswith(command)
