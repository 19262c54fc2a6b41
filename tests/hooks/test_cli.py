"""`python -m hooks` list / test / validate / trust, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.hooks.support import cmd, settings, write_json

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hooks", *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)


def test_list_shows_states_and_reasons(project, tmp_path):
    vault = tmp_path / "vault"
    write_json(vault / ".orion/settings.json", settings("Stop", cmd("echo v", name="vault-cmd")))
    project.settings(settings("Stop", cmd("echo p", name="proj-cmd")))
    out = run_cli("list", "--project", str(project.root), "--vault", str(vault), "--no-builtin", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)["hooks"]}
    assert rows["vault-cmd"]["state"] == "dropped" and rows["proj-cmd"]["state"] == "untrusted"
    table = run_cli("list", "--project", str(project.root), "--no-builtin")
    assert "proj-cmd" in table.stdout and "untrusted" in table.stdout and "python -m hooks trust" in table.stderr


def test_trust_then_test_runs_the_real_hook_and_prints_the_aggregate(project):
    project.settings(settings("PreToolUse", cmd("echo 'nope' >&2; exit 2", name="gate"), cmd("echo other", name="other"), matcher="Bash"))
    assert run_cli("trust", "--project", str(project.root)).returncode == 0
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})
    out = run_cli("test", "PreToolUse", "--payload", "-", "--project", str(project.root), "--no-builtin", stdin=payload)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert [r["hook"] for r in got["results"]] == ["gate"]
    assert got["results"][0]["exitCode"] == 2 and got["aggregate"]["decision"] == "deny"
    assert got["hookJson"]["hookSpecificOutput"]["permissionDecisionReason"] == "[echo 'nope' >&2; exit 2]: nope\n"
    only = run_cli("test", "PreToolUse", "--payload", "-", "--hook", "other", "--project", str(project.root), "--no-builtin", stdin=payload)
    assert [r["hook"] for r in json.loads(only.stdout)["results"]] == ["other"]


def test_validate_reports_errors_with_paths(tmp_path):
    good = write_json(tmp_path / "good.json", settings("Stop", cmd("echo ok")))
    bad = write_json(tmp_path / "bad.json", {"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}})
    broken = write_json(tmp_path / "broken.json", "{")
    assert run_cli("validate", str(good)).returncode == 0
    out = run_cli("validate", str(bad))
    assert out.returncode == 1 and "$.hooks.Stop[0].hooks[0]: \"command\" is required (it is missing)" in out.stderr
    out = run_cli("validate", str(broken))
    assert out.returncode == 1 and "not valid JSON" in out.stderr


def test_validate_outside_a_project_rejects_a_bad_matcher_as_inside_one(tmp_path):
    content = {"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": [{"type": "command", "command": "true"}]}]}}
    outside = write_json(tmp_path / "somewhere" / "settings.json", content)
    inside = write_json(tmp_path / "project" / ".claude" / "settings.json", content)
    for file in (outside, inside):
        out = run_cli("validate", str(file))
        assert out.returncode == 1, (file, out.stdout, out.stderr)
        assert "$.hooks.PreToolUse[0].hooks[0]: matcher 'Bash(' is not a valid regular expression" in out.stderr
        assert "0 valid hook entries, 1 error(s)" in out.stdout


def test_a_project_that_is_not_a_directory_is_refused(tmp_path):
    missing = str(tmp_path / "no-such-project")
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}})
    for args in (("test", "PreToolUse", "--payload", "-"), ("list",), ("trust",)):
        out = run_cli(*args, "--project", missing, stdin=payload)
        assert out.returncode == 2, (args, out.stdout)
        assert f"--project {missing} is not a directory" in out.stderr and out.stdout == ""
