"""Project trust: the user's store of trusted manifests (one per project, and vault when one is used), written under a lock.

A record holds the manifest's hash and its per-file digests, so a later
listing can say which file changed. Only the user grants trust (through
`hooks/trust` or `python -m hooks trust`); the store lives in Orion's data
directory, which the agent's tools cannot write (see docs/SECURITY.md).

A Claude Code plugin the user enabled (hooks/plugins.py) is pinned here too, by
id: its content when first seen, or when the user trusted it again after an
update; content that differs from the pin waits for the user's trust.
"""

from __future__ import annotations

import contextlib
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


def trust_user_plugin(store: TrustStore, project_dir: Path, plugin_id: str, reviewed: str | None = None) -> str:
    """Pin a plugin the user's own Claude Code settings enable as it resolves for `project_dir` now (after an update
    the user reviewed: `reviewed` is the hash `hooks/list` showed for it); returns its content hash."""
    from hooks.hookset import load_hookset
    from hooks.plugins import PLUGIN

    plugins = load_hookset(project_dir, trust_store=_NullStore()).plugins
    plugin = next((p for p in plugins if p.id == plugin_id), None)
    if plugin is None:
        known = ", ".join(sorted(p.id for p in plugins)) or "none"
        raise TrustError(f"no plugin {plugin_id!r} is enabled for {project_dir} (enabled: {known})")
    if plugin.kind != PLUGIN:
        raise TrustError(f"plugin {plugin_id} is enabled by the project's settings ({plugin.enabled_in}), not the "
                         "user's: it is trusted with the project (trust the project)")
    if plugin.problem is not None:
        raise TrustError(f"plugin {plugin_id} cannot be trusted: {plugin.problem}")
    return store.trust_plugin(plugin.id, plugin.content_hash, plugin.files, version=plugin.version,
                              root=str(plugin.root), reviewed=reviewed)


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

    # ------------------------------------------------------------------ the user's plugins

    def plugin_record(self, plugin_id: str) -> dict[str, Any] | None:
        try:
            entry = self._load().get("plugins", {}).get(plugin_id)
        except (TrustError, AttributeError):
            return None
        return entry if isinstance(entry, dict) else None

    def plugin_status(self, plugin_id: str, content_hash: str, files: dict[str, str], *, version: str | None,
                      root: str) -> PluginTrust:
        """A user-enabled plugin's content against its pin; the first sight of a plugin pins it (the user enabled
        it in their own settings: what they installed is what they chose), every later difference waits."""
        entry = self.plugin_record(plugin_id)
        if entry is None:
            try:
                pinned_at = self._pin_plugin(plugin_id, content_hash, files, version, root, "first-seen")
            except TrustError:
                return PluginTrust(trusted=False, first_seen=False, changes=[
                    {"path": "*", "change": "its pin could not be recorded in the trust store"}])
            return PluginTrust(trusted=True, first_seen=True, pinned_at=pinned_at, pinned_version=version,
                               pinned_how="first-seen")
        if entry.get("hash") == content_hash:
            return PluginTrust(trusted=True, first_seen=False, pinned_at=entry.get("pinnedAt"),
                               pinned_version=entry.get("version"), pinned_how=entry.get("how"))
        then = entry.get("files") if isinstance(entry.get("files"), dict) else {}
        changes = Manifest(files).changes_since(then)
        if entry.get("root") != root:
            changes.insert(0, {"path": ".", "change": f"moved from {entry.get('root')} to {root}"})
        return PluginTrust(trusted=False, first_seen=False, changes=changes, pinned_at=entry.get("pinnedAt"),
                           pinned_version=entry.get("version"), pinned_how=entry.get("how"))

    def trust_plugin(self, plugin_id: str, content_hash: str, files: dict[str, str], *, version: str | None,
                     root: str, reviewed: str | None = None) -> str:
        """Pin a user-enabled plugin's content as it is now; with `reviewed`, only if that is still the content."""
        if reviewed is not None and reviewed != content_hash:
            raise TrustError(f"plugin {plugin_id} changed since it was reviewed (reviewed {reviewed[:12]}, now "
                             f"{content_hash[:12]}); list and review it again")
        self._pin_plugin(plugin_id, content_hash, files, version, root, "trusted")
        return content_hash

    def revoke_plugin(self, plugin_id: str) -> bool:
        """Forget a plugin's pin: the next sight pins it again as first seen."""
        with self._locked():
            data = self._load()
            removed = data.setdefault("plugins", {}).pop(plugin_id, None) is not None
            if removed:
                self._save(data)
        return removed

    def _pin_plugin(self, plugin_id: str, content_hash: str, files: dict[str, str], version: str | None, root: str,
                    how: str) -> str:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._locked():
            data = self._load()
            plugins = data.setdefault("plugins", {})
            if how == "first-seen" and isinstance(plugins.get(plugin_id), dict):
                return str(plugins[plugin_id].get("pinnedAt"))  # another process pinned it first: theirs stands
            data["version"] = STORE_VERSION
            plugins[plugin_id] = {"hash": content_hash, "files": files, "version": version, "root": root,
                                  "pinnedAt": now, "how": how}
            self._save(data)
        return now

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl  # POSIX only: imported where used, so the module imports everywhere
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


@dataclass(slots=True)
class PluginTrust:
    """A user-enabled plugin's content against the pin the user holds for it."""

    trusted: bool
    first_seen: bool  # pinned just now, on first sight
    changes: list[dict[str, str]] = field(default_factory=list)
    pinned_at: str | None = None
    pinned_version: str | None = None
    pinned_how: str | None = None  # "first-seen" (pinned on first sight) or "trusted" (the user trusted it)


class _NullStore(TrustStore):
    """A store that trusts nothing and reads nothing: for computing a manifest without a trust decision."""

    def __init__(self) -> None:
        self.path = Path(os.devnull)

    def record(self, project_dir: Path, vault_dir: Path | None = None) -> dict[str, Any] | None:
        return None

    def plugin_status(self, plugin_id: str, content_hash: str, files: dict[str, str], *, version: str | None,
                      root: str) -> PluginTrust:
        return PluginTrust(trusted=True, first_seen=True)  # records nothing: only a manifest is wanted here
