"""Tracking files: one redacted JSON line per execution in the session's events.jsonl and in analytics/hook-timing.jsonl, appended off the event loop to private files, each rotated to one `.1` past the retention policy's size (hooks/retention.py)."""

from __future__ import annotations

import json
import logging
import math
import os
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.private_files import FILE_MODE, private_dir
from hooks.redaction import redact, redact_value
from hooks.types import HookResult

log = logging.getLogger("hooks.tracking")

BATCH_DELAY_S = 0.05
MAX_BATCH_ITEMS = 2000
MAX_BATCH_CHARS = 4 << 20


# One encoder for every line: json.dumps with options builds a new one per call.
_ENCODE = json.JSONEncoder(default=str, ensure_ascii=False).encode


def _tracking_record(result: HookResult) -> dict[str, Any]:
    """The one place an execution becomes a tracking record; the caller redacts it before encoding."""
    return {
        "executionId": result.execution_id,
        "hookId": result.hook_id,
        "name": result.hook_name,
        "type": result.hook_type,
        "source": result.source,
        "event": result.event,
        "outcome": result.outcome,
        "durationMs": round(result.duration_ms, 3),
        "exitCode": result.exit_code,
        "error": result.error,
        "background": result.background,
        "enforced": result.enforced,
        **({"traceId": result.trace_id, "spanId": result.span_id} if result.trace_id else {}),
    }


@dataclass(slots=True)
class Execution:
    """One execution to track, captured on the loop; the writer thread turns it into the session line and the timing line."""

    events_path: Path
    timing_path: Path
    session_id: str
    project: str
    ts: float
    result: HookResult

    def lines(self) -> tuple[str, str]:
        """The two JSON lines, exactly as json.dumps would write the records; formatted directly when every value is plain."""
        r = self.result
        duration = round(r.duration_ms, 3)
        if r.trace_id is not None or not (
            type(r.execution_id) is str and type(self.session_id) is str and type(self.project) is str
            and type(r.outcome) is str and (r.error is None or type(r.error) is str)
            and (r.exit_code is None or type(r.exit_code) is int)
            and type(r.background) is bool and type(r.enforced) is bool
            and type(duration) is float and math.isfinite(duration)
        ):
            return self._encoded(duration)
        spec = _spec_fragments(r)
        if spec is None:
            return self._encoded(duration)
        identity, name_event = spec
        ts = _iso_cached(self.ts)
        dur = repr(duration)
        outcome = _str(r.outcome)
        exit_code = "null" if r.exit_code is None else str(r.exit_code)
        # A failing hook's error text quotes its stderr or its input: redacted before it is encoded.
        error = "null" if r.error is None else _str(redact(r.error))
        event_line = (
            f'{{"ts": "{ts}", "sessionId": {_str(self.session_id)}, "executionId": {_str(r.execution_id)}, {identity}, '
            f'"outcome": {outcome}, "durationMs": {dur}, "exitCode": {exit_code}, "error": {error}, '
            f'"background": {_BOOL[r.background]}, "enforced": {_BOOL[r.enforced]}}}'
        )
        timing_line = f'{{"ts": "{ts}", {name_event}, "durationMs": {dur}, "outcome": {outcome}, "project": {_str(self.project)}}}'
        return event_line, timing_line

    def _encoded(self, duration: float) -> tuple[str, str]:
        record = redact_value(_tracking_record(self.result))
        assert isinstance(record, dict)
        ts = iso(self.ts)
        event_line = _ENCODE({"ts": ts, "sessionId": self.session_id, **record})
        timing_line = _ENCODE(
            {"ts": ts, "name": record["name"], "event": record["event"], "durationMs": duration,
             "outcome": record["outcome"], "project": self.project,
             **({"traceId": record["traceId"], "spanId": record["spanId"]} if "traceId" in record else {})}
        )
        return event_line, timing_line


# Tracking encodes two lines per execution on the writer thread, which shares the GIL with the loop: the parts
# that repeat (a hook's identity, the second of the timestamp) are encoded once. Only the writer thread uses these.
_str = json.encoder.encode_basestring  # what the encoder writes for a str with ensure_ascii=False
_BOOL = {True: "true", False: "false"}
_FRAGMENTS: dict[tuple[str, str, str, str, str], tuple[str, str]] = {}
_MAX_FRAGMENTS = 4096
_ts_second: tuple[int, str] = (-1, "")


def _spec_fragments(r: HookResult) -> tuple[str, str] | None:
    key = (r.hook_id, r.hook_name, r.hook_type, r.source, r.event)
    found = _FRAGMENTS.get(key)
    if found is None:
        if not all(type(v) is str for v in key):
            return None
        if len(_FRAGMENTS) >= _MAX_FRAGMENTS:
            _FRAGMENTS.clear()
        hook_id, name, hook_type, source, event = map(_str, key)
        found = _FRAGMENTS[key] = (
            f'"hookId": {hook_id}, "name": {name}, "type": {hook_type}, "source": {source}, "event": {event}',
            f'"name": {name}, "event": {event}',
        )
    return found


def _iso_cached(t: float) -> str:
    global _ts_second
    second = int(t)
    if _ts_second[0] != second:
        _ts_second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)))
    return f"{_ts_second[1]}.{int(t % 1 * 1000):03d}Z"


_FROM_POLICY: Any = object()


