"""Memory writes waiting for PostgreSQL: a bounded, durable queue (one private JSONL file per process, in order).

While the database is unreachable every write becomes one line here; the
store's flusher replays them in order once it is back. Each line is a whole
write with its own natural key, so replaying one twice (a crash between the
database's commit and the file's truncation) changes nothing.

A process holds an exclusive `flock` on its own file. A file nobody holds is
left by a process that died before it could flush: the next store to open the
directory adopts its lines. The directory is per database (a hash of the URL
without its password), so lines meant for one database never go to another.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections import deque
from pathlib import Path
from typing import Any

from hooks.private_files import private_dir

Op = dict[str, Any]


class Spool:
    """An in-order queue of write operations mirrored to `<directory>/<pid>-<token>.jsonl`; at most `limit` pending."""

    def __init__(self, directory: Path, limit: int) -> None:
        self.directory = private_dir(directory)
        self.limit = limit
        self.dropped = 0
        self._lock = threading.Lock()
        self._queue: deque[Op] = deque()
        self._lines = 0  # lines in the file: the queue plus written ones not yet truncated away
        self.path = self.directory / f"{os.getpid()}-{secrets.token_hex(4)}.jsonl"
        self._fd = self._open_locked(self.path)
        self._adopt_orphans()

    @staticmethod
    def _open_locked(path: Path) -> int:
        import fcntl  # here, not at the top: the module imports where there is no fcntl (Windows)

        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def _adopt_orphans(self) -> None:
        import fcntl

        for other in sorted(self.directory.glob("*.jsonl")):
            if other == self.path:
                continue
            try:
                fd = os.open(other, os.O_RDWR)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live process owns it
                with os.fdopen(os.dup(fd), "r", encoding="utf-8") as fh:
                    for line in fh:
                        try:
                            op = json.loads(line)
                        except ValueError:
                            continue  # a line torn by a crash mid-write: the write it held was never acknowledged
                        if isinstance(op, dict):
                            self._append_locked(op, force=True)
                os.unlink(other)
            finally:
                os.close(fd)

    def __len__(self) -> int:
        return len(self._queue)

    def append(self, op: Op) -> bool:
        """Queue `op` durably; False (and counted in `dropped`) when the queue already holds `limit` operations."""
        with self._lock:
            return self._append_locked(op, force=False)

    def _append_locked(self, op: Op, *, force: bool) -> bool:
        if not force and len(self._queue) >= self.limit:
            self.dropped += 1
            return False
        os.write(self._fd, _line(op))
        self._queue.append(op)
        self._lines += 1
        return True

    def peek(self) -> Op | None:
        with self._lock:
            return self._queue[0] if self._queue else None

    def pop(self) -> None:
        """Drop the first operation (written); the file is emptied once the queue is."""
        with self._lock:
            if self._queue:
                self._queue.popleft()
            if not self._queue:
                os.ftruncate(self._fd, 0)
                self._lines = 0
            elif self._lines > 2 * self.limit:
                self._compact_locked()

    def _compact_locked(self) -> None:
        # Writes that keep coming while a backlog drains would grow the file without end: rewrite it with only the
        # pending lines, as a new locked file renamed over the old one (a crash leaves one or the other, whole).
        tmp = self.path.with_suffix(".compact")
        fd = self._open_locked(tmp)
        os.write(fd, b"".join(_line(op) for op in self._queue))
        os.fsync(fd)
        os.replace(tmp, self.path)
        os.close(self._fd)
        self._fd = fd
        self._lines = len(self._queue)

    def close(self) -> None:
        """Release the file: empty, it is removed; otherwise it stays for the next store to adopt."""
        with self._lock:
            if self._fd < 0:
                return
            if not self._queue:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            os.close(self._fd)
            self._fd = -1


def _line(op: Op) -> bytes:
    return (json.dumps(op, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
