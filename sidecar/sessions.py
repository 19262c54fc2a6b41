"""SessionManager: the live agent sessions, each with its own hook set, runner, permission broker and SDK client."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pydantic

from hooks import builtin as builtin_hooks
from hooks.hookset import HookSet, load_hookset
from hooks.pruning import SessionLease, remove_session_data
from hooks.registry import HookRegistry, default_registry
from hooks.sources import read_builtin_options
from hooks.runner import HookRunner
from hooks.scoped import skill_key
from hooks.tracing import TRACE_KEY
from hooks.types import AggregateResult, SessionContext
from hooks import paths as hook_paths
from ipc.errors import (
    AuthRequired,
    ConnectionClosed,
    HookEngineError,
    InvalidParams,
    ModelUnavailable,
    ResourceNotFound,
    ServerError,
    SessionBusy,
    SessionNotFound,
)
from sidecar.hook_events import IpcHookObserver
from sidecar.session_index import SessionIndex
from sidecar.standby import Standby, StandbyPool, files_fingerprint, hookset_fingerprint

log = logging.getLogger("sidecar.sessions")

NotifyFn = Callable[[str, dict[str, Any]], Awaitable[None]]
RequestFn = Callable[[str, dict[str, Any], float], Awaitable[Any]]

SESSION_END_BUDGET_S = 1.5
CANCEL_BUDGET_S = 5.0
# Prompts that may wait behind a running turn (ACP's prompt queueing); one more is refused with -31003.
PROMPT_QUEUE_LIMIT = 16
# Ended sessions stay listed (state "ended") so a late request gets a clear answer; bounded.
MAX_ENDED_REMEMBERED = 256
# How long the ACP client may take over one of its file or terminal requests (a command can run that long).
CLIENT_TOOL_TIMEOUT_S = 600.0
# Scripted sessions' transcripts kept for `session/load` once their CLI home is gone.
KEEP_TRANSCRIPTS = 32


@dataclass(slots=True)
class SessionSettings:
    """Knobs of the session layer; the sidecar's command line can change them."""

    data_dir: Path
    permission_timeout_s: float = 120.0
    session_end_budget_s: float = SESSION_END_BUDGET_S


def build_registry(
    hookset_options: dict[str, dict[str, Any]], data_dir: Path, builtin: bool | frozenset[str] = True,
    *, defer: bool = False,
) -> HookRegistry:
    """Whatever the embedding application registered on the default registry, then the built-in hooks
    (all of them, none, or the named ones: `session/new`'s `builtinHooks`); with `defer`, built-ins that
    `builtin_hooks.resolve` builds later (a session: while its CLI boots)."""
    registry = HookRegistry()
    for extra in default_registry:
        registry.add(extra)
    if builtin is False:
        return registry
    # The built-in set last: its guards judge the input as the app's own hooks left it, never before a rewrite.
    for hook in builtin_hooks.builtin_registry(hookset_options, data_dir=data_dir, defer=defer):
        if builtin is True or hook.name in builtin:
            registry.add(hook)
    return registry


def builtin_selection(value: bool | list[str] | None) -> bool | frozenset[str]:
    """`builtinHooks` as given by the frontend: None/true all, false none, a list only those (names checked)."""
    if value is None or value is True or value is False:
        return value is not False
    from hooks.builtin import BUILTIN_HOOK_NAMES

    unknown = sorted(set(value) - set(BUILTIN_HOOK_NAMES))
    if unknown:
        raise InvalidParams(f"builtinHooks: unknown built-in hook(s) {', '.join(map(repr, unknown))}",
                            data={"unknown": unknown, "known": sorted(BUILTIN_HOOK_NAMES)})
    return frozenset(value)


def load_session_hookset(
    project_dir: Path, vault_dir: Path | None, data_dir: Path, builtin: bool | frozenset[str] = True,
    *, defer: bool = False,
) -> HookSet:
    options = read_builtin_options(project_dir, vault_dir)
    try:
        registry = build_registry(options, data_dir, builtin, defer=defer)
    except builtin_hooks.BuiltinOptionError as exc:
        raise HookEngineError(str(exc), data={"hook": exc.hook}) from None
    return load_hookset(project_dir, vault_dir, registry=registry)


DEFAULT_SETTING_SOURCES = ("user", "project", "local")


def cli_setting_sources(requested: list[str] | None, hookset: HookSet) -> dict[str, Any]:
    """The Claude Code setting sources the CLI may read: the user's always (when asked for), the project's and its
    local file only once the project is trusted, since they carry permission rules, env, MCP servers and CLAUDE.md.
    Hooks in them never run in the CLI: the flag settings' disableAllHooks outranks every file."""
    wanted = list(dict.fromkeys(requested if requested is not None else DEFAULT_SETTING_SOURCES))
    withheld = [s for s in wanted if s in ("project", "local") and not hookset.trusted]
    sources = [s for s in wanted if s not in withheld]
    reason = None
    if withheld:
        reason = ("the project is not trusted: its settings (permission rules, env, MCP servers), CLAUDE.md, agents "
                  "and skills stay out of the session until the user trusts it (hooks/list, hooks/trust)")
    return {"sources": sources, "withheld": withheld, "reason": reason}


def existing_dir(value: str, field: str) -> Path:
    """A directory the frontend named, resolved; -32602 naming the field when it is empty or not a directory."""
    path = Path(value).expanduser()
    if not value.strip() or not path.is_dir():
        raise InvalidParams(f"{field} {value!r} is not a directory", data={field: value})
    return path.resolve()


@dataclass(slots=True)
class Session:
    session_id: str
    project_dir: Path
    vault_dir: Path | None
    model: str
    context: SessionContext
    runner: HookRunner
    agent: Any  # sidecar.agent.AgentSession (imported lazily: the SDK import is slow)
    created_at: str
    state: str = "idle"  # idle | running | ended
    sandbox: Any = None  # sidecar.sandbox.SandboxStatus
    settings: dict[str, Any] = field(default_factory=dict)  # the CLI's setting sources (cli_setting_sources)
    # The project had no .claude/ when the session started: the CLI creates one (a sandbox mount point and an empty
    # .cc-writes/), which the session removes again at its end while they are still empty.
    claude_dir_was_absent: bool = False
    permission_mode: str | None = None
    client_tools: dict[str, Any] = field(default_factory=dict)  # which ACP client tools serve the agent
    current_model: str = "default"  # what the model picker shows: the session's model, or the one the user switched to
    effort: str | None = None  # the reasoning effort the user picked (None: the CLI's own choice)
    effort_levels: list[str] = field(default_factory=list)  # what the CLI offers for the current model
    end_lock: anyio.Lock = field(default_factory=anyio.Lock)
    hooks_ran_at_end: int = 0
    turn_over: anyio.Event | None = None  # set when the running turn has answered
    cancelling: bool = False  # the client cancelled the running turn, which is winding down
    # Prompt queueing: every prompt gets a number as it arrives; those waiting run in that order, one at a time, and
    # a cancel cancels the running one and every one that arrived before it (a later one still runs).
    prompts_received: int = 0
    cancelled_through: int = 0
    waiting: list[int] = field(default_factory=list)
    queue_changed: anyio.Event = field(default_factory=anyio.Event)

    def queue_moved(self) -> None:
        """Wake the prompts waiting for their turn (a turn ended, a cancel came, the session ended)."""
        changed, self.queue_changed = self.queue_changed, anyio.Event()
        changed.set()

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "sessionId": self.session_id,
            "projectDir": str(self.project_dir),
            "model": self.model,
            "state": self.state,
            "createdAt": self.created_at,
        }
        if self.vault_dir is not None:
            info["vaultDir"] = str(self.vault_dir)
        return info


