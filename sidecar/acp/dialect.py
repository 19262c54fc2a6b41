"""The ACP face of the one session core: what the core emits (Orion's events and updates, its permission request)
becomes ACP's `session/update`s, `session/request_permission` and, for a client that opted in, `_orion/` extension
notifications with a per-session sequence number and a timestamp.

The core keeps one vocabulary; this module is the only place that knows both. Orion's first dialect (a date
`protocolVersion` at `initialize`) gets the core's events unchanged.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from sidecar.acp.tools import tool_call_fields
from sidecar.app import EXT_PREFIX

# Orion's events that become `_orion/<name>` extension notifications (only for a client that asked for them).
ORION_EVENTS = ("hook_started", "hook_progress", "hook_response", "projectContextChange", "contextSummaryUpdated",
                "notification", "sandboxStatus", "log")
MAX_TRACKED_SESSIONS = 1024  # event counters kept per connection (the most recently used)
MAX_TRACKED_EXECUTIONS = 4096

# Orion's stop reasons on ACP's: what ACP has a word for keeps it, the rest ends the turn and says why in _meta.
STOP_REASONS = {"end_turn": "end_turn", "max_tokens": "max_tokens", "max_turns": "max_turn_requests",
                "refusal": "refusal", "cancelled": "cancelled"}


def acp_stop_reason(orion: str) -> str:
    return STOP_REASONS.get(orion, "end_turn")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def events_wanted(client_capabilities: dict[str, Any]) -> frozenset[str]:
    """The `_orion/` events a client asked for in `clientCapabilities._meta.orion.events`: true (all) or a list of names."""
    meta = client_capabilities.get("_meta") if isinstance(client_capabilities, dict) else None
    orion = meta.get("orion") if isinstance(meta, dict) else None
    wanted = orion.get("events") if isinstance(orion, dict) else None
    if wanted is True:
        return frozenset(ORION_EVENTS)
    if isinstance(wanted, list):
        return frozenset(name.removeprefix(EXT_PREFIX) for name in wanted if isinstance(name, str)) & frozenset(ORION_EVENTS)
    return frozenset()


class AcpDialect:
    """Per connection: which extension events the client wants, and each session's event sequence."""

    def __init__(self, client_capabilities: dict[str, Any], cwd_of: Callable[[str], str | None] | None = None) -> None:
        self.client_capabilities = client_capabilities
        # A session's directory, for the absolute paths ACP asks for in tool calls (None: unknown, paths as given).
        self.cwd_of: Callable[[str], str | None] = cwd_of or (lambda _sid: None)
        self.wanted = events_wanted(client_capabilities)
        session_caps = client_capabilities.get("session") if isinstance(client_capabilities, dict) else None
        session_caps = session_caps if isinstance(session_caps, dict) else {}
        # ACP's own notice and compaction updates, only for a client that advertised them (ACP: MUST only send then).
        self.notices = isinstance(session_caps.get("notices"), dict)
        self.compaction = isinstance(session_caps.get("compaction"), dict)
        # ACP's subagent sessions (unstable RFD), for a client that advertised `subagents`: what a subagent does goes
        # to a child session of its own, announced on its parent by `subagent_update`.
        self.subagents = isinstance(client_capabilities.get("subagents"), dict) if isinstance(
            client_capabilities, dict) else False
        self._children = SubagentSessions()
        # Each session's next event number, the most recently used last: bounded, so a connection that starts and
        # ends sessions for days keeps only the recent ones' counters (a session idle past that many others starts
        # its numbers again; a client orders by it only within a run of events).
        self._seq: OrderedDict[str, itertools.count[int]] = OrderedDict()
        # executionId -> toolCallId, from hook_started until hook_response: progress and response carry it too.
        self._tool_of_execution: dict[str, str] = {}

    # ------------------------------------------------------------------ notifications

    def notifications(self, event: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(method, params) to send for one core event; empty when an ACP client has no use for it."""
        if event == "session/update":
            sid = params["sessionId"]
            update = params["update"]
            if self.notices and update.get("sessionUpdate") == "notice":
                return [("session/update", {"sessionId": sid, "update": acp_notice(update)})]
            bodies = self.updates(update, self.cwd_of(sid))
            if self.subagents:
                return [("session/update", routed) for routed in self._children.route(sid, update, bodies,
                                                                                      self.cwd_of(sid))]
            return [("session/update", {"sessionId": sid, "update": body}) for body in bodies]
        tool_call_id = self._track_execution(event, params)
        out = []
        if event == "contextSummaryUpdated" and self.compaction and params.get("sessionId"):
            out.append(("session/update", {"sessionId": params["sessionId"], "update": acp_compaction(params)}))
        if event in self.wanted:
            extension = self._extension(params, tool_call_id)
            if self.subagents and tool_call_id is not None:  # a hook run for a subagent's tool call: the child's
                extension["sessionId"] = self._children.session_of_tool(tool_call_id) or extension.get("sessionId")
            out.append((EXT_PREFIX + event, extension))
        return out

    def _track_execution(self, event: str, params: dict[str, Any]) -> str | None:
        execution = params.get("executionId")
        if execution is None:
            return params.get("toolUseId")
        if event == "hook_started":
            if params.get("toolUseId"):
                if len(self._tool_of_execution) >= MAX_TRACKED_EXECUTIONS:  # hooks cancelled before answering
                    self._tool_of_execution.pop(next(iter(self._tool_of_execution)))
                self._tool_of_execution[execution] = params["toolUseId"]
            return params.get("toolUseId")
        if event == "hook_response":
            return self._tool_of_execution.pop(execution, None)
        return self._tool_of_execution.get(execution)

    def _next_seq(self, sid: str) -> int:
        counter = self._seq.get(sid)
        if counter is None:
            counter = self._seq[sid] = itertools.count(1)
            if len(self._seq) > MAX_TRACKED_SESSIONS:
                self._seq.popitem(last=False)
        else:
            self._seq.move_to_end(sid)
        return next(counter)

    def _extension(self, params: dict[str, Any], tool_call_id: str | None) -> dict[str, Any]:
        out = {key: value for key, value in params.items() if key != "toolUseId" and value is not None}
        out["seq"] = self._next_seq(str(params.get("sessionId") or ""))
        out["timestamp"] = _now()
        if tool_call_id is not None:
            out["toolCallId"] = tool_call_id
        return out

    @classmethod
    def updates(cls, update: dict[str, Any], cwd: str | None = None) -> list[dict[str, Any]]:
        """One core update as ACP updates (an agent's todo list is a tool call and a plan). What a subagent does
        carries the tool call that runs it, `_meta.orion.parentToolCallId` (ACP has no field for it)."""
        out = cls._updates(update, cwd)
        parent = update.get("parentToolUseId")
        if parent:
            for body in out:
                meta = body.setdefault("_meta", {}).setdefault("orion", {})
                meta["parentToolCallId"] = parent
        return out

    @staticmethod
    def _updates(update: dict[str, Any], cwd: str | None) -> list[dict[str, Any]]:
        kind = update.get("sessionUpdate")
        if kind == "user_message":
            # A live prompt is the client's own; it hears the user's words only when a session's history is replayed.
            if not update.get("replay"):
                return []
            return [{"sessionUpdate": "user_message_chunk", "content": _text(update.get("text", ""))}]
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            return [{"sessionUpdate": kind, "content": _text(update.get("text", ""))}]
        if kind == "tool_call":
            tool_input = update.get("input") if isinstance(update.get("input"), dict) else {}
            body = {"sessionUpdate": "tool_call", "status": update.get("status") or "pending",
                    **tool_call_fields(update["toolUseId"], update.get("name", ""), tool_input, cwd)}
            return [body]  # a todo list becomes a `plan` once the CLI took it (sidecar/task_plan.py)
        if kind == "tool_call_update":
            status = update.get("status")
            output = update.get("output")
            body: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": update["toolUseId"],
                                    "status": "completed" if status == "completed" else "failed"}
            if output not in (None, ""):
                body["rawOutput"] = output
                body["content"] = [{"type": "content", "content": _text(str(output))}]
            if status == "denied":
                body["_meta"] = {"orion": {"status": "denied"}}
            return [body]
        if kind == "plan":  # the agent's Task tools' list (sidecar/task_plan.py), whole each time as ACP asks
            return [{"sessionUpdate": "plan", "entries": update.get("entries") or []}]
        if kind == "current_mode_update":
            return [{"sessionUpdate": "current_mode_update", "currentModeId": update["currentModeId"]}]
        if kind == "session_info_update":
            return [{"sessionUpdate": "session_info_update",
                     **{k: update[k] for k in ("title", "updatedAt") if update.get(k) is not None}}]
        if kind == "available_commands_update":
            return [{"sessionUpdate": "available_commands_update", "availableCommands": update["availableCommands"]}]
        if kind == "notice":
            # What Claude Code shows the user beside the conversation (a hook's systemMessage, a blocked prompt, a
            # hook that timed out): ACP has no notice of its own, so it is a message line, marked as Orion's notice
            # in _meta for a client that styles it (a tool call's content is left alone: an update would replace it).
            notice = {k: update[k] for k in ("level", "source", "hookName", "event") if update.get(k) is not None}
            return [{"sessionUpdate": "agent_message_chunk", "content": _text(update.get("text", "") + "\n"),
                     "_meta": {"orion": {"notice": notice}}}]
        if kind == "result":
            # The prompt's answer carries the turn's usage; the session's standing (how full the context is, what
            # the session has cost) is ACP's usage_update.
            used, size = update.get("contextUsed"), update.get("contextSize")
            if isinstance(used, int) and isinstance(size, int):
                body: dict[str, Any] = {"sessionUpdate": "usage_update", "used": used, "size": size}
                if isinstance(update.get("costUsd"), (int, float)):
                    body["cost"] = {"amount": float(update["costUsd"]), "currency": "USD"}
                return [body]
            return []
        # Any kind ACP has no word for.
        return []

    # ------------------------------------------------------------------ requests

    def permission_request(self, params: dict[str, Any]) -> dict[str, Any]:
        """Orion's permission request as ACP's: the tool call it is about, the options, and why it asks."""
        tool_input = params.get("toolInput") if isinstance(params.get("toolInput"), dict) else {}
        tool_call = {**tool_call_fields(params["toolUseId"], params.get("toolName", ""), tool_input,
                                        self.cwd_of(str(params.get("sessionId") or ""))), "status": "pending"}
        reason = params.get("reason")
        if reason:
            tool_call.setdefault("content", [])
            tool_call["content"] = [{"type": "content", "content": _text(str(reason))}, *tool_call["content"]]
        sid = params["sessionId"]
        if self.subagents:  # a subagent's tool call is asked about on its child session
            sid = self._children.session_of_tool(str(params["toolUseId"])) or sid
        out: dict[str, Any] = {"sessionId": sid, "toolCall": tool_call, "options": params["options"]}
        if reason:
            out["_meta"] = {"orion": {"reason": reason, "toolName": params.get("toolName")}}
        return out


AGENT_TOOLS = frozenset({"Agent", "Task"})
MAX_CHILD_SESSIONS = 1024  # subagent sessions remembered per connection (the most recent)


class SubagentSessions:
    """Per connection: each subagent the agent starts (an Agent/Task tool call) as a child session of the session
    that made the call, and which tool calls ran in which child. Bounded: the oldest are forgotten first (a forgotten
    child's late traffic goes to its parent session, as for a client without subagents)."""

    def __init__(self) -> None:
        self._child_of_call: OrderedDict[str, str] = OrderedDict()  # Agent tool call id -> child session id
        self._session_of_tool: OrderedDict[str, str] = OrderedDict()  # a child's tool call id -> child session id

    @staticmethod
    def child_id(parent_sid: str, tool_call_id: str) -> str:
        return f"{parent_sid}:subagent:{tool_call_id}"

    def session_of_tool(self, tool_call_id: str) -> str | None:
        return self._session_of_tool.get(tool_call_id)

    def _remember(self, table: OrderedDict[str, str], key: str, value: str) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > MAX_CHILD_SESSIONS:
            table.popitem(last=False)

    def route(self, sid: str, update: dict[str, Any], bodies: list[dict[str, Any]],
              cwd: str | None) -> list[dict[str, Any]]:
        """`session/update` params for one core update's ACP bodies: on the child session when a subagent made it,
        after a `subagent_update` that announces a child when the update starts one, and one that says it is idle
        once its Agent tool call is over."""
        parent_call = update.get("parentToolUseId")
        here = self._child_of_call.get(str(parent_call)) if parent_call else None
        session = here or sid
        kind = update.get("sessionUpdate")
        tool_id = str(update.get("toolUseId") or "")
        out: list[dict[str, Any]] = []
        if here is not None and tool_id:
            self._remember(self._session_of_tool, tool_id, here)
        out += [{"sessionId": session, "update": body} for body in bodies]
        if kind == "tool_call" and update.get("name") in AGENT_TOOLS and tool_id and tool_id not in self._child_of_call:
            child = self.child_id(session, tool_id)
            self._remember(self._child_of_call, tool_id, child)
            tool_input = update.get("input") if isinstance(update.get("input"), dict) else {}
            announce: dict[str, Any] = {"sessionUpdate": "subagent_update", "sessionId": child,
                                        "state": {"state": "running"},
                                        "_meta": {"orion": {"toolCallId": tool_id,
                                                            "agentType": tool_input.get("subagent_type")}}}
            if isinstance(tool_input.get("description"), str) and tool_input["description"].strip():
                announce["title"] = tool_input["description"].strip()[:200]
            if isinstance(tool_input.get("prompt"), str) and tool_input["prompt"].strip():
                announce["description"] = tool_input["prompt"].strip()[:1000]
            if cwd:
                announce["cwd"] = cwd
            out.append({"sessionId": session, "update": announce})
        elif kind == "tool_call_update" and tool_id in self._child_of_call and update.get("status") in (
                "completed", "failed", "denied"):
            state: dict[str, Any] = {"state": "idle"}
            if update.get("status") == "completed":
                state["stopReason"] = "end_turn"
            out.append({"sessionId": session, "update": {"sessionUpdate": "subagent_update",
                                                         "sessionId": self._child_of_call[tool_id], "state": state}})
        return out


NOTICE_SEVERITIES = {"info": "info", "warning": "warning", "error": "error"}
NOTICE_TITLE_CHARS = 160


def acp_notice(update: dict[str, Any]) -> dict[str, Any]:
    """Orion's notice as ACP's `notice` update: its first line as the title (which must stand alone), the whole text
    as the description when there is more, the severity, and what raised it in `_meta.orion.notice`."""
    text = str(update.get("text") or "").strip()
    first = text.splitlines()[0].strip() if text else ""
    title = first if len(first) <= NOTICE_TITLE_CHARS else first[:NOTICE_TITLE_CHARS - 1].rstrip() + "…"
    if not title:
        hook = update.get("hookName") or update.get("source") or "Orion"
        title = f"{hook}: {update.get('event') or 'notice'}"
    body: dict[str, Any] = {"sessionUpdate": "notice", "severity": NOTICE_SEVERITIES.get(update.get("level"), "info"),
                            "title": title}
    if text and text != title:
        body["description"] = text
    notice = {k: update[k] for k in ("level", "source", "hookName", "event") if update.get(k) is not None}
    if notice:
        body["_meta"] = {"orion": {"notice": notice}}
    return body


def acp_compaction(params: dict[str, Any]) -> dict[str, Any]:
    """A finished compaction (the `contextSummaryUpdated` event: its redacted summary) as ACP's `compaction_update`.
    Orion hears of a compaction once it is over, so its one update is `completed` with the summary."""
    import uuid

    summary = str(params.get("summary") or "")
    body: dict[str, Any] = {"sessionUpdate": "compaction_update", "compactionId": str(uuid.uuid4()),
                            "status": "completed", "_meta": {"orion": {"trigger": params.get("trigger")}}}
    if summary:
        body["summary"] = [_text(summary)]
    return body


def acp_usage(usage: dict[str, Any]) -> dict[str, Any] | None:
    """The CLI's token usage as ACP's `Usage`, when it reported any."""
    if not usage:
        return None
    read = int(usage.get("cache_read_input_tokens") or 0)
    write = int(usage.get("cache_creation_input_tokens") or 0)
    inp = int(usage.get("input_tokens") or 0)
    out = int(usage.get("output_tokens") or 0)
    body: dict[str, Any] = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out + read + write}
    if read:
        body["cachedReadTokens"] = read
    if write:
        body["cachedWriteTokens"] = write
    return body
