"""Wire models of sessions, hooks, memory, permission requests and their events; loaded on first use through `ipc.protocol`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from ipc.protocol import WireModel

# --------------------------------------------------------------------------- sessions

SessionId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
SettingSource = Literal["user", "project", "local"]
PermissionMode = Literal["default", "acceptEdits", "bypassPermissions", "plan", "auto"]
# Ours (cancelled, blocked, error) and whatever the CLI reports (end_turn, tool_use, max_tokens, stop_sequence,
# tool_deferred, refusal, ...): a stop reason a newer CLI adds must still reach the frontend, so any string passes.
KnownStopReason = Literal["end_turn", "max_turns", "cancelled", "blocked", "error", "max_tokens", "stop_sequence",
                          "tool_use", "tool_deferred", "refusal", "pause_turn"]
StopReason = Union[KnownStopReason, str]
# auto: sandboxed where the platform has it; required: fail session/new where it has not; off: the app opts out.
SandboxMode = Literal["auto", "required", "off"]


# Claude Code's names for an agent and a team (its Agent tool's `name` pattern): no '@', no control characters.
AgentName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]


class Teammate(WireModel):
    """The session works as one named member of an agent team the app runs (Claude Code's agent teams): its CLI
    starts as that teammate, and Claude Code's TeammateIdle hooks run each time it is about to go idle."""

    name: AgentName
    team: AgentName


class SessionOptions(WireModel):
    """How a session runs, beyond where: the same in Orion's `session/new` and `session/prepare` and in ACP's
    `_meta.orion`."""

    vault_dir: str | None = None
    model: str | None = None
    permission_mode: PermissionMode | None = None
    allowed_tools: list[str] | None = None
    system_prompt: str | None = None  # replaces Claude Code's system prompt ("" or None: it stays)
    system_prompt_append: str | None = None  # added after Claude Code's system prompt (ACP's systemPrompt "append")
    sandbox: SandboxMode | None = None  # None means "auto"; only the app decides, never a project's settings
    # Which Claude Code settings the CLI reads (CLAUDE.md, permission rules, env, MCP servers, agents, skills);
    # None: user, project and local. Project and local are read only once the project is trusted.
    setting_sources: list[SettingSource] | None = None
    # The built-in Orion hooks: None or true all of them, false none, a list only those names.
    builtin_hooks: bool | list[str] | None = None
    # Claude Code's Setup hooks run as this session's CLI starts, with this trigger (the CLI's `--init` /
    # `--maintenance`): an app's "set this project up" or "maintenance" action. Not for session/prepare (a prepared
    # CLI runs no hook) and not remembered for a later load.
    setup: Literal["init", "maintenance"] | None = None
    # A member of an agent team the app runs (the CLI's `--agent-id <name>@<team> --agent-name --team-name`):
    # remembered for a later load. The app's to set; nothing in a project can.
    teammate: Teammate | None = None


class SessionPrepareParams(SessionOptions):
    """Start the CLI of the next session ahead of `session/new`: the same options (no session id); no hook runs."""

    project_dir: str


class SessionNewParams(SessionPrepareParams):
    """Start an agent session in a project directory."""

    session_id: SessionId | None = None


class SessionPrepareResult(WireModel):
    """The prepared session waits this long for a `session/new` with the same options, then its CLI is closed."""

    prepared: bool
    expires_in_s: float


class SettingsInfo(WireModel):
    """Which Claude Code setting sources the session's CLI reads, and which it was not given and why."""

    sources: list[SettingSource]
    withheld: list[SettingSource] = Field(default_factory=list)
    reason: str | None = None


class SandboxInfo(WireModel):
    """Whether the agent's Bash runs inside the CLI's OS sandbox, and what it may never write."""

    enabled: bool
    platform: str  # linux | macos | windows | ...
    reason: str | None = None  # why it is off
    denied_write_paths: list[str] = Field(default_factory=list)
    # Linux: the CLI process is non-dumpable, so no command inside the box can reach its pipes, memory or
    # environment (docs/SECURITY.md "Sandbox"); false where that could not be set up (the reason is in the log)
    cli_shielded: bool = False


class HookCounts(WireModel):
    active: int
    untrusted: int
    dropped: int
    managed: int = 0  # hooks of the organization's managed settings: the CLI runs them itself


class SessionNewResult(WireModel):
    session_id: str
    model: str
    hooks: HookCounts
    sandbox: SandboxInfo
    settings: SettingsInfo
    # What the hook analysis found in the settings files (file, JSON path, problem, fix), as `hooks/list` and
    # `python -m hooks validate` report it; also sent as `log` events. The session starts regardless.
    warnings: list[str] = Field(default_factory=list)


class SessionPromptParams(WireModel):
    """Run one prompt to completion; events stream as `session/update` while it runs."""

    session_id: str
    prompt: str


class SessionPromptResult(WireModel):
    stop_reason: StopReason
    # Why the CLI's loop ended (Claude Code's terminal reason: completed, hook_stopped, max_turns, ...), when known.
    terminal_reason: str | None = None
    result_text: str | None
    usage: dict[str, Any] = Field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int
    num_turns: int


class SessionRef(WireModel):
    """Names one session."""

    session_id: str


class SessionContextParams(WireModel):
    """What the user has open in the editor, for the opt-in `ambient-context` hook (file paths, no contents)."""

    session_id: str
    open_files: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=200)
    active_file: Annotated[str, Field(max_length=4096)] | None = None