@dataclass(slots=True)
class Built:
    """A session's parts before its hooks run (SessionManager._build); a prepared session waits as one of these."""

    sid: str
    project: Path
    vault: Path | None
    model: str | None
    model_name: str | None
    hookset: HookSet
    settings: dict[str, Any]
    sandbox: Any
    context: SessionContext
    runner: HookRunner
    agent: Any
    permission_mode: str | None
    client_tools: dict[str, Any]
    claude_dir_was_absent: bool
    phases: StartPhases
    setup: str | None = None  # the Setup trigger session/new asked for (fired after SessionStart, as the CLI does)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What a session is built from, as `session/new` and `session/prepare` name it (checked: directories exist)."""

    project: Path
    vault: Path | None = None
    model: str | None = None
    permission_mode: str | None = None
    allowed_tools: list[str] | None = None
    system_prompt: str | None = None
    system_prompt_append: str | None = None
    setup: str | None = None  # Claude Code's Setup trigger for this start ("init" or "maintenance"), or none
    # A member of an agent team the app runs: {"name": ..., "team": ...} (ipc.protocol_agent.Teammate), or none.
    teammate: dict[str, str] | None = None
    sandbox_mode: str | None = None
    setting_sources: list[str] | None = None
    builtin: bool | frozenset[str] = True
    mcp_servers: dict[str, Any] | None = None
    client_capabilities: dict[str, Any] | None = None
    # The client's other workspace folders (ACP `additionalDirectories`): the CLI's `--add-dir`, writable in the box.
    roots: tuple[Path, ...] = ()

    @classmethod
    def of(cls, project_dir: str, *, vault_dir: str | None = None, builtin_hooks: bool | list[str] | None = None,
           sandbox: str | None = None, additional_dirs: list[str] | None = None, **options: Any) -> SessionRequest:
        project = existing_dir(project_dir, "projectDir")
        roots = []
        for value in additional_dirs or []:
            if not Path(value).is_absolute():
                raise InvalidParams(f"additionalDirectories must be absolute paths: {value!r}",
                                    data={"additionalDirectories": additional_dirs})
            roots.append(existing_dir(value, "additionalDirectories"))
        if options.get("teammate") is not None:
            # Checked here too: a load takes it from the session index, a file.
            from ipc.protocol_agent import Teammate

            try:
                options["teammate"] = Teammate.model_validate(options["teammate"]).model_dump()
            except pydantic.ValidationError as exc:
                raise InvalidParams("teammate: name and team are Claude Code agent names (letters, digits, '_' and "
                                    "'-', at most 64)", data={"teammate": str(exc.errors()[0]["msg"])}) from None
        return cls(project=project,
                   vault=existing_dir(vault_dir, "vaultDir") if vault_dir is not None else None,
                   builtin=builtin_selection(builtin_hooks), sandbox_mode=sandbox,
                   roots=tuple(dict.fromkeys(r for r in roots if r != project)), **options)

    def key(self) -> str:
        """Every parameter: a prepared session is taken over only by an identical request."""
        canonical = {"project": str(self.project), "vault": str(self.vault) if self.vault else None,
                     "model": self.model, "permissionMode": self.permission_mode,
                     "allowedTools": list(self.allowed_tools or []), "systemPrompt": self.system_prompt,
                     "systemPromptAppend": self.system_prompt_append, "setup": self.setup,
                     "teammate": self.teammate,
                     "sandbox": self.sandbox_mode, "settingSources": self.setting_sources,
                     "builtin": sorted(self.builtin) if isinstance(self.builtin, frozenset) else self.builtin,
                     "mcpServers": self.mcp_servers or {}, "client": self.client_capabilities or {},
                     "roots": [str(r) for r in self.roots]}
        return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()


