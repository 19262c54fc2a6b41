"""Check a connection recorded by wire_tap.py against the official ACP Python SDK's models (`acp.schema`).

Requests are validated by their method, answers by the method of the request they answer (an error answer as ACP's
`Error`), notifications by their method, in both directions. Orion's extension methods (`_`-prefixed) and their
answers are skipped: ACP leaves their shape to the agent. Anything else, a method the SDK has no model for included,
is a problem, reported with the line and the error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import schema as s
from pydantic import TypeAdapter, ValidationError

# method -> (params model, result model); None for a notification's result.
CLIENT_METHODS: dict[str, tuple[Any, Any]] = {
    "initialize": (s.InitializeRequest, s.InitializeResponse),
    "authenticate": (s.AuthenticateRequest, s.AuthenticateResponse),
    "logout": (s.LogoutRequest, s.LogoutResponse),
    "session/new": (s.NewSessionRequest, s.NewSessionResponse),
    "session/load": (s.LoadSessionRequest, s.LoadSessionResponse),
    "session/resume": (s.ResumeSessionRequest, s.ResumeSessionResponse),
    "session/fork": (s.ForkSessionRequest, s.ForkSessionResponse),
    "session/list": (s.ListSessionsRequest, s.ListSessionsResponse),
    "session/close": (s.CloseSessionRequest, s.CloseSessionResponse),
    "session/delete": (s.DeleteSessionRequest, s.DeleteSessionResponse),
    "session/prompt": (s.PromptRequest, s.PromptResponse),
    "session/set_mode": (s.SetSessionModeRequest, s.SetSessionModeResponse),
    "session/set_config_option": (s.SetSessionConfigOptionSelectRequest | s.SetSessionConfigOptionBooleanRequest,
                                  s.SetSessionConfigOptionResponse),
    "session/cancel": (s.CancelNotification, None),
    "$/cancel_request": (s.CancelRequestNotification, None),
}
AGENT_METHODS: dict[str, tuple[Any, Any]] = {
    "session/update": (s.SessionNotification, None),
    "session/request_permission": (s.RequestPermissionRequest, s.RequestPermissionResponse),
    "elicitation/create": (s.CreateElicitationRequest, s.CreateElicitationResponse),
    "elicitation/complete": (s.CompleteElicitationNotification, None),
    "fs/read_text_file": (s.ReadTextFileRequest, s.ReadTextFileResponse),
    "fs/write_text_file": (s.WriteTextFileRequest, s.WriteTextFileResponse),
    "terminal/create": (s.CreateTerminalRequest, s.CreateTerminalResponse),
    "terminal/output": (s.TerminalOutputRequest, s.TerminalOutputResponse),
    "terminal/wait_for_exit": (s.WaitForTerminalExitRequest, s.WaitForTerminalExitResponse),
    "terminal/kill": (s.KillTerminalRequest, s.KillTerminalResponse),
    "terminal/release": (s.ReleaseTerminalRequest, s.ReleaseTerminalResponse),
    "$/cancel_request": (s.CancelRequestNotification, None),
}
SENDER_METHODS = {"client": CLIENT_METHODS, "agent": AGENT_METHODS}
OTHER_SIDE = {"client": "agent", "agent": "client"}


@dataclass(frozen=True, slots=True)
class WireMessage:
    tap: int
    sender: str  # "client" or "agent"
    message: Any
    line: str


@dataclass(slots=True)
class Wire:
    """One recording: every message in order, the problems found, and what each request was answered with."""

    messages: list[WireMessage]
    problems: list[str] = field(default_factory=list)
    # (tap, sender of the request, id) -> (method, answer message or None while unanswered)
    exchanges: dict[tuple[int, str, Any], tuple[str, dict[str, Any] | None]] = field(default_factory=dict)

    def methods(self, sender: str) -> list[str]:
        """The methods `sender` called (requests and notifications), in order."""
        return [m.message["method"] for m in self.messages
                if m.sender == sender and isinstance(m.message, dict) and "method" in m.message]

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [m.message for m in self.messages if isinstance(m.message, dict) and m.message.get("method") == method]

    def answers(self, method: str) -> list[dict[str, Any]]:
        """The answers (result or error) to every `method` request, in the order the requests were sent."""
        return [answer for name, answer in self.exchanges.values() if name == method and answer is not None]

    def results(self, method: str) -> list[dict[str, Any]]:
        return [a["result"] for a in self.answers(method) if "result" in a]

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The `update` of every session/update, or those of one kind."""
        return [m["params"]["update"] for m in self.requests("session/update")
                if kind is None or m["params"]["update"].get("sessionUpdate") == kind]

    def taps(self) -> list[int]:
        """The connections (agent launches) recorded, in the order they started."""
        return list(dict.fromkeys(m.tap for m in self.messages))


def read_wire(path: Path) -> Wire:
    """Parse a wire_tap.py log and check every message in it."""
    messages: list[WireMessage] = []
    problems: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        try:
            message = json.loads(record["line"])
        except ValueError as error:
            problems.append(f"{record['dir']} sent a line that is not JSON ({error}): {record['line'][:500]}")
            continue
        messages.append(WireMessage(record["tap"], record["dir"], message, record["line"]))
    wire = Wire(messages, problems)
    for item in messages:
        _check(wire, item)
    return wire


def _validate(model: Any, value: Any) -> str | None:
    try:
        TypeAdapter(model).validate_python(value)
    except ValidationError as error:
        return str(error)
    return None


def _check(wire: Wire, item: WireMessage) -> None:
    message, sender = item.message, item.sender

    def problem(what: str) -> None:
        wire.problems.append(f"{what}\n  {sender} sent: {item.line[:2000]}")

    if not isinstance(message, dict):
        problem("not a JSON-RPC object (ACP has no batches)")
        return
    if message.get("jsonrpc") != "2.0":
        problem("jsonrpc is not \"2.0\"")
    if "method" in message:
        method = message["method"]
        if "id" in message:
            wire.exchanges[(item.tap, sender, message["id"])] = (method, None)
        if method.startswith("_"):
            return  # an extension: its shape is the agent's own
        models = SENDER_METHODS[sender].get(method)
        if models is None:
            problem(f"{method!r} is not an ACP method a {sender} sends")
            return
        params_model, result_model = models
        if ("id" in message) == (result_model is None):
            sent_as = "request" if "id" in message else "notification"
            problem(f"{method!r} sent as a {sent_as}; ACP has it the other way")
        error = _validate(params_model, message.get("params", {}))
        if error:
            problem(f"{method} params fail {getattr(params_model, '__name__', params_model)}: {error}")
        return
    key = (item.tap, OTHER_SIDE[sender], message.get("id"))
    if key not in wire.exchanges:
        problem(f"an answer to id {message.get('id')!r}, which the {OTHER_SIDE[sender]} never asked")
        return
    method, earlier = wire.exchanges[key]
    if earlier is not None:
        problem(f"a second answer to {method} id {message.get('id')!r}")
    wire.exchanges[key] = (method, message)
    if method.startswith("_") or method not in SENDER_METHODS[OTHER_SIDE[sender]]:
        return  # an extension's answer, or one to a request already reported
    if ("result" in message) == ("error" in message):
        problem(f"an answer to {method} needs exactly one of result and error")
        return
    if "error" in message:
        error = _validate(s.Error, message["error"])
        what = "Error"
    else:
        result_model = SENDER_METHODS[OTHER_SIDE[sender]][method][1]
        error = _validate(result_model, message["result"])
        what = getattr(result_model, "__name__", str(result_model))
    if error:
        problem(f"the answer to {method} fails {what}: {error}")
