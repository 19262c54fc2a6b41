"""Editing hooks in settings files for an app's settings page: read a file's hooks, add, change, remove one, and
turn a hook off or on, each checked by `python -m hooks validate`'s own analysis before anything is written.

The rules (docs/HOOKS.md "Editing hooks from the app"):

- **Only what was read is changed.** Every edit names the digest of the file as the client read it
  (`settings()`); a file that changed since (another window, a text editor, `claude` itself) is not written:
  `SettingsChanged` carries the new digest. Other keys of the file are kept as they were, in their order.
- **Nothing invalid is written.** The edited document is judged by `hooks.validation.validate_document`, the
  analysis `validate` runs (for a project's file, the whole project's, with the new document standing in for the
  file); errors refuse the edit and the file is untouched; warnings come back with the result.
- **A project's file is written where it is, never through a link.** `.claude/settings.json` or
  `settings.local.json` (or `.claude/` itself) that is a symbolic link is refused: a cloned project could point it
  at the user's own settings, and an edit "to the project" would then change the user's. The user's own files
  (Orion's and Claude Code's user settings) may be links the user made (a dotfiles repository): the edit goes to
  the file the link names, and the link stays.
- **Trust follows the edit.** A project's file that changed is a change like any other: its hooks wait for the
  user's review (`hooks/trust`) before they run; the result says so. The user's own files need no review.
- **Written whole or not at all**: a temporary file beside it, flushed, then renamed over it; a project file keeps
  its mode (new ones get 0644, the project's files being the project's), the user's files are 0600.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.paths import claude_user_settings_path, data_dir, user_settings_path
from hooks.sources import DuplicateKey, parse_json_strict
from hooks.types import ALL_EVENTS

TARGETS = ("user", "claude-user", "project", "local")
PROJECT_TARGETS = ("project", "local")
MAX_FILE_BYTES = 4 * 1024 * 1024  # a settings file past this is not one Orion rewrites


class SettingsEditError(ValueError):
    """An edit that cannot be made as asked: the message says why; `data` goes to the client."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data


class SettingsChanged(SettingsEditError):
    """The file is not the one the client read (its digest differs): read it again and redo the edit."""


@dataclass(slots=True)
class SettingsFile:
    """One settings file as the client reads it before an edit."""

    target: str
    path: Path
    exists: bool
    digest: str | None  # sha256 of the bytes; None when the file does not exist
    hooks: dict[str, Any] = field(default_factory=dict)
    disabled: list[str] = field(default_factory=list)  # `disabledHooks` (user) / hook-overrides' `disabled` (project)
    error: str | None = None  # why the file cannot be edited here (not JSON, a duplicate key, a link, too big)


@dataclass(slots=True)
class EditOutcome:
    path: Path
    digest: str
    at: dict[str, Any] | None
    warnings: list[str]


# --------------------------------------------------------------------------- where


def target_path(target: str, project_dir: Path | None) -> Path:
    """The file a target names: Orion's user settings, the user's Claude Code settings, or the project's."""
    if target == "user":
        return user_settings_path()
    if target == "claude-user":
        return claude_user_settings_path()
    if target in PROJECT_TARGETS:
        if project_dir is None:
            raise SettingsEditError(f"target {target!r} needs projectDir", field="projectDir")
        name = "settings.json" if target == "project" else "settings.local.json"
        return Path(project_dir) / ".claude" / name
    raise SettingsEditError(f"unknown target {target!r} (have {', '.join(TARGETS)})", field="target")


def overrides_path(project_dir: Path) -> Path:
    return Path(project_dir) / ".claude" / "hook-overrides.json"


def _refuse_links(path: Path, project_dir: Path) -> None:
    """A project's settings file, and the `.claude/` holding it, must be what they look like: no link anywhere from
    the project down (checked again, without following, when the file is opened)."""
    for place in (path.parent, path):
        try:
            mode = os.lstat(place).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise SettingsEditError(f"{place} is a symbolic link: Orion edits a project's settings only in the project "
                                    "itself (a link could lead an edit to another file, such as your own settings)",
                                    path=str(place), reason="link")
        if place == path and not stat.S_ISREG(mode):
            raise SettingsEditError(f"{place} is not a regular file", path=str(place), reason="notAFile")
    if os.path.realpath(path.parent) != os.path.join(os.path.realpath(project_dir), ".claude"):
        raise SettingsEditError(f"{path.parent} is not the project's own .claude folder", path=str(path.parent),
                                reason="link")


