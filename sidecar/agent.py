"""One agent session on claude-agent-sdk: starts the CLI, routes its hook callbacks and permission asks to our seams, and turns its messages into session updates.

Exceptions::

    AgentError(RuntimeError)
    ├── AgentNotStarted          prompt()/cancel() before start() or after close()
    └── TurnInProgress           prompt() while another turn of this session runs
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import time
import uuid
import warnings
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from hooks.tracing import TRACE_KEY
from hooks.types import ALL_EVENTS
from sidecar.task_plan import TaskPlan

if TYPE_CHECKING:  # claude_agent_sdk costs ~600 ms to import: only start() pays for it
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

log = logging.getLogger(__name__)

# Every hook event of the bundled CLI: it calls an SDK callback back for each (measured on 2.1.330: the Python SDK
# passes event names through unchecked), at its own moment and with its own input. SessionStart on startup and
# resume, and SessionEnd but for `/clear`, are the sidecar's to fire (the CLI never calls those back).
SDK_HOOK_EVENTS: tuple[str, ...] = ALL_EVENTS

STEER_FOLLOW_S = 5.0  # how long a turn waits for the cycle a steered message starts (it normally starts at once)
# Turns background hooks (asyncRewake) may start between two of the user's prompts; a further wake waits for the
# next prompt, with a notice. Claude Code sets no such limit: a hook that wakes every woken turn would loop.
MAX_WAKES_BETWEEN_PROMPTS = 3
# What a session that could not start says of the CLI's own words: its last stderr lines, each cut to this length.
STDERR_TAIL_LINES = 8
MAX_STDERR_LINE = 1000
SHOWN_WAIT_S = 0.25  # how long a subagent's hook waits for its tool call to be shown (normally: one loop turn)

# Events whose block means the prompt (a message, a slash command, `/compact`) does nothing: the turn's stop reason
# says "blocked" so the frontend knows a hook stopped it.
PROMPT_GATES = frozenset({"UserPromptSubmit", "UserPromptExpansion", "PreCompact"})

# Given to the CLI on every start, whatever setting_sources says: a settings file must never
# run hooks of its own, the sidecar's runner owns hook execution (docs/SDK_NOTES.md).
NO_SETTINGS_HOOKS = '{"disableAllHooks": true}'

# Starts the CLI with exactly AgentConfig.env when AgentConfig.clean_env is set (see the script).
CLI_EXEC = Path(__file__).resolve().parent / "cli_exec.sh"
# Variables the SDK itself sets on the CLI's environment (subprocess_cli.connect): they must survive cli_exec.sh.
SDK_SET_ENV = ("CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION", "CLAUDE_AGENT_SDK_CLIENT_APP",
               "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", "PWD", "TRACEPARENT", "TRACESTATE")

INTERRUPT_ON_CANCEL_S = 1.0  # a cancelled turn waits this long, at most, for the CLI to acknowledge the interrupt

_SUMMARY_RE = re.compile(r"Summary:\n(?P<summary>.*?)(?:\n\nIf you need specific details|\Z)", re.S)
_CONTINUATION_PREFIX = "This session is being continued from a previous conversation"


# How the CLI spells a server's and a tool's name inside a tool name (mcp__<server>__<tool>).
_MCP_NAME = re.compile(r"[^a-zA-Z0-9_-]")


class AgentError(RuntimeError):
    pass


class AgentNotStarted(AgentError):
    pass


class SteerPending(AgentError):
    """A steering message is still owed its answer: one at a time (the CLI may fold two into one cycle)."""


class TurnInProgress(AgentError):
    pass


# --------------------------------------------------------------------------- seams


class HookBridge(Protocol):
    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        """Run our hooks for one CLI hook event; return Claude Code hook output JSON (``continue``, ``decision``, ``hookSpecificOutput``...)."""
        ...

    def budget_s(self, event: str) -> float:
        """The longest ``fire`` may take for this event."""
        ...

    async def elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        """Answer an MCP server's elicitation the CLI hands the host (its `elicitation` control request):
        ``{"action": "accept" | "decline" | "cancel", "content"?: {...}}``."""
        ...


@dataclass(slots=True)
class PermissionAnswer:
    allow: bool
    updated_input: dict[str, Any] | None = None
    message: str = ""  # the model sees this when allow is False
    interrupt: bool = False  # deny and also stop the turn
    # Allow and switch the session's permission mode with it (a plan approved: "acceptEdits" or "default"), through
    # the CLI's own permission update, so the CLI leaves plan mode for that mode and not for the one before it.
    set_mode: str | None = None


class PermissionAsker(Protocol):
    async def ask(
        self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None, reason: str | None,
        *, suggestions: list[Any] | None = None,
    ) -> PermissionAnswer: ...


UpdateSink = Callable[[dict[str, Any]], Awaitable[None]]
CompactSink = Callable[[str, str], Awaitable[None]]  # (summary, trigger)
NotificationSink = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class AgentConfig:
    project_dir: Path
    session_id: str  # a UUID is passed to the CLI as its session id; anything else lets the CLI choose
    model: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    permission_mode: str | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    system_prompt: str | None = None  # None or "": Claude Code's own system prompt; otherwise it replaces it
    system_prompt_append: str | None = None  # the client's instructions after the system prompt (ACP "append")
    append_context: str | None = None  # text appended to the system prompt (SessionStart context goes to the conversation instead)
    include_partial_messages: bool = True
    # [] = SDK isolation mode: no settings file (and so no CLAUDE.md) is read by the CLI.
    setting_sources: list[str] = field(default_factory=list)
    max_turns: int | None = None
    resume: str | None = None
    # With `resume`: the CLI continues a copy of that conversation under `session_id` (Claude Code's --fork-session)
    fork: bool = False
    hook_margin_s: float = 5.0
    close_timeout_s: float = 10.0
    cli_path: str | None = None
    # True: `env` is the CLI's whole environment (nothing inherited from the sidecar); False: set on top of it.
    clean_env: bool = False
    # The CLI's `sandbox` settings (sidecar/sandbox.py), merged into the flag settings; None leaves them out.
    sandbox: dict[str, Any] | None = None
    # The OS boundary the CLI starts inside (sidecar.boundary.Boundary; needs clean_env); None: none.
    boundary: Any = None
    # Without a box: the model relay that keeps the credential out of the CLI (sidecar.model_credential.ModelRelay).
    model_relay: Any = None
    # MCP servers the client brought (ACP `mcpServers`), in the SDK's shape: name -> {type, command|url, ...}.
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    # The hook events the CLI calls back for; None: every event the SDK can deliver. An event no hook listens to
    # costs the CLI a round trip to the sidecar on every occurrence, for nothing.
    hook_events: frozenset[str] | None = None
    # Hooks the CLI runs itself (an organization's managed hooks, hooks/hookset.py): with any, the CLI reports its
    # own hook runs in its stream and the session's hook observer sees them (sidecar/cli_hook_events.py).
    cli_hooks: list[Any] = field(default_factory=list)
    # Claude Code plugins the CLI must not load (flag settings `enabledPlugins: false`, which outrank every settings
    # file): a project's plugin before the project is trusted, a user's plugin changed since it was trusted.
    disabled_plugins: list[str] = field(default_factory=list)
    # The client's other workspace folders (ACP `additionalDirectories`): the CLI's `--add-dir`.
    add_dirs: list[str] = field(default_factory=list)
    # The flag settings' `env` of built-in env-isolation (sidecar/shell_isolation.py): every command through Orion's
    # shell prefix, the agent's command as written (or, where the prefix has no safe place, only BASH_ENV pinned and
    # env-isolation rewrites). Empty: env-isolation is off.
    shell_env: dict[str, str] = field(default_factory=dict)
    # A trusted project's permission rules ({"allow"|"ask"|"deny": [...]}) for the flag settings, when the CLI's own
    # config (the user's) has not trusted the project and would ignore them (sidecar/sessions.py).
    permission_rules: dict[str, list[str]] = field(default_factory=dict)
    # A member of an agent team the app runs ({"name", "team"}): the CLI starts as that teammate.
    teammate: dict[str, str] | None = None


@dataclass(slots=True)
class TurnResult:
    stop_reason: str
    result_text: str = ""
    terminal_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int = 0
    num_turns: int = 0
    is_error: bool = False
    # What the conversation holds after the turn (the last model request's tokens, its answer included) and the
    # model's context window, as the CLI reports them; None when it reported none.
    context_used: int | None = None
    context_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stopReason": self.stop_reason,
            "terminalReason": self.terminal_reason,
            "resultText": self.result_text,
            "usage": self.usage,
            "costUsd": self.cost_usd,
            "durationMs": self.duration_ms,
            "numTurns": self.num_turns,
            "isError": self.is_error,
            "contextUsed": self.context_used,
            "contextSize": self.context_size,
        }


# --------------------------------------------------------------------------- pure helpers


async def _chain(first: Any, rest: Any) -> Any:
    """`first`, then what `rest` (an async iterator) yields."""
    yield first
    async for item in rest:
        yield item


def _tokens_in(usage: dict[str, Any]) -> int | None:
    """A model request's whole context: what it read (fresh, cached, written to cache) and what it wrote."""
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
    try:
        total = sum(int(usage.get(key) or 0) for key in keys)
    except (TypeError, ValueError):
        return None
    return total if any(key in usage for key in keys) else None


