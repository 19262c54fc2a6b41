"""Project trust: a hash of each project's hook sections, stored in the user's data directory; a changed section needs trust again."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hooks.errors import TrustError
from hooks.paths import data_dir, project_key
from hooks.sources import SourcePaths, read_json


def hooks_section_hash(project_section: Any, local_section: Any) -> str:
    """sha256 of the canonical JSON of the project's and local file's `hooks` sections (nothing else in those files)."""
    canonical = json.dumps(
        {"project": project_section, "local": local_section}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def current_hash(project_dir: Path) -> str:
    """The hash of the hook sections as they are on disk now (unreadable files count as no section)."""
    paths = SourcePaths.for_project(project_dir)
    sections = []
    for path in (paths.project, paths.local):
        data, _err, _exists = read_json(path)
        sections.append(data.get("hooks") if isinstance(data, dict) else None)
    return hooks_section_hash(*sections)


class TrustStore:
    """`<data>/trust.json`: {"projects": {<resolved project path>: {"hash", "trustedAt"}}}, written atomically."""

    __slots__ = ("path",)

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else data_dir() / "trust.json"

    def _load(self) -> dict[str, Any]:
        data, error, exists = read_json(self.path)
        if error or not exists or not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
            return {"version": 1, "projects": {}}
        return data

    def _save(self, data: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise TrustError(f"cannot write trust store {self.path}: {exc}") from exc

    def trust(self, project_dir: Path, hash: str | None = None) -> str:
        """Trust the project's hook sections; pass the hash the user reviewed to trust exactly that version."""
        value = hash or current_hash(project_dir)
        data = self._load()
        data["projects"][project_key(project_dir)] = {"hash": value, "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._save(data)
        return value

    def revoke(self, project_dir: Path) -> bool:
        data = self._load()
        removed = data["projects"].pop(project_key(project_dir), None) is not None
        if removed:
            self._save(data)
        return removed

    def trusted_hash(self, project_dir: Path) -> str | None:
        entry = self._load()["projects"].get(project_key(project_dir))
        return entry.get("hash") if isinstance(entry, dict) else None

    def is_trusted(self, project_dir: Path, hash: str | None = None) -> bool:
        """True when the stored hash equals `hash` (default: the sections on disk now)."""
        stored = self.trusted_hash(project_dir)
        return stored is not None and stored == (hash or current_hash(project_dir))
