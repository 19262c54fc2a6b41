"""The hook engine's shared vocabulary: event names, the hook output schema, per-execution results and the seams (executor, observer).

This module is the contract between the parts of `hooks/` (sources, runner,
executors, built-in hooks) and its one caller, the sidecar. It imports nothing
else from the project. Pydantic is used only for the JSON shapes that cross a
process boundary (a hook's stdout, an HTTP hook's body); everything internal is
a slotted dataclass.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

# --------------------------------------------------------------------------- events

HookEventName = Literal[
    # Claude Code 2.1.330's 33 hook events (read from the bundled binary; docs/FIDELITY.md "Events").
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "PermissionRequest",
    "PermissionDenied",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "Elicitation",
    "ElicitationResult",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Setup",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreModelSwitch",
    "PostModelSwitch",
    "MessageDisplay",
    "DirectoryAdded",
]

ALL_EVENTS: tuple[str, ...] = HookEventName.__args__  # type: ignore[attr-defined]

# Events on which Claude Code reads exit 2 as a block of what the event is about (the tool call, the prompt, the
# expansion, the end of the turn, the compaction, the model switch, the task, the idle teammate, the elicitation,
# the configuration change, the next model request after a batch). Elsewhere exit 2 is a non-blocking error
# (PermissionRequest's included: the CLI's table gives it no exit-2 meaning).
EXIT2_BLOCKS: frozenset[str] = frozenset({
    "PreToolUse", "UserPromptSubmit", "UserPromptExpansion", "Stop", "SubagentStop", "PreCompact", "PreModelSwitch",
    "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
    "PostToolBatch",
})

# Blocking events run their hooks one after another in registration order; each
# hook sees the input as rewritten by the ones before, and a deny ends the chain.
BLOCKING_EVENTS: frozenset[str] = EXIT2_BLOCKS | {"PermissionRequest"}

# Events whose matcher is tested against the tool name (the others match "" / their sub-type).
TOOL_EVENTS: frozenset[str] = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
)

HookType = Literal["command", "python", "prompt", "agent", "http", "mcp_tool", "callable"]
# "plugin": a Claude Code plugin the user's own settings enable; "project-plugin": one only a project's settings
# enable; "managed-plugin": one an organization's managed settings enable (hooks/plugins.py). "managed": the managed
# settings' own hooks.
SourceKind = Literal["builtin", "managed", "user", "claude-user", "vault", "project", "local", "plugin",
                     "project-plugin", "managed-plugin", "programmatic"]
Outcome = Literal["success", "blocked", "error", "timeout", "cancelled"]
PermissionDecision = Literal["allow", "deny", "ask", "defer"]
# "managed": an organization's managed hook, which the CLI runs itself; Orion lists it and never runs it.
HookState = Literal["active", "disabled", "dropped", "untrusted", "invalid", "managed"]

# deny > defer > ask > allow (REFERENCE.md: "When several hooks disagree").
DECISION_RANK: dict[str, int] = {"allow": 0, "ask": 1, "defer": 2, "deny": 3}


# --------------------------------------------------------------------------- hook output (wire JSON)


class HookSpecificOutput(BaseModel):
    """`hookSpecificOutput` as Claude Code reads it; unknown keys are kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    hookEventName: str | None = None
    permissionDecision: PermissionDecision | None = None
    permissionDecisionReason: str | None = None
    updatedInput: dict[str, Any] | None = None
    additionalContext: str | None = None


