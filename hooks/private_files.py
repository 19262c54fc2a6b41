"""Orion's own files are private to the user: directories 0700, files 0600, created that way and fixed when found wider.

Every writer of Orion's data (memory, tracking, continuity, trust, CLI homes)
goes through these helpers instead of `mkdir` / `open`, so the mode never
depends on the process umask and a file created by an older version with
0644 is narrowed the next time it is opened. The mode is given to `os.open`
/ `os.mkdir` at creation: there is no window in which the file exists with a
wider mode (chmod after create would leave one).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600


def _narrow(path: str | Path, st: os.stat_result, mode: int) -> None:
    # Only ever remove bits for group/other, and only on what we own: chmod on
    # someone else's file would fail anyway, and a symlink is not followed. A
    # sticky directory (/tmp, as ORION_DATA_DIR=/tmp would make it) is shared by
    # design and is never narrowed: that would lock every other user out of it.
    if st.st_mode & stat.S_ISVTX:
        return
    if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode, follow_symlinks=False)


def private_dir(path: str | Path) -> Path:
    """Create `path` (and missing parents) with mode 0700; an existing `path` of ours wider than 0700 is narrowed.

    Parents that already exist are left alone (they may be the user's home or
    XDG dirs); parents this call creates are 0700 too.
    """
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for component in reversed(missing):
        try:
            os.mkdir(component, DIR_MODE)
        except FileExistsError:
            pass  # a concurrent creator won the race; its mode is fixed below for the leaf
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        os.mkdir(path, DIR_MODE)
        return path
    if stat.S_ISDIR(st.st_mode):
        _narrow(path, st, DIR_MODE)
    elif not stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(f"{path} exists and is not a directory")
    return path


_checked_data_dirs: set[str] = set()
_checked_lock = threading.Lock()


def private_data_dir(data_dir: str | Path) -> Path:
    """Make Orion's data dir private: the dir itself 0700 and each entry directly in it 0700 / 0600.

    Done once per process and data dir (a scandir of the top level), so files and
    directories created before this version, or by code that did not use these
    helpers (`sessions/` and `cli-home/` of an older sidecar), are narrowed the
    first time a writer opens the data dir. Deeper entries sit behind 0700 dirs.
    """
    data_dir = Path(data_dir)
    key = os.path.abspath(data_dir)
    with _checked_lock:
        if key in _checked_data_dirs and data_dir.is_dir():
            return data_dir
    private_dir(data_dir)
    try:
        entries = list(os.scandir(data_dir))
    except OSError:
        entries = []
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                _narrow(entry.path, st, DIR_MODE)
            elif stat.S_ISREG(st.st_mode):
                _narrow(entry.path, st, FILE_MODE)
        except OSError:
            continue  # removed meanwhile, or not ours
    with _checked_lock:
        _checked_data_dirs.add(key)
    return data_dir


def fix_file_mode(path: str | Path) -> None:
    """Narrow an existing file of ours to 0600; a missing file is fine."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        _narrow(path, st, FILE_MODE)


def open_private(path: str | Path, flags: int) -> int:
    """`os.open(path, flags | O_CREAT, 0600)`, its parent created 0700, an existing file narrowed to 0600; returns the fd."""
    path = Path(path)
    private_dir(path.parent)
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        st = os.fstat(fd)
        if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def touch_private(path: str | Path) -> None:
    """Create `path` empty (0600) if missing, narrow it if it exists."""
    os.close(open_private(path, os.O_WRONLY))


def write_private_atomic(path: str | Path, data: bytes) -> None:
    """Write-to-temp (0600) then os.replace: a reader never sees half a file and the result is private from its first byte."""
    path = Path(path)
    private_dir(path.parent)
    # mkstemp creates the temp file 0600 regardless of umask.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_private_json(path: str | Path, value: Any) -> None:
    """`value` as JSON, written with `write_private_atomic`."""
    write_private_atomic(path, json.dumps(value, ensure_ascii=False).encode("utf-8"))