def _context_window(model_usage: Any) -> int | None:
    """The largest context window among the models the turn used (the CLI's `modelUsage[*].contextWindow`)."""
    if not isinstance(model_usage, dict):
        return None
    sizes = [m.get("contextWindow") for m in model_usage.values() if isinstance(m, dict)]
    sizes = [int(n) for n in sizes if isinstance(n, (int, float)) and n > 0]
    return max(sizes) if sizes else None


def to_sdk_hook_output(output: dict[str, Any] | None) -> dict[str, Any]:
    """Claude Code hook JSON -> the Python SDK's callback shape (``continue`` and ``async`` are keywords there)."""
    if not output:
        return {}
    renamed = {"continue": "continue_", "async": "async_"}
    return {renamed.get(key, key): value for key, value in output.items()}


def is_deny(output: dict[str, Any] | None) -> bool:
    specific = (output or {}).get("hookSpecificOutput") or {}
    return specific.get("permissionDecision") == "deny" or (output or {}).get("decision") == "block"


def compaction_summary(text: str) -> str | None:
    """The summary inside the user message the CLI writes after a compaction, or None if ``text`` is not one."""
    if not text.startswith(_CONTINUATION_PREFIX):
        return None
    found = _SUMMARY_RE.search(text)
    return found.group("summary").strip() if found else ""


def tool_result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return str(content)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def clean_cli_launch(env: dict[str, str], cli_path: str | None) -> tuple[dict[str, str], str]:
    """(env, cli_path) for the SDK so the CLI starts with exactly `env` (plus what the SDK sets), through cli_exec.sh."""
    keep = sorted({*env, *SDK_SET_ENV})
    launch = {**env, "ORION_CLI_EXEC_REAL": cli_path or bundled_cli_path(), "ORION_CLI_ENV_KEEP": " ".join(keep)}
    return launch, str(CLI_EXEC)


# --------------------------------------------------------------------------- the session


