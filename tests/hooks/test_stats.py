"""`python -m hooks stats` and `hooks/stats`: which hooks are slow, fail or block, read back from the tracking files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hooks.paths import project_hash
from hooks.stats import hook_stats, parse_since
from hooks.tracking import iso

REPO_ROOT = Path(__file__).resolve().parents[2]


def write_lines(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "{torn line\n")


def test_figures_per_hook_from_the_timing_log_by_project_and_time(tmp_path: Path) -> None:
    now = time.time()
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir(), other.mkdir()
    rows = [{"ts": iso(now - 10), "name": "lint", "event": "PreToolUse", "durationMs": float(ms), "outcome": outcome,
             "project": project_hash(mine)}
            for ms, outcome in [(10, "success"), (20, "success"), (30, "blocked"), (40, "error"), (500, "timeout")]]
    rows.append({"ts": iso(now - 3 * 86400), "name": "lint", "event": "PreToolUse", "durationMs": 9999.0,
                 "outcome": "error", "project": project_hash(mine)})
    rows.append({"ts": iso(now - 5), "name": "lint", "event": "PreToolUse", "durationMs": 1.0, "outcome": "success",
                 "project": project_hash(other)})
    write_lines(tmp_path / "data" / "analytics" / "hook-timing.jsonl", rows)
    [lint] = hook_stats(tmp_path / "data", project_dir=mine, since=parse_since("1d", now))
    assert lint == {"name": "lint", "event": "PreToolUse", "runs": 5, "p50Ms": 30.0, "p95Ms": 500.0, "maxMs": 500.0,
                    "failures": 1, "timeouts": 1, "blocks": 1, "cancelled": 0}
    everything = hook_stats(tmp_path / "data")
    assert everything[0]["runs"] == 7 and everything[0]["maxMs"] == 9999.0
    with pytest.raises(ValueError):
        parse_since("yesterday-ish")


def test_the_cli_reads_one_sessions_records_and_refuses_a_bad_time_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_lines(data / "sessions" / "s1" / "events.jsonl", [
        {"ts": iso(time.time()), "sessionId": "s1", "name": "gate", "event": "PreToolUse", "outcome": "blocked",
         "durationMs": 12.5}])
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-m", "hooks", "stats", "--session", "s1", "--json", "--data-dir", str(data)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hooks"][0]["blocks"] == 1
    bad = subprocess.run([sys.executable, "-m", "hooks", "stats", "--since", "soon", "--data-dir", str(data)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("error: not a time") and "Traceback" not in bad.stderr
