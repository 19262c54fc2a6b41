"""Where the hook engine keeps its files: data directory, user settings paths, and the session-id check guarding both."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from hooks.errors import InvalidSessionId

_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def data_dir() -> Path:
    """`ORION_DATA_DIR`, else `$XDG_DATA_HOME/orion`, else `~/.local/share/orion`."""
    explicit = os.environ.get("ORION_DATA_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "orion"
    return Path.home() / ".local" / "share" / "orion"


# Where Claude Code reads an organization's managed settings on this platform (they outrank every other source).
MANAGED_SETTINGS_DIRS = {
    "linux": Path("/etc/claude-code"),
    "darwin": Path("/Library/Application Support/ClaudeCode"),
}


def managed_settings_files(directory: Path | None = None) -> list[Path]:
    """``managed-settings.json``, then the ``managed-settings.d/*.json`` drop-ins in name order, those that exist.
    Nothing names another place: these files belong to the machine's administrator (root-owned on Linux), and no
    variable a user, a project or the agent sets moves them."""
    directory = directory if directory is not None else MANAGED_SETTINGS_DIRS.get(sys.platform)
    if directory is None:
        return []
    files = [directory / "managed-settings.json"]
    drop_ins = directory / "managed-settings.d"
    if drop_ins.is_dir():
        files += sorted(drop_ins.glob("*.json"))
    return [f for f in files if f.is_file()]


def user_settings_path() -> Path:
    """`ORION_USER_SETTINGS`, else `$XDG_CONFIG_HOME/orion/settings.json`, else `~/.config/orion/settings.json`."""
    explicit = os.environ.get("ORION_USER_SETTINGS")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "orion" / "settings.json"
    return Path.home() / ".config" / "orion" / "settings.json"


def claude_user_settings_path() -> Path:
    """The user's own Claude Code settings, read as the `claude-user` hook source.

    `ORION_CLAUDE_USER_SETTINGS` (tests, or a deliberate override), else `$CLAUDE_CONFIG_DIR/settings.json`, else
    `~/.claude/settings.json`: the file `claude` itself reads as its user settings (only `settings.json`; Claude
    Code has no user-level `settings.local.json`).
    """
    explicit = os.environ.get("ORION_CLAUDE_USER_SETTINGS")
    if explicit:
        return Path(explicit)
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    if config_dir:
        return Path(config_dir).expanduser() / "settings.json"
    return Path.home() / ".claude" / "settings.json"


def validate_session_id(session_id: str) -> str:
    """Return the id unchanged, or raise InvalidSessionId: ids become path components, so `..` and `/` must never get through."""
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise InvalidSessionId(f"invalid session id {session_id!r}: must match ^[A-Za-z0-9_-]{{1,128}}$")
    return session_id


def project_key(project_dir: Path) -> str:
    """The canonical string a project is known by (trust store key)."""
    return str(Path(project_dir).expanduser().resolve())


def project_hash(project_dir: Path) -> str:
    """A short, non-reversible project id for analytics (no paths leave the machine in readable form)."""
    return hashlib.sha256(project_key(project_dir).encode()).hexdigest()[:16]