class AgentSession:
    def __init__(
        self,
        config: AgentConfig,
        bridge: HookBridge,
        asker: PermissionAsker,
        on_update: UpdateSink,
        on_compact: CompactSink | None = None,
        on_notification: NotificationSink | None = None,
    ) -> None:
        self.config = config
        self._bridge = bridge
        self._asker = asker
        self._on_update = on_update
        self._on_compact = on_compact
        self._on_notification = on_notification
        self._client: ClaudeSDKClient | None = None
        self._turn_running = False
        self._cancelled = False
        self._prompt_blocked = False
        self._denied: set[str] = set()
        # The plan the model gave ExitPlanMode, by tool call: the CLI hands the permission check the call without it
        # (it reads the plan from its plan file), and the user approves the plan, so the request shows it.
        self._plans: dict[str, str] = {}
        self._last_usage: dict[str, Any] = {}  # the main agent's last model answer's usage (what the context holds)
        self._pending_compact_trigger: str | None = None
        self.cli_session_id: str | None = None
        self.cli_pid: int | None = None
        self._commands_sent: list[dict[str, str]] | None = None
        self._task_plan = TaskPlan()  # the agent's Task tools' list, sent as `plan` updates (sidecar/task_plan.py)
        # A subagent's tool calls shown so far (their `tool_call` update sent), and who waits for one to be.
        self._tools_shown: OrderedDict[str, None] = OrderedDict()
        # Steering (`steer`): messages pushed into the running turn whose answers the turn still owes, and how many
        # questions to the user (permissions) are open, which a steer must not interrupt.
        self._steer_uuid: str | None = None  # the steered message the turn still owes an answer
        # Between turns the CLI may still talk: a background task's end starts a cycle of its own. Read and shown
        # as it happens (`_read_while_idle`), not held until the next prompt.
        self._idle_reader: asyncio.Task[None] | None = None
        self._idle_scope: anyio.CancelScope | None = None
        self._asking = 0
        self._wakes = 0  # turns background hooks started since the user's last prompt (tell_model)
        self._tool_waiters: dict[str, anyio.Event] = {}
        self._commands_key: tuple[Any, ...] | None = None
        self._trace_usage: dict[str, Any] = {}  # the current model request's token usage, when tracing is on
        self._box: Any = None  # the open boundary (sidecar.boundary.Box) while the CLI runs inside it
        self._relay: Any = None  # without a box: the open model relay (sidecar.model_credential.OpenRelay)
        self._cli_hooks: Any = None  # sidecar.cli_hook_events.CliHookReporter, made on the first CLI hook report
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)  # the CLI's last stderr lines (redacted)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, on_spawn: Callable[[], None] | None = None) -> None:
        """Spawn the CLI and connect to it; `on_spawn` is called as soon as its process exists (what the session
        does while the CLI boots can begin then)."""
        if self._client is not None:
            return
        from sidecar import sdk_loader, supervisor

        # Nothing the CLI starts may outlive the sidecar: the CLI and its commands carry the sidecar's token,
        # its home is on record before the CLI writes prompts there, its pid right after the spawn.
        self.config.env = {**self.config.env, **supervisor.child_env()}
        supervisor.claim_home(self.config.env.get("HOME"))
        if self.config.boundary is not None and self._box is None:
            # The box's folder, argument file and relays exist before the CLI does (sidecar/boundary.py).
            self._box = await anyio.to_thread.run_sync(self.config.boundary.open)
        elif self.config.model_relay is not None and self._relay is None:
            # No box, and still no credential in the CLI: it reaches the model through the relay's socket.
            self._relay = await anyio.to_thread.run_sync(self.config.model_relay.open)
            self.config.env = {**self.config.env, "ANTHROPIC_UNIX_SOCKET": self._relay.socket}
        options = self.build_options()
        transport = None
        client = None
        try:
            with warnings.catch_warnings():
                # We register can_use_tool and allowed_tools together on purpose: allowed tools skip the ask.
                warnings.filterwarnings("ignore", message="can_use_tool will not be invoked")
                # The CLI first, with the SDK's transport alone; the rest of the SDK imports while it boots
                # (sidecar/sdk_loader.py).
                transport = sdk_loader.spawn_transport(options)
                await transport.connect()
                # Private SDK attribute, read only to verify and, if need be, finish the CLI's exit in close().
                self.cli_pid = getattr(getattr(transport, "_process", None), "pid", None)
                supervisor.track(self.cli_pid)
                if on_spawn is not None:
                    on_spawn()
                # Without the SDK's mcp stack unless an in-process MCP server needs it (sidecar/sdk_loader.py).
                in_process_mcp = any(isinstance(server, dict) and server.get("type") == "sdk"
                                     for server in (self.config.mcp_servers or {}).values())
                client_class = await anyio.to_thread.run_sync(sdk_loader.load_client, in_process_mcp)
                client = client_class(options, transport=transport)
                await client.connect()
        except BaseException:
            # Failed or cancelled half-way (session/new cancelled, shutdown): a CLI already spawned goes too.
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.config.close_timeout_s):
                with contextlib.suppress(Exception):
                    if client is not None:
                        await client.disconnect()
                    if transport is not None:
                        await transport.close()
                self._close_box()
            raise
        self._client = client
        self._serve_elicitations(getattr(client, "_query", None))

    def build_options(self) -> ClaudeAgentOptions:
        from claude_agent_sdk.types import ClaudeAgentOptions, HookMatcher  # not the package: sidecar/sdk_loader.py

        cfg = self.config
        hooks = {
            event: [
                HookMatcher(
                    matcher=None,
                    hooks=[self._hook_callback(event)],
                    timeout=self._bridge.budget_s(event) + cfg.hook_margin_s,
                )
            ]
            for event in SDK_HOOK_EVENTS
            if cfg.hook_events is None or event in cfg.hook_events
        }
        env, cli_path = self._cli_env_and_path()
        return ClaudeAgentOptions(
            cwd=str(cfg.project_dir),
            add_dirs=list(cfg.add_dirs),
            env=env,
            model=cfg.model,
            permission_mode=cfg.permission_mode,  # type: ignore[arg-type]
            allowed_tools=list(cfg.allowed_tools),
            disallowed_tools=list(cfg.disallowed_tools),
            system_prompt=self._system_prompt(),
            include_partial_messages=cfg.include_partial_messages,
            include_hook_events=bool(cfg.cli_hooks),
            setting_sources=list(cfg.setting_sources),  # type: ignore[arg-type]
            mcp_servers=dict(cfg.mcp_servers),  # type: ignore[arg-type]
            settings=self._flag_settings(),
            hooks=hooks,  # type: ignore[arg-type]
            can_use_tool=self._can_use_tool,
            # A resumed conversation keeps its id; a fork names the copy's (the CLI accepts --session-id then).
            session_id=cfg.session_id if (_is_uuid(cfg.session_id) and (not cfg.resume or cfg.fork)) else None,
            resume=cfg.resume,
            fork_session=cfg.fork,
            max_turns=cfg.max_turns,
            # The CLI records a conversation's system prompt on its first request and sends that record on every
            # later request and resume, "even when a later launch passes different text" (2.1.330's own help): a
            # client's instructions given again on load or fork would be ignored. With the client's words in the
            # prompt, it is rendered from this launch's options instead.
            extra_args=self._extra_args(),
            cli_path=cli_path,
            stderr=self._cli_stderr,
        )

    def _extra_args(self) -> dict[str, str | None]:
        cfg = self.config
        args: dict[str, str | None] = {}
        if cfg.system_prompt or cfg.system_prompt_append:
            args["system-prompt-snapshot"] = "off"
        if cfg.teammate:
            # Claude Code's own teammate launch (a team's member process): with it the CLI fires TeammateIdle as the
            # session is about to go idle, with `teammate_name` and `team_name` (measured on 2.1.330).
            name, team = cfg.teammate["name"], cfg.teammate["team"]
            args.update({"agent-id": f"{name}@{team}", "agent-name": name, "team-name": team})
        return args

    def _flag_settings(self) -> str:
        """NO_SETTINGS_HOOKS plus the sandbox, the plugins held back, the shell prefix's variables and a trusted
        project's rules the CLI would otherwise ignore: flag settings outrank the user's, project and local ones, so
        none of them can undo these."""
        cfg = self.config
        if cfg.sandbox is None and not cfg.disabled_plugins and not cfg.shell_env and not cfg.permission_rules:
            return NO_SETTINGS_HOOKS
        flags: dict[str, Any] = json.loads(NO_SETTINGS_HOOKS)
        if cfg.shell_env:
            flags["env"] = dict(cfg.shell_env)
        if cfg.permission_rules:
            flags["permissions"] = {kind: list(rules) for kind, rules in cfg.permission_rules.items()}
        if cfg.sandbox is not None:
            flags["sandbox"] = cfg.sandbox
        if cfg.disabled_plugins:
            flags["enabledPlugins"] = {plugin_id: False for plugin_id in cfg.disabled_plugins}
        return json.dumps(flags)

    def _cli_env_and_path(self) -> tuple[dict[str, str], str | None]:
        cfg = self.config
        if not cfg.clean_env and self._box is None:
            return dict(cfg.env), cfg.cli_path
        launch, path = clean_cli_launch(cfg.env, cfg.cli_path)
        if self._box is not None:
            launch.update(self._box.launch_env())  # cli_exec.sh's alone: not kept for the CLI
        return launch, path

    def _close_box(self) -> None:
        box, self._box = self._box, None
        if box is not None:
            box.close()
        relay, self._relay = self._relay, None
        if relay is not None:
            relay.close()

    def _system_prompt(self) -> Any:
        """Claude Code's system prompt (or the client's replacement), then the client's appended instructions, then
        Orion's own context (the boundary's note): the client cannot push Orion's words out by replacing."""
        extra = "\n\n".join(part.strip() for part in (self.config.system_prompt_append, self.config.append_context)
                             if part and part.strip())
        if self.config.system_prompt:
            return self.config.system_prompt + ("\n\n" + extra if extra else "")
        preset: dict[str, Any] = {"type": "preset", "preset": "claude_code"}
        if extra:
            preset["append"] = extra
        return preset

    async def close(self) -> None:
        """Disconnect; afterwards the CLI process is gone (killed if it outlived the bound)."""
        await self._stop_idle_reader()
        client, self._client = self._client, None
        if client is None:
            return
        with anyio.move_on_after(self.config.close_timeout_s):
            try:
                await client.disconnect()
            except Exception:  # noqa: BLE001 - closing must not fail the caller; the pid check below decides
                log.exception("disconnect of session %s failed", self.config.session_id)
        if self.cli_pid is not None and _alive(self.cli_pid):
            log.warning("CLI %s outlived disconnect; killing it", self.cli_pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.cli_pid, signal.SIGKILL)
        self._close_box()

    def alive(self) -> bool:
        """Started, not closed, and its CLI process still there."""
        return self._client is not None and (self.cli_pid is None or _alive(self.cli_pid))

    @property
    def running(self) -> bool:
        return self._turn_running

    # ------------------------------------------------------------------ turns

    async def prompt(self, text: str, blocks: list[dict[str, Any]] | None = None) -> TurnResult:
        """Run one turn. ``blocks``: Claude content blocks (images, ...) sent instead of ``text``, which still is
        what the user said (the frontend's echo, hooks' ``prompt``)."""
        if self._client is None:
            raise AgentNotStarted("start() the session first")
        if self._turn_running:
            raise TurnInProgress("a turn is already running in this session")
        from claude_agent_sdk.types import ResultMessage  # not the package: sidecar/sdk_loader.py

        client = self._client  # close() may clear self._client while this turn is still winding down
        self._turn_running, self._cancelled, self._prompt_blocked = True, False, False
        self._wakes = 0
        await self._stop_idle_reader()
        started = time.monotonic()
        try:
            await self._emit({"sessionUpdate": "user_message", "text": text})
            prompt_uuid = str(uuid.uuid4())
            await client.query(_one_user_message(blocks if blocks else text, prompt_uuid))
            result: TurnResult | None = None
            previous: TurnResult | None = None
            while True:
                messages = client.receive_response().__aiter__()
                if previous is not None:
                    # A steered message answers in a cycle of its own, after the result before it (the cycle it cut
                    # short, or the one that had ended; measured on 2.1.330). A message the CLI dropped (a hook
                    # refused it) starts none: the turn does not wait for it past STEER_FOLLOW_S.
                    first = None
                    with anyio.move_on_after(STEER_FOLLOW_S):
                        first = await messages.__anext__()
                    if first is None:
                        result = previous
                        break
                    messages = _chain(first, messages)
                answer = None
                async for message in messages:
                    if isinstance(message, ResultMessage):
                        answer = message
                    else:
                        await self._translate(message)
                if answer is None:
                    break  # the stream ended: the CLI went away
                whose = _answers(answer, prompt_uuid, self._steer_uuid)
                if whose == "other" and not self._cancelled:
                    # A cycle the CLI ran on its own (a background task's notification, read late): its messages
                    # were shown; this prompt's answer is still to come (without this, each later prompt would
                    # return the answer meant for the one before it).
                    log.info("session %s: a %s cycle answered before this prompt's", self.config.session_id,
                             ((getattr(answer, "origin", None) or {}).get("kind")) or "CLI-started")
                    continue
                result = self._turn_result(answer)
                if whose == "prompt" and self._steer_uuid is not None and not self._cancelled:
                    previous, result = result, None
                    continue
                break
            if result is None:
                # The stream ended without a result: the CLI went away mid-turn.
                result = TurnResult(
                    stop_reason="cancelled" if self._cancelled else "error",
                    duration_ms=int((time.monotonic() - started) * 1000),
                    is_error=not self._cancelled,
                )
            await self._finish_compaction()
            await self._emit({"sessionUpdate": "result", **_without(result.to_dict(), "isError")})
            return result
        except anyio.get_cancelled_exc_class():
            # Whoever awaited the turn gave up (request cancelled, frontend gone): stop the CLI's work as well,
            # or its tool runs on unseen and a later disconnect waits for it.
            with anyio.move_on_after(INTERRUPT_ON_CANCEL_S, shield=True):
                self._cancelled = True
                try:
                    await client.interrupt()
                except Exception:  # noqa: BLE001 - best effort: it must not replace the cancellation being raised
                    log.warning("interrupt after a cancelled turn failed", exc_info=True)
            raise
        finally:
            self._turn_running = False
            self._steer_uuid = None
            self._read_while_idle(client)

    def _read_while_idle(self, client: Any) -> None:
        if self._idle_reader is None and self._client is client and client is not None:
            self._idle_scope = anyio.CancelScope()
            self._idle_reader = asyncio.get_running_loop().create_task(
                self._read_idle(client, self._idle_scope), name=f"idle-reader {self.config.session_id}")

    async def _stop_idle_reader(self) -> None:
        task, self._idle_reader = self._idle_reader, None
        scope, self._idle_scope = self._idle_scope, None
        if task is not None and scope is not None:
            scope.cancel()  # an anyio scope: it waits out the shielded handling of a message already taken
            with anyio.CancelScope(shield=True):
                await asyncio.gather(task, return_exceptions=True)

    async def _read_idle(self, client: Any, scope: anyio.CancelScope) -> None:
        """What the CLI says while no prompt runs (a cycle it started for a background task's notification): shown
        to the client as it comes. Cancelled when the next prompt starts, only while waiting for a message (the
        stream gives none up then); a message taken is handled whole. Its result answers no prompt."""
        from claude_agent_sdk.types import ResultMessage

        messages = client.receive_messages().__aiter__()
        try:
            with scope:
                while True:
                    message = await messages.__anext__()
                    with anyio.CancelScope(shield=True):
                        if isinstance(message, ResultMessage):
                            kind = (getattr(message, "origin", None) or {}).get("kind") or "CLI-started"
                            log.info("session %s: a %s cycle ran between prompts", self.config.session_id, kind)
                        else:
                            await self._translate(message)
        except StopAsyncIteration:
            return
        except Exception:  # noqa: BLE001 - the next prompt reads on; nothing of the turn depends on this
            log.warning("session %s: reading the CLI between prompts failed", self.config.session_id, exc_info=True)

    async def steer(self, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        """Push a message into the running turn (ACP's `_session/steering`): the CLI delivers it at once, cutting the
        current generation short (`priority: now`), or once an open question to the user is answered (`later`), and
        the turn answers only after the model has read it. False when no turn is running (the caller sends it as a
        prompt). One steer at a time: `SteerPending` while the last one is still owed its answer."""
        if self._client is None or not self._turn_running or self._cancelled:
            return False
        if self._steer_uuid is not None:
            raise SteerPending("the last steering message has not been answered yet")
        from claude_agent_sdk._internal.query import stamp_user_message

        client = self._client
        content: Any = blocks if blocks else text
        self._steer_uuid = str(uuid.uuid4())
        message = {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
                   "session_id": "default", "uuid": self._steer_uuid, "priority": "later" if self._asking else "now"}
        await self._emit({"sessionUpdate": "user_message", "text": text})
        transport = client._transport  # noqa: SLF001 - the SDK's query() has no priority; the CLI reads this field
        await transport.write(json.dumps(stamp_user_message(message, client._verbatim_prompts)) + "\n")  # noqa: SLF001
        return True

    async def tell_model(self, text: str, *, wake: bool) -> None:
        """A text from no user for the model (a background hook's late answer, hooks/late_answers.py). The CLI takes
        a host's synthetic message into the running turn's next model request, framed as not the user's input
        (`[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]`); with no turn running it waits for the next prompt
        (`shouldQuery: false`) or, with ``wake``, starts a turn of its own, which the idle reader shows (measured on
        2.1.330). Never a user's message: it cannot approve anything or pose as the user."""
        client = self._client
        if client is None or not self.alive:
            log.info("session %s: a late hook answer found no CLI to tell", self.config.session_id)
            return
        message: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": text},
                                   "parent_tool_use_id": None, "session_id": "default", "isSynthetic": True}
        if wake and not self._turn_running:
            if self._wakes >= MAX_WAKES_BETWEEN_PROMPTS:
                # A hook that wakes the model on every woken turn would spend the user's model calls for ever.
                wake = False
                await self._emit({"sessionUpdate": "notice", "level": "warning", "source": "hook",
                                  "text": f"A background hook asked to wake the model again ({self._wakes} times since "
                                          "your last prompt); what it said waits for your next prompt."})
            else:
                self._wakes += 1
        if not wake:
            message["shouldQuery"] = False  # mid-turn it still joins the next request; idle, it starts no turn
        transport = client._transport  # noqa: SLF001 - the SDK's query() cannot mark a message synthetic
        await transport.write(json.dumps(message) + "\n")

    async def set_permission_mode(self, mode: str) -> None:
        if self._client is None:
            raise AgentNotStarted("start() the session first")
        await self._client.set_permission_mode(mode)  # type: ignore[arg-type]
        self.config.permission_mode = mode

    async def set_model(self, model: str | None) -> None:
        if self._client is None:
            raise AgentNotStarted("start() the session first")
        await self._client.set_model(model)
        self.config.model = model

    async def set_effort(self, level: str | None) -> None:
        """The reasoning effort of the next requests (None: the CLI's own choice again), through the CLI's
        `apply_flag_settings` control request: a shallow merge into the flag layer, so Orion's other flag settings
        (hooks off, the sandbox) stay. Measured on 2.1.330: the next request carries `output_config.effort`, and
        hooks read it in their input's `effort.level`."""
        if self._client is None:
            raise AgentNotStarted("start() the session first")
        query = self._client._query  # noqa: SLF001 - the SDK we pin has no method for this control request
        await query._send_control_request({"subtype": "apply_flag_settings", "settings": {"effortLevel": level}})

    async def effort_levels(self, model: str | None) -> list[str]:
        """The effort levels the CLI offers for `model` (its alias, or the resolved id), or for its default model;
        [] when the CLI names none (a model without effort)."""
        if self._client is None:
            return []
        info = await self._client.get_server_info() or {}
        models = [m for m in info.get("models") or [] if isinstance(m, dict)]
        wanted = [m for m in models if model and model in (m.get("value"), m.get("resolvedModel"))]
        entry = (wanted or [m for m in models if m.get("value") == "default"] or [None])[0]
        if entry is None or not entry.get("supportsEffort"):
            return []
        return [level for level in entry.get("supportedEffortLevels") or [] if isinstance(level, str)]

    def _serve_elicitations(self, query: Any) -> None:
        """Answer the CLI's `elicitation` control requests (an MCP server asks the user something): the SDK we pin
        has no handler for them and errors, which the CLI reads as "cancel". Through this, Elicitation hooks decide
        as in Claude Code: the CLI drops a callback's "accept" (measured on 2.1.330), so the sidecar runs them here,
        where the CLI would otherwise ask its user (tests/conformance `event_elicitation`)."""
        handle = getattr(query, "_handle_control_request", None)
        if handle is None or not callable(getattr(self._bridge, "elicit", None)):
            return
        bridge = self._bridge

        async def handle_with_elicitation(request: dict[str, Any]) -> None:
            data = request.get("request") or {}
            if data.get("subtype") != "elicitation":
                await handle(request)
                return
            try:
                answer = await bridge.elicit(dict(data))
            except Exception:  # noqa: BLE001 - the server gets a cancel, as when nobody answers
                log.exception("elicitation from %s failed", data.get("mcp_server_name"))
                answer = {"action": "cancel"}
            response = {"type": "control_response",
                        "response": {"subtype": "success", "request_id": request.get("request_id"), "response": answer}}
            await query.transport.write(json.dumps(response) + "\n")

        query._handle_control_request = handle_with_elicitation

    async def register_root(self, directory: str, *, reload_claude_md: bool = False) -> str:
        """Add `directory` as a working-directory root of the running CLI (its `register_repo_root` control request):
        the CLI checks it lies strictly inside its cwd or a launch `--add-dir`, and fires DirectoryAdded (through
        the session's callback) with source "register_repo_root". Returns the root as the CLI resolved it."""
        if self._client is None:
            raise AgentNotStarted("start() the session first")
        query = self._client._query  # noqa: SLF001 - the SDK we pin has no method for this control request
        answer = await query._send_control_request({"subtype": "register_repo_root", "directory": directory,
                                                    "reload_claude_md": reload_claude_md})
        return str((answer or {}).get("directory") or directory)

    async def call_mcp_tool(self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Call a tool of one of this session's MCP servers over the CLI's own connection to it (its `mcp_call`
        control request): the server instance, approval and sign-in the agent's calls have. For mcp_tool hooks."""
        from hooks.types import McpCallFailed

        query = getattr(self._client, "_query", None)
        if query is None:
            raise McpCallFailed(f"MCP server not connected: {server} (the session's CLI is not running)",
                                not_connected=True)
        name = f"mcp__{_MCP_NAME.sub('_', server)}__{_MCP_NAME.sub('_', tool)}"
        try:
            # result_not_for_model: the hook reads the server's own content blocks, as the CLI's own mcp_tool hook
            # does (text blocks beside structured content stay; 2.1.330 says mcp_call_result_not_for_model_v1). The
            # answer is a hook's output, parsed and capped as any hook's, never handed to the model as a tool result.
            return await query._send_control_request({"subtype": "mcp_call", "tool": name, "arguments": arguments,
                                                      "result_not_for_model": True}, timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - the CLI's control error: its message says what failed
            message = str(exc)
            if message.startswith("Control request timeout"):
                raise TimeoutError(message) from None
            raise McpCallFailed(message, not_connected=message.startswith("MCP server not connected")) from None

    async def cancel(self) -> bool:
        """Interrupt the running turn; its prompt() returns stopReason "cancelled". False if nothing was running."""
        if self._client is None or not self._turn_running:
            return False
        self._cancelled = True
        await self._client.interrupt()
        return True

    def _turn_result(self, message: Any) -> TurnResult:
        if self._cancelled:
            stop = "cancelled"
        elif self._prompt_blocked:
            # The CLI reports a hook-blocked prompt as an ordinary end_turn with zero model turns.
            stop = "blocked"
        else:
            stop = message.stop_reason or ("error" if message.is_error else "end_turn")
        return TurnResult(
            stop_reason=stop,
            terminal_reason=getattr(message, "terminal_reason", None),
            result_text=message.result or "",
            usage=dict(message.usage or {}),
            cost_usd=message.total_cost_usd,
            context_used=_tokens_in(self._last_usage) if self._last_usage else _tokens_in(message.usage or {}),
            context_size=_context_window(getattr(message, "model_usage", None)),
            duration_ms=message.duration_ms,
            num_turns=message.num_turns,
            is_error=bool(message.is_error) and not self._cancelled,
        )

    # ------------------------------------------------------------------ message translation

    def _trace_stream(self, trace: Any, event: dict[str, Any]) -> None:
        """A model request's span from the stream's message_start to its message_stop, with its token usage."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            trace.start_model(message.get("model") or self.config.model)
            self._trace_usage = dict(message.get("usage") or {})
        elif kind == "message_delta":
            self._trace_usage.update(event.get("usage") or {})
        elif kind == "message_stop":
            trace.end_model(self._trace_usage)

    async def _translate(self, message: Any) -> None:
        from claude_agent_sdk.types import (AssistantMessage, HookEventMessage, StreamEvent, SystemMessage, TextBlock,
                                            ThinkingBlock, ToolResultBlock, ToolUseBlock, UserMessage)

        trace = getattr(self._bridge, "session", None)
        trace = trace.state.get(TRACE_KEY) if trace is not None else None  # hooks/tracing.py, when switched on
        if isinstance(message, StreamEvent):
            event = message.event
            if trace is not None:
                self._trace_stream(trace, event)
            if event.get("type") == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta":
                    await self._emit(self._with_parent({"sessionUpdate": "agent_message_chunk", "text": delta.get("text", "")}, message))
                elif delta.get("type") == "thinking_delta":
                    await self._emit(self._with_parent({"sessionUpdate": "agent_thought_chunk", "text": delta.get("thinking", "")}, message))
        elif isinstance(message, AssistantMessage):
            if message.parent_tool_use_id is None and isinstance(message.usage, dict) and message.usage:
                self._last_usage = message.usage
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    if trace is not None:
                        trace.start_tool(block.id, block.name)
                    if block.name == "ExitPlanMode" and isinstance(block.input.get("plan"), str):
                        self._plans[block.id] = block.input["plan"]
                        while len(self._plans) > 16:
                            self._plans.pop(next(iter(self._plans)))
                    await self._emit(
                        self._with_parent(
                            {"sessionUpdate": "tool_call", "toolUseId": block.id, "name": block.name, "input": block.input},
                            message,
                        )
                    )
                    if getattr(message, "parent_tool_use_id", None):
                        self._shown(block.id)
                elif not self.config.include_partial_messages:
                    # Without partial messages the whole block is the only chunk there is.
                    if isinstance(block, TextBlock):
                        await self._emit(self._with_parent({"sessionUpdate": "agent_message_chunk", "text": block.text}, message))
                    elif isinstance(block, ThinkingBlock):
                        await self._emit(self._with_parent({"sessionUpdate": "agent_thought_chunk", "text": block.thinking}, message))
        elif isinstance(message, UserMessage):
            if isinstance(message.content, str):
                summary = compaction_summary(message.content)
                if summary is not None:
                    await self._report_compaction(summary)
                return
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    if trace is not None:
                        trace.end_tool(block.tool_use_id, "failed" if block.is_error else "completed")
                    await self._emit(self._tool_result_update(block, message))
        elif isinstance(message, HookEventMessage):
            await self._report_cli_hook(message.data)
        elif isinstance(message, SystemMessage):
            if message.subtype == "init":
                self.cli_session_id = message.data.get("session_id")
                for server in message.data.get("mcp_servers") or []:
                    if isinstance(server, dict) and server.get("status") == "failed":
                        # A server that did not start must not stop the session, nor go unseen.
                        await self._emit({"sessionUpdate": "notice", "level": "warning", "source": "mcp",
                                          "text": f"MCP server {server.get('name')!r} failed to start; its tools are "
                                                  "not available in this session."})
                names = message.data.get("slash_commands")
                # The CLI repeats its init message every turn: the command files are read again only when the
                # list or the project's commands directory changed.
                key = (tuple(names) if isinstance(names, list) else None,
                       _mtime(self.config.project_dir / ".claude" / "commands"))
                commands = None
                if key != self._commands_key:
                    self._commands_key = key
                    commands = available_commands(names, self.config.project_dir)
                if commands is not None and commands != self._commands_sent:
                    self._commands_sent = commands
                    await self._emit({"sessionUpdate": "available_commands_update", "availableCommands": commands})
            elif message.subtype == "compact_boundary":
                metadata = message.data.get("compact_metadata") or {}
                self._pending_compact_trigger = str(metadata.get("trigger") or "auto")
            elif message.subtype == "informational" and message.data.get("tag"):
                # What the CLI tells its user beside the conversation, in its tagged notices (auto mode that cannot
                # check, a permission rule not saved, a hook callback that failed; its own `level`: info, notice,
                # warning). Untagged ones repeat what the sidecar reports itself (a prompt a hook blocked).
                text = message.data.get("content")
                if isinstance(text, str) and text.strip():
                    from hooks.redaction import redact

                    level = "warning" if message.data.get("level") in ("warning", "error") else "info"
                    await self._emit({"sessionUpdate": "notice", "level": level, "source": "cli",
                                      "text": redact(text.strip())})

    def _tool_result_update(self, block: Any, message: Any) -> dict[str, Any]:
        is_error = bool(block.is_error)
        if block.tool_use_id in self._denied:
            status = "denied"
        else:
            status = "failed" if is_error else "completed"
        update = {
            "sessionUpdate": "tool_call_update",
            "toolUseId": block.tool_use_id,
            "status": status,
            "output": tool_result_text(block.content),
            "isError": is_error,
        }
        return self._with_parent(update, message)

    @staticmethod
    def _with_parent(update: dict[str, Any], message: Any) -> dict[str, Any]:
        parent = getattr(message, "parent_tool_use_id", None)
        if parent:
            update["parentToolUseId"] = parent
        return update

    def _cli_stderr(self, line: str) -> None:
        log.debug("cli[%s]: %s", self.config.session_id, line)
        if line.strip():
            from hooks.redaction import redact

            self._stderr_tail.append(redact(line.rstrip()[:MAX_STDERR_LINE]))

    def stderr_tail(self) -> list[str]:
        """What the CLI last wrote on stderr (a few lines, redacted): why it would not start, in its own words."""
        return list(self._stderr_tail)

    async def _report_cli_hook(self, data: dict[str, Any]) -> None:
        """A run of a hook the CLI runs itself (an organization's managed hook), to the session's hook observer."""
        runner, session = getattr(self._bridge, "runner", None), getattr(self._bridge, "session", None)
        if runner is None or session is None:
            return
        if self._cli_hooks is None:
            from sidecar.cli_hook_events import CliHookReporter

            self._cli_hooks = CliHookReporter(runner, session, list(self.config.cli_hooks))
        await self._cli_hooks.report(data)

    async def _report_compaction(self, summary: str) -> None:
        trigger = self._pending_compact_trigger or "auto"
        self._pending_compact_trigger = None
        if self._on_compact is not None:
            await self._on_compact(summary, trigger)

    async def _finish_compaction(self) -> None:
        # A boundary whose summary message never arrived still is a compaction the host must hear about.
        if self._pending_compact_trigger is not None:
            await self._report_compaction("")

    async def _emit(self, update: dict[str, Any]) -> None:
        try:
            await self._on_update(update)
        except Exception:  # noqa: BLE001 - a failing subscriber must not kill the agent turn
            log.exception("on_update failed for %s", update.get("sessionUpdate"))
        plan = self._task_plan.follow(update)
        if plan is not None:
            await self._emit(plan)

    # ------------------------------------------------------------------ SDK callbacks

    def _shown(self, tool_use_id: str) -> None:
        self._tools_shown[tool_use_id] = None
        while len(self._tools_shown) > 256:
            self._tools_shown.popitem(last=False)
        waiter = self._tool_waiters.pop(tool_use_id, None)
        if waiter is not None:
            waiter.set()

    async def _after_shown(self, payload: dict[str, Any], tool_use_id: str | None) -> None:
        """A subagent's tool call is shown before its hooks run or the user is asked about it: the CLI writes the
        assistant message before it calls back, but the SDK hands the message to our reader loop while it runs the
        callback at once, so a client that puts a subagent's work in a child session (sidecar/acp/dialect.py) would
        hear of the hooks before the call. Waits only for a subagent's call (`agent_id` in the CLI's input), at most
        SHOWN_WAIT_S: the main agent's calls, and a message that never comes, cost nothing more."""
        if not tool_use_id or not payload.get("agent_id") or tool_use_id in self._tools_shown:
            return
        waiter = self._tool_waiters.setdefault(tool_use_id, anyio.Event())
        with anyio.move_on_after(SHOWN_WAIT_S):
            await waiter.wait()
        self._tool_waiters.pop(tool_use_id, None)

    def _hook_callback(self, event: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        async def callback(payload: dict[str, Any], tool_use_id: str | None, _context: Any) -> dict[str, Any]:
            await self._after_shown(payload, tool_use_id)
            try:
                output = await self._bridge.fire(event, dict(payload), tool_use_id) or {}
            except Exception:  # noqa: BLE001 - fail open, as the hook engine does for a crashing hook
                log.exception("hook bridge failed on %s", event)
                output = {}
            if event in PROMPT_GATES and (is_deny(output) or output.get("continue") is False) and (
                    event != "PreCompact" or payload.get("trigger") == "manual"):
                self._prompt_blocked = True
            if event == "PreToolUse" and is_deny(output):
                self._denied.add(str(payload.get("tool_use_id") or tool_use_id))
            if event == "Notification" and self._on_notification is not None:
                try:
                    await self._on_notification(dict(payload))
                except Exception:  # noqa: BLE001
                    log.exception("on_notification failed")
            return to_sdk_hook_output(output)

        return callback

    async def _can_use_tool(self, tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

        tool_use_id = getattr(context, "tool_use_id", None)
        if tool_name == "ExitPlanMode" and not tool_input.get("plan") and tool_use_id in self._plans:
            tool_input = {**tool_input, "plan": self._plans.pop(tool_use_id)}  # shown to the user; the CLI keeps its own
        self._asking += 1
        try:
            answer = await self._asker.ask(tool_name, tool_input, tool_use_id,
                                           getattr(context, "decision_reason", None),
                                           suggestions=_suggestions_json(getattr(context, "suggestions", None)))
        finally:
            self._asking -= 1
        if answer.allow and answer.set_mode:
            from claude_agent_sdk.types import PermissionUpdate

            self.config.permission_mode = answer.set_mode
            await self._emit({"sessionUpdate": "current_mode_update", "currentModeId": answer.set_mode})
            return PermissionResultAllow(updated_input=answer.updated_input, updated_permissions=[
                PermissionUpdate(type="setMode", mode=answer.set_mode, destination="session")])  # type: ignore[arg-type]
        if answer.allow:
            return PermissionResultAllow(updated_input=answer.updated_input)
        if tool_use_id:
            self._denied.add(tool_use_id)
        return PermissionResultDeny(message=answer.message or "The user denied this tool call.", interrupt=answer.interrupt)


def _suggestions_json(suggestions: Any) -> list[Any]:
    """The CLI's permission suggestions as it gives them to a PermissionRequest hook (the SDK hands them over as
    dataclasses or dicts)."""
    if not isinstance(suggestions, list):
        return []
    out = []
    for item in suggestions:
        if hasattr(item, "to_dict"):
            item = item.to_dict()
        if isinstance(item, dict):
            out.append(item)
    return out


async def _one_user_message(content: str | list[dict[str, Any]], message_uuid: str) -> Any:
    """A prompt as the CLI's stream input takes it, with its own uuid: the result that answers it names it
    (`user_message_uuids`), which tells it from a result of a cycle the CLI ran on its own."""
    yield {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
           "uuid": message_uuid}


def _answers(result: Any, prompt_uuid: str, steer_uuid: str | None) -> str:
    """Whose answer a result is: "steer" (it took in the steered message), "prompt" (the prompt's), or "other" (a
    cycle the CLI started itself, e.g. for a background task's notification). A result naming no message (an older
    CLI, a local command, an interrupted turn) that no other origin claims is the prompt's, as before."""
    taken = list(getattr(result, "user_message_uuids", None) or [])
    single = getattr(result, "user_message_uuid", None)
    if single:
        taken.append(single)
    if steer_uuid is not None and steer_uuid in taken:
        return "steer"
    if prompt_uuid in taken:
        return "prompt"
    origin = getattr(result, "origin", None) or {}
    if taken or (isinstance(origin, dict) and origin.get("kind") not in (None, "human")):
        return "other"
    return "prompt"


def available_commands(names: Any, project_dir: Path) -> list[dict[str, str]] | None:
    """The CLI's slash commands (its init message lists them) with a description: a project command's own
    (`description:` in its front matter, else its first line), Claude Code's for the rest."""
    if not isinstance(names, list):
        return None
    out = []
    for name in names:
        if not isinstance(name, str) or not name:
            continue
        description = _command_description(project_dir / ".claude" / "commands" / f"{name}.md") or "Claude Code command"
        out.append({"name": name, "description": description})
    return out


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _command_description(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for line in lines[1:]:
            if line.strip() == "---":
                break
            if line.lower().startswith("description:"):
                return line.split(":", 1)[1].strip().strip("'\"")[:200] or None
        lines = lines[lines.index("---", 1) + 1:] if "---" in lines[1:] else []
    first = next((line.strip().lstrip("# ") for line in lines if line.strip()), "")
    return first[:200] or None


def bundled_cli_path() -> str:
    """The CLI inside the claude-agent-sdk wheel, else `claude` on PATH (the SDK's own search order)."""
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).resolve().parent / "_bundled" / "claude"
    if bundled.is_file():
        return str(bundled)
    found = shutil.which("claude")
    if found is None:
        raise AgentError("no Claude Code CLI: neither the SDK's bundled one nor `claude` on PATH")
    return found


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers signal 0 but is gone for our purposes (its parent reaps it).
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True
