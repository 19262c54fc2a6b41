"""The one table from protocol names to models: frontend → sidecar methods, sidecar → frontend requests, and events."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ipc import protocol as p


@dataclass(slots=True, frozen=True)
class MethodSpec:
    """One method: its params model, its result model (None for a null result), and whether it is a notification.

    Models are named, not held: most live in `ipc.protocol_agent`, which is imported the first time one is used.
    """

    name: str
    params_model: str
    result_model: str | None
    kind: Literal["request", "notification"] = "request"
    summary: str = ""

    @property
    def params(self) -> type[BaseModel]:
        return getattr(p, self.params_model)

    @property
    def result(self) -> type[BaseModel] | None:
        return getattr(p, self.result_model) if self.result_model is not None else None


class ModelTable(Mapping[str, type[BaseModel]]):
    """Event name → model, each looked up in `ipc.protocol` on first use (see MethodSpec)."""

    __slots__ = ("_names", "_models")

    def __init__(self, names: dict[str, str]) -> None:
        self._names = names
        self._models: dict[str, type[BaseModel]] = {}

    def __getitem__(self, key: str) -> type[BaseModel]:
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = getattr(p, self._names[key])
        return model

    def get(self, key: str, default: Any = None) -> Any:  # on every event sent: no exception round trip
        model = self._models.get(key)
        if model is not None:
            return model
        return self[key] if key in self._names else default

    def __contains__(self, key: object) -> bool:
        return key in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _m(name: str, params: str, result: str | None, summary: str,
       kind: Literal["request", "notification"] = "request") -> tuple[str, MethodSpec]:
    return name, MethodSpec(name, params, result, kind, summary)


# Frontend → sidecar.
METHODS: dict[str, MethodSpec] = dict([
    _m("initialize", "InitializeParams", "InitializeResult",
       "Handshake. Must be the first request; any other request before it fails with -31002."),
    _m("ping", "Empty", "Empty", "Liveness check; answers `{}`."),
    _m("shutdown", "Empty", None,
       "Begin an orderly shutdown; answers `null`. Later requests fail with -32600; `exit` (or EOF) then ends the process with code 0."),
    _m("exit", "Empty", None, "End the process (code 0). Also happens on EOF of stdin, SIGTERM and SIGINT.", "notification"),
    _m("$/cancelRequest", "CancelRequestParams", None,
       "Cancel an in-flight request by id; it answers -32800. Works in both directions.", "notification"),
    _m("session/new", "SessionNewParams", "SessionNewResult", "Start an agent session in a project."),
    _m("session/prepare", "SessionPrepareParams", "SessionPrepareResult",
       "Start the CLI of the next session ahead of time (no hook runs); a `session/new` with the same options "
       "takes it over and only runs its SessionStart hooks."),
    _m("session/context", "SessionContextParams", "Empty",
       "Tell the session what the user has open in the editor (paths): the `ambient-context` hook, when the user "
       "turned it on, gives it to the agent with each prompt."),
    _m("session/registerRoot", "SessionRegisterRootParams", "SessionRegisterRootResult",
       "Register a folder inside the session's project (or an additional directory) as a working-directory root of "
       "its own (Claude Code's `register_repo_root`): its DirectoryAdded hooks run."),
    _m("session/prompt", "SessionPromptParams", "SessionPromptResult",
       "Run one prompt to completion; `session/update` events stream meanwhile. A prompt sent while one runs waits "
       "its turn (-31003 past 16 waiting)."),
    _m("session/cancel", "SessionRef", "SessionCancelResult", "Cancel the running prompt of a session, if any."),
    _m("session/end", "SessionEndParams", "SessionEndResult", "End a session (SessionEnd hooks run)."),
    _m("session/list", "Empty", "SessionListResult", "List sessions."),
    _m("hooks/list", "HookScope", "HooksListResult", "List the hooks a session (or a project/vault) has, with their state."),
    _m("hooks/reload", "HookScope", "HooksListResult", "Reload hook settings from disk; answers like `hooks/list`."),
    _m("hooks/trust", "HooksTrustParams", "HooksTrustResult", "Trust a project's hooks as they are now."),
    _m("hooks/settings", "HooksSettingsParams", "HooksSettingsResult",
       "One settings file's hooks and switches as written, with the digest an edit names."),
    _m("hooks/add", "HooksAddParams", "HooksEditResult",
       "Add a hook to a settings file, if it is still as read and the result passes `hooks validate`."),
    _m("hooks/update", "HooksUpdateParams", "HooksEditResult", "Change (or move) one hook of a settings file, checked the same way."),
    _m("hooks/remove", "HooksRemoveParams", "HooksEditResult", "Remove one hook from a settings file."),
    _m("hooks/enable", "HooksEnableParams", "HooksEditResult",
       "Turn a hook off or on again by name, in the user's settings or the project's hook-overrides."),
    _m("hooks/test", "HooksTestParams", "HooksTestResult", "Fire an event with a payload through the hook engine, no agent."),
    _m("hooks/stats", "HooksStatsParams", "HooksStatsResult",
       "Per hook, from the tracking records: runs, p50/p95/max duration, failures, timeouts, blocks."),
    _m("memory/search", "MemorySearchParams", "MemorySearchResult",
       "Search remembered prompts, observations and summaries by words, by meaning or both (`mode`)."),
    _m("memory/status", "Empty", "MemoryStatusResult",
       "The memory's backend, how much of it has vectors for search by meaning, and the background backfill's "
       "progress (which this call starts when items lack vectors)."),
])

# Sidecar → frontend requests (the frontend must answer).
CLIENT_REQUESTS: dict[str, MethodSpec] = dict([
    _m("session/request_permission", "RequestPermissionParams", "RequestPermissionResult",
       "Ask the user whether a tool may run; answer with the chosen option or `cancelled`."),
    _m("elicitation/create", "ElicitationCreateParams", "ElicitationCreateResult",
       "Ask the user the model's questions (AskUserQuestion) or an MCP server's, as a form; only to a frontend "
       "whose `initialize` said `capabilities.elicitation.form` (or `.url` for an address to open)."),
])

# Sidecar → frontend notifications.
EVENTS: ModelTable = ModelTable({
    "hook_started": "HookStartedEvent",
    "hook_progress": "HookProgressEvent",
    "hook_response": "HookResponseEvent",
    "projectContextChange": "ProjectContextChangeEvent",
    "contextSummaryUpdated": "ContextSummaryUpdatedEvent",
    "notification": "NotificationEvent",
    "sandboxStatus": "SandboxStatusEvent",
    "session/update": "SessionUpdateEvent",
    "log": "LogEvent",
})

# --------------------------------------------------------------------------- the ACP dialect (docs/PROTOCOL.md)
# After an `initialize` with an integer `protocolVersion`, these are the methods; Orion's own (above, but for the
# session methods ACP redefines) are reached as `_orion/<name>`, and its events arrive as `_orion/<event>`.

ACP_METHODS: dict[str, MethodSpec] = dict([
    _m("initialize", "AcpInitializeParams", "AcpInitializeResult",
       "ACP handshake: protocol version 1 (another version is answered with 1; the client decides), capabilities, "
       "auth methods. `clientCapabilities._meta.orion.events` opts in to Orion's events."),
    _m("authenticate", "AuthenticateParams", "AcpEmpty",
       "Check that a credential of the chosen method is usable; -32000 naming what to set if not."),
    _m("session/new", "AcpNewSessionParams", "AcpNewSessionResult",
       "Start a session in `cwd` with the client's MCP servers; Orion's options in `_meta.orion`."),
    _m("_orion/session/prepare", "AcpNewSessionParams", "SessionPrepareResult",
       "Orion: start the CLI of the next session ahead of time, with `session/new`'s parameters; no hook runs. The "
       "next `session/new` with the same parameters takes it over (its answer then comes in ~50 ms instead of the "
       "CLI's start)."),
    _m("session/load", "AcpLoadSessionParams", "AcpLoadSessionResult",
       "Resume a past session by id: its history streams as `session/update`s before the answer."),
    _m("session/resume", "AcpLoadSessionParams", "AcpLoadSessionResult",
       "Resume a past session by id, as `session/load` but without replaying its history (the client has it)."),
    _m("session/fork", "AcpForkSessionParams", "AcpNewSessionResult",
       "A new session going on from a copy of a past or live session's conversation (Claude Code's --fork-session); "
       "the original stays as it was. Its SessionStart hooks run with `source: \"resume\"`; no history is replayed."),
    _m("session/close", "AcpSessionRef", "AcpEmpty",
       "End a live session (its SessionEnd hooks run, its CLI goes); it stays in `session/list` and can be loaded."),
    _m("session/delete", "AcpSessionRef", "AcpEmpty",
       "Take a session off `session/list` for good (ended first if live), with what Orion kept of it (its index "
       "entry, tracking files, a scripted session's CLI home and transcript); Claude Code's own transcripts stay."),
    _m("session/list", "AcpListSessionsParams", "AcpListSessionsResult",
       "Sessions this sidecar knows (live and past), newest first, optionally only those of `cwd`."),
    _m("session/set_mode", "SetModeParams", "AcpEmpty",
       "Switch the permission mode (`default`, `acceptEdits`, `plan`, `bypassPermissions`); a `current_mode_update` follows."),
    _m("session/set_config_option", "SetConfigOptionParams", "SetConfigOptionResult",
       "Change a session setting: `model` (Claude Code's aliases `default`, `sonnet`, `opus`, `haiku`, or a model id)."),
    _m("session/prompt", "AcpPromptParams", "AcpPromptResult",
       "Run one prompt (text, images, resource links, embedded resources); updates stream meanwhile."),
    _m("session/cancel", "AcpCancelParams", None,
       "Stop the running prompt; it answers `cancelled`, pending permission requests are answered for it.",
       "notification"),
    _m("_session/steering", "AcpSteeringParams", "AcpSteeringResult",
       "Give the running turn a message (it cuts the current generation short, or waits for an open question); the "
       "turn's prompt answers after the model has read it. `promptRequired` when no turn runs: send it as a prompt."),
])

ACP_CLIENT_REQUESTS: dict[str, MethodSpec] = dict([
    _m("session/request_permission", "AcpRequestPermissionParams", "RequestPermissionResult",
       "ACP: ask the user whether a tool call may run (a hook's `ask` arrives the same way, its reason in `_meta.orion`)."),
])

ACP_EVENTS: ModelTable = ModelTable({
    "session/update": "AcpSessionNotification",
    "_orion/*": "OrionEventFields",
})
