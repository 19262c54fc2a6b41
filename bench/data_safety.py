"""Data safety under SIGKILL: a child fires the built-in hooks (memory DB, continuity cache, tracking JSONL) flat out and is killed at random moments; every file must stay readable and consistent.

    python bench/data_safety.py --runs 200            # the long run: prints runs and corruptions
    python bench/data_safety.py --runs 200 --json     # the same, one JSON object on stdout

Each run reuses the same data directory, as a restarted sidecar would, so a
torn write from one kill meets the appends of the next run. `check()` is the
oracle; tests/reliability/test_data_safety.py runs a bounded number of kills
through the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

READY = "ready"
MAX_KILL_DELAY_S = 0.25  # kills land anywhere in the first quarter second of busy writing
CHILD_SESSIONS = 4  # concurrent fire loops in the child: more writes in flight when the kill lands


# --------------------------------------------------------------------------- the writer (child process)


async def _write_forever(data: Path, project: Path, seed: int) -> None:
    from hooks.builtin import builtin_registry
    from hooks.hookset import load_hookset
    from hooks.runner import HookRunner
    from hooks.tracking import TrackingWriter
    from hooks.types import SessionContext

    rng = random.Random(seed)
    runner = HookRunner(load_hookset(project, registry=builtin_registry(data_dir=data)), data_dir=data)
    ready, stress_ready = asyncio.Event(), asyncio.Event()

    async def session_loop(n: int) -> None:
        sid = f"safety-{seed}-{n}"
        ctx = SessionContext(session_id=sid, project_dir=project, data_dir=data)
        base = {"session_id": sid, "transcript_path": "", "cwd": str(project)}
        turn = 0
        while True:
            turn += 1
            words = " ".join(rng.choice(("alpha", "beta", "gamma", "delta", "kill", "crash", "wal")) for _ in range(20))
            await runner.fire("UserPromptSubmit", {**base, "prompt": f"turn {turn}: {words}"}, ctx)
            for k in range(3):
                body = words * rng.randint(1, 400)  # up to ~60 KB: writes that take a while
                await runner.fire(
                    "PostToolUse",
                    {**base, "tool_name": "Write", "tool_use_id": f"t{turn}-{k}",
                     "tool_input": {"file_path": str(project / f"f{k}.txt"), "content": body},
                     "tool_response": {"ok": True}},
                    ctx,
                    tool_use_id=f"t{turn}-{k}",
                )
            await runner.fire("Stop", {**base, "stop_hook_active": False, "last_assistant_message": f"done {turn}: {words}"}, ctx)
            await runner.fire("PreCompact", {**base, "trigger": "auto", "custom_instructions": words}, ctx)
            if n == 0 and turn == 1:
                # The memory hooks run after the answer: ready once their first writes are committed,
                # so every kill lands on a store that exists (the store's own creation is checked too).
                await runner.drain()
                await runner.flush_tracking()
                ready.set()

    async def tracking_loop() -> None:
        # Big records in a stream of their own: batches large enough that a kill can land inside one write().
        writer, path, n = TrackingWriter(), data / "sessions" / "stress" / "events.jsonl", 0
        while True:
            n += 1
            writer.write(path, {"ts": time.time(), "n": n, "pad": "é" * rng.randint(10, 8000)})
            if n % 20 == 0:
                await asyncio.sleep(0.001)
            if n == 20:
                # Ready only once the stream has reached the disk: on a loaded machine the
                # writer thread can otherwise lose every race against the kill.
                await asyncio.to_thread(writer.flush)
                stress_ready.set()

    tasks = [asyncio.create_task(session_loop(n)) for n in range(CHILD_SESSIONS)]
    tasks.append(asyncio.create_task(tracking_loop()))
    await ready.wait()
    await stress_ready.wait()
    print(READY, flush=True)
    await asyncio.gather(*tasks)


def child_main(data: Path, project: Path, seed: int) -> None:
    project.mkdir(parents=True, exist_ok=True)
    asyncio.run(_write_forever(data, project, seed))


# --------------------------------------------------------------------------- the oracle


@dataclass
class Check:
    problems: list[str] = field(default_factory=list)  # corruption: must stay empty
    torn_lines: int = 0  # a JSONL line cut by the kill, on its own line (readers skip it)
    temp_files: int = 0  # write-to-temp leftovers (ignored by readers, removed by stale-cache-cleanup)
    jsonl_records: int = 0
    json_files: int = 0
    observations: int = 0


def check(data: Path) -> Check:
    """Everything under `data` the built-in hooks and the tracking writer produce, read as the next sidecar would."""
    out = Check()
    _check_db(data / "memory.sqlite3", out)
    for jsonl in sorted(data.rglob("*.jsonl")):
        _check_jsonl(jsonl, out)
    for directory in (data / "continuity", data / "activity"):
        if directory.is_dir():
            _check_json_dir(directory, out)
    return out


def _check_db(path: Path, out: Check) -> None:
    if not path.exists():
        return
    try:
        conn = sqlite3.connect(str(path))
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            if rows != [("ok",)]:
                out.problems.append(f"{path.name}: integrity_check: {rows[:5]}")
            if conn.execute("PRAGMA user_version").fetchone()[0] == 0 and not conn.execute(
                    "SELECT count(*) FROM sqlite_master").fetchone()[0]:
                return  # killed before the store's first migration committed: empty, and the next open creates it
            try:
                conn.execute("INSERT INTO memory_fts(memory_fts) VALUES('integrity-check')")
            except sqlite3.DatabaseError as exc:
                out.problems.append(f"{path.name}: fts integrity-check: {exc}")
            # every row and its full-text entry were written in one transaction: the counts agree
            for table, kind in (("observations", "observation"), ("user_prompts", "prompt"), ("session_summaries", "summary")):
                rows_n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                fts_n = conn.execute("SELECT count(*) FROM memory_fts WHERE kind = ?", (kind,)).fetchone()[0]
                if rows_n != fts_n:
                    out.problems.append(f"{path.name}: {table} has {rows_n} rows but memory_fts has {fts_n} {kind} entries")
            out.observations = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        out.problems.append(f"{path.name}: cannot read: {exc}")


def _check_jsonl(path: Path, out: Check) -> None:
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    decoder = json.JSONDecoder()
    for n, line in enumerate(lines, 1):
        if not line:
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            # a kill can cut a multi-byte character too; that is a torn line like any other
            text = line.decode("utf-8", errors="ignore")
        try:
            value, end = decoder.raw_decode(text)
            if end != len(text) or not isinstance(value, dict):
                raise ValueError("trailing data after a record")
            out.jsonl_records += 1
        except ValueError as exc:
            swallowed = _swallowed_record(decoder, text)
            if swallowed is None:
                out.torn_lines += 1  # a record cut short by the kill, alone on its line: readers skip it
            else:
                out.problems.append(
                    f"{path.relative_to(path.parents[2])}:{n}: a torn record swallowed the next one ({exc}): ...{swallowed[:80]!r}"
                )


def _swallowed_record(decoder: json.JSONDecoder, text: str) -> str | None:
    """The complete record glued after a torn one on the same line, if there is one (that record is lost to readers)."""
    start = text.find("{", 1)
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
            if isinstance(value, dict) and text[end:].strip() == "":
                return text[start:]
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


def _check_json_dir(directory: Path, out: Check) -> None:
    for entry in os.scandir(directory):
        if entry.name.startswith(".") and entry.name.endswith(".tmp"):
            out.temp_files += 1
            continue
        if not entry.name.endswith(".json"):
            continue
        try:
            value = json.loads(Path(entry.path).read_text(encoding="utf-8"))
            if not isinstance(value, dict):
                raise ValueError("not an object")
            out.json_files += 1
        except ValueError as exc:
            out.problems.append(f"{directory.name}/{entry.name}: {exc}")


# --------------------------------------------------------------------------- the killer (parent)


@dataclass
class Run:
    run: int
    delay_s: float
    ready: bool
    problems: list[str]
    torn_lines: int
    temp_files: int


def kill_once(data: Path, project: Path, seed: int, delay_s: float, ready_timeout_s: float = 30.0) -> Run:
    """Start a writer, wait for it to be writing, SIGKILL it after `delay_s`, then check everything."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(data), "--project", str(project), "--seed", str(seed)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )
    ready = False
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + ready_timeout_s
        line = b""
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            if line.strip() == READY.encode():
                ready = True
                break
            if not line:
                break
        if ready:
            time.sleep(delay_s)  # the random moment of the kill is the point of the experiment
    finally:
        with _suppress():
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    result = check(data)
    return Run(seed, round(delay_s, 4), ready, result.problems, result.torn_lines, result.temp_files)


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], ProcessLookupError)  # type: ignore[arg-type]


