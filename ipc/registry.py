"""The one table from protocol names to models: frontend → sidecar methods, sidecar → frontend requests, and events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from ipc import protocol as p


@dataclass(slots=True, frozen=True)
class MethodSpec:
    """One method: its params model, its result model (None for a null result), and whether it is a notification."""

    name: str
    params: type[BaseModel]
    result: type[BaseModel] | None
    kind: Literal["request", "notification"] = "request"
    summary: str = ""


def _m(name: str, params: type[BaseModel], result: type[BaseModel] | None, summary: str,
       kind: Literal["request", "notification"] = "request") -> tuple[str, MethodSpec]:
    return name, MethodSpec(name, params, result, kind, summary)


# Frontend → sidecar.
METHODS: dict[str, MethodSpec] = dict([
    _m("initialize", p.InitializeParams, p.InitializeResult,
       "Handshake. Must be the first request; any other request before it fails with -32002."),
    _m("ping", p.Empty, p.Empty, "Liveness check; answers `{}`."),
    _m("shutdown", p.Empty, None,
       "Begin an orderly shutdown; answers `null`. Later requests fail with -32600; `exit` (or EOF) then ends the process with code 0."),
    _m("exit", p.Empty, None, "End the process (code 0). Also happens on EOF of stdin, SIGTERM and SIGINT.", "notification"),
    _m("$/cancelRequest", p.CancelRequestParams, None,
       "Cancel an in-flight request by id; it answers -32800. Works in both directions.", "notification"),
    _m("session/new", p.SessionNewParams, p.SessionNewResult, "Start an agent session in a project."),
    _m("session/prompt", p.SessionPromptParams, p.SessionPromptResult,
       "Run one prompt to completion; `session/update` events stream meanwhile. -32003 if one is already running."),
    _m("session/cancel", p.SessionRef, p.SessionCancelResult, "Cancel the running prompt of a session, if any."),
    _m("session/end", p.SessionEndParams, p.SessionEndResult, "End a session (SessionEnd hooks run)."),
    _m("session/list", p.Empty, p.SessionListResult, "List sessions."),
    _m("hooks/list", p.HookScope, p.HooksListResult, "List the hooks a session (or a project/vault) has, with their state."),
    _m("hooks/reload", p.HookScope, p.HooksListResult, "Reload hook settings from disk; answers like `hooks/list`."),
    _m("hooks/trust", p.HooksTrustParams, p.HooksTrustResult, "Trust a project's hooks as they are now."),
    _m("hooks/test", p.HooksTestParams, p.HooksTestResult, "Fire an event with a payload through the hook engine, no agent."),
    _m("memory/search", p.MemorySearchParams, p.MemorySearchResult, "Search remembered prompts, observations and summaries."),
])

# Sidecar → frontend requests (the frontend must answer).
CLIENT_REQUESTS: dict[str, MethodSpec] = dict([
    _m("session/request_permission", p.RequestPermissionParams, p.RequestPermissionResult,
       "Ask the user whether a tool may run; answer with the chosen option or `cancelled`."),
])

# Sidecar → frontend notifications.
EVENTS: dict[str, type[BaseModel]] = {
    "hook_started": p.HookStartedEvent,
    "hook_progress": p.HookProgressEvent,
    "hook_response": p.HookResponseEvent,
    "projectContextChange": p.ProjectContextChangeEvent,
    "contextSummaryUpdated": p.ContextSummaryUpdatedEvent,
    "notification": p.NotificationEvent,
    "session/update": p.SessionUpdateEvent,
    "log": p.LogEvent,
}