class SessionManager:
    """Creates, runs and ends sessions; everything a session does reaches the frontend through `notify`."""

    def __init__(self, settings: SessionSettings, notify: NotifyFn, request: RequestFn) -> None:
        self.settings = settings
        self._raw_notify = notify
        self._frontend_gone = False
        self._request = request
        self._sessions: dict[str, Session] = {}
        # What session/list says of an ended session: its info, not the Session (hook set, runner, context).
        self._ended: dict[str, dict[str, Any]] = {}
        self._starting: set[str] = set()
        self.index = SessionIndex(settings.data_dir)
        self._standbys = StandbyPool(self._close_built)
        # What keeps an open session's data from any sidecar's pruning (hooks/pruning.py), by session id.
        self._leases: dict[str, SessionLease] = {}

    async def _notify(self, event: str, params: dict[str, Any]) -> None:
        """Send an event; once the frontend is gone, sessions wind down quietly instead of failing every hook."""
        if self._frontend_gone:
            return
        try:
            await self._raw_notify(event, params)
        except ConnectionClosed:
            self._frontend_gone = True
            log.info("frontend connection closed; further session events are dropped")

    # ------------------------------------------------------------------ lookup

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        if session_id in self._ended:
            raise SessionNotFound(f"session {session_id} has ended", data={"sessionId": session_id, "state": "ended"})
        raise SessionNotFound(f"no session {session_id}", data={"sessionId": session_id})

    def live(self, session_id: str) -> Session:
        """A session that can still take requests; one whose end is under way answers like an ended one."""
        session = self.get(session_id)
        if session.state == "ended":
            # Still listed as live while session/end runs its SessionEnd hooks and closes the agent.
            raise SessionNotFound(f"session {session_id} has ended", data={"sessionId": session_id, "state": "ended"})
        return session

    def list(self) -> list[dict[str, Any]]:
        return [*(s.info() for s in self._sessions.values()), *self._ended.values()]

    def live_sessions(self) -> list[Session]:
        return list(self._sessions.values())

    # ------------------------------------------------------------------ create

    async def new(
        self,
        *,
        project_dir: str,
        session_id: str | None = None,
        vault_dir: str | None = None,
        model: str | None = None,
        permission_mode: str | None = None,
        allowed_tools: list[str] | None = None,
        system_prompt: str | None = None,
        system_prompt_append: str | None = None,
        setup: str | None = None,
        teammate: dict[str, str] | None = None,
        sandbox: str | None = None,
        setting_sources: list[str] | None = None,
        builtin_hooks: bool | list[str] | None = None,
        mcp_servers: dict[str, Any] | None = None,
        resume: bool = False,
        client_capabilities: dict[str, Any] | None = None,
        traceparent: str | None = None,
        additional_dirs: list[str] | None = None,
        fork_from: ForkSource | None = None,
    ) -> tuple[Session, HookSet]:
        """Start a session; with ``resume``, the past session ``session_id`` goes on with its CLI conversation.

        ``client_capabilities``: an ACP client's; its files and terminals then serve the agent's tools
        (sidecar/acp/client_tools.py)."""
        request = SessionRequest.of(project_dir, vault_dir=vault_dir, builtin_hooks=builtin_hooks, sandbox=sandbox,
                                    model=model, permission_mode=permission_mode, allowed_tools=allowed_tools,
                                    system_prompt=system_prompt, system_prompt_append=system_prompt_append,
                                    setup=setup, teammate=teammate, setting_sources=setting_sources,
                                    mcp_servers=mcp_servers, client_capabilities=client_capabilities,
                                    additional_dirs=additional_dirs)
        sid = session_id or str(uuid.uuid4())
        if sid in self._sessions or sid in self._starting or (sid in self._ended and not resume):
            raise InvalidParams(f"session id {sid} is already in use", data={"sessionId": sid})
        self._starting.add(sid)
        try:
            session, hookset = await self._create(sid, request, resume=resume, fork_from=fork_from,
                                                  may_take_over=session_id is None and fork_from is None,
                                                  traceparent=traceparent)
        finally:
            self._starting.discard(sid)
        sid = session.session_id  # a prepared session that was taken over has its own
        self._ended.pop(sid, None)
        self._sessions[sid] = session
        options = {"model": model, "vaultDir": vault_dir, "permissionMode": permission_mode,
                   "allowedTools": allowed_tools, "systemPrompt": system_prompt,
                   "systemPromptAppend": system_prompt_append, "sandbox": sandbox,
                   "settingSources": setting_sources, "builtinHooks": builtin_hooks, "teammate": teammate}
        lease = await anyio.to_thread.run_sync(self._remember, sid, str(request.project), options)
        if lease is not None:
            self._leases[sid] = lease
        return session, hookset

    def _remember(self, sid: str, cwd: str, options: dict[str, Any]) -> SessionLease | None:
        """List the session, and hold its lease while it is open; a lease that cannot be taken is logged (the
        session runs regardless, and this process's passes after a session's end still skip it)."""
        self.index.record(sid, cwd, options)
        try:
            return SessionLease.hold(self.settings.data_dir, sid)
        except OSError as exc:
            log.warning("session %s: cannot hold its data's lease (%s); another sidecar may prune it", sid, exc)
            return None

    def _after_end(self, session_id: str) -> None:
        """The session's data may now be pruned by the user's retention policy (sidecar/janitor.py)."""
        from sidecar.janitor import janitor_for

        janitor_for(self.settings.data_dir).session_ended(session_id, live=self._sessions)

    async def load(self, session_id: str, project_dir: str, overrides: dict[str, Any],
                   mcp_servers: dict[str, Any] | None = None,
                   client_capabilities: dict[str, Any] | None = None, *, replay: bool = True) -> tuple[Session, HookSet]:
        """Resume a past session (by the options it was started with, `overrides` on top) and, unless `replay` is
        False (ACP's `session/resume`: the client has the history), replay its history to the frontend as
        `session/update`s: the user's prompts, the agent's messages, its tool calls and results."""
        from sidecar.transcript import history_updates

        _valid_session_id(session_id)
        if session_id in self._sessions or session_id in self._starting:
            raise InvalidParams(f"session {session_id} is live; it needs no loading", data={"sessionId": session_id})
        known = await anyio.to_thread.run_sync(self.index.get, session_id)
        if known is None:
            raise ResourceNotFound(f"no past session {session_id} in this sidecar's records",
                                   data={"sessionId": session_id})
        options, current = _restored_options(known, overrides)
        # A listed session that was never prompted has no conversation for the CLI to resume: it starts again under
        # its id, with no history (a prompt names it in the index; one that had prompts and lost its transcript is
        # still refused, rather than silently emptied).
        prompted = bool(known.get("title"))
        session, hookset = await self.new(
            project_dir=project_dir, session_id=session_id, **_as_new_kwargs(options), mcp_servers=mcp_servers,
            resume=prompted, client_capabilities=client_capabilities,
        )
        await self._restore_model(session, current, overrides)
        if replay:
            updates = await anyio.to_thread.run_sync(history_updates, Path(transcript_path(session.context)))
            for update in updates:
                await self._notify("session/update", {"sessionId": session_id, "update": update})
        return session, hookset

    async def fork(self, source_id: str, project_dir: str, overrides: dict[str, Any],
                   mcp_servers: dict[str, Any] | None = None, client_capabilities: dict[str, Any] | None = None,
                   additional_dirs: list[str] | None = None) -> tuple[Session, HookSet]:
        """A new session that goes on from a copy of `source_id`'s conversation (live or past), started with the
        source's options (`overrides` on top; as for `load`, a switch that lowers a guard is never taken from the
        index). The CLI copies the conversation under the new id (Claude Code's --fork-session); the source's
        transcript and session are left as they were. Nothing is replayed: the client has what it forked."""
        _valid_session_id(source_id)
        known = await anyio.to_thread.run_sync(self.index.get, source_id)
        if known is None:
            raise ResourceNotFound(f"no session {source_id} in this sidecar's records", data={"sessionId": source_id})
        if not known.get("title"):
            raise InvalidParams(f"session {source_id} was never prompted: it has no conversation to fork",
                                data={"sessionId": source_id})
        options, current = _restored_options(known, overrides)
        live = self._sessions.get(source_id)
        session, hookset = await self.new(
            project_dir=project_dir, **_as_new_kwargs(options), mcp_servers=mcp_servers,
            client_capabilities=client_capabilities, additional_dirs=additional_dirs,
            fork_from=ForkSource(source_id, Path(transcript_path(live.context)) if live is not None else None),
        )
        await anyio.to_thread.run_sync(functools.partial(self.index.touch, session.session_id, prompt=known["title"]))
        await self._restore_model(session, current, overrides)
        return session, hookset

    async def _restore_model(self, session: Session, current: dict[str, Any], overrides: dict[str, Any]) -> None:
        """The model the user picked last in a past session, unless this request names one."""
        if current.get("model") and overrides.get("model") is None and current["model"] != session.current_model:
            await self.set_model(session.session_id, current["model"])
        if current.get("effort") and current["effort"] != "default" and current["effort"] in session.effort_levels:
            await self.set_effort(session.session_id, current["effort"])

    async def delete(self, session_id: str) -> None:
        """Take a session off the list for good: a live one is ended first (its SessionEnd hooks run), then its
        entry in Orion's index and what Orion kept of it (its tracking files, a scripted session's CLI home) go.
        The user's own Claude Code transcripts of a real-model session stay: they are the CLI's, not Orion's."""
        _valid_session_id(session_id)
        if session_id in self._sessions:
            await self.end(session_id, "other")
        known = await anyio.to_thread.run_sync(self.index.get, session_id)
        if known is None and session_id not in self._ended:
            raise ResourceNotFound(f"no session {session_id} in this sidecar's records", data={"sessionId": session_id})
        self._ended.pop(session_id, None)
        await anyio.to_thread.run_sync(self._forget, session_id)
        self._after_end(session_id)

    def _forget(self, session_id: str) -> None:
        self.index.remove(session_id)
        # Its tracking folder, a scripted session's CLI home and archived transcript; never through a symlink.
        remove_session_data(self.settings.data_dir, session_id)

    async def _create(self, sid: str, request: SessionRequest, *, resume: bool = False,
                      fork_from: ForkSource | None = None, may_take_over: bool = False,
                      traceparent: str | None = None) -> tuple[Session, HookSet]:
        ready = None
        if may_take_over and not resume and len(self._standbys):
            ready = await self._standbys.take(request.key())
        if ready is not None:
            log.info("session %s: the CLI prepared for %s is taken over", ready.sid, request.project)
            ready.phases = StartPhases()
            try:
                return await self._activate(ready, resume=False, cli_started=True, traceparent=traceparent)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await ready.agent.close()
                    await ready.runner.aclose()
                    await close_hook_box(ready.context)
                raise
        built = await self._build(sid, request, resume=resume, fork_from=fork_from)
        # A fork starts as a resumed conversation does (SessionStart `source: "resume"`), under its own id.
        return await self._activate(built, resume=resume or fork_from is not None, cli_started=False,
                                    traceparent=traceparent)

    async def _build(self, sid: str, request: SessionRequest, *, resume: bool = False,
                     fork_from: ForkSource | None = None) -> Built:
        """Everything a session is made of, its CLI not yet started and no hook run: what `session/new` and
        `session/prepare` share."""
        project, vault, model, builtin = request.project, request.vault, request.model, request.builtin
        permission_mode, setting_sources = request.permission_mode, request.setting_sources
        sandbox_mode, mcp_servers, client_capabilities = request.sandbox_mode, request.mcp_servers, request.client_capabilities
        phases = StartPhases()
        # What starting the CLI needs of the SDK (its types and transport; the rest imports while the CLI boots,
        # sidecar/sdk_loader.py), off the event loop: an import would stall every other session and request.
        from sidecar import sdk_loader

        await anyio.to_thread.run_sync(sdk_loader.load_transport)
        phases.mark("sdk import")
        from sidecar.agent import AgentConfig, AgentSession
        from sidecar.evaluator import SdkModelClient
        from sidecar.hook_bridge import HookedAsker, RunnerBridge
        from sidecar.permissions import PermissionBroker
        from sidecar.sandbox import cli_settings
        from sidecar.sdk_env import ModelConfigError, NoCredential, build_model_env

        from hooks.executors.remote import default_llm_executors

        data_dir = self.settings.data_dir
        try:
            env, model_name, _server = build_model_env(model, data_dir, sid, setting_sources=setting_sources)
        except NoCredential as exc:
            # ACP's "authentication required": the message names every credential the user can set.
            raise AuthRequired(str(exc), data={"model": model, "reason": "noCredential"}) from None
        except ModelConfigError as exc:
            # The message names the problem, never the file's content (sdk_env); data.reason says which problem.
            raise ModelUnavailable(str(exc), data={"model": model, "reason": exc.reason}) from None

        claude_dir_was_absent = not (project / ".claude").exists()
        phases.mark("model env")
        # The built-ins' own modules are not imported yet: `_activate` builds them while the CLI boots.
        hookset = await anyio.to_thread.run_sync(functools.partial(load_session_hookset, project, vault, data_dir,
                                                                   builtin, defer=True))
        phases.mark("hook set")
        settings = cli_setting_sources(setting_sources, hookset)
        # Decided before any hook runs: a session that cannot have the sandbox it was asked for never starts.
        cli_env, sandbox = await anyio.to_thread.run_sync(functools.partial(
            confine, env, hookset, project, data_dir, sandbox_mode, roots=request.roots))
        if request.teammate:
            # Claude Code runs a team member's turn ends (TeammateIdle) only with agent teams on (measured: without
            # it a `--agent-id` process fires Stop alone).
            cli_env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"
        config_dir = cli_config_dir(cli_env)
        report_plugins(sid, hookset, config_dir, settings["sources"])
        if resume:
            transcript = cli_transcript(config_dir, project, sid)
            if model and model.startswith("scripted:"):
                await anyio.to_thread.run_sync(restore_transcript, transcript, data_dir, sid)
            if not transcript.is_file():
                raise ResourceNotFound(f"session {sid} has no conversation in {project} to resume (its CLI "
                                       "transcript is gone, or it belongs to another project)",
                                       data={"sessionId": sid, "cwd": str(project)})
        if fork_from is not None:
            source = cli_transcript(config_dir, project, fork_from.session_id)
            await anyio.to_thread.run_sync(functools.partial(
                place_fork_source, source, fork_from.live_transcript, data_dir, fork_from.session_id,
                scripted=bool(model and model.startswith("scripted:"))))
            if not source.is_file():
                raise ResourceNotFound(f"session {fork_from.session_id} has no conversation in {project} to fork "
                                       "(its CLI transcript is gone, or it belongs to another project)",
                                       data={"sessionId": fork_from.session_id, "cwd": str(project)})
        carried_rules: dict[str, list[str]] = {}
        if "project" in settings["sources"]:
            if not await anyio.to_thread.run_sync(accept_workspace_in_cli, config_dir, project, data_dir):
                # The user's own CLI config: Orion does not write it. Where it has not trusted the project, the
                # CLI would ignore the project's permission rules; the flag settings carry them.
                carried_rules = await anyio.to_thread.run_sync(
                    project_rules_for_flags, config_dir, cli_env, project, list(settings["sources"]))
        phases.mark("sandbox decision")
        notify = self._notify

        async def emit(event: str, payload: dict[str, Any]) -> None:
            await notify(event, {**payload, "sessionId": sid})

        from hooks.executors.command import SETTINGS_ENV
        from hooks.settings_env import settings_env

        hook_env = await anyio.to_thread.run_sync(settings_env, settings["sources"], project)
        context = SessionContext(session_id=sid, project_dir=project, vault_dir=vault, data_dir=data_dir, emit=emit,
                                 cli_config_dir=config_dir, state={SETTINGS_ENV: hook_env})
        runner = HookRunner(
            hookset,
            IpcHookObserver(notify, notices=True),
            executors=default_llm_executors(SdkModelClient(env, None, data_dir)),
            data_dir=data_dir,
        )
        from sidecar.hook_box import for_session
        from sidecar.sdk_env import hook_env_names

        # Command hooks that run the project's code start inside the session's boundary (sidecar/hook_box.py);
        # trust is read at each hook, so trusting the project mid-session lets the user's own hooks out again.
        context.box = for_session(sandbox, lambda: runner.hookset.trusted, hook_env_names(hookset.entries),
                                  lambda: runner.hookset.entries)
        broker = PermissionBroker(sid, self._request, self.settings.permission_timeout_s)
        if client_capabilities:  # an ACP client that shows forms gets the model's questions as one
            from sidecar.ask_user import client_offers_forms, client_offers_urls

            broker.forms = client_offers_forms(client_capabilities)
            broker.urls = client_offers_urls(client_capabilities)
        bridge = RunnerBridge(runner, context, broker)

        async def on_update(update: dict[str, Any]) -> None:
            if update.get("sessionUpdate") == "current_mode_update":  # the agent left plan mode (a plan approved)
                live = self._sessions.get(sid)
                if live is not None:
                    live.permission_mode = str(update.get("currentModeId"))
                await anyio.to_thread.run_sync(functools.partial(self.index.current, sid,
                                                                 permissionMode=update.get("currentModeId")))
            await notify("session/update", {"sessionId": sid, "update": update})

        servers, disallowed, client_tools = dict(mcp_servers or {}), [], {}
        if client_capabilities:
            from sidecar.acp.client_tools import SERVER, ClientTools, offered, wanted

            files, terminal = wanted(client_capabilities, sandboxed=sandbox.enabled)
            if files or terminal:
                ask_frontend = self._request

                async def ask_client(method: str, params: dict[str, Any]) -> Any:
                    return await ask_frontend(method, params, CLIENT_TOOL_TIMEOUT_S)

                tools = ClientTools(sid, ask_client, str(project), files=files, terminal=terminal)
                servers[SERVER] = tools.server_config()
                disallowed = tools.replaced
            client_tools = {"files": files, "terminal": terminal}
            files_offered, terminal_offered = offered(client_capabilities)
            if terminal_offered and not terminal:
                client_tools["terminalReason"] = "the session's commands run inside its OS boundary"
            if files_offered and not files:
                client_tools["filesReason"] = "the session's file tools run inside its OS boundary"
        from hooks.builtin.env_isolation import ISOLATED_BY_SHELL_PREFIX
        from sidecar.shell_isolation import managed_prefix, seen_in_box, session_flag_env, users_own_prefix

        own_prefix, managed = users_own_prefix(settings["sources"], cli_env), managed_prefix()
        # Claude Code runs a shell-form hook through its prefix too: the organization's (it outranks), else the user's.
        hook_prefix = managed or own_prefix
        if hook_prefix:
            from hooks.executors.command import SHELL_PREFIX, SHELL_PREFIX_IN_BOX

            context.state[SHELL_PREFIX] = hook_prefix
            context.state[SHELL_PREFIX_IN_BOX] = seen_in_box(hook_prefix, sandbox.boundary)
        if own_prefix and not seen_in_box(own_prefix, sandbox.boundary):
            hookset.warnings.append(
                f"Your CLAUDE_CODE_SHELL_PREFIX ({own_prefix}) is in a place the session's OS boundary hides (a secret's "
                "folder, or the host's /tmp): it does not run for the agent's commands or the boxed hooks; the "
                "commands run without it (move it, e.g. to /usr/local/bin, to have it run).")
            own_prefix = None
        shell_env = session_flag_env(hookset.registry, sandbox.boundary, cli_env, own_prefix=own_prefix,
                                     managed=managed) or {}
        if "CLAUDE_CODE_SHELL_PREFIX" in shell_env:  # env-isolation leaves the commands as written: the prefix isolates
            context.state[ISOLATED_BY_SHELL_PREFIX] = True
            log.info("session %s: env-isolation through the CLI's shell prefix %s%s", sid,
                     shell_env["CLAUDE_CODE_SHELL_PREFIX"], f", then the user's own {own_prefix}" if own_prefix else "")
        elif "ORION_SHELL_REAL" in shell_env:  # a managed prefix outranks Orion's: the CLI's shell isolates instead
            context.state[ISOLATED_BY_SHELL_PREFIX] = True
            hookset.warnings.append(
                "Your organization's managed Claude Code settings set CLAUDE_CODE_SHELL_PREFIX, which outranks Orion's "
                "own: the agent's commands are still isolated (through the CLI's shell), but a stdio MCP server the "
                "CLI starts through that prefix gets the CLI's variables, the model's address among them "
                "(docs/SECURITY.md).")
            log.info("session %s: env-isolation through the CLI's shell %s (the managed settings' prefix %s outranks "
                     "Orion's)", sid, shell_env["CLAUDE_CODE_SHELL"], managed)
        elif shell_env:
            if managed:
                hookset.warnings.append(
                    "Your organization's managed Claude Code settings set CLAUDE_CODE_SHELL_PREFIX, which outranks "
                    "Orion's own: env-isolation rewrites each Bash command instead (`unset …; <command>`), so each is "
                    "asked about as a new command (docs/SECURITY.md).")
            log.info("session %s: env-isolation rewrites Bash commands (the launcher's ORION_SHELL_PREFIX, a managed "
                     "settings' prefix, or no place for the prefix that the agent could not change)", sid)
        config = AgentConfig(
            project_dir=project,
            session_id=sid,
            model=model_name,
            env=cli_env,
            shell_env=shell_env,
            permission_rules=carried_rules,
            clean_env=True,
            sandbox=cli_settings(sandbox),
            boundary=sandbox.boundary,
            model_relay=sandbox.model_relay,
            setting_sources=list(settings["sources"]),
            permission_mode=permission_mode,
            allowed_tools=list(request.allowed_tools or []),
            system_prompt=request.system_prompt,
            system_prompt_append=request.system_prompt_append,
            mcp_servers=servers,
            disallowed_tools=disallowed,
            hook_events=callback_events(hookset),
            cli_hooks=[spec for spec in hookset.entries if spec.state == "managed"],
            disabled_plugins=sorted(hookset.held_back_plugins()),
            add_dirs=[str(r) for r in request.roots],
            teammate=request.teammate,
            resume=fork_from.session_id if fork_from is not None else (sid if resume else None),
            fork=fork_from is not None,
        )
        agent = AgentSession(config, bridge, HookedAsker(bridge, broker), on_update)
        context.mcp = agent  # mcp_tool hooks call the session's MCP servers through its CLI
        context.late_answers = agent  # a background hook's answer reaches the model afterwards, as in Claude Code
        return Built(sid=sid, project=project, vault=vault, model=model, model_name=model_name, hookset=hookset,
                     settings=settings, sandbox=sandbox, context=context, runner=runner, agent=agent,
                     permission_mode=permission_mode, client_tools=client_tools,
                     claude_dir_was_absent=claude_dir_was_absent, phases=phases, setup=request.setup)

    async def _activate(self, built: Built, *, resume: bool, cli_started: bool,
                        traceparent: str | None = None) -> tuple[Session, HookSet]:
        """Run the SessionStart hooks and, unless a prepared CLI is taken over, start the CLI beside them."""
        from sidecar.hook_bridge import PENDING_SESSION_CONTEXT

        from hooks import tracing
        from hooks.redaction import redact

        sid, context, runner, agent, phases = built.sid, built.context, built.runner, built.agent, built.phases
        # The session's span (hooks/tracing.py), when the user switched tracing on: SessionStart hooks are its children.
        trace = tracing.start_session(context.state, sid, {"orion.project": str(built.project),
                                                            "gen_ai.request.model": built.model_name,
                                                            "orion.session.resume": resume}, traceparent)
        for warning in built.hookset.warnings:
            # The settings files' problems, where the frontend shows the log (the session starts regardless),
            # redacted like every log record (a warning may quote a hook's command).
            await self._notify("log", {"level": "warning", "logger": "hooks", "message": redact(warning),
                                       "data": {"sessionId": sid, "projectDir": str(built.project)}})
        try:
            spawned = anyio.Event()
            refused: list[HookEngineError] = []  # raised after the task group: inside it, it would come wrapped

            async def session_start() -> None:
                # The built-in hooks' modules import once the CLI is spawned (they are not needed to spawn it),
                # in a thread, beside the CLI's boot; a bad built-in option fails the session start here.
                await spawned.wait()
                try:
                    await anyio.to_thread.run_sync(builtin_hooks.resolve, built.hookset.registry)
                except builtin_hooks.BuiltinOptionError as exc:
                    refused.append(HookEngineError(str(exc), data={"hook": exc.hook, "sessionId": sid}))
                    tg.cancel_scope.cancel()  # the CLI that was booting goes (agent.start closes it)
                    return
                phases.mark("built-in hooks")
                if built.hookset.active_for("InstructionsLoaded"):
                    # The memory files the CLI loads as it starts, each with its InstructionsLoaded before the
                    # SessionStart hooks, as the CLI fires them (its own call comes while it boots, before the SDK
                    # may have registered the callback: it is not counted, sidecar/hook_bridge.py).
                    for path, memory_type in await anyio.to_thread.run_sync(
                            session_start_memory, built.project, list(built.settings["sources"]),
                            context.cli_config_dir):
                        await runner.fire("InstructionsLoaded", sidecar_payload(
                            "InstructionsLoaded", context, file_path=str(path), memory_type=memory_type,
                            load_reason="session_start"), context)
                start = await runner.fire(
                    "SessionStart",
                    sidecar_payload("SessionStart", context, source="resume" if resume else "startup",
                                    **({"model": built.model_name} if built.model_name else {})),
                    context,
                )
                phases.mark("SessionStart hooks")
                if built.setup is not None:
                    # Claude Code's `--init` / `--maintenance`: its Setup hooks run as it starts, after SessionStart's
                    # (recorded); the CLI calls no callback for them (it fires them before the SDK registers one).
                    # Their context does not reach the model in an SDK session (recorded: event_setup_context).
                    await runner.fire("Setup", sidecar_payload("Setup", context, trigger=built.setup), context)
                    phases.mark("Setup hooks")
                # As in Claude Code, SessionStart context goes into the conversation, not the system prompt: the
                # CLI calls no SessionStart callback, so it rides on the first prompt (sidecar/hook_bridge.py).
                if start.additional_context:
                    context.state[PENDING_SESSION_CONTEXT] = start.additional_context
                if built.hookset.active_for("FileChanged"):
                    from sidecar.file_watch import STATE_KEY, FileWatch, named_files

                    watch = context.state[STATE_KEY] = FileWatch(runner, context, named_files(built.hookset))
                    watch.watch_paths(start.specific)
                    watch.start()

            # SessionStart hooks run while the CLI boots (~0.5 s): neither needs the other, and the first prompt,
            # which carries their context, can only come once session/new has answered, after both.
            started = anyio.Event()
            failure: list[BaseException] = []

            async def start_cli() -> None:
                try:
                    if not cli_started:
                        await agent.start(on_spawn=spawned.set)
                        phases.mark("CLI start")
                except Exception as exc:
                    failure.append(exc)
                finally:
                    spawned.set()
                    started.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(start_cli)
                await session_start()
                await started.wait()
            if refused:
                raise refused[0]
            if failure:
                exc = failure[0]
                log.error("session %s: the agent did not start", sid, exc_info=exc)
                # SessionStart hooks already ran (and may have opened per-session records): close them.
                with anyio.CancelScope(shield=True):
                    await self._fire_session_end(runner, context, "other")
                    await agent.close()
                if trace is not None:
                    trace.end("failed")
                raise ModelUnavailable(_start_failure(exc, agent), data={"sessionId": sid}) from exc
            log.info("session %s started in %s", sid, phases)
            await context.emit("sandboxStatus", built.sandbox.to_wire())
        except BaseException:
            # Failed or cancelled (session/new cancelled, shutdown): the CLI, the runner's tracking thread,
            # background hooks and python launchers must not outlive the session that never was.
            with anyio.CancelScope(shield=True):
                await close_file_watch(context)
                await agent.close()
                await runner.aclose()
                await close_hook_box(context)
            raise
        session = Session(
            session_id=sid,
            project_dir=built.project,
            vault_dir=built.vault,
            model=built.model or built.model_name or "default",
            current_model=built.model or built.model_name or "default",
            permission_mode=built.permission_mode,
            client_tools=built.client_tools,
            sandbox=built.sandbox,
            settings=built.settings,
            claude_dir_was_absent=built.claude_dir_was_absent,
            context=context,
            runner=runner,
            agent=agent,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        )
        session.effort_levels = await self._effort_levels(session)
        return session, built.hookset

    async def _effort_levels(self, session: Session) -> list[str]:
        try:
            return await session.agent.effort_levels(None if session.current_model == "default" else session.current_model)
        except Exception:  # noqa: BLE001 - the picker is a convenience: a CLI that does not say leaves it out
            log.debug("session %s: the CLI's effort levels could not be read", session.session_id, exc_info=True)
            return []

    async def prepare(self, *, project_dir: str, **options: Any) -> dict[str, Any]:
        """Build a session as `session/new` would with these parameters (`new`'s, but the session id and resume)
        and start its CLI, running no hook; the next `session/new` with the same parameters takes it over
        (sidecar/standby.py)."""
        if options.get("setup") is not None:
            raise InvalidParams("setup runs Claude Code's Setup hooks as the CLI starts, and a prepared CLI runs no "
                                "hook: send it with session/new", data={"setup": options["setup"]})
        request = SessionRequest.of(project_dir, **options)
        project, vault, builtin = request.project, request.vault, request.builtin
        sid = str(uuid.uuid4())
        built = await self._build(sid, request)
        data_dir = self.settings.data_dir
        user_files = [hook_paths.user_settings_path(), hook_paths.claude_user_settings_path(),
                      built.context.cli_config_dir / "settings.json", built.context.cli_config_dir / "CLAUDE.md"]

        def fingerprint() -> str:
            fresh = load_session_hookset(project, vault, data_dir, builtin)
            return hookset_fingerprint(fresh) + files_fingerprint(project, user_files)

        built_from = hookset_fingerprint(built.hookset) + await anyio.to_thread.run_sync(
            files_fingerprint, project, user_files)
        standby = Standby(key=request.key(), built=built, fingerprint=fingerprint, built_from=built_from)
        try:
            await self._standbys.add(standby, built.agent.start)
        except Exception as exc:
            log.error("session/prepare in %s: the agent did not start", project, exc_info=exc)
            raise ModelUnavailable(_start_failure(exc, built.agent), data={"cwd": str(project)}) from exc
        built.phases.mark("CLI start")
        log.info("prepared a session in %s in %s", project, built.phases)
        return {"prepared": True, "expiresInS": self._standbys.ttl_s}

    async def _close_built(self, built: Built) -> None:
        """A prepared session that is never taken over: its CLI and its runner go; no hook ran, none runs."""
        await built.agent.close()
        await built.runner.aclose()
        await close_hook_box(built.context)

    # ------------------------------------------------------------------ run

    async def prompt(self, session_id: str, text: str, blocks: list[dict[str, Any]] | None = None,
                     traceparent: str | None = None) -> dict[str, Any]:
        """Run one prompt; ``blocks`` (Claude content blocks, e.g. with images) replace ``text`` as what is sent.
        ``traceparent``: the client's trace context for this turn (hooks/tracing.py)."""
        session = self.live(session_id)
        session.prompts_received += 1
        if not await self._take_turn(session, session.prompts_received):
            return cancelled_result()
        session.state = "running"
        session.cancelling = False
        session.turn_over = turn_over = anyio.Event()
        trace = session.context.state.get(TRACE_KEY)
        if trace is not None:
            trace.start_turn(text, traceparent)
        result = None

        async def touch_index() -> None:
            with contextlib.suppress(OSError):
                named = await anyio.to_thread.run_sync(self.index.touch, session_id, text)
                if named is not None:  # the first prompt named the session: the client's list can show it
                    await self._notify("session/update", {"sessionId": session_id, "update": {
                        "sessionUpdate": "session_info_update", **named}})

        try:
            # The index write (an fsync) runs beside the turn, not before it: nothing in the turn reads it, and
            # the prompt answers only once it is done.
            async with anyio.create_task_group() as tg:
                tg.start_soon(touch_index)
                result = await session.agent.prompt(text, blocks)
                await self._after_turn(session, result)
        finally:
            if session.state == "running":
                session.state = "idle"
            turn_over.set()
            session.queue_moved()
            # A skill the agent invoked ran until the end of its turn (hooks/scoped.py).
            session.context.state.pop(skill_key(None), None)
            if trace is not None:
                trace.end_turn(result)
        return result.to_dict()

    async def steer(self, session_id: str, text: str, blocks: list[dict[str, Any]] | None = None) -> bool:
        """Give the running turn a message (ACP's `_session/steering`); False when no turn runs. A second steer
        before the first is answered is refused with -31003 (`data.reason: "steerPending"`)."""
        from sidecar.agent import SteerPending

        session = self.live(session_id)
        if session.state != "running" or session.cancelling:
            return False
        try:
            return bool(await session.agent.steer(text, blocks))
        except SteerPending as exc:
            raise SessionBusy(str(exc), data={"sessionId": session_id, "reason": "steerPending"}) from None

    async def _take_turn(self, session: Session, number: int) -> bool:
        """Wait until prompt `number` may run: no turn running and no earlier prompt waiting. False when a cancel
        came for it while it waited (it never reaches the agent). A client may send prompts while a turn runs, or
        right after session/cancel before the cancelled turn has answered (ACP does not make it wait); at most
        PROMPT_QUEUE_LIMIT wait, one more is refused with -31003."""
        if (session.state == "running" or session.waiting) and len(session.waiting) >= PROMPT_QUEUE_LIMIT:
            raise SessionBusy(f"session {session.session_id} already has {PROMPT_QUEUE_LIMIT} prompts waiting for "
                              "the running one", data={"sessionId": session.session_id, "limit": PROMPT_QUEUE_LIMIT})
        session.waiting.append(number)
        try:
            while True:
                if session.state == "ended":
                    raise SessionNotFound(f"session {session.session_id} ended before this prompt's turn",
                                          data={"sessionId": session.session_id})
                if number <= session.cancelled_through:
                    return False
                if session.state != "running" and number == min(session.waiting):
                    return True
                await session.queue_changed.wait()
        finally:
            session.waiting.remove(number)
            session.queue_moved()  # the next in line looks again

    async def _after_turn(self, session: Session, result: Any) -> None:
        """Fire the events the CLI was not asked to call back for (`sidecar_fires`), as Claude Code fires Stop: when
        the agent finished answering (not when the turn was cancelled or failed). Their hooks run after the answer."""
        if result.stop_reason in ("cancelled", "error", "blocked") or result.is_error:
            return
        hookset = session.runner.hookset
        hooked = session.agent.config.hook_events
        for event in AFTER_TURN_EVENTS:
            if hooked is None or event in hooked or not sidecar_fires(hookset, event):
                continue
            payload = sidecar_payload(event, session.context, stop_hook_active=False,
                                      last_assistant_message=result.result_text,
                                      permission_mode=session.permission_mode or "default")
            await session.runner.fire(event, payload, session.context)

    async def set_mode(self, session_id: str, mode: str) -> None:
        """Switch the session's permission mode (the user's choice, from the client); a `current_mode_update` follows."""
        session = self.live(session_id)
        await session.agent.set_permission_mode(mode)
        session.permission_mode = mode
        await anyio.to_thread.run_sync(functools.partial(self.index.current, session_id, permissionMode=mode))
        await self._notify("session/update", {"sessionId": session_id,
                                              "update": {"sessionUpdate": "current_mode_update", "currentModeId": mode}})

    async def set_model(self, session_id: str, model: str) -> Session:
        """Switch the model of the session's next turns (the user's choice); "default" is the CLI's own default."""
        session = self.live(session_id)
        await session.agent.set_model(None if model == "default" else model)
        session.current_model = model
        await anyio.to_thread.run_sync(functools.partial(self.index.current, session_id, model=model))
        session.effort_levels = await self._effort_levels(session)
        if session.effort is not None and session.effort not in session.effort_levels:
            await self.set_effort(session_id, "default")  # the new model has no such level: the CLI chooses again
        return session

    async def register_root(self, session_id: str, directory: str, *, reload_claude_md: bool = False) -> str:
        """A folder inside the session's project or one of its additional directories becomes a working-directory
        root of its own (the CLI's `register_repo_root`); the DirectoryAdded hooks run. Only such a folder: it is
        already inside what the session may work on (and, with an OS boundary, inside the box), so nothing widens."""
        session = self.live(session_id)
        path = Path(directory)
        if not path.is_absolute():
            raise InvalidParams(f"directory must be an absolute path: {directory!r}", data={"directory": directory})
        resolved = existing_dir(directory, "directory")
        roots = [session.project_dir.resolve(), *(Path(r).resolve() for r in session.agent.config.add_dirs)]
        if not any(resolved != root and resolved.is_relative_to(root) for root in roots):
            raise InvalidParams("directory must lie strictly inside the session's project or one of its additional "
                                "directories (Claude Code's rule for a registered root)",
                                data={"directory": directory, "roots": [str(r) for r in roots]})
        if reload_claude_md and "project" not in (session.settings.get("sources") or []):
            raise InvalidParams("reloadClaudeMd: this session does not read the project's settings and memory files "
                                "(the project is not trusted, or settingSources leaves them out)",
                                data={"directory": directory, "settingSources": session.settings.get("sources")})
        try:
            return await session.agent.register_root(str(resolved), reload_claude_md=reload_claude_md)
        except Exception as exc:  # noqa: BLE001 - the CLI's control error names what it refused
            message = str(exc)
            if "register_repo_root" in message or "working directory" in message:
                raise InvalidParams(message, data={"directory": directory}) from None
            raise

    async def set_effort(self, session_id: str, level: str) -> Session:
        """Set the reasoning effort of the session's next requests (the user's choice); "default" gives the choice
        back to the CLI (its settings' `effortLevel`, else the model's own)."""
        session = self.live(session_id)
        if level != "default" and level not in session.effort_levels:
            offered = ", ".join(["default", *session.effort_levels])
            raise InvalidParams(f"effort {level!r} is not offered for model {session.current_model!r} (have {offered})",
                                data={"value": level, "options": ["default", *session.effort_levels]})
        await session.agent.set_effort(None if level == "default" else level)
        session.effort = None if level == "default" else level
        await anyio.to_thread.run_sync(functools.partial(self.index.current, session_id, effort=level))
        return session

    async def cancel(self, session_id: str) -> bool:
        session = self.get(session_id)
        # Every prompt that arrived before this cancel is cancelled: the running one and those waiting behind it.
        session.cancelled_through = session.prompts_received
        session.queue_moved()
        if session.state != "running":
            return False
        session.cancelling = True
        # A CLI that never answers the interrupt must not hold the frontend's call for the SDK's 60 s.
        with anyio.move_on_after(CANCEL_BUDGET_S):
            return bool(await session.agent.cancel())
        log.warning("session %s: the CLI did not acknowledge the interrupt within %.0f s", session_id, CANCEL_BUDGET_S)
        return False

    # ------------------------------------------------------------------ end

    async def end(self, session_id: str, reason: str = "other") -> int:
        """Fire SessionEnd within its budget, close the agent and the runner; returns how many hooks ran."""
        session = self.get(session_id)
        async with session.end_lock:
            if session.state == "ended":
                return session.hooks_ran_at_end
            if session.state == "running":
                with anyio.move_on_after(2.0):
                    try:
                        await session.agent.cancel()
                    except Exception:  # e.g. the CLI is already gone: ending must go on, or nothing is closed
                        log.warning("session %s: interrupting the running turn failed", session_id, exc_info=True)
            session.state = "ended"
            session.queue_moved()
            from sidecar.hook_bridge import BRIDGE_KEY, SETTLE_S

            bridge = session.context.state.get(BRIDGE_KEY)
            if bridge is not None and not await bridge.settle(SETTLE_S):
                log.warning("session %s: hooks the CLI asked for were still running after %.0f s; ending anyway",
                            session_id, SETTLE_S)
            agg = await self._fire_session_end(session.runner, session.context, reason)
            session.hooks_ran_at_end = len(agg.results) if agg is not None else 0
            trace = session.context.state.get(TRACE_KEY)
            if trace is not None:
                trace.end(reason)
            with anyio.CancelScope(shield=True):
                await close_file_watch(session.context)
                # Side by side, so the CLI's exit and the background hooks' grace period overlap instead of
                # adding up. Safe: disconnect stops the SDK's reader first, so no hook callback reaches the runner.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(session.agent.close)
                    tg.start_soon(session.runner.aclose)
                await close_hook_box(session.context)
        if session.claude_dir_was_absent:
            claude = session.project_dir / ".claude"
            # rmdir only ever removes empty directories: anything someone wrote there stays.
            for leftover in (claude / ".cc-writes", claude):  # the CLI's write-tracking dir, then .claude itself
                with contextlib.suppress(OSError):
                    leftover.rmdir()
        if session.model.startswith("scripted:"):
            # A scripted session's CLI home (config, transcripts) is scratch, removed by the supervisor's sweep too:
            # its transcript is kept (privately, the newest few) so that `session/load` can resume it later.
            home = self.settings.data_dir / "cli-home" / session_id
            transcript = Path(transcript_path(session.context))

            def archive_and_remove() -> None:
                archive_transcript(transcript, self.settings.data_dir, session_id)
                shutil.rmtree(home, ignore_errors=True)

            await anyio.to_thread.run_sync(archive_and_remove)
        lease = self._leases.pop(session_id, None)
        if lease is not None:
            await anyio.to_thread.run_sync(lease.release)
        self._sessions.pop(session_id, None)
        self._ended[session_id] = session.info()
        while len(self._ended) > MAX_ENDED_REMEMBERED:
            self._ended.pop(next(iter(self._ended)))
        self._after_end(session_id)
        return session.hooks_ran_at_end

    async def _fire_session_end(self, runner: HookRunner, context: SessionContext, reason: str) -> AggregateResult | None:
        """SessionEnd within its budget; None when the hooks overran it (they are cancelled)."""
        with anyio.move_on_after(self.settings.session_end_budget_s):
            return await runner.fire("SessionEnd", sidecar_payload("SessionEnd", context, reason=reason), context)
        log.warning("session %s: SessionEnd hooks overran the %.1f s budget", context.session_id,
                    self.settings.session_end_budget_s)
        return None

    async def end_all(self, reason: str = "other") -> None:
        await self._standbys.close_all()
        async with anyio.create_task_group() as tg:
            for sid in list(self._sessions):
                tg.start_soon(self._end_quietly, sid, reason)

    async def _end_quietly(self, session_id: str, reason: str) -> None:
        try:
            await self.end(session_id, reason)
        except Exception:
            log.exception("ending session %s failed", session_id)


