"""Helpers every built-in hook uses: where its files live, how it answers, atomic JSON files, option lookup."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.private_files import write_private_json
from hooks.redaction import redact_value
from hooks.types import HookContext, HookOutput, HookSpecificOutput

Options = dict[str, Any]

_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


@dataclass(slots=True)
class BuiltinEnv:
    """What one `builtin_registry(...)` call's hooks share across sessions: the fallback data dir and process caches."""

    data_dir: Path
    caches: dict[str, Any] = field(default_factory=dict)

    def data(self, ctx: HookContext) -> Path:
        # The sidecar always sets ctx.data_dir; the registry's own is for callers (tests, `hooks test`) that do not.
        return ctx.data_dir or self.data_dir


def conversation_key(ctx: HookContext, payload: dict[str, Any]) -> str:
    """The file-name-safe key of this conversation: the app's conversation id when the sidecar set one, else the session id."""
    raw = str(ctx.state.get("conversation_id") or payload.get("session_id") or ctx.session_id or "unknown")
    if _SAFE_NAME.fullmatch(raw) and raw not in (".", ".."):
        return raw
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def context(event: str, text: str) -> HookOutput:
    return HookOutput(hookSpecificOutput=HookSpecificOutput(hookEventName=event, additionalContext=text))


def deny(reason: str) -> HookOutput:
    return HookOutput(
        hookSpecificOutput=HookSpecificOutput(
            hookEventName="PreToolUse", permissionDecision="deny", permissionDecisionReason=reason
        )
    )


def ask(reason: str) -> HookOutput:
    """Send this tool call to the user's permission prompt with `reason`: a guard asks, it never approves."""
    return HookOutput(
        hookSpecificOutput=HookSpecificOutput(
            hookEventName="PreToolUse", permissionDecision="ask", permissionDecisionReason=reason
        )
    )


def write_json_atomic(path: Path, data: Any) -> None:
    """Redact, then write-to-temp and os.replace into a private file (0600, in a 0700 directory).

    A reader never sees a half-written file, a crash leaves the old one, and
    no secret reaches the disk (hooks/redaction.py: one redaction for every writer).
    """
    write_private_json(path, redact_value(data))


def read_json(path: Path) -> Any | None:
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def as_text(value: Any) -> str:
    """A tool's input or response as one string (JSON for structures)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
