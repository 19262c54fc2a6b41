"""The retention pass: the user's `memory.retention` applied to each project of one memory, by hand (`python -m
hooks.memory prune`) or at most once a day in the background (the backfill process, hooks/memory/backfill.py).

Only the user's Orion settings say what is kept (hooks/memory/config.py `load_retention`): nothing a project
carries is read, and without the setting nothing is ever deleted. Each project gets its own rule (the user's
`projects` entry for its folder or key) or the default one; the stores remove what the rule does not keep in
batches (hooks/memory/retention.py). The daily pass is claimed under a lock file beside its stamp,
`<data>/memory-prune/<memory>.json`, one per memory (the SQLite file, or a team database by its URL's hash), so
several sidecars sharing a data dir run it once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.memory.config import MemoryConfig, MemoryConfigError, RetentionConfig, RetentionRule, load_retention
from hooks.memory.identity import lookup_project, registered_folders
from hooks.memory.retention import DAY, PRUNE_BATCH, Removed
from hooks.private_files import open_private, write_private_json

log = logging.getLogger("hooks.memory")

EVERY_S = DAY  # the background pass runs at most this often per memory
STAMP_DIR = "memory-prune"


@dataclass(frozen=True, slots=True)
class ProjectRule:
    """The rule in force for one project of the memory, and the folder it is known by (when registered)."""

    project: str
    folder: str | None
    rule: RetentionRule

    def describe(self) -> dict[str, Any]:
        return {"project": self.project, "folder": self.folder, "rule": self.rule.as_dict()}


def resolve_project(store: Any, data_dir: Path, project: str) -> str:
    """A project named by its folder (absolute) or its key, as the store files it (the search filter's rule)."""
    key = lookup_project(data_dir, project)
    expanded = os.path.expanduser(project)
    return store.project_key(key, expanded) if os.path.isabs(expanded) else key


def rules_in_force(store: Any, data_dir: Path, retention: RetentionConfig,
                   only: str | None = None) -> list[ProjectRule]:
    """Each project of the memory (or just `only`, a folder or key) whose rule limits anything, with that rule."""
    overrides = {resolve_project(store, data_dir, key): rule for key, rule in retention.projects.items()}
    folders = registered_folders(data_dir)
    projects = store.retention_projects()
    if only is not None:
        wanted = resolve_project(store, data_dir, only)
        projects = [p for p in projects if p == wanted]
    out = []
    for project in projects:
        rule = overrides.get(project, retention.default)
        if rule.limits:
            out.append(ProjectRule(project, folders.get(project), rule))
    return out


def describe_retention(retention: RetentionConfig) -> dict[str, Any]:
    return {"inForce": retention.limits, "source": retention.source, "default": retention.default.as_dict(),
            "projectRules": {key: rule.as_dict() for key, rule in retention.projects.items()}}


def run_prune(data_dir: Path, store: Any, *, retention: RetentionConfig | None = None, project: str | None = None,
              dry_run: bool = False, batch: int = PRUNE_BATCH,
              should_stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Apply the user's retention to `store` (every project, or only `project`); with `dry_run`, say what would go
    and change nothing. `{dryRun, retention: {inForce, source, default, projectRules}, projects: [{project, folder,
    rule, removed | wouldRemove}], removed | wouldRemove}`, each with counts and bytes."""
    retention = load_retention() if retention is None else retention
    what = "wouldRemove" if dry_run else "removed"
    total = Removed()
    projects = []
    for entry in rules_in_force(store, data_dir, retention, project):
        if should_stop and should_stop():
            break
        if dry_run:
            got = store.preview_prune(entry.project, entry.rule)
        else:
            got = store.prune(entry.project, entry.rule, batch=batch, should_stop=should_stop)
        total.add(got)
        projects.append({**entry.describe(), what: got.as_dict()})
    return {"dryRun": dry_run, "retention": describe_retention(retention), "projects": projects,
            what: total.as_dict()}


def retention_status(store: Any, data_dir: Path, config: MemoryConfig) -> dict[str, Any]:
    """What `status` shows: the retention in force and, per project it limits, what it would remove now (counts by
    index, no bytes), and the last background pass."""
    try:
        retention = load_retention()
    except MemoryConfigError as exc:
        return {"inForce": False, "error": f"{exc}; nothing is deleted until it is fixed"}
    from hooks.memory.store import iso_utc

    last = read_stamp(stamp_path(data_dir, config))
    if last is not None:
        last = {**last, **{k: iso_utc(float(last[k])) for k in ("at", "finishedAt") if isinstance(last.get(k), (int, float))}}
    out = {**describe_retention(retention), "lastRun": last}
    out["projects"] = []
    try:
        for entry in rules_in_force(store, data_dir, retention):
            counts = store.preview_prune(entry.project, entry.rule, with_bytes=False)
            out["projects"].append({**entry.describe(), "wouldRemove": {
                kind: getattr(counts, kind) for kind in ("observations", "prompts", "summaries", "sessions")}})
    except Exception as exc:  # a database that stopped answering: the rest of the status still says so
        out["error"] = " ".join(str(exc).split())[:300] or type(exc).__name__
    return out


# ---------------------------------------------------------------------- the daily pass


def stamp_path(data_dir: Path, config: MemoryConfig) -> Path:
    """One stamp per memory: the data dir's SQLite file, or a team database (its URL's hash, as its spool)."""
    if config.backend == "sqlite":
        name = "sqlite"
    else:
        name = "postgres-" + hashlib.sha256(config.redacted_url.encode()).hexdigest()[:12]
    return Path(data_dir) / STAMP_DIR / f"{name}.json"


def read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def due(data_dir: Path, *, now: float | None = None) -> bool:
    """Whether the background pass should run for this data dir's memory now: the user set a retention (a broken
    one is reported and deletes nothing), there is a memory, and its last pass began a day ago or more."""
    from hooks.memory.store import _report_once, current_config, memory_exists

    try:
        retention = load_retention()
    except MemoryConfigError as exc:
        _report_once(f"memory: {exc}; nothing is deleted until it is fixed")
        return False
    if not retention.limits or not memory_exists(data_dir):
        return False
    now = time.time() if now is None else now
    last = read_stamp(stamp_path(data_dir, current_config()))
    at = float(last.get("at", 0)) if last else None
    return at is None or now - at >= EVERY_S or now < at - EVERY_S  # a clock set far back: not a year's wait


def run_if_due(data_dir: Path, *, now: float | None = None, batch: int = PRUNE_BATCH,
               should_stop: Callable[[], bool] | None = None) -> dict[str, Any] | None:
    """The background pass: when `due`, claim the day (the stamp, under its lock file: one process runs it) and
    prune. None when not due or another process runs it. A pass stopped midway goes on at the next day's."""
    import fcntl  # here, not at the top: the module imports where there is no fcntl (Windows)

    from hooks.memory.store import current_config, open_store

    path = stamp_path(data_dir, current_config())
    lock_fd = open_private(f"{path}.lock", os.O_RDWR)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        now = time.time() if now is None else now
        if not due(data_dir, now=now):
            return None
        write_private_json(path, {"at": now, "state": "running"})
        try:
            report = run_prune(data_dir, open_store(data_dir), batch=batch, should_stop=should_stop)
        except Exception as exc:
            write_private_json(path, {"at": now, "state": "failed", "error": str(exc)[:300]})
            raise
        state = "stopped" if should_stop and should_stop() else "done"
        write_private_json(path, {"at": now, "state": state, "finishedAt": time.time(), "removed": report["removed"]})
        return report
    finally:
        os.close(lock_fd)