class StartPhases:
    """Where a session start's time went, for the log line that ends it (and for bench/RESULTS.md)."""

    def __init__(self) -> None:
        self._t0 = self._last = time.perf_counter()
        self._phases: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self._phases.append((name, now - self._last))
        self._last = now

    def __str__(self) -> str:
        parts = ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in self._phases)
        return f"{(self._last - self._t0) * 1000:.0f} ms ({parts})"


def confine(
    model_env: dict[str, str], hookset: HookSet, project: Path, data_dir: Path, mode: str | None,
    roots: tuple[Path, ...] = (),
) -> tuple[dict[str, str], Any]:
    """The CLI's whole environment and the session's sandbox (sidecar.sandbox.SandboxStatus).

    Blocking (it may probe bubblewrap once per process): run it in a worker thread.
    """
    from sidecar.sandbox import SandboxUnavailable, decide, denied_write_paths
    from sidecar.sdk_env import cli_environment, hook_env_names

    env = cli_environment(model_env, withheld=hook_env_names(hookset.entries))
    config_dir = cli_config_dir(env)
    deny = denied_write_paths(project, [data_dir, hook_paths.data_dir()], hook_paths.user_settings_path(), config_dir)
    try:
        sandbox = decide(mode, env.get("PATH"), deny, project=project, cli_env=env,  # type: ignore[arg-type]
                         orion_dirs=[data_dir, hook_paths.data_dir(), hook_paths.user_settings_path().parent],
                         user_settings=hook_paths.user_settings_path(), roots=roots)
    except SandboxUnavailable as exc:
        raise ServerError(str(exc), data={"reason": "sandboxUnavailable"}) from None
    boundary = getattr(sandbox, "boundary", None)
    if boundary is not None and boundary.platform == "linux":
        # The model credential stays outside the box: the CLI gets a placeholder and reaches the model only through
        # the box's model socket, whose relay puts the real value in (over TLS for an https model).
        from sidecar.model_credential import keep_outside

        plan, credential = keep_outside(env, boundary.plan)
        if credential is not None:
            sandbox = dataclasses.replace(sandbox, boundary=dataclasses.replace(boundary, plan=plan,
                                                                                credential=credential))
    elif boundary is None:
        # No box (sandbox off, no bubblewrap): the credential stays out of the CLI all the same. (macOS's Seatbelt
        # box denies unix-socket connections but syslog's: the relay is not offered there yet.)
        from sidecar.model_credential import relay_without_a_box

        relay = relay_without_a_box(env)
        if relay is not None:
            sandbox = dataclasses.replace(sandbox, model_relay=relay)
    # Not CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1: on 2.1.330 it hides the model key from Bash but runs Bash in its own
    # bubblewrap profile with /tmp, /root and /home writable, undoing the sandbox (docs/SECURITY.md "Sandbox").
    env.pop("CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", None)
    return env, sandbox


