"""The one bridge between the SDK's hook callbacks and our HookRunner: every SDK hook event of a session goes through here."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import anyio

from hooks.aggregate import to_hook_json
from hooks.runner import HookRunner
from hooks.scoped import skill_key
from hooks.tracing import TRACE_KEY
from hooks.types import TOOL_EVENTS, SessionContext
from sidecar.acp.client_tools import builtin_name
from sidecar.file_watch import STATE_KEY as FILE_WATCH
from sidecar.permissions import USER_REJECTED, PermissionBroker

# session.state key: SessionStart context not yet given to the model (it goes with the first prompt that is let through)
PENDING_SESSION_CONTEXT = "_pending_session_context"
# session.state key: per tool call, the keys of the CLI's PreToolUse input its PermissionRequest input repeats
# (the sidecar fires PermissionRequest itself, from `can_use_tool`, which does not carry them).
TOOL_CALL_CONTEXT = "_tool_call_context"
_TOOL_CALL_KEYS = ("permission_mode", "effort", "prompt_id", "agent_id", "agent_type")
# session.state key: the agent's working directory as the CLI's last hook input gave it (for CwdChanged).
LAST_CWD = "_last_cwd"
# session.state key: the server whose last elicitation an Elicitation hook answered (its ElicitationResult is not run).
ELICITATION_ANSWERED = "_elicitation_answered"
_TOOL_CALL_MEMORY = 64  # calls remembered: the permission ask follows its PreToolUse at once
# Permission modes in which the CLI always opens its permission dialog (`can_use_tool`) for a PreToolUse hook's ask,
# whatever its allow rules say (measured on 2.1.330; bypassPermissions could not be, the CLI refuses it to root).
DIALOG_ON_ASK_MODES = frozenset({"default", "acceptEdits", "dontAsk", "auto", "plan"})
# Events after a call's PreToolUse chain: the CLI hands them the input env-isolation rewrote (`unset …; <command>`),
# where Claude Code's hooks would read the agent's command. The prefix is the sidecar's business: they get it off.
_AFTER_THE_REWRITE = frozenset({"PostToolUse", "PostToolUseFailure", "PermissionDenied", "PostToolBatch"})

log = logging.getLogger("sidecar.hook_bridge")
BRIDGE_KEY = "_runner_bridge"  # the session's bridge, in its context's state (session end settles it)
SETTLE_S = 5.0  # at session end, how long the hooks of CLI callbacks still running may take to finish


class RunnerBridge:
    """Implements sidecar.agent.HookBridge: fire the runner, turn a hook's "ask" into a frontend permission round trip."""

    __slots__ = ("runner", "session", "broker", "_in_flight", "_settled")

    def __init__(self, runner: HookRunner, session: SessionContext, broker: PermissionBroker) -> None:
        self.runner = runner
        self.session = session
        self._in_flight = 0  # CLI callbacks being answered
        self._settled: anyio.Event | None = None
        session.state[BRIDGE_KEY] = self
        self.broker = broker

    def budget_s(self, event: str) -> float:
        budget = self.runner.budget_s(event)
        if event == "PreToolUse":
            budget += self.broker.timeout_s  # an "ask" waits for the user inside the same callback
        return budget

    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        self._in_flight += 1
        try:
            return await self._fire(event, payload, tool_use_id)
        finally:
            self._in_flight -= 1
            if not self._in_flight and self._settled is not None:
                self._settled.set()

    async def settle(self, timeout: float) -> bool:
        """Wait (at most `timeout`) until every hook the CLI asked for has answered. The CLI fires some events
        without waiting for them (InstructionsLoaded for a rule a Read made it load, as the turn ends): ending the
        session at once would cancel those hooks, which Claude Code lets finish. False if the time ran out."""
        with anyio.move_on_after(timeout):
            while self._in_flight:
                self._settled = anyio.Event()
                await self._settled.wait()
            return True
        return False

    async def _fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        if not self.delivered_by_cli(event, payload) or self._answered_by_a_hook(event, payload):
            return {}
        if log.isEnabledFor(logging.DEBUG):
            log.debug("CLI callback %s session=%s", event, self.session.session_id)
        # The frontend knows the session by our id; hooks and tracking must too.
        payload["session_id"] = self.session.session_id
        if isinstance(payload.get("tool_name"), str):
            # An ACP client's file and terminal tools are Claude Code's own to every hook (sidecar/acp/client_tools.py).
            payload["tool_name"] = builtin_name(payload["tool_name"])
        if event in _AFTER_THE_REWRITE:
            _as_the_agent_wrote(payload)
        if isinstance(payload.get("prompt_id"), str):
            self.session.state["prompt_id"] = payload["prompt_id"]  # for the events the sidecar fires itself
        # For non-tool events the CLI passes a callback UUID here, not a tool call's id: hooks must not get it
        # as `tool_use_id`, nor the frontend as a hook_started `toolUseId` that matches no tool call.
        if event not in TOOL_EVENTS:
            tool_use_id = None
        if event == "PreToolUse" and tool_use_id:
            self._remember_call(tool_use_id, payload)
        await self._notice_cwd(payload)
        context = self._scoped_context(event, payload)
        agg = await self.runner.fire(event, payload, context, tool_use_id=tool_use_id)
        self._track_skill(event, payload, agg)
        if event == "UserPromptSubmit" and not agg.blocked and PENDING_SESSION_CONTEXT in self.session.state:
            start = self.session.state.pop(PENDING_SESSION_CONTEXT)
            agg.additional_context = "\n".join(filter(None, [start, agg.additional_context]))
        output = to_hook_json(agg)
        if event in ("UserPromptSubmit", "UserPromptExpansion") and agg.blocked:
            await self._notice("error", f"Prompt blocked by a {event} hook" + (f": {agg.reason}" if agg.reason else "."),
                               event)
        if event == "PreToolUse" and agg.decision == "ask":
            output = await self._ask(payload, agg.updated_input, agg.reason, output)
        return output

    async def _notice_cwd(self, payload: dict[str, Any]) -> None:
        """Fire CwdChanged when the CLI's input shows the agent in another directory than last time: the CLI fires
        it only for its own settings hooks, never for an SDK callback (measured on 2.1.330)."""
        cwd = payload.get("cwd")
        if not isinstance(cwd, str):
            return
        old = self.session.state.get(LAST_CWD, str(self.session.project_dir))
        self.session.state[LAST_CWD] = cwd
        if cwd == old or not self.runner.hookset.active_for("CwdChanged"):
            return
        from sidecar.sessions import sidecar_payload

        changed = sidecar_payload("CwdChanged", self.session, cwd=cwd, old_cwd=old, new_cwd=cwd)
        agg = await self.runner.fire("CwdChanged", changed, self.session)
        watch = self.session.state.get(FILE_WATCH)  # its watchPaths count, as in the CLI
        if watch is not None:
            watch.watch_paths(agg.specific)

    async def elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        """An MCP server's elicitation, handed to the host by the CLI: the Elicitation hooks decide first, with the
        CLI's input; an answer of theirs ("accept" with its content, "decline", "cancel") goes back to the server,
        and the CLI's ElicitationResult callback that follows is not run again for it (in Claude Code a hook's answer
        is final). Without one, the ACP client's user answers when it shows forms (or opens a URL, for a "url" one);
        otherwise nobody can: "cancel"."""
        from sidecar.sessions import sidecar_payload

        fields = {key: request[key] for key in ("mcp_server_name", "message", "mode", "url", "elicitation_id",
                                                 "requested_schema") if request.get(key) is not None}
        payload = sidecar_payload("Elicitation", self.session, **fields)
        payload["cwd"] = self.session.state.get(LAST_CWD, payload["cwd"])
        agg = await self.runner.fire("Elicitation", payload, self.session)
        action = agg.specific.get("action")
        if action not in ("accept", "decline", "cancel"):
            # No hook answered: the user does, where the client shows forms (Claude Code asks its user here too);
            # the CLI's ElicitationResult hooks then run on that answer, as after Claude Code's own dialog.
            return await self.broker.elicit(fields)
        self.session.state[ELICITATION_ANSWERED] = request.get("mcp_server_name")
        answer: dict[str, Any] = {"action": action}
        if action == "accept" and isinstance(agg.specific.get("content"), dict):
            answer["content"] = agg.specific["content"]
        return answer

    def _remember_call(self, tool_use_id: str, payload: dict[str, Any]) -> None:
        calls = self.session.state.setdefault(TOOL_CALL_CONTEXT, {})
        calls[tool_use_id] = {key: payload[key] for key in _TOOL_CALL_KEYS if key in payload}
        while len(calls) > _TOOL_CALL_MEMORY:
            calls.pop(next(iter(calls)))

    @staticmethod
    def delivered_by_cli(event: str, payload: dict[str, Any]) -> bool:
        """False for the session's own start and end, which the sidecar fires itself at session/new, session/load
        and session/end: the CLI's callback for them, should one ever come, must not run the hooks a second time.
        A start after `/compact` or `/clear`, and the end before `/clear`, are the CLI's alone."""
        if event == "SessionStart":
            return payload.get("source") not in ("startup", "resume")
        if event == "InstructionsLoaded":  # the session-start loads are the sidecar's (sessions.instructions_loaded)
            return payload.get("load_reason") != "session_start"
        if event == "SessionEnd":
            return payload.get("reason") == "clear"
        return True

    def _answered_by_a_hook(self, event: str, payload: dict[str, Any]) -> bool:
        """The ElicitationResult after an elicitation an Elicitation hook answered: Claude Code runs none then."""
        if event != "ElicitationResult" or ELICITATION_ANSWERED not in self.session.state:
            return False
        return self.session.state.pop(ELICITATION_ANSWERED) == payload.get("mcp_server_name")

    def _scoped_context(self, event: str, payload: dict[str, Any]) -> SessionContext:
        """The session as this event sees it: inside which subagent (the CLI marks its events with `agent_type`) and
        under which skill, so hooks scoped to a subagent or a skill fire exactly while it runs (hooks/scoped.py)."""
        agent_type = payload.get("agent_type") if isinstance(payload.get("agent_type"), str) else None
        agent_id = payload.get("agent_id") if isinstance(payload.get("agent_id"), str) else None
        skill = self.session.state.get(skill_key(agent_id))
        if agent_type is None and skill is None:
            return self.session
        # Shares the session's state, emitter and ids; only who is running differs.
        return dataclasses.replace(self.session, agent_type=agent_type, skill=skill)

    def _track_skill(self, event: str, payload: dict[str, Any], agg: Any) -> None:
        agent_id = payload.get("agent_id") if isinstance(payload.get("agent_id"), str) else None
        if event == "PostToolUse" and payload.get("tool_name") == "Skill" and not agg.blocked:
            name = (payload.get("tool_input") or {}).get("skill")
            if isinstance(name, str) and name:
                self.session.state[skill_key(agent_id)] = name.lstrip("/")
        elif event in ("Stop", "SubagentStop"):
            # The skill ran for the rest of that agent's turn (a SubagentStop is the subagent's end).
            self.session.state.pop(skill_key(agent_id if event == "SubagentStop" else None), None)

    async def permission_request(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None,
                                 suggestions: list[Any] | None) -> tuple[Any, str]:
        """Run the PermissionRequest hooks on a permission dialog, with the CLI's input (its PreToolUse's context
        keys, the CLI's suggestions, no tool_use_id: Claude Code gives a PermissionRequest hook none, and the
        agent's command without env-isolation's prefix). Returns (their aggregate, or None when none listens;
        the prefix taken off the command)."""
        from sidecar.sessions import sidecar_payload

        if not self.runner.hookset.active_for("PermissionRequest"):
            return None, ""
        call = self.session.state.get(TOOL_CALL_CONTEXT, {}).get(tool_use_id, {}) if tool_use_id else {}
        # The CLI's dialog for a hook's ask offers no suggestions, and its input has no such key (None here).
        more = {"permission_suggestions": _agents_suggestions(suggestions)} if suggestions is not None else {}
        payload = sidecar_payload("PermissionRequest", self.session, **call, tool_name=builtin_name(tool_name),
                                  tool_input=dict(tool_input), **more)
        prefix = _as_the_agent_wrote(payload)
        return await self.runner.fire("PermissionRequest", payload, self.session, tool_use_id=tool_use_id), prefix

    async def _notice(self, level: str, text: str, event: str) -> None:
        try:
            await self.session.emit("session/update", {"update": {
                "sessionUpdate": "notice", "level": level, "text": text, "source": "hook", "event": event}})
        except Exception:  # noqa: BLE001 - a notice the frontend cannot take must not change the hook's answer
            log.exception("could not send a notice")

    async def _ask(
        self, payload: dict[str, Any], updated_input: dict[str, Any] | None, reason: str | None, output: dict[str, Any]
    ) -> dict[str, Any]:
        tool_name = str(payload.get("tool_name") or "")
        tool_input = updated_input if updated_input is not None else dict(payload.get("tool_input") or {})
        # Claude Code opens its dialog for a hook's ask, and the PermissionRequest hooks run on it. Here their deny
        # is taken; their allow is not: a hook's ask (a built-in guard's too) is the user's to answer.
        tool_use_id = payload.get("tool_use_id")
        agg, _prefix = await self.permission_request(tool_name, tool_input, tool_use_id, None)
        answer = _hooks_denial(agg)
        if answer is None:
            answer = await self.broker.ask(tool_name, tool_input, tool_use_id, reason, from_hook=True)
        specific = dict(output.get("hookSpecificOutput") or {"hookEventName": "PreToolUse"})
        if not answer.allow and tool_use_id and payload.get("permission_mode") in DIALOG_ON_ASK_MODES:
            # The hook's ask stays: the CLI opens its permission dialog for it (in these modes always, allow rules
            # or not: measured on 2.1.330), and that dialog is answered no with the refusal's own words, which the
            # model then reads as in Claude Code. In any other mode the refusal is a deny here.
            self.broker.refuse_call(tool_use_id, answer.message or USER_REJECTED, interrupt=answer.interrupt)
            return {**output, "hookSpecificOutput": specific}
        if answer.allow:
            # Not "allow": that would skip the CLI's own permission rules (a user's deny rule included). The call
            # goes on to the CLI's check, where the broker answers yes for exactly this call without a second prompt.
            specific.pop("permissionDecision", None)
            specific.pop("permissionDecisionReason", None)
            final = answer.updated_input if answer.updated_input is not None else tool_input
            if final != dict(payload.get("tool_input") or {}):
                specific["updatedInput"] = final
            self.broker.approve_call(payload.get("tool_use_id"), final)
        else:
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = answer.message or "The user denied this tool call."
        return {**output, "hookSpecificOutput": specific}


