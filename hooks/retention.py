"""The retention policy: how long and how much of ended sessions' data Orion keeps on disk, from the user's own settings only.

`"retention"` in Orion's user settings (`~/.config/orion/settings.json`, or `$ORION_USER_SETTINGS`):

    {"retention": {"maxAgeDays": 30, "maxTotalMiB": 512, "rotateMiB": 32}}

- `maxAgeDays`: a session's data (its tracking folder, a scripted session's CLI home and archived transcript) is
  removed once the session has been neither used nor open for that long;
- `maxTotalMiB`: above this total, the data of the least recently used sessions goes first;
- `rotateMiB`: an append-only tracking file (a session's `events.jsonl`, `analytics/hook-timing.jsonl`) that would
  grow past this is renamed to `<name>.1` (the previous `.1` is dropped) and a new one begun.

A positive number sets a limit, `0` removes it; a value that is not a number keeps the default and is logged.
**Only the user's settings count:** a project is a cloned repository, and a retention it could set would delete
the user's history (a tiny age) or fill their disk (no limit). Nothing here reads a project's files or its `env`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.paths import user_settings_path

log = logging.getLogger("hooks.retention")

DAY_S = 86400.0
MIB = 1 << 20
DEFAULT_MAX_AGE_DAYS = 30.0
DEFAULT_MAX_TOTAL_MIB = 512.0
DEFAULT_ROTATE_MIB = 32.0
SETTINGS_KEY = "retention"


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """The limits in effect; None means no limit of that kind."""

    max_age_s: float | None = DEFAULT_MAX_AGE_DAYS * DAY_S
    max_total_bytes: int | None = int(DEFAULT_MAX_TOTAL_MIB * MIB)
    rotate_bytes: int | None = int(DEFAULT_ROTATE_MIB * MIB)

    def describe(self) -> str:
        age = "no age limit" if self.max_age_s is None else f"max age {self.max_age_s / DAY_S:g} days"
        total = "no size cap" if self.max_total_bytes is None else f"size cap {self.max_total_bytes / MIB:g} MiB"
        rotate = "no rotation" if self.rotate_bytes is None else f"rotation at {self.rotate_bytes / MIB:g} MiB"
        return f"{age}, {total}, {rotate}"


_FIELDS = {"maxAgeDays": ("max_age_s", DAY_S), "maxTotalMiB": ("max_total_bytes", MIB), "rotateMiB": ("rotate_bytes", MIB)}


def policy_from(value: Any, origin: str = "retention") -> tuple[RetentionPolicy, list[str]]:
    """The policy a `retention` settings value describes, and a problem line for each value that was not used."""
    if value is None:
        return RetentionPolicy(), []
    if not isinstance(value, dict):
        return RetentionPolicy(), [f"{origin}: expected an object like {{\"maxAgeDays\": 30}}; the defaults apply"]
    chosen: dict[str, Any] = {}
    problems = []
    for key, raw in value.items():
        if key not in _FIELDS:
            problems.append(f"{origin}.{key}: unknown (known: {', '.join(_FIELDS)}); ignored")
            continue
        attr, unit = _FIELDS[key]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0 or raw != raw or raw == float("inf"):
            problems.append(f"{origin}.{key}: expected a number >= 0 (0: no limit), got {raw!r}; the default applies")
            continue
        if raw == 0:
            chosen[attr] = None
        else:
            scaled = raw * unit
            chosen[attr] = scaled if attr == "max_age_s" else max(1, int(scaled))
    return RetentionPolicy(**chosen), problems


def load_policy(settings_path: Path | None = None) -> RetentionPolicy:
    """The user's policy (defaults where the settings say nothing); problems are logged, never raised."""
    path = settings_path or user_settings_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return RetentionPolicy()
    except (OSError, ValueError) as exc:
        log.warning("retention: cannot read %s (%s); the defaults apply", path, exc)
        return RetentionPolicy()
    policy, problems = policy_from(data.get(SETTINGS_KEY) if isinstance(data, dict) else None, f"{path}: $.retention")
    for problem in problems:
        log.warning("%s", problem)
    return policy