def report_plugins(sid: str, hookset: HookSet, config_dir: Path, cli_sources: list[str]) -> None:
    """Say what of the enabled Claude Code plugins this session's CLI does not load, and why (hooks/plugins.py): in
    session/new's warnings (the hook set's, also sent as `log` events) and in the sidecar's log."""
    from hooks.plugins import session_notices

    for notice in session_notices(hookset.plugins, user_config_dir=hookset.paths.claude_config_dir,
                                  cli_config_dir=config_dir, cli_sources=cli_sources, project_trusted=hookset.trusted,
                                  held_back=hookset.held_back_plugins()):
        log.warning("session %s: %s", sid, notice)
        hookset.warnings.append(notice)


async def close_file_watch(context: SessionContext) -> None:
    """Stop the session's FileChanged watch (sidecar/file_watch.py), if it has one."""
    from sidecar.file_watch import STATE_KEY

    watch = context.state.pop(STATE_KEY, None)
    if watch is not None:
        await watch.aclose()


async def close_hook_box(context: SessionContext) -> None:
    """Remove the session's hook box (its relay, its folder and /tmp): after the runner closed, no hook runs."""
    box, context.box = context.box, None
    if box is not None:
        await box.aclose()  # type: ignore[attr-defined]


# Session options a load takes from the index file only when they do not lower a layer (SessionManager.load).
_WEAKER_MODES = frozenset({"acceptEdits", "bypassPermissions", "dontAsk", "auto"})