class SessionRegisterRootParams(WireModel):
    """Register a folder inside the session's project (or one of its additional directories) as a working-directory
    root of its own, as Claude Code's SDK `register_repo_root` does (a nested repository of a monorepo): the
    project's DirectoryAdded hooks run with `source: "register_repo_root"`."""

    session_id: str
    directory: Annotated[str, Field(max_length=4096)]
    # Load the folder's CLAUDE.md into the session, as the CLI does for its working directories (only in a session
    # that reads the project's settings: a trusted project's).
    reload_claude_md: bool = False


class SessionRegisterRootResult(WireModel):
    directory: str  # the root as the CLI registered it (resolved, absolute)


class SessionCancelResult(WireModel):
    cancelled: bool


class SessionEndParams(WireModel):
    """End a session; SessionEnd hooks run with `reason`."""

    session_id: str
    reason: str = "other"


class SessionEndResult(WireModel):
    ended: bool
    hooks_ran: int


class SessionInfo(WireModel):
    session_id: str
    project_dir: str
    vault_dir: str | None = None
    model: str
    state: Literal["idle", "running", "ended"]
    created_at: str  # ISO 8601, UTC


class SessionListResult(WireModel):
    sessions: list[SessionInfo]


# --------------------------------------------------------------------------- hooks


class HookScope(WireModel):
    """Which hooks: those of a live session, or those a project (and optional vault) would load."""

    session_id: str | None = None
    project_dir: str | None = None
    vault_dir: str | None = None

    @model_validator(mode="after")
    def _needs_a_target(self) -> HookScope:
        if self.session_id is None and self.project_dir is None:
            raise ValueError("give sessionId or projectDir")
        return self


class PluginRef(WireModel):
    """The Claude Code plugin a hook comes from (hooks/plugins.py)."""

    id: str  # name@marketplace
    name: str
    version: str | None = None
    marketplace: str
    root: str | None = None  # CLAUDE_PLUGIN_ROOT
    # the user's own Claude Code settings, only a project's, or the organization's managed settings (the CLI runs
    # such a plugin's hooks itself)
    enabled_by: Literal["plugin", "project-plugin", "managed-plugin"]
    enabled_in: str  # the settings file whose enabledPlugins turns it on


class HookPosition(WireModel):
    """A hook's place in its file: `$.hooks.<event>[<group>].hooks[<index>]` (what `hooks/list` rows carry as `at`)."""

    event: str
    group: int = Field(ge=0)
    index: int = Field(ge=0)


