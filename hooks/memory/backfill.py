"""Embedding the memory that was stored before search by meaning existed (or under another model), once, in the background.

The work runs in its own process, `python -m hooks.memory backfill` (a role of the built app), at a lower CPU
priority: embedding a large memory is minutes of CPU, and in the sidecar's process it would hold the interpreter
lock the event loop needs. The store's backfill commits every batch, so a stop, a crash or a killed sidecar loses
nothing: the next run goes on where the last one stopped.

`JOB.kick(data_dir)` starts it once per process when memory is used (the memory-context hook, `memory/search`,
`memory/status`); `JOB.status()` is its progress, which `memory/status` returns and which is logged every tenth;
`JOB.stop()` ends it (the sidecar's shutdown).

The same process runs the retention pass (hooks/memory/prune.py) first, when the user set a retention and the day's
pass is due (`--prune`): deleting is I/O a sidecar's event loop must not wait for either. A kick looks again at most
every PRUNE_CHECK_S whether it is due, so a sidecar that lives for days prunes once a day.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("hooks.memory")

NICE = 10
STOP_GRACE_S = 2.0
PRUNE_CHECK_S = 3600.0  # how often, at most, a kick asks again whether the day's retention pass is due


def backfill_argv(data_dir: Path, *, prune: bool = False) -> list[str]:
    """The backfill process's command line: this interpreter (or the built app's role), JSON progress on stdout;
    `prune`: the retention pass first, if still due."""
    from hooks.launcher.frozen import ROLE_FLAG, is_frozen

    tail = ["--data-dir", str(data_dir), "--progress", "json", "--nice", str(NICE)] + (["--prune"] if prune else [])
    if is_frozen():
        return [sys.executable, ROLE_FLAG, "memory-backfill", *tail]
    return [sys.executable, "-P", "-m", "hooks.memory", "backfill", *tail]  # -P: never the working directory's


class BackfillJob:
    """At most one backfill process per data directory and process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, dict[str, Any]] = {}
        self._next_check: dict[str, float] = {}  # per data dir: when (monotonic) a kick may look at the retention again
        self._busy: set[str] = set()  # data dirs whose check or process runs now
        self._idle = threading.Condition(self._lock)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stopped = False
        # Only a sidecar starts the process (it stops it at shutdown): a process that merely runs the memory hooks
        # (a test, `hooks test`) must not leave a child of its own behind.
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def kick(self, data_dir: Path) -> None:
        """Start the backfill of `data_dir` in the background unless it ran (or runs) in this process; and the
        retention pass when due (looked at again at most every PRUNE_CHECK_S)."""
        key = str(data_dir)
        now = time.monotonic()
        with self._lock:
            if not self._enabled or self._stopped:
                return
            state = self._state.get(key)
            if key in self._busy or (state is not None and now < self._next_check[key]):
                return
            self._next_check[key] = now + PRUNE_CHECK_S
            first = state is None
            if first:
                self._state[key] = {"state": "checking", "done": 0, "left": None}
            self._busy.add(key)
        threading.Thread(target=self._run, args=(Path(data_dir), first), name="memory-backfill", daemon=True).start()

    def wait_idle(self, data_dir: Path, timeout: float) -> bool:
        """Block until nothing started by a kick for `data_dir` runs (True) or `timeout` passes (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: str(data_dir) not in self._busy, timeout)

    def status(self, data_dir: Path) -> dict[str, Any]:
        with self._lock:
            return dict(self._state.get(str(data_dir), {"state": "idle", "done": 0, "left": None}))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            procs = list(self._procs.values())
        for proc in procs:
            _end(proc)

    def _set(self, key: str, **fields: Any) -> None:
        with self._lock:
            self._state.setdefault(key, {}).update(fields)

    def _run(self, data_dir: Path, first: bool) -> None:
        try:
            self._check_and_start(data_dir, first)
        finally:
            with self._idle:
                self._busy.discard(str(data_dir))
                self._idle.notify_all()

    def _check_and_start(self, data_dir: Path, first: bool) -> None:
        key = str(data_dir)
        prune = _prune_due(data_dir)
        left: int | None = 0  # a later kick only looks at the retention: the backfill ran in this process
        if first:
            try:
                left = _missing(data_dir)
            except Exception as exc:
                self._set(key, state="failed", error=str(exc))
                log.warning("memory: could not check which memory lacks vectors: %s", exc)
                left = 0
            else:
                if left is None:
                    self._set(key, state="unavailable", left=None)
                elif left == 0:
                    self._set(key, state="done", left=0)
        if left or prune:
            self._start(data_dir, left or 0, prune)

    def _start(self, data_dir: Path, left: int, prune: bool) -> None:
        """The process: the retention pass first when `prune`, then the backfill of `left` items (none: its
        outcome leaves the backfill's state as it was)."""
        key = str(data_dir)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (_import_root(), os.environ.get("PYTHONPATH")) if p)}
        with self._lock:
            if self._stopped or key in self._procs:
                return
            # Its stdin stays open and unused: when this process ends, however it ends, the backfill sees EOF and stops.
            try:
                proc = subprocess.Popen(backfill_argv(data_dir, prune=prune), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                        start_new_session=True)
            except OSError as exc:
                if left:
                    self._state[key].update(state="failed", error=f"the backfill process did not start: {exc}")
                log.warning("memory: the backfill process did not start: %s", exc)
                return
            self._procs[key] = proc
            if left:
                self._state[key].update(state="running", left=left, total=left, startedAt=time.time())
        if left:
            log.info("memory: embedding %d stored items for search by meaning (in the background)", left)
        shown = 0
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                progress = json.loads(raw)
                if "pruned" in progress:
                    self._pruned(key, progress["pruned"])
                    continue
                done, rest = int(progress["done"]), int(progress["left"])
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            if not left:
                continue
            self._set(key, done=done, left=rest)
            tenth = (10 * done) // max(1, done + rest)
            if tenth > shown:
                shown = tenth
                log.info("memory: embedded %d of %d stored items", done, done + rest)
        code = proc.wait()
        with self._lock:
            self._procs.pop(key, None)
            if not left:
                return
            finished = self._state[key].get("left") == 0
            self._state[key]["state"] = "done" if code == 0 and finished else ("stopped" if self._stopped else "failed")
            if code != 0 and not self._stopped:
                self._state[key]["error"] = f"the backfill process exited with {code}"
        if code == 0:
            log.info("memory: every stored item has its vector")
        elif not self._stopped:
            log.warning("memory: the backfill process exited with %s; it goes on from there next time", code)

    def _pruned(self, key: str, report: dict[str, Any]) -> None:
        """The retention pass's line: kept in the status, logged when it removed something."""
        self._set(key, pruned=report)
        if "error" in report:
            log.warning("memory: the retention pass failed (%s); it is tried again tomorrow", report["error"])
        elif report.get("observations") or report.get("prompts") or report.get("summaries"):
            log.info("memory: the retention pass removed %d observations, %d prompts, %d summaries (%d bytes)",
                     report.get("observations", 0), report.get("prompts", 0), report.get("summaries", 0),
                     report.get("bytes", 0))