@dataclasses.dataclass(frozen=True, slots=True)
class ForkSource:
    """What a fork goes on from: the session's id and, when it is live, its CLI transcript as it stands."""

    session_id: str
    live_transcript: Path | None


def place_fork_source(source: Path, live: Path | None, data_dir: Path, session_id: str, *, scripted: bool) -> None:
    """Put the forked conversation where the fork's CLI looks for it (`source`), when it is not already there: a live
    session's transcript as it stands (whole lines only: its CLI may be writing), else a scripted session's archive.
    A real-model session's transcript is already in the user's Claude Code config, which the fork's CLI shares."""
    from hooks.private_files import private_dir, write_private_atomic

    if source.is_file():
        return
    if live is not None and live != source and live.is_file():
        data = live.read_bytes()
        private_dir(source.parent)
        write_private_atomic(source, data[:data.rfind(b"\n") + 1])
    elif scripted:
        restore_transcript(source, data_dir, session_id)


def cancelled_result() -> dict[str, Any]:
    """The answer of a prompt cancelled while it waited for its turn: it never reached the agent."""
    return {"stopReason": "cancelled", "terminalReason": None, "resultText": "", "usage": {}, "costUsd": None,
            "durationMs": 0, "numTurns": 0, "isError": False, "contextUsed": None, "contextSize": None}