class HookInfo(WireModel):
    id: str
    name: str
    event: str
    matcher: str | None = None
    type: str
    source: str
    source_file: str | None = None
    # "managed": a hook of the organization's managed Claude Code settings, which the CLI runs itself (Orion lists
    # it, and neither runs nor can switch it off)
    state: Literal["active", "disabled", "dropped", "untrusted", "invalid", "managed"]
    reason: str | None = None
    timeout: float | None = None
    fail_closed: bool = False
    async_: bool = Field(default=False, alias="async")
    # Exactly what the hook executes or contacts (command, cwd, module, url, prompt, function) and, under
    # `files`, each file it runs with its digest as loaded: what the user reviews before trusting.
    runs: dict[str, Any] = Field(default_factory=dict)
    # Only while this runs: `{"agent": "<subagent type>"}` or `{"skill": "<skill name>"}` (hooks of a project's
    # `.claude/agents/*.md` or `.claude/skills/*/SKILL.md`, or a programmatic hook registered with a scope).
    scope: dict[Literal["agent", "skill"], str] | None = None
    plugin: PluginRef | None = None
    # Claude Code's entry fields, as set: the `if` rule (the hook runs only for tool calls it matches), the text shown
    # while it runs, `once` (a skill's hook, dropped after its first success), `asyncRewake` (docs/HOOKS.md).
    if_: str | None = Field(default=None, alias="if")
    status_message: str | None = None
    once: bool = False
    async_rewake: bool = False
    # Where its process runs: "box" inside the session's hook box (a project's code: docs/SECURITY.md "Hooks inside
    # the boundary"), "outside" with the user's account; null for a hook that starts no process of its own.
    boundary: Literal["box", "outside"] | None = None
    # Its place in `sourceFile` ($.hooks.<event>[group].hooks[index]): what `hooks/update` and `hooks/remove` name.
    at: HookPosition | None = None


class TrustFile(WireModel):
    path: str
    digest: str  # "sha256:…", "json:…" (settings, canonical), "link:<target>|…", "absent"


class TrustChange(WireModel):
    path: str
    change: str  # added | removed | modified


class PluginTrustInfo(PluginRef):
    """An enabled plugin's state: `trusted`, `untrusted` (a project's plugin, the project not trusted), `changed`
    (a user's plugin whose content differs from its pin: `changes` names the files; trust it with `hooks/trust`'s
    `plugin` and this `hash`) or `unresolved` (`problem` says why; its hooks do not run)."""

    state: Literal["trusted", "untrusted", "changed", "unresolved"]
    problem: str | None = None
    hash: str
    components: list[str] = Field(default_factory=list)  # what the CLI loads from it besides hooks
    unsupported: list[str] = Field(default_factory=list)  # what it declares that Orion does not run
    data_dir: str  # CLAUDE_PLUGIN_DATA
    in_place: bool = False
    files: int = 0
    pinned_at: str | None = None
    pinned_version: str | None = None
    changes: list[TrustChange] = Field(default_factory=list)


class TrustInfo(WireModel):
    """The project's trust record against what is on disk: every pinned file, and what changed since trust; and the
    Claude Code plugins enabled for it, each with its own trust state."""

    trusted: bool
    trust_hash: str
    trusted_at: str | None = None
    files: list[TrustFile] = Field(default_factory=list)
    changes: list[TrustChange] = Field(default_factory=list)
    plugins: list[PluginTrustInfo] = Field(default_factory=list)


class HooksListResult(WireModel):
    hooks: list[HookInfo]
    warnings: list[str] = Field(default_factory=list)
    # Hash of the manifest of everything the project would run, as listed: pass it to `hooks/trust`.
    trust_hash: str | None = None
    trusted: bool | None = None
    trust: TrustInfo | None = None


class HooksTrustParams(WireModel):
    """Trust a project by the hash of its manifest; with `hash` (from `hooks/list`), only the version the user reviewed.

    Only the user may send this (the frontend after a review); `revoke` removes the record instead.
    """

    project_dir: str
    vault_dir: str | None = None
    hash: str | None = None
    revoke: bool = False
    # A Claude Code plugin of the user's own settings (name@marketplace) that changed since it was trusted: trust
    # (or, with `revoke`, forget) its pin instead of the project's; `hash` is its hash as `hooks/list` showed it.
    plugin: str | None = None


class HooksTrustResult(WireModel):
    trusted: bool
    hash: str


SettingsTarget = Literal["user", "claude-user", "project", "local"]


class HooksSettingsParams(WireModel):
    """One settings file whose hooks an app's settings page shows and edits: `user` (Orion's user settings),
    `claude-user` (the user's Claude Code settings, which `claude` runs hooks from too), `project`
    (`<projectDir>/.claude/settings.json`) or `local` (`<projectDir>/.claude/settings.local.json`)."""

    target: SettingsTarget
    project_dir: str | None = None


class HooksSettingsResult(WireModel):
    target: SettingsTarget
    path: str
    exists: bool
    digest: str | None = None  # sha256 of the file's bytes (None: no file yet): every edit names the one it read
    hooks: dict[str, Any] = Field(default_factory=dict)  # the file's `hooks` object as written
    # names turned off: the user's `disabledHooks` (target user), the project's hook-overrides (project and local)
    disabled: list[str] = Field(default_factory=list)
    error: str | None = None  # why the file cannot be edited here (not JSON, a duplicate key, a link, too big)