def kill_many(root: Path, runs: int, seed: int = 0, max_delay_s: float = MAX_KILL_DELAY_S) -> dict[str, Any]:
    rng = random.Random(seed)
    data, project = root / "data", root / "project"
    results, seen, torn_seen, torn_before = [], set(), 0, 0
    for i in range(runs):
        if _trim(data / "sessions" / "stress" / "events.jsonl"):
            torn_before = check(data).torn_lines
        run = kill_once(data, project, seed * 100000 + i, rng.uniform(0.0, max_delay_s))
        # The directory is shared by all runs: a run is charged only with the corruption it added.
        run.problems = [p for p in run.problems if p not in seen]
        seen.update(run.problems)
        torn_seen += max(0, run.torn_lines - torn_before)
        torn_before = run.torn_lines
        results.append(run)
    final = check(data)
    return {
        "runs": runs,
        "writers_ready": sum(r.ready for r in results),
        "runs_with_corruption": sum(bool(r.problems) for r in results),
        "problems": [p for r in results for p in r.problems][:20],
        "torn_lines_seen": torn_seen,
        "temp_files_left": final.temp_files,
        "jsonl_records": final.jsonl_records,
        "json_files": final.json_files,
        "observations": final.observations,
    }


def _trim(path: Path, keep: int = 1 << 20, limit: int = 16 << 20) -> bool:
    """Keep the stress file's tail (torn end included) so a long run's check() stays cheap; True when it trimmed."""
    try:
        if path.stat().st_size <= limit:
            return False
    except FileNotFoundError:
        return False
    with path.open("rb") as fh:
        fh.seek(-keep, os.SEEK_END)
        tail = fh.read()
    tmp = path.with_suffix(".trim")
    tmp.write_bytes(tail[tail.index(b"\n") + 1:])
    os.replace(tmp, path)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-delay", type=float, default=MAX_KILL_DELAY_S)
    parser.add_argument("--dir", type=Path, default=None, help="working directory (default: a fresh temp dir)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child_main(args.child, args.project, args.seed)
        return
    import tempfile

    root = args.dir or Path(tempfile.mkdtemp(prefix="orion-data-safety-"))
    os.environ.setdefault("ORION_DATA_DIR", str(root / "data"))
    started = time.perf_counter()
    summary = kill_many(root, args.runs, args.seed, args.max_delay)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(summary))
        return
    print(f"runs: {summary['runs']} (writer ready before the kill: {summary['writers_ready']})")
    print(f"runs with corruption: {summary['runs_with_corruption']}")
    for problem in summary["problems"]:
        print(f"  {problem}")
    print(f"torn JSONL lines (skipped by readers): {summary['torn_lines_seen']}; temp files left: {summary['temp_files_left']}")
    print(f"afterwards: {summary['jsonl_records']} tracking records, {summary['json_files']} JSON cache files, "
          f"{summary['observations']} observations; {summary['seconds']} s")


if __name__ == "__main__":
    main()