def _as_new_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """A session's recorded options (the index's names) as `SessionManager.new`'s keyword arguments."""
    return {"vault_dir": options.get("vaultDir"), "model": options.get("model"),
            "permission_mode": options.get("permissionMode"), "allowed_tools": options.get("allowedTools"),
            "system_prompt": options.get("systemPrompt"), "system_prompt_append": options.get("systemPromptAppend"),
            "sandbox": options.get("sandbox"),
            "setting_sources": options.get("settingSources"), "builtin_hooks": options.get("builtinHooks"),
            "teammate": options.get("teammate")}


def _restored_options(known: dict[str, Any], overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A past session's options for `load` and `fork`, with `overrides` on top; and the choices it made last.
    What the index says is only a suggestion where it would weaken a layer: a sandbox off, built-in hooks off, a mode
    that skips asking are the client's to ask for again in this request (the index is a file; a switch that lowers
    a guard is never taken from one). The model and the plan mode the user picked last are restored."""
    recorded = {k: v for k, v in known.get("options", {}).items() if not _weakens(k, v)}
    current = known.get("current") or {}
    if current.get("permissionMode") and not _weakens("permissionMode", current["permissionMode"]):
        recorded["permissionMode"] = current["permissionMode"]
    return {**recorded, **{k: v for k, v in overrides.items() if v is not None}}, current


def _weakens(option: str, value: Any) -> bool:
    if option == "sandbox":
        return value == "off"
    if option == "builtinHooks":
        return value is not None and value is not True
    if option == "permissionMode":
        return value in _WEAKER_MODES
    return False


def _valid_session_id(session_id: str) -> None:
    """A session id the client named, as a path component may hold it; -32602 naming the rule otherwise."""
    from hooks.errors import InvalidSessionId

    try:
        hook_paths.validate_session_id(session_id)
    except InvalidSessionId as exc:
        raise InvalidParams(str(exc), data={"sessionId": str(session_id)[:200]}) from None


def session_start_memory(project: Path, sources: list[str], config_dir: Path | None) -> list[tuple[Path, str]]:
    """The memory files Claude Code loads when a session starts, with their `memory_type`: the user's `CLAUDE.md`
    in the CLI's config dir and its `rules/` ("User", with the user source), then from the file system's root down
    to the project each folder's `CLAUDE.md` and `.claude/CLAUDE.md` ("Project", with the project source) and
    `CLAUDE.local.md` ("Local", with the local source), then the project's `.claude/rules/` ("Project"). A rules
    folder gives every `.md` file under it, sub-folders included, except the rules whose front matter names `paths`:
    those load when a matching file is read (the CLI fires that load itself, `load_reason: "path_glob_match"`).
    Recorded on the bundled CLI: `event_instructions_loaded`, `event_instructions_rules` (the CLI runs the hooks of
    its boot-time loads side by side, so their order varies from run to run; this one is stable)."""
    found: list[tuple[Path, str]] = []
    if "user" in sources and config_dir is not None:
        if (config_dir / "CLAUDE.md").is_file():
            found.append((config_dir / "CLAUDE.md", "User"))
        found += [(rule, "User") for rule in _unconditional_rules(config_dir / "rules")]
    folders = [*reversed(project.parents), project]
    for folder in folders:
        if "project" in sources:
            found += [(folder / rel, "Project") for rel in ("CLAUDE.md", ".claude/CLAUDE.md") if (folder / rel).is_file()]
        if "local" in sources and (folder / "CLAUDE.local.md").is_file():
            found.append((folder / "CLAUDE.local.md", "Local"))
    if "project" in sources:
        found += [(rule, "Project") for rule in _unconditional_rules(project / ".claude" / "rules")]
    return found


RULES_LIMIT = 500  # rule files announced at most (a folder with more is a project's mistake or an attack)


def _unconditional_rules(folder: Path) -> list[Path]:
    """The `.md` files under a rules folder that load at the start (no `paths` in their front matter), sorted.
    Only regular files are read (a FIFO or a device named `x.md` would block or never end), 4 KiB at most each;
    a folder link is not followed into (a link to `/` must not walk the disk)."""
    if not folder.is_dir():
        return []
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):  # os.walk does not follow links to folders
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if name.endswith(".md") and path.is_file() and not _names_paths(path):
                out.append(path)
                if len(out) >= RULES_LIMIT:
                    return sorted(out)
    return sorted(out)


def _names_paths(path: Path) -> bool:
    """Whether a rule's front matter (a `---` block at its top) has a `paths` key."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    lines = head.splitlines()
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:]:
        if line.strip() == "---":
            return False
        if re.match(r"paths\s*:", line):
            return True
    return False


