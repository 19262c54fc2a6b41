"""Builders for the hook output JSON, exactly as Claude Code (and this engine, hooks/interpret.py) read it, per event.

Nothing here approves on its own: only `allow()` grants a permission, and only when called.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict


class SdkUsageError(ValueError):
    """A builder was asked for something the event cannot express (e.g. `ask` on a Stop hook)."""


class PermissionRequestDecision(TypedDict, total=False):
    behavior: Required[Literal["allow", "deny"]]
    message: str
    updatedInput: dict[str, Any]


class HookSpecificOutput(TypedDict, total=False):
    hookEventName: Required[str]
    permissionDecision: Literal["allow", "deny", "ask", "defer"]
    permissionDecisionReason: str
    updatedInput: dict[str, Any]
    additionalContext: str
    decision: PermissionRequestDecision


# `continue` is a Python keyword, hence the functional form.
HookOutputJSON = TypedDict(
    "HookOutputJSON",
    {
        "continue": bool,
        "stopReason": str,
        "suppressOutput": bool,
        "systemMessage": str,
        "decision": Literal["block"],
        "reason": str,
        "hookSpecificOutput": HookSpecificOutput,
    },
    total=False,
)

KNOWN_EVENTS = frozenset({
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit", "Stop",
    "SubagentStart", "SubagentStop", "SessionStart", "SessionEnd", "Notification", "PreCompact", "PostCompact",
})
# Events a hook blocks with a top-level `"decision": "block"` (Claude Code's schema for them).
BLOCK_EVENTS = frozenset({"UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "PreCompact"})
# Events whose hookSpecificOutput.additionalContext reaches the model.
CONTEXT_EVENTS = frozenset({"PreToolUse", "UserPromptSubmit", "SessionStart", "PostToolUse", "PostToolUseFailure",
                            "SubagentStart"})


def _event(event: str) -> str:
    if event not in KNOWN_EVENTS:
        raise SdkUsageError(f"unknown hook event {event!r}; expected one of {', '.join(sorted(KNOWN_EVENTS))}")
    return event


def _with_message(out: HookOutputJSON, system_message: str | None) -> HookOutputJSON:
    if system_message is not None:
        out["systemMessage"] = system_message
    return out


def deny(reason: str, *, event: str = "PreToolUse", system_message: str | None = None) -> HookOutputJSON:
    """Refuse: the tool does not run (PreToolUse, PermissionRequest) or the event is blocked (UserPromptSubmit, Stop,
    ...: the same as `block`). The model reads `reason`."""
    event = _event(event)
    if event == "PreToolUse":
        return _with_message({"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                                     "permissionDecisionReason": reason}}, system_message)
    if event == "PermissionRequest":
        return _with_message({"hookSpecificOutput": {"hookEventName": event,
                                                     "decision": {"behavior": "deny", "message": reason}}},
                             system_message)
    if event in BLOCK_EVENTS:
        return block(reason, system_message=system_message)
    raise SdkUsageError(f"{event} hooks cannot deny or block; use system_message() to tell the user, or stop() to "
                        "end the agent")


def ask(reason: str, *, event: str = "PreToolUse", system_message: str | None = None) -> HookOutputJSON:
    """PreToolUse: ask the user to confirm the tool call; `reason` is shown in the prompt."""
    event = _event(event)
    if event != "PreToolUse":
        hint = (" (a PermissionRequest hook that returns nothing leaves the question to the user)"
                if event == "PermissionRequest" else "")
        raise SdkUsageError(f"ask is a PreToolUse decision; {event} has none{hint}")
    return _with_message({"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "ask",
                                                 "permissionDecisionReason": reason}}, system_message)


def allow(reason: str | None = None, *, event: str = "PreToolUse", updated_input: dict[str, Any] | None = None,
          system_message: str | None = None) -> HookOutputJSON:
    """Approve the tool call, skipping the permission prompt (PreToolUse, PermissionRequest).

    This is a grant: call it only for calls you mean to approve. To let a call proceed *without* approving it
    (the permission rules and prompt still apply), return `proceed()` (an empty answer) instead. On events that
    have no permission decision, allow() is that empty answer.
    """
    event = _event(event)
    if event == "PreToolUse":
        hso: HookSpecificOutput = {"hookEventName": event, "permissionDecision": "allow"}
        if reason is not None:
            hso["permissionDecisionReason"] = reason
        if updated_input is not None:
            hso["updatedInput"] = dict(updated_input)
        return _with_message({"hookSpecificOutput": hso}, system_message)
    if event == "PermissionRequest":
        decision: PermissionRequestDecision = {"behavior": "allow"}
        if updated_input is not None:
            decision["updatedInput"] = dict(updated_input)
        return _with_message({"hookSpecificOutput": {"hookEventName": event, "decision": decision}}, system_message)
    if updated_input is not None:
        raise SdkUsageError(f"{event} has no tool input to update")
    return proceed(system_message=system_message)


def proceed(*, system_message: str | None = None) -> HookOutputJSON:
    """No objection and no grant: the empty answer (what a hook printing nothing means)."""
    return _with_message({}, system_message)


def rewrite(*, event: str = "PreToolUse", system_message: str | None = None, **tool_input: Any) -> HookOutputJSON:
    """PreToolUse: run the tool with this input instead (it replaces the whole input). Approves nothing: the
    permission rules and prompt then judge the rewritten call. To change one argument, pass every other one too,
    or use `PreToolUseInput.rewrite(**changes)`, which merges."""
    event = _event(event)
    if event != "PreToolUse":
        raise SdkUsageError(f"rewrite changes a tool call's input before it runs: a PreToolUse answer, not {event}")
    return _with_message({"hookSpecificOutput": {"hookEventName": event, "updatedInput": dict(tool_input)}},
                         system_message)


def context(text: str, *, event: str, system_message: str | None = None) -> HookOutputJSON:
    """Add `text` to what the model reads (PreToolUse, UserPromptSubmit, SessionStart, PostToolUse, ...)."""
    event = _event(event)
    if event not in CONTEXT_EVENTS:
        raise SdkUsageError(f"{event} hooks cannot add context for the model; events that can: "
                            f"{', '.join(sorted(CONTEXT_EVENTS))}")
    return _with_message({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, system_message)


def block(reason: str, *, system_message: str | None = None) -> HookOutputJSON:
    """Block with `decision: "block"`: UserPromptSubmit (the prompt is not sent), Stop/SubagentStop (the agent gets
    `reason` and keeps working), PostToolUse (the model reads `reason`), PreCompact."""
    return _with_message({"decision": "block", "reason": reason}, system_message)


def stop(reason: str, *, system_message: str | None = None) -> HookOutputJSON:
    """End the agent after this step (`continue: false`); `reason` is shown to the user, not the model."""
    return _with_message({"continue": False, "stopReason": reason}, system_message)


def system_message(text: str) -> HookOutputJSON:
    """A message shown to the user; decides nothing."""
    return {"systemMessage": text}


def merge(*outputs: HookOutputJSON) -> HookOutputJSON:
    """Several answers as one (e.g. `merge(rewrite(...), context(...))`); later keys win, hookSpecificOutput merges."""
    out: HookOutputJSON = {}
    hso: dict[str, Any] = {}
    for piece in outputs:
        for key, value in piece.items():
            if key == "hookSpecificOutput" and isinstance(value, dict):
                if hso and value.get("hookEventName") != hso.get("hookEventName"):
                    raise SdkUsageError(f"cannot merge answers for {hso.get('hookEventName')} and "
                                        f"{value.get('hookEventName')}")
                hso.update(value)
            else:
                out[key] = value  # type: ignore[literal-required]
    if hso:
        out["hookSpecificOutput"] = hso  # type: ignore[typeddict-item]
    return out
