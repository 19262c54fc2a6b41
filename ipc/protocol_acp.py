"""The Agent Client Protocol as the sidecar speaks it: the methods, updates and requests of ACP v1 we implement, and
the `_orion/` extensions, as our own small models (the official SDK's 5,800-line schema costs ~1 s to import).

Names and shapes follow the published ACP schema (agentclientprotocol.com); a test validates what we send with the
official SDK's own models. Loaded on first use through `ipc.protocol`, like `ipc.protocol_agent`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, StrictInt

from ipc.protocol import WireModel
from ipc.protocol_agent import SessionOptions

ACP_PROTOCOL_VERSION = 1


class AcpModel(WireModel):
    """ACP's `_meta` extension point on every object; absent fields are left out on the wire (not sent as null)."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------- handshake


class Implementation(AcpModel):
    name: str
    title: str | None = None
    version: str


class AcpInitializeParams(AcpModel):
    """ACP `initialize`. `clientCapabilities._meta.orion.events`: `true` (every `_orion/` event) or a list of names."""

    protocol_version: StrictInt
    client_capabilities: dict[str, Any] = Field(default_factory=dict)
    client_info: Implementation | None = None


class PromptCapabilities(AcpModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(AcpModel):
    http: bool = False
    sse: bool = False


class SessionCapabilities(AcpModel):
    list: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    additional_directories: dict[str, Any] | None = None
    system_prompt: dict[str, Any] | None = None


class AgentCapabilities(AcpModel):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities
    mcp_capabilities: McpCapabilities
    session_capabilities: SessionCapabilities | None = None


class AuthMethod(AcpModel):
    id: str
    name: str
    description: str | None = None


class AcpInitializeResult(AcpModel):
    """`_meta.orion`: `{methods, events, protocol}`: the `_orion/` extension methods and events this sidecar has."""

    protocol_version: int
    agent_capabilities: AgentCapabilities
    agent_info: Implementation
    auth_methods: list[AuthMethod] = Field(default_factory=list)


class AuthenticateParams(AcpModel):
    method_id: str


class AcpEmpty(AcpModel):
    """No fields (`_meta` allowed)."""


# --------------------------------------------------------------------------- MCP servers the client brings


class EnvVariable(AcpModel):
    name: str
    value: str


class HttpHeader(AcpModel):
    name: str
    value: str


class McpServerStdio(AcpModel):
    type: Literal["stdio"] = "stdio"
    name: str
    command: str
    args: list[str] = Field(default_factory=list)
    env: list[EnvVariable] = Field(default_factory=list)


class McpServerHttp(AcpModel):
    type: Literal["http"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


class McpServerSse(AcpModel):
    type: Literal["sse"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


McpServer = Union[McpServerHttp, McpServerSse, McpServerStdio]


# --------------------------------------------------------------------------- sessions


class OrionSessionOptions(SessionOptions):
    """What `session/new` takes beyond ACP, sent as `_meta.orion` (ACP forbids custom root fields)."""


class AcpSystemPrompt(AcpModel):
    """ACP's client-provided system prompt (`systemPrompt` on session/new, load, resume, fork): `append` adds the
    text blocks after Claude Code's own system prompt, `override` replaces it. Checked by the sidecar, not here, so
    that a wrong mode or block gets its own message."""

    mode: str
    content: list[dict[str, Any]]


class AcpNewSessionParams(AcpModel):
    """ACP `session/new`; Orion's options in `_meta.orion` (OrionSessionOptions)."""

    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] | None = None
    system_prompt: AcpSystemPrompt | None = None


class SessionMode(AcpModel):
    id: str
    name: str
    description: str | None = None


class SessionModeState(AcpModel):
    current_mode_id: str
    available_modes: list[SessionMode]


class ConfigSelectOption(AcpModel):
    value: str
    name: str
    description: str | None = None


class ConfigOptionSelect(AcpModel):
    """A session setting the client shows as a picker; the sidecar offers `mode` (category `mode`, the permission mode
    as `session/set_mode` sets it), `model` (category `model`) and, for a model with effort levels, `effort` (category
    `thought_level`)."""

    type: Literal["select"] = "select"
    id: str
    name: str
    description: str | None = None
    category: str | None = None
    current_value: str
    options: list[ConfigSelectOption]


class AcpNewSessionResult(AcpModel):
    """`_meta.orion`: the model, hook counts, sandbox and settings, as Orion's `session/new` reports them."""

    session_id: str
    modes: SessionModeState
    config_options: list[ConfigOptionSelect] = Field(default_factory=list)


class SetConfigOptionParams(AcpModel):
    """ACP `session/set_config_option`: `configId` `model` switches the model the session's next turns use."""

    session_id: str
    config_id: str
    value: str


class SetConfigOptionResult(AcpModel):
    config_options: list[ConfigOptionSelect]


class AcpLoadSessionParams(AcpModel):
    """ACP `session/load`: resume a past session by id; its history arrives as `session/update`s first."""

    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    system_prompt: AcpSystemPrompt | None = None


class AcpForkSessionParams(AcpModel):
    """ACP `session/fork`: a new session that goes on from a copy of a past or live session's conversation; the
    original is left as it was."""

    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] | None = None
    system_prompt: AcpSystemPrompt | None = None


class AcpLoadSessionResult(AcpModel):
    modes: SessionModeState
    config_options: list[ConfigOptionSelect] = Field(default_factory=list)


class AcpListSessionsParams(AcpModel):
    cwd: str | None = None
    cursor: str | None = None


class AcpSessionInfo(AcpModel):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None


class AcpListSessionsResult(AcpModel):
    sessions: list[AcpSessionInfo]
    next_cursor: str | None = None


class SetModeParams(AcpModel):
    session_id: str
    mode_id: str


class AcpSessionRef(AcpModel):
    """ACP `session/close`, `session/delete`: the session meant."""

    session_id: str


class AcpCancelParams(AcpModel):
    """ACP `session/cancel` (a notification): stop the running prompt, which then answers `cancelled`."""

    session_id: str


# --------------------------------------------------------------------------- content


class TextContent(AcpModel):
    type: Literal["text"]
    text: str


class ImageContent(AcpModel):
    type: Literal["image"]
    data: str
    mime_type: str
    uri: str | None = None


class AudioContent(AcpModel):
    type: Literal["audio"]
    data: str
    mime_type: str


class ResourceLink(AcpModel):
    type: Literal["resource_link"]
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


class TextResourceContents(AcpModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResourceContents(AcpModel):
    uri: str
    blob: str
    mime_type: str | None = None


class EmbeddedResource(AcpModel):
    type: Literal["resource"]
    resource: Union[TextResourceContents, BlobResourceContents]


ContentBlock = Annotated[
    Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource], Field(discriminator="type")
]


class AcpPromptParams(AcpModel):
    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)