def sidecar_payload(event: str, context: SessionContext, **extra: Any) -> dict[str, Any]:
    """The payload of an event the sidecar fires itself (the SDK cannot deliver it), shaped like the CLI's:
    the transcript the CLI writes for this session and the last prompt's id, as Claude Code gives them."""
    payload: dict[str, Any] = {"session_id": context.session_id, "transcript_path": transcript_path(context),
                               "cwd": str(context.project_dir), "hook_event_name": event}
    if isinstance(context.state.get("prompt_id"), str):
        payload["prompt_id"] = context.state["prompt_id"]
    return {**payload, **extra}


def accept_workspace_in_cli(config_dir: Path, project: Path, data_dir: Path) -> bool:
    """Tell the CLI the user trusts this project, as its own trust dialog would, so it honours the project's
    permission rules (without that it reads CLAUDE.md but ignores the allow rules). Only in a CLI config Orion
    owns (a scripted session's home under the data dir): the user's own ~/.claude.json is never written."""
    try:
        config_dir.resolve().relative_to(Path(data_dir).resolve())
    except ValueError:
        return False
    from hooks.private_files import write_private_json

    path = config_dir / ".claude.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    projects = data.setdefault("projects", {})
    if not isinstance(projects, dict):
        projects = data["projects"] = {}
    entry = projects.setdefault(str(project), {})
    if isinstance(entry, dict):
        entry["hasTrustDialogAccepted"] = True
    write_private_json(path, data)
    return True


def cli_trusts_workspace(config_dir: Path, env: dict[str, str], project: Path) -> bool:
    """Whether the CLI's own config says the user accepted its trust dialog for `project` or a folder above it
    (`projects.<path>.hasTrustDialogAccepted` in `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`)."""
    path = (config_dir / ".claude.json" if env.get("CLAUDE_CONFIG_DIR")
            else Path(env.get("HOME") or Path.home()) / ".claude.json")
    from sidecar.credentials import read_json_object

    projects = read_json_object(path).get("projects")
    if not isinstance(projects, dict):
        return False
    for folder in (project, *project.parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def project_rules_for_flags(config_dir: Path, env: dict[str, str], project: Path,
                            sources: list[str]) -> dict[str, list[str]]:
    """The permission rules (`allow`, `ask`, `deny`) of a trusted project's settings files the session's CLI reads,
    for its flag settings, when the CLI's own config has not trusted the project: Orion's trust record stands where
    Claude Code's dialog would (measured on 2.1.330: without its flag the CLI ignores the project's allow rules; flag
    settings rules apply). {} when the CLI trusts the project itself, or the files hold none."""
    if cli_trusts_workspace(config_dir, env, project):
        return {}
    files = [project / ".claude" / "settings.json"]
    if "local" in sources:
        files.append(project / ".claude" / "settings.local.json")
    rules: dict[str, list[str]] = {}
    from sidecar.credentials import read_json_object

    for path in files:
        permissions = read_json_object(path).get("permissions")
        if not isinstance(permissions, dict):
            continue
        for kind in ("allow", "ask", "deny"):
            listed = permissions.get(kind)
            kept = rules.setdefault(kind, [])
            for rule in listed if isinstance(listed, list) else []:
                if isinstance(rule, str) and rule not in kept:
                    kept.append(rule)
    return {kind: listed for kind, listed in rules.items() if listed}


def cli_config_dir(env: dict[str, str]) -> Path:
    """The CLI's config directory for this environment: CLAUDE_CONFIG_DIR, else ~/.claude."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env.get("HOME") or Path.home()) / ".claude"


def cli_transcript(config_dir: Path, project: Path, session_id: str) -> Path:
    """`<config>/projects/<project path, non-alphanumerics as ->/<session id>.jsonl`: where the CLI writes it."""
    return config_dir / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project)) / f"{session_id}.jsonl"


def transcript_path(context: SessionContext) -> str:
    """The session's CLI transcript (what hooks get as `transcript_path`); "" when the CLI's config is unknown."""
    if context.cli_config_dir is None:
        return ""
    return str(cli_transcript(context.cli_config_dir, context.project_dir, context.session_id))


def archive_transcript(transcript: Path, data_dir: Path, session_id: str, keep: int = KEEP_TRANSCRIPTS) -> None:
    """Keep a scripted session's CLI transcript in `<data>/transcripts/` (0600, the newest ``keep``) for a later load.

    Redacted record by record, like everything Orion writes: a secret in a prompt or a tool's output is not kept
    (a resumed conversation reads `[REDACTED:<kind>]` where it stood).
    """
    from hooks.private_files import write_private_atomic
    from hooks.redaction import redact, redact_value

    try:
        text = transcript.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    lines = []
    for line in text.splitlines():
        try:
            lines.append(json.dumps(redact_value(json.loads(line)), ensure_ascii=False, separators=(",", ":")))
        except ValueError:
            lines.append(redact(line))
    archive = data_dir / "transcripts"
    write_private_atomic(archive / f"{session_id}.jsonl", ("\n".join(lines) + "\n").encode("utf-8"))
    kept = sorted(archive.glob("*.jsonl"), key=lambda entry: entry.stat().st_mtime, reverse=True)
    for stale in kept[keep:]:
        with contextlib.suppress(OSError):
            stale.unlink()


def restore_transcript(transcript: Path, data_dir: Path, session_id: str) -> None:
    """Put an archived transcript back where the resumed session's CLI will look for it."""
    from hooks.private_files import private_dir, write_private_atomic

    if transcript.exists():
        return
    try:
        data = (data_dir / "transcripts" / f"{session_id}.jsonl").read_bytes()
    except OSError:
        return
    private_dir(transcript.parent)
    write_private_atomic(transcript, data)


def _start_failure(exc: BaseException, agent: Any) -> str:
    """Why a session's CLI did not start, with the CLI's own last words on stderr where it left any (a broken
    managed settings file, a bad flag): the SDK's error alone says only the exit code."""
    tail = [line for line in agent.stderr_tail() if line.strip()] if hasattr(agent, "stderr_tail") else []
    said = f"; the CLI said: {' / '.join(tail[-3:])}" if tail else ""
    return f"the agent could not start: {exc}{said}"


# Hook states that are, or can become within the session (hooks/trust, hooks/reload), hooks that run.
_LISTENING_STATES = frozenset({"active", "untrusted", "disabled"})


def callback_events(hookset: HookSet) -> frozenset[str]:
    """The SDK hook events the session's CLI must call the sidecar back for: those some hook of this project
    listens to (or will, once trusted or re-enabled), and UserPromptSubmit where a SessionStart hook listens: the
    context it may give rides on the first prompt (the CLI starts while SessionStart hooks run, so whether they
    give any is not known yet). A hook added later on an event nothing listened to takes effect in the next
    session."""
    listening = [spec for spec in hookset.entries if spec.state in _LISTENING_STATES]
    events = {spec.event for spec in listening}
    if "SessionStart" in events:
        events.add("UserPromptSubmit")
    if "CwdChanged" in events:
        events.add("PostToolUse")  # whose input shows the directory a tool left the agent in (sidecar/hook_bridge.py)
    if "PermissionRequest" in events:
        events.add("PreToolUse")  # what the CLI's PermissionRequest input repeats of it (sidecar/hook_bridge.py)
    if any(spec.scope == "skill" for spec in listening):
        events.add("PostToolUse")  # the Skill tool's: which skill runs from then on (hooks/scoped.py)
    return frozenset(event for event in events if not sidecar_fires(hookset, event) and event not in SIDECAR_EVENTS)


# Events whose hooks the sidecar can fire itself after the turn, from what the turn returned, when nothing on them
# can change the turn: then the CLI need not stop and call back for them (one round trip less per turn).
AFTER_TURN_EVENTS = frozenset({"Stop"})
# Events the sidecar fires itself at the moment they happen, never on the CLI's callback: PermissionRequest, when
# the CLI asks `can_use_tool` (sidecar/hook_bridge.py HookedAsker; the CLI's own callback races that ask).
# FileChanged: sidecar/file_watch.py; Elicitation: the CLI's elicitation control request (sidecar/agent.py); Setup:
# at session/new with `setup` (the CLI fires it while it boots, before any callback is registered: measured).
SIDECAR_EVENTS = frozenset({"PermissionRequest", "FileChanged", "Elicitation", "Setup"})


def sidecar_fires(hookset: HookSet, event: str) -> bool:
    """The event has listeners, and all of them are built-in bookkeeping that runs after the answer anyway (memory,
    turn activity): the sidecar fires it when the turn ends. A hook that could act on the turn (any user or project
    hook, any built-in that answers) keeps the CLI's callback, and then the CLI's own payload."""
    if event not in AFTER_TURN_EVENTS:
        return False
    listening = [spec for spec in hookset.entries if spec.event == event and spec.state in _LISTENING_STATES]
    return bool(listening) and all(spec.builtin and spec.run_async for spec in listening)
