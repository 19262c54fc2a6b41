"""What a background hook's answer tells the model after the event it ran for.

Claude Code runs an `async` hook without waiting, and when its answer comes back it still reaches the model: its
`systemMessage` and `additionalContext` go into the next model request, and an `asyncRewake` hook's exit 2 wakes the
model with the hook's stderr (a turn of its own when the turn had ended). Measured on the bundled 2.1.330
(`command_async_context`, `command_async_rewake`).

This module decides what such an answer says and whether it wakes the model; the session hands the text to its CLI
(`sidecar/agent.py` `tell_model`), which marks it as coming from no user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hooks.types import HookResult

# What one late answer may put in front of the model. A hook that prints a megabyte in the background must not
# become a megabyte of every later request.
MAX_LATE_TEXT = 10_000


@dataclass(frozen=True, slots=True)
class LateAnswer:
    text: str
    wake: bool  # start a turn when none runs (asyncRewake's exit 2); otherwise the text waits for the next request


def late_answer(spec: Any, result: HookResult) -> LateAnswer | None:
    """The model's part of a finished background hook, or None when it has nothing for the model.

    An answer that failed, was cancelled or timed out says nothing to the model (the user is told through
    hook_response and the notice). Built-in hooks' bookkeeping never speaks to the model."""
    if getattr(spec, "builtin", False) or not getattr(spec, "run_async", False):
        return None
    if getattr(spec, "rewake", False) and result.exit_code == 2 and result.outcome in ("blocked", "error"):
        # The CLI's words, named by the hook's event and matcher as it names a rewake hook.
        where = f"{result.event}:{spec.matcher}" if getattr(spec, "matcher", None) else result.event
        reason = result.stderr.strip() or "No stderr output"
        return LateAnswer(_capped(f'Stop hook blocking error from command "{where}": {reason}'), wake=True)
    if result.outcome != "success" or result.output is None:
        return None
    parts = [result.output.systemMessage or ""]
    specific = result.output.hookSpecificOutput
    parts.append((getattr(specific, "additionalContext", None) or "") if specific is not None else "")
    text = "\n".join(part for part in parts if part)
    return LateAnswer(_capped(text), wake=False) if text else None


def _capped(text: str) -> str:
    if len(text) <= MAX_LATE_TEXT:
        return text
    return text[:MAX_LATE_TEXT] + f"… [{len(text) - MAX_LATE_TEXT} more characters]"
