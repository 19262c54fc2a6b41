"""Permission round trips to the frontend (`session/request_permission`) and the per-session always-allow / always-reject memory."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sidecar.agent import PermissionAnswer
from sidecar.ask_user import TOOL as ASK_TOOL
from sidecar.ask_user import answers_from, form_for

# What Claude Code tells the model when its user rejects a tool call in the permission dialog (CLI 2.1.330's words).
USER_REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
                 "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
                 "tell you how to proceed.")
# Refusals of a hook's ask kept for the CLI's dialog that follows at once (refuse_call).
REFUSALS_KEPT = 64

log = logging.getLogger("sidecar.permissions")

RequestFn = Callable[[str, dict[str, Any], float], Awaitable[Any]]

PERMISSION_OPTIONS: list[dict[str, str]] = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow this tool in this session", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject this tool in this session", "kind": "reject_always"},
]
_OPTION_IDS = frozenset(o["optionId"] for o in PERMISSION_OPTIONS)
# Claude Code's plan approval (ExitPlanMode): the same option ids, the dialog's own choices; each allow also says
# which mode the session goes on in.
PLAN_TOOL = "ExitPlanMode"
PLAN_OPTIONS: list[dict[str, str]] = [
    {"optionId": "allow_always", "name": "Yes, and auto-accept edits", "kind": "allow_always"},
    {"optionId": "allow_once", "name": "Yes, and manually approve edits", "kind": "allow_once"},
    {"optionId": "reject_once", "name": "No, keep planning", "kind": "reject_once"},
]
PLAN_MODES = {"allow_always": "acceptEdits", "allow_once": "default"}
PLAN_REJECTED = ("The user doesn't want to proceed with this plan yet. Stay in plan mode: ask what they would change, "
                 "or revise the plan.")


@dataclass(slots=True)
class PermissionBroker:
    """Asks the frontend about one session's tools; remembers `*_always` answers per tool name for the session."""

    session_id: str
    request: RequestFn
    timeout_s: float = 120.0
    always_allowed: set[str] = field(default_factory=set)
    always_rejected: set[str] = field(default_factory=set)
    # tool_use_id -> the exact input the user allowed when a hook asked about that call (answered once, below)
    approved_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused_calls: dict[str, tuple[str, bool]] = field(default_factory=dict)
    # The client shows forms (ACP `elicitation/create`): AskUserQuestion goes to it as one (sidecar/ask_user.py).
    forms: bool = False
    urls: bool = False  # the client opens URLs for an elicitation (`elicitation.url`)

    def refuse_call(self, tool_use_id: str, message: str, *, interrupt: bool = False) -> None:
        """The user (or a PermissionRequest hook) refused this call when a hook asked: the CLI's permission dialog
        for it, which the hook's ask opens, is answered no with these words, as Claude Code's dialog answers."""
        self.refused_calls[tool_use_id] = (message, interrupt)
        while len(self.refused_calls) > REFUSALS_KEPT:  # a dialog the CLI never opened (a deny rule came first)
            self.refused_calls.pop(next(iter(self.refused_calls)))

    def approve_call(self, tool_use_id: str | None, tool_input: dict[str, Any]) -> None:
        """The user allowed this call when a hook asked: the CLI's own permission check for it is answered yes
        without asking twice, but only after the CLI's rules (a deny rule still wins: the hook never says allow)."""
        if tool_use_id:
            self.approved_calls[tool_use_id] = dict(tool_input)

    async def ask(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        reason: str | None,
        *,
        from_hook: bool = False,
    ) -> PermissionAnswer:
        approved = self.approved_calls.pop(tool_use_id, None) if tool_use_id and not from_hook else None
        if approved is not None and approved == tool_input:
            return PermissionAnswer(True)
        if tool_name == ASK_TOOL and self.forms and not from_hook:
            form = form_for(tool_input, self.session_id, tool_use_id)
            if form is not None:
                return await self._ask_user(tool_input, form)
        # A hook that asks about this very call outranks a standing "always allow"; a standing reject still holds.
        if tool_name in self.always_allowed and not from_hook:
            return PermissionAnswer(True)
        if tool_name in self.always_rejected:
            return PermissionAnswer(False, message=f"The user rejected every use of {tool_name} in this session.")
        from sidecar.acp.tools import tool_title

        plan = tool_name == PLAN_TOOL and not from_hook
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "toolUseId": tool_use_id or "",
            "toolName": tool_name,
            "toolInput": tool_input,  # exactly what will run
            "title": tool_title(tool_name, tool_input),  # what the agent asked for, as a person reads it
            "options": PLAN_OPTIONS if plan else PERMISSION_OPTIONS,
        }
        if plan and isinstance(tool_input.get("plan"), str) and tool_input["plan"].strip():
            params["reason"] = tool_input["plan"]  # what the user approves: the plan itself, shown in the request
        elif reason:
            params["reason"] = str(reason)
        try:
            answer = await self.request("session/request_permission", params, self.timeout_s)
        except TimeoutError:
            log.warning("permission request for %s timed out after %.0f s", tool_name, self.timeout_s)
            return PermissionAnswer(
                False,
                message=(
                    f"Permission to use {tool_name} was not granted: the user did not answer within "
                    f"{self.timeout_s:g} seconds. Do not retry the same call; ask the user instead."
                ),
            )
        except Exception as exc:  # the frontend is gone or answered with an error: never run the tool
            log.warning("permission request for %s failed: %s", tool_name, exc)
            return PermissionAnswer(False, message=f"Permission to use {tool_name} could not be obtained ({exc}).")
        if plan:
            return self._interpret_plan(answer)
        return self._interpret(tool_name, answer)

    def _interpret_plan(self, answer: Any) -> PermissionAnswer:
        if hasattr(answer, "model_dump"):
            answer = answer.model_dump(by_alias=True)
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        option = outcome.get("optionId") if isinstance(outcome, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected" and option in PLAN_MODES:
            return PermissionAnswer(True, set_mode=PLAN_MODES[option])
        return PermissionAnswer(False, message=PLAN_REJECTED)

    async def elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        """An MCP server's question (the CLI's elicitation, `request` in its keys) put to the client's user as ACP's
        `elicitation/create`; the client's `{action, content}` is the answer. "cancel" when the client shows no
        forms (or no URLs, for a "url" one), the question is malformed, or the client fails or does not answer."""
        mode = request.get("mode") or "form"
        given = request.get("message")
        message = given if isinstance(given, str) else ""
        params: dict[str, Any] = {"sessionId": self.session_id, "mode": mode, "message": message[:4000]}
        if mode == "form" and self.forms and isinstance(request.get("requested_schema"), dict):
            params["requestedSchema"] = request["requested_schema"]
        elif mode == "url" and self.urls and isinstance(request.get("url"), str):
            from urllib.parse import urlsplit

            if urlsplit(request["url"]).scheme not in ("https", "http"):
                return {"action": "cancel"}  # a client opens what it is given: only web addresses
            params["url"] = request["url"]
            params["elicitationId"] = str(request.get("elicitation_id") or "")
        else:
            return {"action": "cancel"}
        try:
            answer = await self.request("elicitation/create", params, self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - timed out, refused, the client gone: nobody answered
            log.warning("elicitation from %s: the client did not answer (%s)", request.get("mcp_server_name"), exc)
            return {"action": "cancel"}
        action, content = _elicitation_answer(answer)
        return {"action": action, "content": content} if action == "accept" and content is not None else \
            {"action": action}

    async def _ask_user(self, tool_input: dict[str, Any], form: dict[str, Any]) -> PermissionAnswer:
        """The model's questions as a form; the answers go back in the allowed input, as Claude Code's own dialog
        puts them (the CLI hands them to the model as the tool's result)."""
        try:
            answer = await self.request("elicitation/create", form, self.timeout_s)
        except TimeoutError:
            return PermissionAnswer(False, message=(
                f"The user did not answer within {self.timeout_s:g} seconds. Do not ask again; go on with what "
                "you know, or stop and say what you need."))
        except Exception as exc:  # the client failed the request: nothing was answered
            log.warning("AskUserQuestion: the client's form failed: %s", exc)
            return PermissionAnswer(False, message=f"The question could not be shown to the user ({exc}).")
        action, content = _elicitation_answer(answer)
        if action == "accept":
            answers = answers_from(tool_input, content)
            if answers is not None:
                return PermissionAnswer(True, updated_input={**tool_input, "answers": answers})
            return PermissionAnswer(False, message="The user sent the form without answering every question.")
        if action == "decline":
            return PermissionAnswer(False, message="The user declined to answer these questions.")
        return PermissionAnswer(False, message="The user dismissed the questions without answering.")

    def _interpret(self, tool_name: str, answer: Any) -> PermissionAnswer:
        if hasattr(answer, "model_dump"):
            answer = answer.model_dump(by_alias=True)
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        option = outcome.get("optionId") if isinstance(outcome, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected" and option in _OPTION_IDS:
            if option == "allow_always":
                self.always_allowed.add(tool_name)
            elif option == "reject_always":
                self.always_rejected.add(tool_name)
            if option.startswith("allow"):
                return PermissionAnswer(True)
            return PermissionAnswer(False, message=USER_REJECTED)
        return PermissionAnswer(False, message=f"The user dismissed the permission request for {tool_name}.")


def _elicitation_answer(answer: Any) -> tuple[str, dict[str, Any] | None]:
    """A client's `elicitation/create` answer as (accept | decline | cancel, the accepted content or None); anything
    else it sent is a cancel."""
    if hasattr(answer, "model_dump"):
        answer = answer.model_dump(by_alias=True)
    action = answer.get("action") if isinstance(answer, dict) else None
    if action not in ("accept", "decline", "cancel"):
        return "cancel", None
    content = answer.get("content")
    return action, content if isinstance(content, dict) else None