class HookOutput(BaseModel):
    """The JSON a hook may print on stdout (or return from Python), same schema as Claude Code's."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    continue_: bool | None = Field(default=None, alias="continue")
    stopReason: str | None = None
    suppressOutput: bool | None = None
    systemMessage: str | None = None
    decision: Literal["block", "approve"] | None = None
    reason: str | None = None
    hookSpecificOutput: HookSpecificOutput | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------- context seen by a hook

EmitFn = Callable[[str, dict[str, Any]], Awaitable[None]]


async def _emit_nowhere(event: str, payload: dict[str, Any]) -> None:  # pragma: no cover - trivial
    return None


class McpCallFailed(Exception):
    """A call to one of the session's MCP servers did not give an answer (`not_connected`: the session has no
    connection to that server)."""

    def __init__(self, message: str, *, not_connected: bool = False) -> None:
        super().__init__(message)
        self.not_connected = not_connected


class McpCaller(Protocol):
    """Calls a tool of one of the session's MCP servers over the session's own connection (mcp_tool hooks)."""

    async def call_mcp_tool(self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The tool's answer (`content`, `structuredContent`, `isError`); raises McpCallFailed, or TimeoutError
        after `timeout_s`."""
        ...


class ModelTeller(Protocol):
    """Hands the session's model a text from no user (a background hook's late answer, hooks/late_answers.py)."""

    async def tell_model(self, text: str, *, wake: bool) -> None:
        """Into the running turn's next model request; with no turn running, into the next prompt's, or, with
        ``wake``, into a turn of its own started now."""
        ...


class CommandBox(Protocol):
    """A session's boundary for command and python hooks (implemented by sidecar.hook_box.HookBox): `start`
    returns a sidecar.hook_box.BoxedProcess."""

    def covers(self, spec: Any) -> bool: ...

    async def start(self, argv: list[str], cwd: Path, env: Mapping[str, str], payload: bytes) -> Any: ...

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class SessionContext:
    """What the caller of `HookRunner.fire` knows about the session the event belongs to."""

    session_id: str
    project_dir: Path
    vault_dir: Path | None = None
    data_dir: Path | None = None
    # Per-session scratch space shared by programmatic hooks (counters, caches).
    state: MutableMapping[str, Any] = field(default_factory=dict)
    # Sends an IPC event to the frontend (e.g. "projectContextChange"); sessionId is added by the sidecar.
    emit: EmitFn = _emit_nowhere
    # Set when the event comes from inside a subagent (agent-scoped hooks match on it).
    agent_type: str | None = None
    # Set when a skill is running (skill-scoped hooks match on it).
    skill: str | None = None
    # The CLI's config directory (CLAUDE_CONFIG_DIR): where SessionStart hooks' CLAUDE_ENV_FILE lives.
    cli_config_dir: Path | None = None
    # The session's MCP connections, for mcp_tool hooks (None outside a session: those hooks then fail).
    mcp: McpCaller | None = None
    # Where a background hook's late answer goes (the session's CLI); None: it reaches no model.
    late_answers: ModelTeller | None = None
    # Where command hooks that run a project's code start inside the session's boundary (sidecar/hook_box.py);
    # None: no boundary, every hook runs as the sidecar's child.
    box: CommandBox | None = None


@dataclass(slots=True)
class HookContext:
    """The `ctx` argument a programmatic hook receives: the session plus this execution's details."""

    session: SessionContext
    event: str
    hook_name: str
    execution_id: str
    tool_use_id: str | None
    deadline: float  # anyio.current_time() value after which the hook is cancelled
    log: logging.Logger

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def project_dir(self) -> Path:
        return self.session.project_dir

    @property
    def vault_dir(self) -> Path | None:
        return self.session.vault_dir

    @property
    def data_dir(self) -> Path | None:
        return self.session.data_dir

    @property
    def state(self) -> MutableMapping[str, Any]:
        return self.session.state

    async def emit(self, event: str, payload: dict[str, Any]) -> None:
        await self.session.emit(event, payload)


# A programmatic hook: async def fn(input: dict, ctx: HookContext) -> HookOutput | dict | None
HookFunction = Callable[[dict[str, Any], HookContext], Awaitable["HookOutput | dict[str, Any] | None"]]


# --------------------------------------------------------------------------- one execution


