"""Typed hook inputs: one frozen dataclass per event, with the keys Claude Code sends, parsed from the stdin JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self, cast

from hooks.sdk import outputs
from hooks.sdk.outputs import HookOutputJSON

EventName = Literal[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "Notification",
    "PreCompact",
    "PostCompact",
]


class InputError(ValueError):
    """The hook input is not what its event sends: names the event, the field and what was wrong."""

    def __init__(self, event: str, field_name: str, problem: str) -> None:
        super().__init__(f"{event} input: field {field_name!r} {problem}")
        self.event = event
        self.field = field_name
        self.problem = problem


# Annotation text -> (test, what the field must be). Annotations are strings here (postponed evaluation).
_KINDS: dict[str, tuple[Any, str]] = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "dict[str, Any]": (lambda v: isinstance(v, dict), "an object"),
    "list[Any]": (lambda v: isinstance(v, list), "an array"),
    "Any": (lambda v: True, "any JSON value"),
}


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


@dataclass(frozen=True, slots=True, kw_only=True)
class HookInput:
    """What every event sends. `raw` is the whole input as received (keys this SDK does not model included)."""

    event: ClassVar[str] = ""

    hook_event_name: str
    session_id: str
    transcript_path: str = ""
    cwd: str = ""
    permission_mode: str | None = None
    # Set when the event comes from inside a subagent.
    agent_id: str | None = None
    agent_type: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Self:
        """Parse `data` as this event's input; raises InputError naming the first missing or mistyped field."""
        if not isinstance(data, Mapping):
            raise InputError(cls.event or "hook", "(input)", f"must be a JSON object, got {_json_kind(data)}")
        event = cls.event or str(data.get("hook_event_name", "hook"))
        if cls.event and data.get("hook_event_name", cls.event) != cls.event:
            raise InputError(event, "hook_event_name", f"is {data.get('hook_event_name')!r}, expected {cls.event!r}")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw":
                continue
            annotation = str(f.type)
            optional = annotation.endswith(" | None")
            test, wanted = _KINDS[annotation.removesuffix(" | None")]
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if f.name not in data:
                if f.name == "hook_event_name" and cls.event:
                    values[f.name] = cls.event
                    continue
                if required:
                    raise InputError(event, f.name, "is missing")
                continue
            value = data[f.name]
            if value is None and optional:
                values[f.name] = None
            elif not test(value):
                raise InputError(event, f.name, f"must be {wanted}{' or null' if optional else ''}, got {_json_kind(value)}")
            else:
                values[f.name] = value
        return cls(**values, raw=dict(data))

    # The builders of hooks.sdk.outputs, for this input's event.

    def deny(self, reason: str) -> HookOutputJSON:
        return outputs.deny(reason, event=self.hook_event_name)

    def ask(self, reason: str) -> HookOutputJSON:
        return outputs.ask(reason, event=self.hook_event_name)

    def allow(self, reason: str | None = None) -> HookOutputJSON:
        return outputs.allow(reason, event=self.hook_event_name)

    def context(self, text: str) -> HookOutputJSON:
        return outputs.context(text, event=self.hook_event_name)

    def block(self, reason: str) -> HookOutputJSON:
        if self.hook_event_name not in outputs.BLOCK_EVENTS | {"PreToolUse", "PermissionRequest"}:
            raise outputs.SdkUsageError(f"{self.hook_event_name} hooks cannot block")
        return outputs.deny(reason, event=self.hook_event_name)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInput(HookInput):
    """The tool events' common keys."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str | None = None

    def arg(self, name: str, default: str = "") -> str:
        """A string argument of the tool call (`command` for Bash, `file_path` for Edit...), or `default`."""
        value = self.tool_input.get(name)
        return value if isinstance(value, str) else default

    def rewrite(self, **changes: Any) -> HookOutputJSON:
        """Run the tool with these arguments changed and the others as they were (approves nothing)."""
        return outputs.rewrite(event=self.hook_event_name, **{**self.tool_input, **changes})


@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolUseInput(ToolInput):
    event: ClassVar[str] = "PreToolUse"


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRequestInput(ToolInput):
    event: ClassVar[str] = "PermissionRequest"

    permission_suggestions: list[Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseInput(ToolInput):
    event: ClassVar[str] = "PostToolUse"

    tool_response: Any = None
    duration_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseFailureInput(ToolInput):
    event: ClassVar[str] = "PostToolUseFailure"

    error: str
    is_interrupt: bool | None = None
    duration_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserPromptSubmitInput(HookInput):
    event: ClassVar[str] = "UserPromptSubmit"

    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StopInput(HookInput):
    event: ClassVar[str] = "Stop"

    # True on the Stop that follows a blocked Stop: a hook that blocks again would loop forever.
    stop_hook_active: bool = False
    last_assistant_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStopInput(HookInput):
    event: ClassVar[str] = "SubagentStop"

    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    agent_transcript_path: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStartInput(HookInput):
    event: ClassVar[str] = "SubagentStart"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartInput(HookInput):
    event: ClassVar[str] = "SessionStart"

    source: str  # startup, resume, clear, compact
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEndInput(HookInput):
    event: ClassVar[str] = "SessionEnd"

    reason: str  # clear, logout, prompt_input_exit, other, ...


@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationInput(HookInput):
    event: ClassVar[str] = "Notification"

    message: str
    title: str | None = None
    notification_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PreCompactInput(HookInput):
    event: ClassVar[str] = "PreCompact"

    trigger: str  # manual, auto
    custom_instructions: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostCompactInput(HookInput):
    event: ClassVar[str] = "PostCompact"

    trigger: str | None = None
    compact_summary: str | None = None


AnyInput = (
    PreToolUseInput
    | PostToolUseInput
    | PostToolUseFailureInput
    | PermissionRequestInput
    | UserPromptSubmitInput
    | StopInput
    | SubagentStartInput
    | SubagentStopInput
    | SessionStartInput
    | SessionEndInput
    | NotificationInput
    | PreCompactInput
    | PostCompactInput
)

INPUT_TYPES: dict[str, type[HookInput]] = {
    cls.event: cls
    for cls in (
        PreToolUseInput, PostToolUseInput, PostToolUseFailureInput, PermissionRequestInput, UserPromptSubmitInput,
        StopInput, SubagentStartInput, SubagentStopInput, SessionStartInput, SessionEndInput, NotificationInput,
        PreCompactInput, PostCompactInput,
    )
}


def parse_input(data: object) -> AnyInput:
    """The typed input for whatever event `data` (the hook's stdin JSON, or `run(payload)`'s payload) belongs to."""
    if not isinstance(data, Mapping):
        raise InputError("hook", "(input)", f"must be a JSON object, got {_json_kind(data)}")
    name = data.get("hook_event_name")
    if not isinstance(name, str):
        raise InputError("hook", "hook_event_name", "is missing" if name is None else f"must be a string, got {_json_kind(name)}")
    cls = INPUT_TYPES.get(name)
    if cls is None:
        raise InputError(name, "hook_event_name", f"names no event this SDK knows ({', '.join(INPUT_TYPES)})")
    return cast(AnyInput, cls.from_dict(data))