def _writable_path(target: str, path: Path, project_dir: Path | None) -> Path:
    """Where the bytes go: the project's file itself; the user's file, or the file a link of the user's names."""
    if target in PROJECT_TARGETS:
        assert project_dir is not None
        _refuse_links(path, Path(project_dir))
        return path
    return Path(os.path.realpath(path))


# --------------------------------------------------------------------------- read


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path, no_follow: bool) -> bytes | None:
    flags = os.O_RDONLY | (os.O_NOFOLLOW if no_follow else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsEditError(f"{path}: cannot read: {exc.strerror}", path=str(path)) from None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise SettingsEditError(f"{path} is over {MAX_FILE_BYTES} bytes: not a settings file Orion rewrites",
                                path=str(path))
    return data


def _document(path: Path, data: bytes | None) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        doc = parse_json_strict(data.decode("utf-8"))
    except DuplicateKey as exc:
        raise SettingsEditError(f"{path}: key {str(exc)!r} appears twice in one object; fix the file by hand first "
                                "(which one counts is ambiguous, so Orion does not rewrite it)", path=str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsEditError(f"{path}: not valid JSON ({exc}); fix the file by hand first", path=str(path)) from None
    if not isinstance(doc, dict):
        raise SettingsEditError(f"{path}: the top level is not an object; fix the file by hand first", path=str(path))
    return doc


def settings(target: str, project_dir: Path | None) -> SettingsFile:
    """A settings file's hooks and switches as they are now, with the digest an edit must name."""
    path = target_path(target, project_dir)
    out = SettingsFile(target=target, path=path, exists=False, digest=None)
    try:
        where = _writable_path(target, path, project_dir)
        data = _read_bytes(where, no_follow=target in PROJECT_TARGETS)
        out.exists, out.digest = data is not None, (_digest(data) if data is not None else None)
        doc = _document(path, data)
    except SettingsEditError as exc:
        out.error = str(exc)
        return out
    hooks = doc.get("hooks")
    out.hooks = copy.deepcopy(hooks) if isinstance(hooks, dict) else {}
    if target == "user":
        disabled = doc.get("disabledHooks")
        out.disabled = [n for n in disabled if isinstance(n, str)] if isinstance(disabled, list) else []
    elif target in PROJECT_TARGETS:
        assert project_dir is not None
        try:
            out.disabled = _overrides_disabled(Path(project_dir))
        except SettingsEditError as exc:  # the file's hooks are still shown; the broken overrides file is named
            out.error = str(exc)
    return out


# --------------------------------------------------------------------------- write


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


class _FileLock:
    """One writer per settings file: a lock in this process, and an flock on a file in Orion's data folder (never
    beside the settings file: nothing of Orion's goes into a project) against other sidecars and `python -m hooks`."""

    def __init__(self, path: Path) -> None:
        key = hashlib.sha256(str(path).encode()).hexdigest()[:32]
        with _LOCKS_GUARD:
            self._thread_lock = _LOCKS.setdefault(key, threading.Lock())
        self._file = data_dir() / "locks" / f"settings-{key}.lock"
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        self._thread_lock.acquire()
        try:
            import fcntl  # POSIX only: imported where it is used, so the module imports everywhere

            from hooks.private_files import private_dir

            private_dir(self._file.parent)
            self._fd = os.open(self._file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._fd is not None:
                os.close(self._fd)  # closing releases the flock
        finally:
            self._thread_lock.release()


def _write(where: Path, data: bytes, *, project: bool) -> None:
    try:
        _write_file(where, data, project=project)
    except OSError as exc:
        raise SettingsEditError(f"{where}: cannot write: {exc.strerror or exc}; nothing was changed",
                                path=str(where)) from None


def _write_file(where: Path, data: bytes, *, project: bool) -> None:
    """Temp file beside `where`, flushed, renamed over it. Mode: the existing file's (a project's), 0644 for a new
    project file, 0600 for the user's files. A project's file is written through a handle on its `.claude/` opened
    without following a link, so a folder swapped for a link after the checks is not written into."""
    try:
        existing = os.lstat(where).st_mode
    except FileNotFoundError:
        existing = None
    mode = (stat.S_IMODE(existing) if existing is not None else 0o644) if project else 0o600
    if project:
        try:
            os.mkdir(where.parent, 0o755)
        except FileExistsError:
            pass
        folder = os.open(where.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    else:
        where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = os.open(where.parent, os.O_RDONLY | os.O_DIRECTORY)
    tmp = f".{where.name}.{os.urandom(6).hex()}.orion-edit"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, where.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(folder)


def _serialise(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _edit(target: str, project_dir: Path | None, digest: str | None, change: Any) -> EditOutcome:
    """Read (checking `digest`), apply `change(doc) -> at`, validate, write; under the file's lock."""
    from hooks.validation import validate_document

    path = target_path(target, project_dir)
    where = _writable_path(target, path, project_dir)
    project = target in PROJECT_TARGETS
    with _FileLock(where):
        data = _read_bytes(where, no_follow=project)
        current = _digest(data) if data is not None else None
        if current != digest:
            raise SettingsChanged(f"{path} changed since it was read (or the digest given is not its own): read it "
                                  "again with hooks/settings and redo the edit; nothing was written",
                                  path=str(path), currentDigest=current, givenDigest=digest)
        doc = _document(path, data)
        at = change(doc)
        errors, warnings, _valid = validate_document(path, doc)
        if errors:
            raise SettingsEditError(f"the edit would make {path} invalid: {errors[0]}", path=str(path),
                                    errors=errors, warnings=warnings)
        new = _serialise(doc)
        if project:
            _refuse_links(path, Path(project_dir))  # type: ignore[arg-type]  # again, just before the rename
        _write(where, new, project=project)
        return EditOutcome(path=path, digest=_digest(new), at=at, warnings=warnings)


def _hooks_of(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsEditError(f"{path}: $.hooks is not an object; fix the file by hand first", path=str(path))
    return hooks


def _check_event(event: str) -> None:
    if event not in ALL_EVENTS:
        raise SettingsEditError(f"unknown hook event {event!r}", field="event", events=sorted(ALL_EVENTS))


def _check_hook(hook: Any) -> None:
    if not isinstance(hook, dict) or not isinstance(hook.get("type"), str):
        raise SettingsEditError("hook must be an object with a `type` (command, python, prompt, agent, http, "
                                "mcp_tool)", field="hook")


def _group_for(groups: list[Any], matcher: str | None) -> int:
    """The index of the group with this matcher (a new one at the end when none has it)."""
    for i, group in enumerate(groups):
        if isinstance(group, dict) and group.get("matcher") == matcher and isinstance(group.get("hooks"), list):
            return i
    groups.append({"matcher": matcher, "hooks": []} if matcher is not None else {"hooks": []})
    return len(groups) - 1


def _locate(doc: dict[str, Any], path: Path, at: dict[str, Any]) -> tuple[list[Any], int, list[Any], int]:
    """(groups, group index, entries, entry index) of `at = {event, group, index}`; -32602 when there is none."""
    event, group, index = at.get("event"), at.get("group"), at.get("index")
    hooks = _hooks_of(doc, path)
    groups = hooks.get(event)
    if (not isinstance(groups, list) or not isinstance(group, int) or not 0 <= group < len(groups)
            or not isinstance(groups[group], dict) or not isinstance(groups[group].get("hooks"), list)
            or not isinstance(index, int) or not 0 <= index < len(groups[group]["hooks"])):
        raise SettingsEditError(f"{path} has no hook at $.hooks.{event}[{group}].hooks[{index}]", field="at",
                                path=str(path))
    return groups, group, groups[group]["hooks"], index


def _drop(hooks: dict[str, Any], event: str, groups: list[Any], group: int, entries: list[Any], index: int) -> None:
    del entries[index]
    if not entries:
        del groups[group]
    if not groups:
        del hooks[event]


def add(target: str, project_dir: Path | None, digest: str | None, event: str, matcher: str | None,
        hook: dict[str, Any]) -> EditOutcome:
    """Add `hook` on `event` (to the group with the same matcher, else a new group at the end)."""
    _check_event(event)
    _check_hook(hook)
    path = target_path(target, project_dir)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        groups = _hooks_of(doc, path).setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsEditError(f"{path}: $.hooks.{event} is not a list; fix the file by hand first", path=str(path))
        g = _group_for(groups, matcher)
        groups[g]["hooks"].append(copy.deepcopy(hook))
        return {"event": event, "group": g, "index": len(groups[g]["hooks"]) - 1}

    return _edit(target, project_dir, digest, change)


def update(target: str, project_dir: Path | None, digest: str | None, at: dict[str, Any], hook: dict[str, Any],
           matcher: Any = ...) -> EditOutcome:
    """Replace the hook at `at`; with `matcher` (None for no matcher), it moves to the group with that matcher."""
    _check_hook(hook)
    path = target_path(target, project_dir)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        groups, g, entries, i = _locate(doc, path, at)
        if matcher is ... or groups[g].get("matcher") == matcher:
            entries[i] = copy.deepcopy(hook)
            return dict(at)
        hooks = _hooks_of(doc, path)
        _drop(hooks, at["event"], groups, g, entries, i)
        groups = hooks.setdefault(at["event"], [])
        target_group = _group_for(groups, matcher)
        groups[target_group]["hooks"].append(copy.deepcopy(hook))
        return {"event": at["event"], "group": target_group, "index": len(groups[target_group]["hooks"]) - 1}

    return _edit(target, project_dir, digest, change)


def remove(target: str, project_dir: Path | None, digest: str | None, at: dict[str, Any]) -> EditOutcome:
    """Remove the hook at `at` (its group too when it was the group's last, and the event's key when empty)."""
    path = target_path(target, project_dir)

    def change(doc: dict[str, Any]) -> None:
        groups, g, entries, i = _locate(doc, path, at)
        _drop(_hooks_of(doc, path), at["event"], groups, g, entries, i)
        return None

    return _edit(target, project_dir, digest, change)


# --------------------------------------------------------------------------- on and off


def _overrides_disabled(project_dir: Path) -> list[str]:
    """The names the project's `hook-overrides.json` turns off (none when it is missing)."""
    path = overrides_path(project_dir)
    _refuse_links(path, project_dir)
    doc = _document(path, _read_bytes(path, no_follow=True))
    disabled = doc.get("disabled")
    return [n for n in disabled if isinstance(n, str)] if isinstance(disabled, list) else []


def set_enabled(scope: str, project_dir: Path | None, name: str, enabled: bool) -> EditOutcome:
    """Turn the hook `name` off (or on again): in the user's Orion settings (`disabledHooks`, any hook, the built-in
    guards included: the user's own decision) or, for the project's own hooks, in `.claude/hook-overrides.json`
    (which never reaches a hook of the user's: hooks/hookset.py). Idempotent; the file's other keys stay."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise SettingsEditError("name must be a hook's name", field="name")
    if scope == "user":
        path = user_settings_path()
        where = Path(os.path.realpath(path))
        key, project = "disabledHooks", False
    elif scope == "project":
        if project_dir is None:
            raise SettingsEditError("scope 'project' needs projectDir", field="projectDir")
        path = where = overrides_path(project_dir)
        _refuse_links(path, Path(project_dir))
        key, project = "disabled", True
    else:
        raise SettingsEditError(f"unknown scope {scope!r} (have 'user', 'project')", field="scope")
    with _FileLock(where):
        data = _read_bytes(where, no_follow=project)
        doc = _document(path, data)
        names = doc.get(key, [])
        if not isinstance(names, list):
            raise SettingsEditError(f"{path}: $.{key} is not a list; fix the file by hand first", path=str(path))
        wanted = [n for n in names if n != name] if enabled else (names if name in names else [*names, name])
        if wanted == names and data is not None:
            return EditOutcome(path=path, digest=_digest(data), at=None, warnings=[])
        if not enabled:
            _check_can_disable(scope, project_dir, name)
        doc[key] = wanted
        new = _serialise(doc)
        if project:
            _refuse_links(path, Path(project_dir))  # type: ignore[arg-type]
        _write(where, new, project=project)
        return EditOutcome(path=path, digest=_digest(new), at=None, warnings=[])


def _check_can_disable(scope: str, project_dir: Path | None, name: str) -> None:
    """A name that turns nothing off is refused with what it would have been (the analysis would only warn, later):
    the user's list names any hook the project's sessions would see, the project's list only the project's own."""
    from hooks.hookset import PROJECT_SOURCES
    from hooks.validation import project_hookset

    if project_dir is None:
        return  # the user's list without a project: any name may be listed ahead of the project that has it
    specs = [spec for spec in project_hookset(Path(project_dir)).entries if spec.name == name]
    if not specs:
        raise SettingsEditError(f"no hook named {name!r} in {project_dir}'s hooks", field="name")
    if scope == "project" and not any(spec.source in PROJECT_SOURCES for spec in specs):
        sources = sorted({spec.source for spec in specs})
        raise SettingsEditError(f"{name!r} is a {'/'.join(sources)} hook: a project's hook-overrides.json turns off "
                                "only the project's own hooks (turn it off in your own settings: scope 'user')",
                                field="name", sources=sources)