def _hooks_denial(agg: Any) -> Any:
    """The PermissionRequest hooks' deny as the permission's answer (with their interrupt), or None."""
    from sidecar.agent import PermissionAnswer

    if agg is None or agg.decision != "deny":
        return None
    return PermissionAnswer(False, message=agg.reason or "Denied by a PermissionRequest hook.",
                            interrupt=_asks_interrupt(agg))


def _asks_interrupt(agg: Any) -> bool:
    """A PermissionRequest deny with `decision.interrupt: true` also stops the turn, as in Claude Code."""
    for result in agg.results:
        specific = result.output.hookSpecificOutput if result.output is not None else None
        decision = (specific.model_extra or {}).get("decision") if specific is not None else None
        if isinstance(decision, dict) and decision.get("behavior") == "deny" and decision.get("interrupt") is True:
            return True
    return False


class HookedAsker:
    """The CLI's permission ask (`can_use_tool`) as Claude Code handles a permission dialog: the PermissionRequest
    hooks answer first, and only when none decides is the user asked (through the broker).

    The sidecar fires PermissionRequest itself, here, rather than on the CLI's PermissionRequest callback: the CLI
    dispatches that callback and `can_use_tool` concurrently, so the user could already be looking at a question
    the hooks answer. A call the user already approved (a hook's ask) goes straight through."""

    __slots__ = ("bridge", "broker")

    def __init__(self, bridge: RunnerBridge, broker: PermissionBroker) -> None:
        self.bridge = bridge
        self.broker = broker

    async def ask(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None, reason: str | None,
                  *, from_hook: bool = False, suggestions: list[Any] | None = None) -> Any:
        from sidecar.agent import PermissionAnswer

        session = self.bridge.session
        refused = self.broker.refused_calls.pop(tool_use_id, None) if tool_use_id else None
        if refused is not None:
            return PermissionAnswer(False, message=refused[0], interrupt=refused[1])
        already = tool_use_id is not None and self.broker.approved_calls.get(tool_use_id) == tool_input
        agg, prefix = None, ""
        if not from_hook and not already:
            agg, prefix = await self.bridge.permission_request(tool_name, tool_input, tool_use_id, suggestions or [])
        if agg is not None:
            if agg.decision == "allow":
                return PermissionAnswer(True, updated_input=_isolated(agg.updated_input, prefix))
            denial = _hooks_denial(agg)
            if denial is not None:
                return denial
        trace = session.state.get(TRACE_KEY)  # hooks/tracing.py: the round trip is a span of its own
        if trace is None:
            return await self.broker.ask(tool_name, tool_input, tool_use_id, reason, from_hook=from_hook)
        span = trace.start_permission(tool_name, tool_use_id, reason)
        outcome = "cancelled"
        try:
            answer = await self.broker.ask(tool_name, tool_input, tool_use_id, reason, from_hook=from_hook)
            outcome = "allow" if getattr(answer, "allow", False) else "deny"
            return answer
        finally:
            trace.end_permission(span, outcome)


