"""`python -m hooks.memory status` says how big the memory is and how fast it grows, on both backends: items,
bytes, what was added in the last day / week / month, the largest projects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hooks.memory.store import close_all_stores, open_store

ROOT = Path(__file__).resolve().parents[2]


def backdate(store, project: str, days: float) -> None:
    """Move a project's rows `days` into the past (a test's shortcut: the stores stamp rows with the clock)."""
    then = time.time() - days * 86_400
    if store.backend == "sqlite":
        for table in ("observations", "session_summaries"):
            store._conn.execute(f"UPDATE {table} SET created_at = ? WHERE project = ?", (then, project))
    else:
        with store.pool.connection() as conn:
            for table in ("observations", "session_summaries"):
                conn.execute(f"UPDATE orion_memory.{table} SET created_at = %s WHERE project = %s", (then, project))


def test_status_reports_size_and_growth(tmp_path: Path, memory_backend: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = open_store(data)
    for i in range(30):
        store.add_observation("s-new", "p-new", 1, "Bash", f"ran the build {i}")
    store.upsert_summary("s-new", "p-new", 1, "Request: build", "Outcome: built")
    for i in range(12):
        store.add_observation("s-week", "p-week", 1, "Edit", f"edited the parser {i}")
    for i in range(5):
        store.add_observation("s-old", "p-old", 1, "Read", f"read the notes {i}")
    store.add_prompt("s-new", "p-new", 1, "build it")
    store.wait_flushed(10)
    backdate(store, "p-week", 3)
    backdate(store, "p-old", 90)
    close_all_stores()

    out = subprocess.run([sys.executable, "-P", "-m", "hooks.memory", "status", "--data-dir", str(data)],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    usage = status["usage"]
    assert status["backend"] == memory_backend
    assert usage["items"]["observations"] == 47 and usage["items"]["summaries"] == 1
    assert usage["items"]["prompts"] == 1
    assert usage["bytes"] > 0 and usage["projectCount"] == 3
    assert usage["growth"]["observationsAndSummaries"] == {"1d": 31, "7d": 43, "30d": 43}
    assert usage["growth"]["bytesPerDay7d"] > 0
    assert [p["project"] for p in usage["projects"]] == ["p-new", "p-week", "p-old"]
    assert usage["projects"][0] == {**usage["projects"][0], "observations": 30, "summaries": 1, "added7d": 31}
    assert usage["projects"][2]["added7d"] == 0 and usage["projects"][2]["newest"] < usage["projects"][0]["newest"]