def _missing(data_dir: Path) -> int | None:
    """How many stored items lack a vector; None when the model is not available (nothing to do)."""
    from hooks.memory.store import memory_exists, open_store

    if not memory_exists(data_dir):
        return 0
    status = open_store(data_dir).vector_status()
    if not status.get("available"):
        return None
    if status.get("items") is None or status.get("embedded") is None:
        raise ConnectionError("the memory database does not answer")  # a team database that is down: next time
    return max(0, int(status["items"]) - int(status["embedded"]))


def _prune_due(data_dir: Path) -> bool:
    """Whether the day's retention pass is due (hooks/memory/prune.py); never raises (a failure: not now)."""
    try:
        from hooks.memory.prune import due

        return due(data_dir)
    except Exception as exc:
        log.warning("memory: could not check whether the retention pass is due: %s", exc)
        return False


def _import_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _end(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(STOP_GRACE_S)
    except (ProcessLookupError, PermissionError):
        return
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


JOB = BackfillJob()


def _stop_at_eof(stopping: threading.Event) -> None:
    # The raw descriptor, not sys.stdin: a daemon thread blocked in a buffered read aborts the interpreter's exit.
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stopping.set()


def run_backfill(data_dir: Path, *, progress: str = "text", nice: int = 0, prune: bool = False) -> int:
    """The backfill process's body (`python -m hooks.memory backfill`): embed what lacks a vector, report progress;
    with `prune`, the retention pass first when it is due (one line `{"pruned": {...}}`)."""
    from hooks.memory.store import close_all_stores, open_store

    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    if progress == "json":  # started by a sidecar: stop when it is gone (stdin reaches EOF)
        threading.Thread(target=_stop_at_eof, args=(stopping,), daemon=True).start()
    if prune:
        _prune_pass(data_dir, progress, stopping)
    store = open_store(data_dir)

    def report(done: int, left: int) -> None:
        if progress == "json":
            sys.stdout.write(json.dumps({"done": done, "left": left}) + "\n")
            sys.stdout.flush()
        else:
            sys.stderr.write(f"\rembedded {done}, {left} to go   ")
            sys.stderr.flush()

    try:
        done = store.backfill(progress=report, should_stop=stopping.is_set)
        status = store.vector_status()
    finally:
        close_all_stores()
    if progress != "json":
        sys.stderr.write("\n")
        print(json.dumps({"embedded": done, **status}))
    if not status.get("available"):
        return 2
    if status.get("items") is None or status.get("embedded") is None:
        sys.stderr.write("memory: the database does not answer; the backfill goes on next time\n")
        return 1
    return 0 if int(status["items"]) <= int(status["embedded"]) or stopping.is_set() else 1


def _prune_pass(data_dir: Path, progress: str, stopping: threading.Event) -> None:
    """The day's retention pass, if still due, reported as one line (a failure too: the backfill goes on)."""
    from hooks.memory.prune import run_if_due

    try:
        report = run_if_due(data_dir, should_stop=stopping.is_set)
        removed = None if report is None else report["removed"]
    except Exception as exc:
        removed = {"error": " ".join(str(exc).split())[:300] or type(exc).__name__}
    if removed is None:
        return
    if progress == "json":
        sys.stdout.write(json.dumps({"pruned": removed}) + "\n")
        sys.stdout.flush()
    else:
        sys.stderr.write(f"retention: {json.dumps(removed)}\n")