def _as_the_agent_wrote(payload: dict[str, Any]) -> str:
    """Take env-isolation's prefix off the Bash commands of a hook input (one call, or PostToolBatch's
    `tool_calls`), as the agent wrote them; returns the prefix taken off ("" when none was)."""
    from hooks.builtin.env_isolation import isolation_prefix

    calls = payload["tool_calls"] if isinstance(payload.get("tool_calls"), list) else [payload]
    taken = ""
    for call in calls:
        if not isinstance(call, dict) or call.get("tool_name") != "Bash" or not isinstance(call.get("tool_input"), dict):
            continue
        tool_input = call["tool_input"]
        command = tool_input.get("command")
        prefix = isolation_prefix(command) if isinstance(command, str) else ""
        if prefix:
            call["tool_input"] = {**tool_input, "command": command[len(prefix):]}
            taken = prefix
    return taken


def _isolated(updated_input: dict[str, Any] | None, prefix: str) -> dict[str, Any] | None:
    """A PermissionRequest hook's rewrite of a command it read without env-isolation's prefix gets the prefix back:
    the CLI runs what the hook answers, and a hook's rewrite must not run with the sidecar's variables in reach."""
    if not prefix or not isinstance(updated_input, dict) or not isinstance(updated_input.get("command"), str):
        return updated_input
    command = updated_input["command"]
    return updated_input if command.startswith(prefix) else {**updated_input, "command": prefix + command}


def _agents_suggestions(suggestions: list[Any]) -> list[Any]:
    """The CLI's permission suggestions as a hook would see them for the agent's command: for a command env-isolation
    rewrote, the CLI also suggests a rule for its `unset …` part, which Claude Code's hooks would never see. Only the
    hook's input changes: the user's question keeps the CLI's suggestions (both rules let the rewritten command by)."""
    from hooks.builtin.env_isolation import is_isolation_unset

    kept: list[Any] = []
    for suggestion in suggestions:
        if isinstance(suggestion, dict) and suggestion.get("type") == "addRules" and isinstance(suggestion.get("rules"),
                                                                                                  list):
            rules = [rule for rule in suggestion["rules"]
                     if not (isinstance(rule, dict) and rule.get("toolName") == "Bash"
                             and isinstance(rule.get("ruleContent"), str) and is_isolation_unset(rule["ruleContent"]))]
            if not rules:
                continue
            suggestion = {**suggestion, "rules": rules}
        kept.append(suggestion)
    return kept
