"""Removing ended sessions' data from Orion's data directory by the retention policy: the least recently used first, never a live session's, never through a symlink.

What a session leaves, by id: `sessions/<id>/` (its tracking, hooks/tracking.py), `cli-home/<id>/` (a scripted
session's CLI home, sidecar/reaper.py) and `transcripts/<id>.jsonl` (a scripted session's archived transcript).
They go together, once the newest modification time among them is older than the age limit, or, while the total
is over the size cap, oldest first.

**Live sessions.** A sidecar holds a shared `flock` on `sessions/<id>/.live` while the session is open
(`SessionLease`); pruning, in any process, takes it exclusively without waiting before it removes anything, and
holds it while it does: a session open in another sidecar is never touched, and one cannot be opened halfway
through its removal. The lease's file is touched when it is released, so "last used" counts from the session's end.

**Symlinks.** Every directory is opened with O_NOFOLLOW relative to its parent's descriptor, sizes are read with
lstat, and folders are removed with `shutil.rmtree(dir_fd=...)` (its descriptor-based walk): a link is removed as
a link, and nothing planted in the data directory can make pruning measure or delete what lies outside it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hooks.private_files import FILE_MODE, private_dir
from hooks.retention import MIB, RetentionPolicy

log = logging.getLogger("hooks.pruning")

SESSIONS_DIR = "sessions"
HOMES_DIR = "cli-home"  # sidecar.reaper.HOMES_DIR (the hook engine imports nothing of the sidecar)
TRANSCRIPTS_DIR = "transcripts"
LEASE_NAME = ".live"
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")  # hooks.paths.validate_session_id's rule
_TRANSCRIPT = re.compile(r"^([A-Za-z0-9_-]{1,128})\.jsonl$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


# --------------------------------------------------------------------------- the lease a live session holds


class SessionLease:
    """A shared lock on `sessions/<id>/.live`, held by the sidecar while the session is open; pruning needs it
    exclusively. `hold` may wait (briefly) for a removal under way: call it off the event loop."""

    __slots__ = ("path", "_fd")

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def hold(cls, data_dir: Path, session_id: str) -> SessionLease:
        import fcntl  # POSIX only: imported where used, so the module imports everywhere
        if not _SESSION_ID.match(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        path = Path(data_dir) / SESSIONS_DIR / session_id / LEASE_NAME
        for _ in range(3):
            private_dir(path.parent)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
            except FileNotFoundError:
                continue  # the folder was being removed by a pruning: made again on the next round
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                # A pruning that held the lock before us removed the file we locked: lock the one that is there now.
                if _same_file(path, os.fstat(fd)):
                    return cls(path, fd)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise OSError(errno.EAGAIN, f"cannot hold the lease {path}: it keeps being removed")

    def release(self) -> None:
        """The session ended: its last use is now (touched), and pruning may take it when the policy says so."""
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            os.utime(self._fd)
        os.close(self._fd)  # closing the descriptor drops the lock
        self._fd = -1


def _same_file(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


# --------------------------------------------------------------------------- what sessions left


@dataclass(slots=True)
class SessionData:
    """What one session left on disk: its bytes (lstat sizes) and the newest modification time among them."""

    session_id: str
    size: int = 0
    newest: float = 0.0
    reason: str = ""  # why a plan removes it: "age" or "size cap"


@dataclass(slots=True)
class PruneReport:
    policy: RetentionPolicy
    removed: list[SessionData] = field(default_factory=list)
    live: list[str] = field(default_factory=list)  # due by the policy, but open in some sidecar: kept
    kept: int = 0
    kept_bytes: int = 0
    dry_run: bool = False

    @property
    def removed_bytes(self) -> int:
        return sum(s.size for s in self.removed)

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        text = (f"{verb} {len(self.removed)} session(s), {self.removed_bytes / MIB:.1f} MiB; kept {self.kept} "
                f"session(s), {self.kept_bytes / MIB:.1f} MiB ({self.policy.describe()})")
        if self.live:
            text += f"; {len(self.live)} due but open in a sidecar"
        return text


class _Root:
    """The data directory's three per-session folders, opened without following a link (absent ones are None)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.fds: dict[str, int | None] = {}

    def __enter__(self) -> _Root:
        try:
            top = os.open(self.data_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            top = -1
        try:
            for name in (SESSIONS_DIR, HOMES_DIR, TRANSCRIPTS_DIR):
                self.fds[name] = None
                if top < 0:
                    continue
                try:
                    self.fds[name] = os.open(name, _DIR_FLAGS, dir_fd=top)
                except FileNotFoundError:
                    pass
                except OSError as exc:  # ELOOP: a symlink where Orion keeps its own folder
                    log.warning("retention: %s is not a plain directory (%s); left alone", self.data_dir / name, exc)
        finally:
            if top >= 0:
                os.close(top)
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)

    def entries(self, name: str) -> Iterator[str]:
        fd = self.fds.get(name)
        if fd is None:
            return
        with os.scandir(fd) as listing:
            for entry in listing:
                yield entry.name

    def session_ids(self) -> set[str]:
        ids = {n for n in self.entries(SESSIONS_DIR) if _SESSION_ID.match(n)}
        ids |= {n for n in self.entries(HOMES_DIR) if _SESSION_ID.match(n)}
        ids |= {m.group(1) for m in map(_TRANSCRIPT.match, self.entries(TRANSCRIPTS_DIR)) if m}
        return ids

    def locations(self, session_id: str) -> Iterator[tuple[int, str]]:
        """(parent descriptor, name) of each place the session may have left something."""
        for folder, name in ((SESSIONS_DIR, session_id), (HOMES_DIR, session_id),
                             (TRANSCRIPTS_DIR, f"{session_id}.jsonl")):
            fd = self.fds.get(folder)
            if fd is not None:
                yield fd, name

    def measure(self, session_id: str) -> SessionData | None:
        """The session's size and newest time; None when it left nothing."""
        found = SessionData(session_id)
        anything = False
        for parent, name in self.locations(session_id):
            try:
                size, newest = _measure(parent, name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("retention: cannot measure %s/%s: %s", parent, name, exc)
                continue
            anything = True
            found.size += size
            found.newest = max(found.newest, newest)
        return found if anything else None

    def lock(self, session_id: str) -> int | None:
        """-1: the session has no lease file (nothing to lock); a descriptor holding it exclusively; None: live."""
        import fcntl  # POSIX only: imported where used, so the module imports everywhere
        fd = self.fds.get(SESSIONS_DIR)
        if fd is None:
            return -1
        try:
            folder = os.open(session_id, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            return -1  # no folder, or a link in its place: nothing can hold a lease there
        try:
            lease = os.open(LEASE_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except OSError:
            return -1  # none (an older sidecar's session, or one never opened), or not a plain file: not a lease
        finally:
            os.close(folder)
        try:
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lease)
            return None
        return lease

    def remove(self, session_id: str) -> None:
        for parent, name in self.locations(session_id):
            _remove(parent, name)


def _measure(parent: int, name: str) -> tuple[int, float]:
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    size, newest = st.st_size, st.st_mtime
    if not stat.S_ISDIR(st.st_mode):
        return size, newest
    stack = [os.open(name, _DIR_FLAGS, dir_fd=parent)]
    try:
        while stack:
            fd = stack.pop()
            try:
                with os.scandir(fd) as listing:
                    for entry in listing:
                        try:
                            est = entry.stat(follow_symlinks=False)
                            size += est.st_size
                            newest = max(newest, est.st_mtime)
                            if stat.S_ISDIR(est.st_mode):
                                stack.append(os.open(entry.name, _DIR_FLAGS, dir_fd=fd))
                        except OSError:
                            continue  # gone meanwhile, or swapped for a link: not counted, never followed
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)
    return size, newest


def _remove(parent: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent)  # a file, or a link (never what it points to)
        return
    if not shutil.rmtree.avoids_symlink_attacks:  # pragma: no cover - every platform Orion runs on has it
        raise OSError(errno.ENOTSUP, "this platform's rmtree could follow a symlink; not removing folders")
    shutil.rmtree(name, dir_fd=parent)


# --------------------------------------------------------------------------- the plan


def plan(sessions: Iterable[SessionData], policy: RetentionPolicy, now: float,
         live: Iterable[str] = ()) -> list[SessionData]:
    """What the policy removes, oldest first: every session past the age limit, then the oldest others while the
    total is over the cap. Sessions in `live` are never chosen (they still count towards the total)."""
    spared = set(live)
    ordered = sorted(sessions, key=lambda s: (s.newest, s.session_id))
    total = sum(s.size for s in ordered)
    chosen = []
    for data in ordered:
        if data.session_id in spared:
            continue
        if policy.max_age_s is not None and now - data.newest > policy.max_age_s:
            data.reason = "age"
        elif policy.max_total_bytes is not None and total > policy.max_total_bytes:
            data.reason = "size cap"
        else:
            continue
        chosen.append(data)
        total -= data.size
    return chosen


class DataInventory:
    """What sessions left in one data directory, as last measured: one full scan, then one session at a time, so
    that a pruning after a session's end lists nothing but that session's own folders."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.sessions: dict[str, SessionData] = {}
        self.scanned = False

    def scan(self) -> None:
        with _Root(self.data_dir) as root:
            found = {}
            for sid in root.session_ids():
                data = root.measure(sid)
                if data is not None:
                    found[sid] = data
        self.sessions, self.scanned = found, True

    def refresh(self, session_ids: Iterable[str]) -> None:
        with _Root(self.data_dir) as root:
            for sid in session_ids:
                if not _SESSION_ID.match(sid):
                    continue
                data = root.measure(sid)
                if data is None:
                    self.sessions.pop(sid, None)
                else:
                    self.sessions[sid] = data

    def prune(self, policy: RetentionPolicy, *, live: Iterable[str] = (), dry_run: bool = False,
              now: float | None = None) -> PruneReport:
        """Remove what the policy says (`dry_run`: only say it); `live`: this process's open sessions."""
        if not self.scanned:
            self.scan()
        now = time.time() if now is None else now
        live = set(live)
        report = PruneReport(policy, dry_run=dry_run)
        with _Root(self.data_dir) as root:
            for due in plan(list(self.sessions.values()), policy, now, live):
                lock = root.lock(due.session_id)
                if lock is None:
                    report.live.append(due.session_id)
                    continue
                try:
                    # Measured again under the lock: another sidecar may have used it since it was listed.
                    fresh = root.measure(due.session_id)
                    if fresh is None:
                        self.sessions.pop(due.session_id, None)
                        continue
                    if fresh.newest > due.newest or fresh.size > due.size:
                        self.sessions[due.session_id] = fresh
                        continue  # decided on the next pass, with what it is now
                    fresh.reason = due.reason
                    if not dry_run:
                        root.remove(due.session_id)
                        self.sessions.pop(due.session_id, None)
                    report.removed.append(fresh)
                except OSError as exc:
                    log.warning("retention: cannot remove session %s's data: %s", due.session_id, exc)
                finally:
                    if lock >= 0:
                        os.close(lock)
        gone = {s.session_id for s in report.removed}
        kept = [s for sid, s in self.sessions.items() if sid not in gone]
        report.kept, report.kept_bytes = len(kept), sum(s.size for s in kept)
        return report


def prune(data_dir: Path, policy: RetentionPolicy, *, live: Iterable[str] = (), dry_run: bool = False) -> PruneReport:
    """One full pass over the data directory (what `python -m hooks prune` and a sidecar's start-up do)."""
    return DataInventory(data_dir).prune(policy, live=live, dry_run=dry_run)



def remove_session_data(data_dir: Path, session_id: str) -> None:
    """Remove what one session left (`session/delete`), whatever its age; a link is removed as a link."""
    if not _SESSION_ID.match(session_id):
        raise ValueError(f"invalid session id {session_id!r}")
    with _Root(data_dir) as root:
        for parent, name in root.locations(session_id):
            try:
                _remove(parent, name)
            except OSError as exc:
                log.warning("cannot remove session %s's %s: %s", session_id, name, exc)