class HooksAddParams(HooksSettingsParams):
    """Add one hook on `event` (to the group with the same `matcher`, else a new group), if the file is still the
    one read (`digest`; null for a file that does not exist yet) and the result passes `hooks validate`."""

    digest: str | None
    event: str
    matcher: str | None = None
    hook: dict[str, Any]


class HooksUpdateParams(HooksSettingsParams):
    """Replace the hook at `at`; a `matcher` given (null for none) moves it to the group with that matcher."""

    digest: str | None
    at: HookPosition
    hook: dict[str, Any]
    matcher: str | None = None


class HooksRemoveParams(HooksSettingsParams):
    digest: str | None
    at: HookPosition


class HooksEnableParams(WireModel):
    """Turn a hook off (or on again) by name: `scope` `user` writes the user's Orion settings (`disabledHooks`: any
    hook, the built-in guards included), `project` the project's `.claude/hook-overrides.json` (its own hooks only)."""

    name: str
    enabled: bool
    scope: Literal["user", "project"] = "user"
    project_dir: str | None = None


class HooksEditResult(WireModel):
    path: str
    digest: str  # the file's digest after the edit: the next edit names it
    at: HookPosition | None = None  # where the added or changed hook now is
    warnings: list[str] = Field(default_factory=list)  # what `hooks validate` warns about in the new file
    # With a projectDir: whether the project's hooks are trusted after the edit and the hash the user reviews and
    # passes to `hooks/trust` (a project file edited from the app waits for that review like any other change).
    trusted: bool | None = None
    trust_hash: str | None = None


class HooksTestParams(HookScope):
    """Fire one event with a payload through the hook engine, with no agent."""

    event: str
    payload: dict[str, Any] = Field(default_factory=dict)
    hook_name: str | None = None
    # The model prompt and agent hooks ask outside a session: `scripted:<scenario>` (offline) or a model name; default
    # the one the user configured. A live session's hooks ask the session's model connection.
    model: str | None = None


class HooksTestResult(WireModel):
    aggregate: dict[str, Any]
    results: list[dict[str, Any]]


class HooksStatsParams(WireModel):
    """Which records: one session's, one project's, or all; optionally a time range (`30m`, `7d`, ISO 8601 UTC)."""

    session_id: str | None = None
    project_dir: str | None = None
    since: str | None = None
    until: str | None = None


class HookStatsRow(WireModel):
    name: str
    event: str
    runs: int
    p50_ms: float = Field(alias="p50Ms")
    p95_ms: float = Field(alias="p95Ms")
    max_ms: float = Field(alias="maxMs")
    failures: int
    timeouts: int
    blocks: int
    cancelled: int


class HooksStatsResult(WireModel):
    """Slowest (p95) first."""

    hooks: list[HookStatsRow]


# --------------------------------------------------------------------------- memory


class MemorySearchParams(WireModel):
    """Search remembered prompts, observations and summaries by words, by meaning, or both (docs/MEMORY.md)."""

    query: str
    project: str | None = None  # the project's folder (absolute path) or its key (proj_…, team:…); a bare name: -32602
    limit: int = Field(default=10, ge=1, le=100)
    # hybrid: both rankings fused by reciprocal rank; text: full-text only; meaning: the embedding model only.
    mode: Literal["hybrid", "text", "meaning"] = "hybrid"


class MemoryTextMatch(WireModel):
    rank: int  # 1 = the best full-text match
    score: float  # the full-text score (bigger is better)


class MemoryMeaningMatch(WireModel):
    rank: int  # 1 = the closest in meaning
    similarity: float  # cosine similarity of the embeddings, -1..1


class MemoryHitWhy(WireModel):
    text: MemoryTextMatch | None = None
    meaning: MemoryMeaningMatch | None = None


class MemoryHit(WireModel):
    kind: Literal["prompt", "observation", "summary"]
    session_id: str
    project: str
    text: str
    snippet: str  # full-text hits mark the matched words with « »; a hit by meaning alone shows the text's start
    created_at: str
    score: float  # hybrid: the fused score; text: the full-text score; meaning: the similarity
    why: MemoryHitWhy
    matched_by: list[Literal["text", "meaning"]]


class MemorySearchResult(WireModel):
    results: list[MemoryHit]
    # Memory writes of live sessions still queued when the answer was made (the search waits for them at most 1 s):
    # 0 means everything the sessions did so far is searchable; more means the newest may be missing.
    pending_writes: int = 0


