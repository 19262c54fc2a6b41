"""Matchers exactly as Claude Code reads them, compiled once, and what each event's matcher is tested against."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hooks.types import TOOL_EVENTS

Matcher = Callable[[str], bool]

_EXACT = re.compile(r"^[A-Za-z0-9_|, -]+$")


class MatcherError(ValueError):
    """A matcher that is neither a name list nor a valid regular expression."""


def _match_all(_: str) -> bool:
    return True


def compile_matcher(matcher: str | None) -> Matcher:
    """Absent, "" or "*" match everything; a plain name or `A|B` list matches exactly; anything else is an unanchored regex."""
    if matcher is None or matcher.strip() in ("", "*"):
        return _match_all
    if _EXACT.match(matcher):
        names = frozenset(n.strip() for n in re.split(r"[|,]", matcher) if n.strip())
        return names.__contains__
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise MatcherError(f"matcher {matcher!r} is not a valid regular expression: {exc}") from None
    return lambda value: pattern.search(value) is not None


# The payload key a non-tool event's matcher is compared with (Claude Code's sub-types).
_TARGET_KEY = {
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "Notification": "notification_type",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
}


def match_target(event: str, payload: dict[str, Any]) -> str | None:
    """The string this event's matchers are tested against; None for events whose matchers Claude Code ignores (UserPromptSubmit, Stop)."""
    if event in TOOL_EVENTS:
        return str(payload.get("tool_name") or "")
    key = _TARGET_KEY.get(event)
    return str(payload.get(key) or "") if key else None
