"""`orion chat` with a bad scenario says what is wrong in a line or two, never a traceback; the sidecar's answer
carries a specific code and the cause in `data` (issue 15, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def chat(tmp_path: Path, scenario: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORION_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "frontend_stub", "chat", "hi", "--project", str(project),
                           "--scenario", scenario], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_a_typo_in_a_scenario_is_named_in_one_line_with_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("turns:\n  - - tool_usee: {name: Bash, input: {command: ls}}\n")
    result = chat(tmp_path, str(bad))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert "orion: the sidecar refused the session: invalid scenario" in result.stderr
    assert "did you mean 'tool_use'?" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr


def test_a_scenario_that_does_not_exist_says_where_it_looked(tmp_path: Path) -> None:
    result = chat(tmp_path, "no-such-scenario")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert "scenario 'no-such-scenario' not found (looked in" in result.stderr