class MemoryBackfill(WireModel):
    # idle: not started in this sidecar; checking; running; done; stopped; failed; unavailable (no model)
    state: str
    done: int = 0  # items embedded by this run so far
    left: int | None = None  # items still without a vector (null until checked)
    error: str | None = None


class MemoryStatusResult(WireModel):
    backend: Literal["sqlite", "postgres"]
    up: bool  # the store answers (a team database may be unreachable; writes are spooled meanwhile)
    items: int | None = None  # prompts, observations and summaries stored (null when the store is down)
    embedded: int | None = None  # of those, how many have a vector for search by meaning
    model: str | None = None  # the embedding model the vectors were made with
    meaning_available: bool  # whether the embedding model loads here
    reason: str | None = None  # why it does not, when it does not
    backfill: MemoryBackfill
    # The user's retention (docs/MEMORY.md "Retention"): the rules in force, the last daily pass and, per project it
    # limits, what it would remove now; `inForce: false` when none is set (nothing is ever deleted then).
    retention: dict[str, Any] | None = None


# --------------------------------------------------------------------------- sidecar → frontend request


class PermissionOption(WireModel):
    option_id: Literal["allow_once", "allow_always", "reject_once", "reject_always"]
    name: str
    kind: str


class RequestPermissionParams(WireModel):
    """The agent wants to use a tool and the rules say ask: the frontend picks an option."""

    session_id: str
    tool_use_id: str
    tool_name: str
    tool_input: dict[str, Any]  # exactly what will run (a hook's rewrite included)
    # The call as a person reads it: the agent's own command (without env-isolation's `unset …;` prefix), the file.
    title: str | None = None
    reason: str | None = None
    options: list[PermissionOption]


class PermissionSelected(WireModel):
    outcome: Literal["selected"]
    option_id: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionCancelled(WireModel):
    outcome: Literal["cancelled"]


class RequestPermissionResult(WireModel):
    outcome: Annotated[Union[PermissionSelected, PermissionCancelled], Field(discriminator="outcome")]


class ElicitationCreateParams(WireModel):
    """A question for the user, for a frontend that said it shows forms (`initialize`'s `capabilities.elicitation.
    form`): the model's AskUserQuestion (`toolUseId` names its tool call; one field per question, `q0`, `q1`, …) or
    an MCP server's question (`requestedSchema` the server's own). The same shape as ACP's `elicitation/create`."""

    session_id: str
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, Any] | None = None
    tool_call_id: str | None = None
    url: str | None = None  # mode "url" (a frontend that said `elicitation.url`): an http(s) address only
    elicitation_id: str | None = None


class ElicitationCreateResult(WireModel):
    """`accept` with the fields' values in `content`, `decline`, or `cancel` (dismissed)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


# --------------------------------------------------------------------------- events (sidecar → frontend notifications)


class HookStartedEvent(WireModel):
    """A hook began executing."""

    session_id: str
    execution_id: str
    hook_id: str
    hook_name: str
    hook_type: str
    source: str
    event: str
    tool_use_id: str | None = None


class HookProgressEvent(WireModel):
    """One line a running hook wrote."""

    session_id: str
    execution_id: str
    hook_name: str
    event: str
    stream: Literal["stdout", "stderr"]
    line: str


class HookResponseEvent(WireModel):
    """A hook finished: outcome, exit code, timing and parsed output."""

    session_id: str
    execution_id: str
    hook_id: str
    hook_name: str
    hook_type: str
    source: str
    event: str
    outcome: Literal["success", "blocked", "error", "timeout", "cancelled"]
    exit_code: int | None = None
    duration_ms: float
    output: dict[str, Any] | None = None
    stdout: str | None = None
    stderr: str | None = None
    error: str | None = None
    traceback: str | None = None
    fail_closed: bool = False
    background: bool = False
    enforced: bool = False


class ProjectRef(WireModel):
    name: str
    path: str


class ProjectContextChangeEvent(WireModel):
    """The session's active project changed."""

    session_id: str
    project: ProjectRef
    reason: str


class ContextSummaryUpdatedEvent(WireModel):
    """A new summary of the session's context is available."""

    session_id: str
    summary: str = Field(max_length=4000)
    trigger: Literal["manual", "auto"]


class SandboxStatusEvent(SandboxInfo):
    """A session started: whether its agent runs sandboxed (as in session/new's result), for the UI to show."""

    session_id: str


