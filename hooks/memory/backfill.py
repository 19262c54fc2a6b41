"""Embedding the memory that was stored before search by meaning existed (or under another model), once, in the background.

The work runs in its own process, `python -m hooks.memory backfill` (a role of the built app), at a lower CPU
priority: embedding a large memory is minutes of CPU, and in the sidecar's process it would hold the interpreter
lock the event loop needs. The store's backfill commits every batch, so a stop, a crash or a killed sidecar loses
nothing: the next run goes on where the last one stopped.

`JOB.kick(data_dir)` starts it once per process when memory is used (the memory-context hook, `memory/search`,
`memory/status`); `JOB.status()` is its progress, which `memory/status` returns and which is logged every tenth;
`JOB.stop()` ends it (the sidecar's shutdown).
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


def backfill_argv(data_dir: Path) -> list[str]:
    """The backfill process's command line: this interpreter (or the built app's role), JSON progress on stdout."""
    from hooks.launcher.frozen import ROLE_FLAG, is_frozen

    tail = ["--data-dir", str(data_dir), "--progress", "json", "--nice", str(NICE)]
    if is_frozen():
        return [sys.executable, ROLE_FLAG, "memory-backfill", *tail]
    return [sys.executable, "-P", "-m", "hooks.memory", "backfill", *tail]  # -P: never the working directory's


class BackfillJob:
    """At most one backfill process per data directory and process; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, dict[str, Any]] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stopped = False
        # Only a sidecar starts the process (it stops it at shutdown): a process that merely runs the memory hooks
        # (a test, `hooks test`) must not leave a child of its own behind.
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def kick(self, data_dir: Path) -> None:
        """Start the backfill of `data_dir` in the background unless it ran (or runs) in this process."""
        key = str(data_dir)
        with self._lock:
            if not self._enabled or self._stopped or key in self._state:
                return
            self._state[key] = {"state": "checking", "done": 0, "left": None}
        threading.Thread(target=self._run, args=(Path(data_dir),), name="memory-backfill", daemon=True).start()

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

    def _run(self, data_dir: Path) -> None:
        key = str(data_dir)
        try:
            left = _missing(data_dir)
        except Exception as exc:
            self._set(key, state="failed", error=str(exc))
            log.warning("memory: could not check which memory lacks vectors: %s", exc)
            return
        if left is None:
            self._set(key, state="unavailable", left=None)
            return
        if left == 0:
            self._set(key, state="done", left=0)
            return
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (_import_root(), os.environ.get("PYTHONPATH")) if p)}
        with self._lock:
            if self._stopped:
                return
            # Its stdin stays open and unused: when this process ends, however it ends, the backfill sees EOF and stops.
            try:
                proc = subprocess.Popen(backfill_argv(data_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, start_new_session=True)
            except OSError as exc:
                self._state[key].update(state="failed", error=f"the backfill process did not start: {exc}")
                log.warning("memory: the backfill process did not start: %s", exc)
                return
            self._procs[key] = proc
            self._state[key].update(state="running", left=left, total=left, startedAt=time.time())
        log.info("memory: embedding %d stored items for search by meaning (in the background)", left)
        shown = 0
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                progress = json.loads(raw)
                done, rest = int(progress["done"]), int(progress["left"])
            except (ValueError, KeyError, TypeError):
                continue
            self._set(key, done=done, left=rest)
            tenth = (10 * done) // max(1, done + rest)
            if tenth > shown:
                shown = tenth
                log.info("memory: embedded %d of %d stored items", done, done + rest)
        code = proc.wait()
        with self._lock:
            self._procs.pop(key, None)
            finished = self._state[key].get("left") == 0
            self._state[key]["state"] = "done" if code == 0 and finished else ("stopped" if self._stopped else "failed")
            if code != 0 and not self._stopped:
                self._state[key]["error"] = f"the backfill process exited with {code}"
        if code == 0:
            log.info("memory: every stored item has its vector")
        elif not self._stopped:
            log.warning("memory: the backfill process exited with %s; it goes on from there next time", code)


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


def run_backfill(data_dir: Path, *, progress: str = "text", nice: int = 0) -> int:
    """The backfill process's body (`python -m hooks.memory backfill`): embed what lacks a vector, report progress."""
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