class TrackingWriter:
    """Appends JSON lines from a daemon thread; writing never blocks the loop and a failure is logged, never raised.

    `rotate_at`: the size (bytes) past which a file is rotated (None: never); by default the user's retention
    policy's, read on the writer thread when it starts."""

    def __init__(self, rotate_at: int | None = _FROM_POLICY) -> None:
        self._queue: queue.SimpleQueue[Execution | tuple[Path, dict[str, Any]] | threading.Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._rotate_at = rotate_at

    def write(self, path: Path, record: dict[str, Any]) -> None:
        if self._thread is None:
            self._start()
        self._queue.put((path, record))

    def track(self, execution: Execution) -> None:
        """Queue both lines of one execution; the result must not change afterwards (it is read on the writer thread)."""
        if self._thread is None:
            self._start()
        self._queue.put(execution)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hooks-tracking", daemon=True)
                self._thread.start()

    def flush(self, timeout: float = 5.0) -> bool:
        """Block until everything queued so far is on disk (call from a worker thread in async code)."""
        if self._thread is None:
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        self.flush(timeout)
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        if self._rotate_at is _FROM_POLICY:
            from hooks.retention import load_policy

            self._rotate_at = load_policy().rotate_bytes
        full = False
        while True:
            item = self._queue.get()
            if not isinstance(item, threading.Event) and not full:
                # Gather a batch: one wake-up per burst instead of one GIL hand-off per record.
                time.sleep(BATCH_DELAY_S)
            batch: dict[Path, list[str]] = {}
            waiters: list[threading.Event] = []
            stop = False
            taken = chars = 0
            while True:
                taken += 1
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                elif isinstance(item, Execution):
                    try:
                        event_line, timing_line = item.lines()
                    except Exception as exc:  # a record that cannot be encoded is dropped, loudly
                        log.warning("tracking record dropped: %s", exc)
                    else:
                        batch.setdefault(item.events_path, []).append(event_line)
                        batch.setdefault(item.timing_path, []).append(timing_line)
                        chars += len(event_line) + len(timing_line)
                else:
                    path, record = item
                    if isinstance(record.get("ts"), float):
                        record["ts"] = iso(record["ts"])
                    try:
                        line = _ENCODE(redact_value(record))
                    except Exception as exc:  # a record that cannot be encoded is dropped, loudly
                        log.warning("tracking record dropped: %s", exc)
                    else:
                        batch.setdefault(path, []).append(line)
                        chars += len(line)
                # A bounded batch: a producer faster than encoding (and redaction) must not keep
                # the writer draining forever with nothing on disk.
                full = (taken >= MAX_BATCH_ITEMS or chars >= MAX_BATCH_CHARS) and not stop
                if full:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            for path, lines in batch.items():
                try:
                    append_lines(path, lines, rotate_at=self._rotate_at)
                except OSError as exc:
                    log.warning("cannot append to %s: %s", path, exc)
            for waiter in waiters:
                waiter.set()
            if stop:
                return


# Directories already made private by this process (appends come from the one writer thread, or tests).
_private_dirs: set[Path] = set()


def append_lines(path: Path, lines: list[str], *, rotate_at: int | None = None) -> None:
    """Append one batch with one write() on an O_APPEND descriptor, so batches of concurrent writers never interleave.

    A process killed mid-write can leave a torn last line; it is closed with a
    newline before appending, or the next record would be glued onto it and
    lost with it. `read_records` skips such a torn line. A file the batch would
    grow past `rotate_at` bytes is rotated first (`rotate`).
    """
    data = ("\n".join(lines) + "\n").encode("utf-8")
    fd = _open_for_append(path)
    try:
        st = os.fstat(fd)
        if rotate_at is not None and st.st_size and st.st_size + len(data) > rotate_at:
            rotate(path, fd)
            os.close(fd)
            fd = _open_for_append(path)
            st = os.fstat(fd)
        if st.st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)  # written by an older version with 0644: private from now on
        size = st.st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _open_for_append(path: Path) -> int:
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    if path.parent not in _private_dirs:
        private_dir(path.parent)  # created 0700 (missing parents too), or narrowed once per process
        _private_dirs.add(path.parent)
    try:
        return os.open(path, flags, FILE_MODE)
    except FileNotFoundError:  # its folder was removed since (a pruned or deleted session): made again
        private_dir(path.parent)
        return os.open(path, flags, FILE_MODE)


def rotated(path: Path) -> Path:
    """The one older generation a tracking file keeps: `<name>.1`."""
    return path.with_name(path.name + ".1")


def rotate(path: Path, fd: int) -> None:
    """Rename the file open on `fd` to `<name>.1` (dropping the previous one), unless another writer did already.

    Under an exclusive flock of the file, and only while `path` still names it: of several processes finding the
    same file full, one renames it and the others append to the fresh file, instead of each renaming the next
    (which would drop the generation just rotated). A writer that opened the old file appends to `.1`: not lost.
    """
    import fcntl  # POSIX only: imported where used, so the module imports everywhere
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        st = os.fstat(fd)
        try:
            now = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            os.replace(path, rotated(path))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a tracking file, in order; a line that does not parse (torn by a crash) is skipped."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def read_rotated(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a tracking file and of its rotated generation, oldest first."""
    yield from read_records(rotated(path))
    yield from read_records(path)


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
