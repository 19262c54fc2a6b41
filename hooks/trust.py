"""Project trust: the user's store of trusted manifests (one per project, and vault when one is used), written under a lock.

A record holds the manifest's hash and its per-file digests, so a later
listing can say which file changed. Only the user grants trust (through
`hooks/trust` or `python -m hooks trust`); the store lives in Orion's data
directory, which the agent's tools cannot write (see docs/SECURITY.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.errors import TrustError
from hooks.manifest import Manifest
from hooks.paths import data_dir, project_key
from hooks.private_files import open_private, write_private_atomic

STORE_VERSION = 2


def trust_key(project_dir: Path, vault_dir: Path | None = None) -> str:
    """What a record is filed under: the resolved project path, plus the vault's when hooks come from one."""
    key = project_key(project_dir)
    return f"{key}|vault:{project_key(vault_dir)}" if vault_dir is not None else key


@dataclass(slots=True)
class TrustStatus:
    """How a manifest compares with what the user trusted."""

    trusted: bool
    recorded: bool  # a record exists (possibly for other content)
    changes: list[dict[str, str]] = field(default_factory=list)
    trusted_at: str | None = None


def current_manifest(project_dir: Path, vault_dir: Path | None = None) -> Manifest:
    """The manifest of the project as it is on disk now (the same one a hook listing shows)."""
    from hooks.hookset import load_hookset  # the hook set decides which files its hooks run

    return load_hookset(project_dir, vault_dir, trust_store=_NullStore()).manifest


def current_hash(project_dir: Path, vault_dir: Path | None = None) -> str:
    return current_manifest(project_dir, vault_dir).hash


class TrustStore:
    """`<data>/trust.json`: {"version": 2, "projects": {<key>: {"hash", "files", "trustedAt"}}}.

    Every change is a read-modify-write under an exclusive `flock` on a lock
    file beside it, then an atomic rename: concurrent trusts and revocations,
    from threads or processes, are serialised and none is lost.
    """

    __slots__ = ("path",)

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else data_dir() / "trust.json"

    # ------------------------------------------------------------------ reading

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TrustError(f"cannot read trust store {self.path}: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
            return {"version": STORE_VERSION, "projects": {}}
        return data

    def record(self, project_dir: Path, vault_dir: Path | None = None) -> dict[str, Any] | None:
        try:
            entry = self._load()["projects"].get(trust_key(project_dir, vault_dir))
        except TrustError:
            return None  # an unreadable store trusts nothing
        return entry if isinstance(entry, dict) else None

    def status(self, project_dir: Path, manifest: Manifest, vault_dir: Path | None = None) -> TrustStatus:
        entry = self.record(project_dir, vault_dir)
        if entry is None:
            return TrustStatus(trusted=False, recorded=False)
        files = entry.get("files")
        if entry.get("hash") == manifest.hash and isinstance(files, dict):
            return TrustStatus(trusted=True, recorded=True, trusted_at=entry.get("trustedAt"))
        changes = manifest.changes_since(files) if isinstance(files, dict) else [
            {"path": "*", "change": "trusted before trust covered hook scripts; review again"}
        ]
        return TrustStatus(trusted=False, recorded=True, changes=changes, trusted_at=entry.get("trustedAt"))

    def trusted_hash(self, project_dir: Path, vault_dir: Path | None = None) -> str | None:
        entry = self.record(project_dir, vault_dir)
        return entry.get("hash") if entry else None

    def is_trusted(self, project_dir: Path, hash: str | None = None, vault_dir: Path | None = None) -> bool:
        """True when the stored hash equals `hash` (default: the project as it is on disk now)."""
        stored = self.trusted_hash(project_dir, vault_dir)
        return stored is not None and stored == (hash or current_hash(project_dir, vault_dir))

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            fd = open_private(str(self.path) + ".lock", os.O_RDWR)  # its directory created 0700
        except OSError as exc:
            raise TrustError(f"cannot lock trust store {self.path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _save(self, data: dict[str, Any]) -> None:
        try:
            write_private_atomic(self.path, json.dumps(data, indent=2, sort_keys=True).encode("utf-8"))
        except OSError as exc:
            raise TrustError(f"cannot write trust store {self.path}: {exc}") from exc

    def trust(self, project_dir: Path, hash: str | None = None, vault_dir: Path | None = None) -> str:
        """Trust the project as it is on disk now; with `hash`, only if that is still the version the user reviewed."""
        manifest = current_manifest(project_dir, vault_dir)
        if hash is not None and hash != manifest.hash:
            raise TrustError(
                f"the project changed since it was reviewed (reviewed {hash[:12]}, now {manifest.hash[:12]}); "
                "list and review its hooks again"
            )
        with self._locked():
            data = self._load()
            data["version"] = STORE_VERSION
            data["projects"][trust_key(project_dir, vault_dir)] = {
                "hash": manifest.hash,
                "files": manifest.files,
                "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            self._save(data)
        return manifest.hash

    def revoke(self, project_dir: Path, vault_dir: Path | None = None) -> bool:
        with self._locked():
            data = self._load()
            removed = data["projects"].pop(trust_key(project_dir, vault_dir), None) is not None
            if removed:
                self._save(data)
        return removed


class _NullStore(TrustStore):
    """A store that trusts nothing and reads nothing: for computing a manifest without a trust decision."""

    def __init__(self) -> None:
        self.path = Path(os.devnull)

    def record(self, project_dir: Path, vault_dir: Path | None = None) -> dict[str, Any] | None:
        return None
