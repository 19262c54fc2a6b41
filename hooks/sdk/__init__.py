"""hooks.sdk: typed hook inputs and builders of Claude Code's hook output JSON, for Python hook authors.

The same answers work in a programmatic hook (`async def fn(input, ctx)`), a `type: "python"` hook
(`def run(payload)`) and a plain command script (`emit(deny("..."))`, or `python -m hooks.sdk deny "..."` from
shell). Standard library only, and typed (mypy --strict clean). See docs/WRITING_HOOKS.md.
"""

from hooks.sdk.inputs import (
    AnyInput,
    EventName,
    HookInput,
    InputError,
    NotificationInput,
    PermissionRequestInput,
    PostCompactInput,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreCompactInput,
    PreToolUseInput,
    SessionEndInput,
    SessionStartInput,
    StopInput,
    SubagentStartInput,
    SubagentStopInput,
    ToolInput,
    UserPromptSubmitInput,
    parse_input,
)
from hooks.sdk.io import emit, exit_blocking, read_input, run_hook
from hooks.sdk.outputs import (
    HookOutputJSON,
    HookSpecificOutput,
    PermissionRequestDecision,
    SdkUsageError,
    allow,
    ask,
    block,
    context,
    deny,
    merge,
    proceed,
    rewrite,
    stop,
    system_message,
)

__all__ = [
    "AnyInput", "EventName", "HookInput", "InputError", "NotificationInput", "PermissionRequestInput",
    "PostCompactInput", "PostToolUseFailureInput", "PostToolUseInput", "PreCompactInput", "PreToolUseInput",
    "SessionEndInput", "SessionStartInput", "StopInput", "SubagentStartInput", "SubagentStopInput", "ToolInput",
    "UserPromptSubmitInput", "parse_input",
    "emit", "exit_blocking", "read_input", "run_hook",
    "HookOutputJSON", "HookSpecificOutput", "PermissionRequestDecision", "SdkUsageError",
    "allow", "ask", "block", "context", "deny", "merge", "proceed", "rewrite", "stop", "system_message",
]
