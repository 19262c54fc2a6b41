"""Tracking lines: every execution's two JSON lines read back as the records the execution had, whatever its text holds."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hooks.tracking import Execution, TrackingWriter, iso, read_records
from hooks.types import HookResult

AWKWARD = ["plain", 'quo"te', "back\\slash", "new\nline", "tab\t", "ünïcode", "emoji 🎉", "\x00ctl", "\u2028sep", ""]


def _result(i: int, text: str, duration: float, exit_code: int | None) -> HookResult:
    return HookResult(
        execution_id=f"ex-{i}", hook_id=f"project:PreToolUse:{text}", hook_name=text, hook_type="command", source="project",
        event="PreToolUse", outcome="error" if exit_code else "success", duration_ms=duration, exit_code=exit_code,
        error=text or None, background=bool(i % 2), enforced=not i % 3,
    )


def test_each_execution_reads_back_as_its_record(tmp_path: Path) -> None:
    events, timing = tmp_path / "sessions" / "s-1" / "events.jsonl", tmp_path / "analytics" / "hook-timing.jsonl"
    durations = [0.0, 0.0125, 123456.789, 1e20, 7]
    executions = [
        Execution(events, timing, "s-1", "proj" + text, 1700000000.0 + i * 0.3337, _result(i, text, durations[i % len(durations)], (None, 0, 2, -9)[i % 4]))
        for i, text in enumerate(AWKWARD * 2)
    ]
    writer = TrackingWriter()
    for execution in executions:
        writer.track(execution)
    writer.close()
    got_events, got_timing = list(read_records(events)), list(read_records(timing))
    assert len(got_events) == len(got_timing) == len(executions)
    for execution, event, timed in zip(executions, got_events, got_timing):
        r = execution.result
        assert event == {
            "ts": iso(execution.ts), "sessionId": "s-1", "executionId": r.execution_id, "hookId": r.hook_id, "name": r.hook_name,
            "type": "command", "source": "project", "event": "PreToolUse", "outcome": r.outcome,
            "durationMs": round(r.duration_ms, 3), "exitCode": r.exit_code, "error": r.error, "background": r.background,
            "enforced": r.enforced,
        }
        assert timed == {"ts": iso(execution.ts), "name": r.hook_name, "event": "PreToolUse",
                         "durationMs": round(r.duration_ms, 3), "outcome": r.outcome, "project": execution.project}


def test_a_duration_json_cannot_hold_plainly_is_still_written(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    event_line, timing_line = Execution(path, path, "s-1", "p", 1700000000.5, _result(1, "x", math.inf, 0)).lines()
    assert json.loads(event_line)["durationMs"] == math.inf and json.loads(timing_line)["name"] == "x"


def test_a_long_backlog_is_written_in_bounded_batches(tmp_path: Path) -> None:
    # Encoding (with redaction) is slower than queueing: a writer that drained the whole queue before writing
    # wrote nothing at all while a producer kept up (the data-safety stress stream). Batches are bounded now.
    import time

    from hooks.tracking import MAX_BATCH_ITEMS

    path = tmp_path / "sessions" / "flood" / "events.jsonl"
    writer = TrackingWriter()
    total = MAX_BATCH_ITEMS * 10
    try:
        for n in range(total):
            writer.write(path, {"n": n, "pad": "é" * 100})
        deadline = time.monotonic() + 20
        while not (path.exists() and path.stat().st_size > 0):
            assert time.monotonic() < deadline, "nothing reached the file"
            time.sleep(0.005)  # polling a file another thread writes; the deadline bounds it
        first_look = len(list(read_records(path)))
    finally:
        writer.close(timeout=20)
    assert 0 < first_look < total
    assert [r["n"] for r in read_records(path)] == list(range(total))


def test_a_file_past_the_users_rotation_size_keeps_one_older_generation_and_stats_read_both(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from hooks.stats import hook_stats
    from hooks.tracking import rotated

    settings = Path(os.environ["ORION_USER_SETTINGS"])
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"retention": {"rotateMiB": 0.02}}))  # ~20 KB
    data = tmp_path / "data"
    events, timing = data / "sessions" / "long" / "events.jsonl", data / "analytics" / "hook-timing.jsonl"
    writer = TrackingWriter()  # the user's policy, as a session's runner has it
    sent = 0
    for batch in range(12):
        for _ in range(40):
            writer.track(Execution(events, timing, "long", "p", 1700000000.0 + sent, _result(sent, "gate", 1.5, 2)))
            sent += 1
        assert writer.flush()
    writer.close()

    for path in (events, timing):
        assert rotated(path).is_file() and not path.with_name(path.name + ".2").exists()
        assert path.stat().st_size <= 20 * 1024 + 16 * 1024  # at most one batch past the size
    kept = list(read_records(rotated(events))) + list(read_records(events))
    numbers = [int(r["executionId"].removeprefix("ex-")) for r in kept]
    assert numbers == list(range(sent - len(kept), sent)), "the newest records, in order, none twice"
    assert len(list(read_records(events))) < len(kept) < sent
    [gate] = hook_stats(data, session_id="long")
    assert gate["runs"] == len(kept) and gate["failures"] == len(kept)
    root = Path(__file__).resolve().parents[2]
    cli = subprocess.run([sys.executable, "-m", "hooks", "stats", "--session", "long", "--json", "--data-dir", str(data)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=60)
    assert json.loads(cli.stdout)["hooks"][0]["runs"] == len(kept)
    assert hook_stats(data)[0]["runs"] == len(list(read_records(rotated(timing)))) + len(list(read_records(timing)))
