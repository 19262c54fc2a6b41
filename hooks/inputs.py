"""Typed input models per event (the keys the real CLI sends) for programmatic hooks that want them instead of a dict.

A programmatic hook whose first parameter is annotated with one of these models
receives it validated; otherwise it receives the plain dict. Unknown keys are
kept (the CLI adds keys between releases).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class HookInput(BaseModel):
    model_config = ConfigDict(extra="allow")

    session_id: str = ""
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str = ""
    permission_mode: str | None = None
    prompt_id: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None


class SessionStartInput(HookInput):
    source: str = "startup"
    model: str | None = None


class SessionEndInput(HookInput):
    reason: str = "other"


class UserPromptSubmitInput(HookInput):
    prompt: str = ""


class PreToolUseInput(HookInput):
    tool_name: str = ""
    tool_input: dict[str, Any] = {}
    tool_use_id: str | None = None
    effort: dict[str, Any] | None = None


class PermissionRequestInput(PreToolUseInput):
    permission_suggestions: list[Any] | None = None


class PostToolUseInput(PreToolUseInput):
    tool_response: Any = None
    duration_ms: float | None = None


class PostToolUseFailureInput(PreToolUseInput):
    error: str | None = None
    is_interrupt: bool = False
    duration_ms: float | None = None


class StopInput(HookInput):
    stop_hook_active: bool = False
    last_assistant_message: str | None = None


class SubagentStopInput(StopInput):
    agent_transcript_path: str | None = None


class SubagentStartInput(HookInput):
    pass


class PreCompactInput(HookInput):
    trigger: str = "auto"
    custom_instructions: str | None = None


class PostCompactInput(HookInput):
    trigger: str | None = None
    compact_summary: str | None = None


class NotificationInput(HookInput):
    message: str = ""
    title: str | None = None
    notification_type: str | None = None


INPUT_MODELS: dict[str, type[HookInput]] = {
    "SessionStart": SessionStartInput,
    "SessionEnd": SessionEndInput,
    "UserPromptSubmit": UserPromptSubmitInput,
    "PreToolUse": PreToolUseInput,
    "PermissionRequest": PermissionRequestInput,
    "PostToolUse": PostToolUseInput,
    "PostToolUseFailure": PostToolUseFailureInput,
    "Stop": StopInput,
    "SubagentStop": SubagentStopInput,
    "SubagentStart": SubagentStartInput,
    "PreCompact": PreCompactInput,
    "PostCompact": PostCompactInput,
    "Notification": NotificationInput,
}


def parse_input(event: str, payload: dict[str, Any]) -> HookInput:
    return INPUT_MODELS.get(event, HookInput).model_validate(payload)