@dataclass(slots=True)
class ExecutionReport:
    """What an executor hands back: the raw facts of one run, not yet interpreted into an outcome.

    status: "ok" (the hook ran to completion, whatever its exit code), "error"
    (could not spawn, raised, connection failed, unparseable answer...), "timeout",
    "cancelled".
    """

    status: Literal["ok", "error", "timeout", "cancelled"]
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_dropped: int = 0  # bytes beyond the cap, counted and dropped
    stderr_dropped: int = 0
    output: HookOutput | None = None  # parsed JSON output, when there was one
    text: str | None = None  # plain (non-JSON) stdout on success; context for some events
    blocking_error: bool = False  # exit code 2 or an evaluator's {"ok": false}
    error: str | None = None
    traceback: str | None = None


ProgressFn = Callable[[Literal["stdout", "stderr"], str], Awaitable[None]]


async def no_progress(stream: str, line: str) -> None:
    """The ProgressFn given when nobody observes: executors may skip line splitting when `call.progress is no_progress`."""
    return None


@dataclass(slots=True)
class HookCall:
    """Everything an executor needs to run one hook once."""

    hook: Any  # hooks.hookset.HookSpec (kept as Any here to avoid an import cycle)
    event: str
    payload: dict[str, Any]
    context: HookContext
    timeout_s: float
    progress: ProgressFn


class HookExecutor(Protocol):
    """One small class per hook type implements this."""

    async def run(self, call: HookCall) -> ExecutionReport: ...


@dataclass(slots=True)
class HookResult:
    """One hook execution, interpreted: what hook_response reports and tracking records."""

    execution_id: str
    hook_id: str
    hook_name: str
    hook_type: str
    source: str
    event: str
    outcome: Outcome
    duration_ms: float
    exit_code: int | None = None
    output: HookOutput | None = None
    text: str | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    traceback: str | None = None
    fail_closed: bool = False
    background: bool = False  # an `async: true` hook the agent did not wait for
    enforced: bool = True  # False when a block was reported but not enforced (stop loop guard)
    # Claude Code names a command hook in what the model reads of its exit-2 reason: "[<command>]: <stderr>".
    label: str | None = None
    # The Claude Code plugin (`name@marketplace`) the hook comes from: the CLI names it after an exit-2 reason.
    plugin_id: str | None = None
    # The hook's span when tracing is on (hooks/tracing.py): tracking rows carry them, so a row links to its trace.
    trace_id: str | None = None
    span_id: str | None = None


@dataclass(slots=True)
class HookStarted:
    execution_id: str
    hook_id: str
    hook_name: str
    hook_type: str
    source: str
    event: str
    session_id: str
    tool_use_id: str | None = None


@dataclass(slots=True)
class HookProgress:
    execution_id: str
    hook_name: str
    event: str
    session_id: str
    stream: Literal["stdout", "stderr"]
    line: str


class HookObserver(Protocol):
    """Receives every execution's lifecycle; the sidecar turns these into IPC events."""

    async def on_started(self, started: HookStarted) -> None: ...

    async def on_progress(self, progress: HookProgress) -> None: ...

    async def on_response(self, result: HookResult, session_id: str) -> None: ...


@dataclass(slots=True)
class AggregateResult:
    """One answer for one fired event, combining every hook that ran."""

    event: str
    decision: Literal["allow", "deny", "ask", "defer", "block"] | None = None
    reason: str | None = None
    additional_context: str | None = None
    updated_input: dict[str, Any] | None = None
    system_messages: list[str] = field(default_factory=list)
    continue_: bool = True
    stop_reason: str | None = None
    suppress_output: bool = False
    # Event-specific hookSpecificOutput keys passed on as the hooks gave them (hooks/aggregate.py _COMBINED_KEYS).
    specific: dict[str, Any] = field(default_factory=dict)
    results: list[HookResult] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        return self.decision in ("deny", "block")

    def to_hook_json(self) -> dict[str, Any]:
        """This answer in Claude Code's hook output JSON (what the SDK callback returns)."""
        from hooks.aggregate import to_hook_json  # the aggregate module imports this one

        return to_hook_json(self)
