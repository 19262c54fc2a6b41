"""Which memory backend a process uses: SQLite by default, PostgreSQL when the user (never a project) says so.

Sources, highest first:

1. the environment: `ORION_MEMORY_URL=postgresql://…` (and `ORION_MEMORY_TEAM`,
   `ORION_MEMORY_USER`);
2. Orion's user settings (`~/.config/orion/settings.json` or
   `$ORION_USER_SETTINGS`), the `memory` object:
   `{"url": "postgresql://…", "team": "core", "user": "alice",
   "teamProjects": {"/home/alice/app": "app"}, "bufferLimit": 10000}`.

The retention (`load_retention`: how long memory is kept, and how much) is read from the same
object and only there, `memory.retention`: `{"maxAgeDays": 90, "maxObservations": 50000,
"projects": {"/home/alice/app": {"maxAgeDays": 30}, "/home/alice/notes": {"maxAgeDays": null}}}`.
Absent: nothing is ever deleted. Deleting the user's memory is the user's decision: a project's
files can neither set nor shorten it.

Nothing a project carries is read here: a cloned repository's
`.claude/settings.json` naming a database would otherwise send every prompt,
tool output and summary of the user's sessions to a server of its choice.
The sidecar's own environment is the user's (the CLI's `env` blocks never
reach it), so both sources are the user's own.

The password of a URL never appears in a message: `redact_url` is what every
log line and error uses.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import secrets
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hooks.paths import user_settings_path
from hooks.private_files import private_data_dir

URL_ENV = "ORION_MEMORY_URL"
TEAM_ENV = "ORION_MEMORY_TEAM"
USER_ENV = "ORION_MEMORY_USER"
SETTINGS_KEY = "memory"
INSTALL_FILE = "memory-install.json"
DEFAULT_BUFFER_LIMIT = 10_000
SHARED_PREFIX = "team:"

_SCHEMES = ("postgresql", "postgres")
_NAME = re.compile(r"^[A-Za-z0-9._@-]{1,100}$")


class MemoryConfigError(ValueError):
    """The user's memory settings are unusable; the message names the setting."""


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """The backend and, for PostgreSQL, who this process writes as and which projects it shares with its team."""

    backend: str  # "sqlite" or "postgres"
    url: str | None = None
    source: str = ""  # what set the URL, for messages: "ORION_MEMORY_URL" or "<settings file>: memory.url"
    team: str = ""
    user: str = ""
    team_projects: dict[str, str] = field(default_factory=dict)  # real folder path -> shared project name
    buffer_limit: int = DEFAULT_BUFFER_LIMIT

    @property
    def redacted_url(self) -> str:
        return redact_url(self.url or "")

    def cache_key(self) -> tuple[Any, ...]:
        return (self.backend, self.url, self.team, self.user, tuple(sorted(self.team_projects.items())), self.buffer_limit)


def redact_url(url: str) -> str:
    """`url` with its password (and a `password=` query parameter) replaced by `***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(^|&)(password)=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _user_memory_settings(settings_path: Path) -> dict[str, Any]:
    try:
        data = json.loads(settings_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise MemoryConfigError(f"{settings_path}: cannot read the memory settings ({exc})") from exc
    section = data.get(SETTINGS_KEY) if isinstance(data, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise MemoryConfigError(f"{settings_path}: $.{SETTINGS_KEY}: expected an object")
    return section


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """How much of one project's memory is kept: none of it older than `max_age_days`, and at most its newest
    `max_observations` observations (None: no such limit). Both None: everything is kept."""

    max_age_days: float | None = None
    max_observations: int | None = None

    @property
    def limits(self) -> bool:
        return self.max_age_days is not None or self.max_observations is not None

    def as_dict(self) -> dict[str, Any]:
        return {"maxAgeDays": self.max_age_days, "maxObservations": self.max_observations}


@dataclass(frozen=True, slots=True)
class RetentionConfig:
    """The user's `memory.retention`: a rule for every project, and rules of their own for some (keyed by the
    project's real folder path, or by its key as memory files it: `proj_…`, `team:<name>`)."""

    default: RetentionRule = RetentionRule()
    projects: dict[str, RetentionRule] = field(default_factory=dict)
    source: str = ""  # "<settings file>: $.memory.retention", for messages and status

    @property
    def limits(self) -> bool:
        return self.default.limits or any(rule.limits for rule in self.projects.values())


_RULE_KEYS = {"maxAgeDays", "maxObservations"}


def _retention_rule(raw: Any, where: str, base: RetentionRule, *, top: bool = False) -> RetentionRule:
    """One rule object (`top`: the retention itself, which also holds `projects`); a key it leaves out is
    `base`'s, a key set to null lifts that limit."""
    if not isinstance(raw, dict) or not set(raw) <= (_RULE_KEYS | {"projects"} if top else _RULE_KEYS):
        raise MemoryConfigError(f"{where}: expected {{\"maxAgeDays\": days, \"maxObservations\": count}}")
    age, count = base.max_age_days, base.max_observations
    if "maxAgeDays" in raw:
        age = raw["maxAgeDays"]
        if age is not None and (isinstance(age, bool) or not isinstance(age, (int, float)) or not 0 < age < 1e6):
            raise MemoryConfigError(f"{where}.maxAgeDays: expected a positive number of days (or null: no age limit)")
    if "maxObservations" in raw:
        count = raw["maxObservations"]
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise MemoryConfigError(f"{where}.maxObservations: expected a positive integer (or null: no size limit)")
    return RetentionRule(float(age) if age is not None else None, count)