class AcpSteeringParams(AcpModel):
    """`_session/steering`: a message for the turn that is running (`_meta.steering.idleBehavior:
    "promptRequired"` is the only behaviour Orion has when none runs)."""

    session_id: str
    prompt: list[ContentBlock] = Field(min_length=1)


class AcpSteeringResult(AcpModel):
    outcome: Literal["injected", "promptRequired"]
    reason: str | None = None


class Usage(AcpModel):
    total_tokens: int
    input_tokens: int
    output_tokens: int
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None


AcpStopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class AcpPromptResult(AcpModel):
    """`_meta.orion`: Orion's own stop reason (`blocked`, `tool_deferred`, `error`, …), terminal reason, cost, turns."""

    stop_reason: AcpStopReason
    usage: Usage | None = None


# --------------------------------------------------------------------------- session/update (agent → client)

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]


class ToolCallLocation(AcpModel):
    path: str
    line: int | None = None


class ToolCallContentBlock(AcpModel):
    type: Literal["content"]
    content: ContentBlock


class ToolCallDiff(AcpModel):
    type: Literal["diff"]
    path: str
    old_text: str | None = None
    new_text: str


ToolCallContent = Annotated[Union[ToolCallContentBlock, ToolCallDiff], Field(discriminator="type")]


class ToolCallFields(AcpModel):
    """What a tool call is: shared by `tool_call`, `tool_call_update` and the permission request's `toolCall`."""

    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class AcpUserMessageChunk(AcpModel):
    session_update: Literal["user_message_chunk"]
    content: ContentBlock


class AcpAgentMessageChunk(AcpModel):
    session_update: Literal["agent_message_chunk"]
    content: ContentBlock


class AcpAgentThoughtChunk(AcpModel):
    session_update: Literal["agent_thought_chunk"]
    content: ContentBlock


class AcpToolCall(ToolCallFields):
    session_update: Literal["tool_call"]
    title: str


class AcpToolCallUpdate(ToolCallFields):
    session_update: Literal["tool_call_update"]


class PlanEntry(AcpModel):
    content: str
    priority: Literal["high", "medium", "low"]
    status: Literal["pending", "in_progress", "completed"]


class AcpPlan(AcpModel):
    session_update: Literal["plan"]
    entries: list[PlanEntry]


class AcpAvailableCommand(AcpModel):
    name: str
    description: str


class AcpAvailableCommandsUpdate(AcpModel):
    session_update: Literal["available_commands_update"]
    available_commands: list[AcpAvailableCommand]


class AcpCurrentModeUpdate(AcpModel):
    session_update: Literal["current_mode_update"]
    current_mode_id: str


class AcpCost(AcpModel):
    amount: float
    currency: str


class AcpUsageUpdate(AcpModel):
    """How full the conversation is (`used` of `size` tokens, the model's context window) and what it has cost."""

    session_update: Literal["usage_update"]
    used: int
    size: int
    cost: AcpCost | None = None


class AcpSessionInfoUpdate(AcpModel):
    """The session's title (its first prompt's first line, as `session/list` shows it)."""

    session_update: Literal["session_info_update"]
    title: str | None = None
    updated_at: str | None = None


AcpSessionUpdateBody = Annotated[
    Union[AcpUserMessageChunk, AcpAgentMessageChunk, AcpAgentThoughtChunk, AcpToolCall, AcpToolCallUpdate, AcpPlan,
          AcpAvailableCommandsUpdate, AcpCurrentModeUpdate, AcpUsageUpdate, AcpSessionInfoUpdate],
    Field(discriminator="session_update"),
]


class AcpSessionNotification(AcpModel):
    """`session/update`: one update of a session, as ACP defines them."""

    session_id: str
    update: AcpSessionUpdateBody


# --------------------------------------------------------------------------- session/request_permission (agent → client)


class AcpPermissionOption(AcpModel):
    option_id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class AcpRequestPermissionParams(AcpModel):
    """`_meta.orion.reason`: why it asks (a hook's reason, the CLI's rule)."""

    session_id: str
    tool_call: ToolCallFields
    options: list[AcpPermissionOption]


# --------------------------------------------------------------------------- _orion/ extension events


class OrionEventFields(WireModel):
    """Added to every `_orion/<event>` notification: order within the session, time sent, and the tool call it is about."""

    seq: int
    timestamp: str  # ISO 8601, UTC, milliseconds
    tool_call_id: str | None = None
