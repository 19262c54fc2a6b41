"""Which project a session's memory belongs to: an Orion-assigned random id per project folder, never the folder's name.

The registry `<data dir>/projects.json` (0600) maps a folder's real path to
`{id, name, mark, dev, ino}`. `mark` is a random nonce Orion also writes on the
folder itself as the extended attribute `user.orion.project`: it stays with
the directory through `mv`, is not copied by `cp -r` or `git clone`, and
disappears when the folder is deleted. Where extended attributes cannot be
written (some file systems, folders not ours), the directory's device and
inode stand in for it (weaker: a deleted folder's inode can be reused).
Rules, in order:

1. the real path is registered and still the same directory (its mark, else
   device and inode, match): its id. A symlink resolves to the same real path.
2. the real path is registered but now holds another directory (deleted and
   re-cloned, or replaced): a new id. Memory never passes to a stranger that
   took an old project's place.
3. the path is new but carries the mark of a registered directory that is no
   longer at its recorded path: the folder was moved, so it keeps its id and
   the entry follows it.
4. otherwise a new random id (and a new mark).

Nothing the project's own files say (git remote, root commit, a marker file)
decides identity: a cloned project writes those itself and could name another
project to receive its memory. So a copy starts with empty memory.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.private_files import open_private, private_data_dir, write_private_json

REGISTRY_NAME = "projects.json"
ID_PREFIX = "proj_"


@dataclass(frozen=True, slots=True)
class ProjectIdentity:
    """The key memory files a project under (`id`) and what to call it when talking to the user (`name`)."""

    id: str
    name: str
    path: str


_lock = threading.Lock()
_cache: dict[tuple[str, str], tuple[ProjectIdentity, tuple[int, int, str | None]]] = {}


def registry_path(data_dir: Path) -> Path:
    return Path(data_dir) / REGISTRY_NAME


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return projects if isinstance(projects, dict) else {}


MARK_ATTR = "user.orion.project"


def _read_mark(path: str) -> str | None:
    try:
        return os.getxattr(path, MARK_ATTR).decode("ascii", "replace")
    except OSError:
        return None


def _write_mark(path: str, mark: str) -> bool:
    try:
        os.setxattr(path, MARK_ATTR, mark.encode("ascii"))
    except OSError:
        return False  # no xattr support here, or not our folder: the inode stands in
    return True


def _same_dir(entry: dict[str, Any], st: os.stat_result, mark: str | None) -> bool:
    recorded = entry.get("mark")
    if recorded:
        return mark == recorded
    return entry.get("dev") == st.st_dev and entry.get("ino") == st.st_ino


def _still_there(path: str, entry: dict[str, Any]) -> bool:
    try:
        return _same_dir(entry, os.stat(path), _read_mark(path))
    except OSError:
        return False


def project_identity(data_dir: Path, project_dir: Path) -> ProjectIdentity:
    """The identity of `project_dir`, registering it on first sight (blocking: call off the event loop)."""
    real = os.path.realpath(project_dir)
    st = os.stat(real)
    mark = _read_mark(real)
    key = (str(data_dir), real)
    seen = (st.st_dev, st.st_ino, mark)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached[1] == seen:
            return cached[0]
        identity, mark = _register(Path(data_dir), real, st, mark)
        _cache[key] = (identity, (st.st_dev, st.st_ino, mark))
        return identity


def _register(data_dir: Path, real: str, st: os.stat_result, mark: str | None) -> tuple[ProjectIdentity, str | None]:
    path = registry_path(private_data_dir(data_dir))
    # One writer at a time across sidecars sharing the data dir: read, decide and write under a lock file.
    import fcntl  # here, not at the top: the module imports where there is no fcntl (Windows)

    lock_fd = open_private(str(path) + ".lock", os.O_RDWR)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        # Read again under the lock: another sidecar may have registered (and marked) this folder meanwhile.
        mark = _read_mark(real)
        projects = _load(path)
        entry = projects.get(real)
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str) and _same_dir(entry, st, mark)):
            entry = None
            for old_path, old in list(projects.items()):
                if (isinstance(old, dict) and old_path != real and isinstance(old.get("id"), str)
                        and _same_dir(old, st, mark) and not _still_there(old_path, old)):
                    entry = projects.pop(old_path)  # moved: the id follows the folder
                    break
            if entry is None:
                entry = {"id": ID_PREFIX + secrets.token_hex(16), "created": time.time()}
                fresh = secrets.token_hex(16)
                mark = fresh if _write_mark(real, fresh) else None
                entry["mark"] = mark
            entry.update(name=os.path.basename(real) or real, dev=st.st_dev, ino=st.st_ino)
            projects[real] = entry
            write_private_json(path, {"version": 1, "projects": projects})
        name = str(entry.get("name") or os.path.basename(real))
        return ProjectIdentity(id=entry["id"], name=name, path=real), mark
    finally:
        os.close(lock_fd)


def lookup_project(data_dir: Path, project: str) -> str:
    """A `memory/search` project filter as stored: a registered folder path becomes its id; anything else is kept.

    Never registers anything: searching must not create identities.
    """
    if not project or not os.path.isabs(os.path.expanduser(project)):
        return project
    real = os.path.realpath(os.path.expanduser(project))
    entry = _load(registry_path(data_dir)).get(real)
    if isinstance(entry, dict) and isinstance(entry.get("id"), str):
        return entry["id"]
    return project


def registered_folders(data_dir: Path) -> dict[str, str]:
    """{project id: its folder} of every registered project (what `status` shows a project's memory as)."""
    return {entry["id"]: path for path, entry in _load(registry_path(data_dir)).items()
            if isinstance(entry, dict) and isinstance(entry.get("id"), str)}


def forget_cache() -> None:
    """Drop the in-process cache (tests that move folders within one process)."""
    with _lock:
        _cache.clear()