def load_retention(settings_path: Path | None = None) -> RetentionConfig:
    """The user's memory retention (raises MemoryConfigError naming the bad setting). Read from Orion's user
    settings only; no environment variable and no project file can set or shorten it."""
    path = settings_path or user_settings_path()
    raw = _user_memory_settings(path).get("retention")
    source = f"{path}: $.{SETTINGS_KEY}.retention"
    if raw is None:
        return RetentionConfig(source=source)
    default = _retention_rule(raw, source, RetentionRule(), top=True)
    projects_raw = raw.get("projects")
    projects_raw = {} if projects_raw is None else projects_raw
    if not isinstance(projects_raw, dict):
        raise MemoryConfigError(f"{source}.projects: expected {{\"/project/folder\": {{\"maxAgeDays\": days}}}}")
    projects: dict[str, RetentionRule] = {}
    for key, rule in projects_raw.items():
        where = f"{source}.projects[{json.dumps(key)}]"
        folder = os.path.expanduser(key)
        if os.path.isabs(folder):
            key = os.path.realpath(folder)
        elif not key.startswith(("proj_", SHARED_PREFIX)):
            raise MemoryConfigError(f"{where}: a project is its folder as an absolute path, or its id (proj_…) or "
                                    f"shared name ({SHARED_PREFIX}…)")
        projects[key] = _retention_rule(rule, where, default)
    return RetentionConfig(default=default, projects=projects, source=source)


def load_config(environ: dict[str, str] | None = None, settings_path: Path | None = None) -> MemoryConfig:
    """The memory configuration of this process (raises MemoryConfigError naming the bad setting)."""
    env = os.environ if environ is None else environ
    path = settings_path or user_settings_path()
    section = _user_memory_settings(path)

    url = env.get(URL_ENV) or None
    source = URL_ENV
    if url is None and section.get("url") is not None:
        url, source = section.get("url"), f"{path}: $.{SETTINGS_KEY}.url"
        if not isinstance(url, str):
            raise MemoryConfigError(f"{source}: expected a postgresql:// URL string")
    if not url:
        return MemoryConfig(backend="sqlite")
    scheme = url.split(":", 1)[0].lower()
    if scheme not in _SCHEMES:
        raise MemoryConfigError(f"{source}: {redact_url(url)!r} is not a postgresql:// URL (unset it for the local "
                                "SQLite memory)")

    team = env.get(TEAM_ENV) or section.get("team") or ""
    user = env.get(USER_ENV) or section.get("user") or _default_user()
    for what, value in (("team", team), ("user", user)):
        if not isinstance(value, str) or (value and not _NAME.match(value)):
            raise MemoryConfigError(f"{path}: $.{SETTINGS_KEY}.{what} (or ORION_MEMORY_{what.upper()}): "
                                    "letters, digits and ._@- only, at most 100")

    shared_raw = section.get("teamProjects") or {}
    if not isinstance(shared_raw, dict) or not all(isinstance(k, str) and isinstance(v, str) and _NAME.match(v)
                                                   for k, v in shared_raw.items()):
        raise MemoryConfigError(f"{path}: $.{SETTINGS_KEY}.teamProjects: expected {{\"/project/folder\": \"name\"}}")
    if shared_raw and not team:
        raise MemoryConfigError(f"{path}: $.{SETTINGS_KEY}.teamProjects needs $.{SETTINGS_KEY}.team (whom to share with)")
    team_projects = {os.path.realpath(os.path.expanduser(k)): v for k, v in shared_raw.items()}

    limit = section.get("bufferLimit", DEFAULT_BUFFER_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise MemoryConfigError(f"{path}: $.{SETTINGS_KEY}.bufferLimit: expected a positive integer")
    return MemoryConfig(backend="postgres", url=url, source=source, team=team, user=user,
                        team_projects=team_projects, buffer_limit=limit)


def _default_user() -> str:
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        name = "user"
    host = socket.gethostname().split(".")[0] or "host"
    return re.sub(r"[^A-Za-z0-9._@-]", "_", f"{name}@{host}")[:100]


def install_id(data_dir: Path, *, create: bool) -> str | None:
    """This installation's random id (`<data>/memory-install.json`): half of the owner of every row it writes.

    Project ids are per installation (hooks/memory/identity.py), so private
    memory is too: a fresh data dir reads nothing another one wrote, even
    under the same user name. None when absent and `create` is false.
    """
    path = Path(data_dir) / INSTALL_FILE
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("id")
        if isinstance(value, str) and value:
            return value
    except (OSError, ValueError, AttributeError):
        pass
    if not create:
        return None
    private_data_dir(data_dir)
    fresh = "inst_" + secrets.token_hex(12)
    # Two sidecars starting together: the first writer wins, the second reads its id back.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return install_id(data_dir, create=False) or fresh
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"id": fresh}, fh)
    return fresh


def owner_of(config: MemoryConfig, data_dir: Path, *, create: bool) -> str | None:
    """`<user>/<install id>`: the rows this process may read as private and the owner of what it writes."""
    inst = install_id(data_dir, create=create)
    return f"{config.user}/{inst}" if inst else None


def shared_project(config: MemoryConfig, project_dir: str | Path | None) -> str | None:
    """The team-wide project key the user mapped this folder to (`team:<name>`), else None (private)."""
    if not project_dir or not config.team_projects:
        return None
    name = config.team_projects.get(os.path.realpath(os.path.expanduser(str(project_dir))))
    return f"{SHARED_PREFIX}{name}" if name else None