class NotificationEvent(WireModel):
    """Something the user should see (from a Notification hook or the agent)."""

    session_id: str
    title: str | None = None
    message: str
    notification_type: str | None = None


class UserMessageUpdate(WireModel):
    session_update: Literal["user_message"]
    text: str
    replay: bool = False  # true: from a loaded session's history (session/load), not a prompt running now


class AgentMessageChunkUpdate(WireModel):
    session_update: Literal["agent_message_chunk"]
    text: str
    # Inside a subagent: the id of the Agent (Task) tool call that runs it. Absent for the main agent.
    parent_tool_use_id: str | None = Field(default=None, exclude_if=lambda v: v is None)


class AgentThoughtChunkUpdate(WireModel):
    session_update: Literal["agent_thought_chunk"]
    text: str
    # Inside a subagent: the id of the Agent (Task) tool call that runs it. Absent for the main agent.
    parent_tool_use_id: str | None = Field(default=None, exclude_if=lambda v: v is None)


class ToolCallUpdate(WireModel):
    session_update: Literal["tool_call"]
    tool_use_id: str
    name: str
    input: dict[str, Any]
    # Inside a subagent: the id of the Agent (Task) tool call that runs it. Absent for the main agent.
    parent_tool_use_id: str | None = Field(default=None, exclude_if=lambda v: v is None)


class ToolCallStatusUpdate(WireModel):
    session_update: Literal["tool_call_update"]
    tool_use_id: str
    status: Literal["completed", "failed", "denied"]
    output: Any = None
    is_error: bool = False
    # Inside a subagent: the id of the Agent (Task) tool call that runs it. Absent for the main agent.
    parent_tool_use_id: str | None = Field(default=None, exclude_if=lambda v: v is None)


class ResultUpdate(WireModel):
    session_update: Literal["result"]
    stop_reason: StopReason
    terminal_reason: str | None = None
    result_text: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int
    num_turns: int
    # How full the conversation is after the turn (the last model request's tokens, its answer included) and the
    # model's context window, as the CLI reports them (ACP clients get them as `usage_update`).
    context_used: int | None = None
    context_size: int | None = None


class CurrentModeUpdate(WireModel):
    """The session's permission mode changed (`session/set_mode`)."""

    session_update: Literal["current_mode_update"]
    current_mode_id: str


class AvailableCommand(WireModel):
    name: str
    description: str


class AvailableCommandsUpdate(WireModel):
    """The slash commands the session's CLI offers (Claude Code's and the project's `.claude/commands`)."""

    session_update: Literal["available_commands_update"]
    available_commands: list[AvailableCommand]


class NoticeUpdate(WireModel):
    """What Claude Code shows the user beside the conversation: a hook's `systemMessage`, a prompt a hook blocked,
    a hook that failed or timed out, an MCP server that failed to start, the CLI's own tagged notices to its user
    (`cli`: auto mode that cannot check actions here, a permission rule it could not save, ...)."""

    session_update: Literal["notice"]
    level: Literal["info", "warning", "error"]
    text: str
    source: Literal["hook", "permission", "mcp", "cli"]
    event: str | None = None
    hook_name: str | None = None
    tool_use_id: str | None = None


class TaskPlanEntry(WireModel):
    content: str  # the task's subject
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"]


class TaskPlanUpdate(WireModel):
    """The agent's task list as its Task tools (TaskCreate, TaskUpdate) left it, every entry each time; sent after
    the call's `tool_call_update` when the call succeeded and changed the list."""

    session_update: Literal["plan"]
    entries: list[TaskPlanEntry]


class SessionInfoUpdate(WireModel):
    """The session got its title (its first prompt's first line, redacted, as `session/list` shows it)."""

    session_update: Literal["session_info_update"]
    title: str | None = None
    updated_at: str | None = None


SessionUpdateBody = Annotated[
    Union[UserMessageUpdate, AgentMessageChunkUpdate, AgentThoughtChunkUpdate, ToolCallUpdate, ToolCallStatusUpdate,
          ResultUpdate, CurrentModeUpdate, AvailableCommandsUpdate, NoticeUpdate, SessionInfoUpdate, TaskPlanUpdate],
    Field(discriminator="session_update"),
]


class SessionUpdateEvent(WireModel):
    """Progress of a running prompt; `update.sessionUpdate` says which kind."""

    session_id: str
    update: SessionUpdateBody
