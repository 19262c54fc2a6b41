"""One answer per fired event: every hook's result combined (deny > defer > ask > allow, or block), and that answer in Claude Code's hook output JSON."""

from __future__ import annotations

from typing import Any

from hooks.interpret import PERMISSION_EVENTS, context_of, decision_of, updated_input_of
from hooks.types import DECISION_RANK, AggregateResult, HookResult

# Events whose hookSpecificOutput may carry additionalContext for the model.
_CONTEXT_EVENTS = frozenset({
    "PreToolUse", "UserPromptSubmit", "UserPromptExpansion", "SessionStart", "Setup", "PostToolUse",
    "PostToolUseFailure", "PostToolBatch", "Stop", "SubagentStart", "SubagentStop", "Notification", "PostModelSwitch",
})
# hookSpecificOutput keys the aggregate itself combines; every other key an event knows (PermissionDenied's `retry`,
# MessageDisplay's `displayContent`, CwdChanged's `watchPaths`, an elicitation's `action`...) passes through to the
# CLI, which applies its own rules to it, a later hook's value over an earlier one's.
_COMBINED_KEYS = frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput",
                            "additionalContext"})


def aggregate(event: str, results: list[HookResult]) -> AggregateResult:
    """Combine results given in registration order (background hooks excluded by the caller)."""
    agg = AggregateResult(event=event, results=list(results))
    contexts: list[str] = []
    best_rank = -1
    for r in results:
        decision, reason = decision_of(r, event)
        if decision is not None:
            if not r.enforced:
                agg.system_messages.append(
                    f"Stop hook {r.hook_name!r} blocked again while stop_hook_active was true; "
                    f"not enforced (loop guard): {reason or ''}".rstrip(": ")
                )
            elif decision == "block":
                if agg.decision != "block":
                    agg.decision, agg.reason = "block", reason
            else:
                rank = DECISION_RANK[decision]
                if rank > best_rank:
                    best_rank, agg.decision, agg.reason = rank, decision, reason
        upd = updated_input_of(r)
        if upd is not None:
            agg.updated_input = upd
        _pass_through(agg, r)
        _worktree_path(agg, r)
        ctx = context_of(r, event)
        if ctx:
            contexts.append(ctx)  # unlabelled and newline-joined, as Claude Code gives several hooks' context
        out = r.output if r.outcome in ("success", "blocked") else None
        if out is not None:
            if out.systemMessage:
                agg.system_messages.append(out.systemMessage)
            if out.continue_ is False:
                agg.continue_ = False
                if agg.stop_reason is None and out.stopReason:
                    agg.stop_reason = out.stopReason
            if out.suppressOutput:
                agg.suppress_output = True
    if contexts:
        agg.additional_context = "\n".join(contexts)
    return agg


def _worktree_path(agg: AggregateResult, result: HookResult) -> None:
    """WorktreeCreate: a command hook answers with the new worktree's path on stdout, as plain text (Claude Code's
    rule for its own command hooks); the CLI takes a callback's as `hookSpecificOutput.worktreePath`. The first
    hook that names one decides, as JSON's `worktreePath` would."""
    if (agg.event == "WorktreeCreate" and result.outcome == "success" and result.output is None
            and "worktreePath" not in agg.specific and (result.stdout or "").strip()):
        agg.specific["worktreePath"] = result.stdout.strip()


def _pass_through(agg: AggregateResult, result: HookResult) -> None:
    out = result.output if result.outcome in ("success", "blocked") else None
    if out is None or out.hookSpecificOutput is None or not out.hookSpecificOutput.model_extra:
        return
    for key, value in out.hookSpecificOutput.model_extra.items():
        if key in _COMBINED_KEYS or (key == "decision" and agg.event == "PermissionRequest"):
            continue
        if key == "watchPaths" and isinstance(value, list) and isinstance(agg.specific.get(key), list):
            value = [*agg.specific[key], *(v for v in value if v not in agg.specific[key])]
        agg.specific[key] = value


def to_hook_json(agg: AggregateResult) -> dict[str, Any]:
    """The aggregate as one hook's JSON output, for the SDK callback to return to the CLI."""
    out: dict[str, Any] = {}
    if not agg.continue_:
        out["continue"] = False
        if agg.stop_reason:
            out["stopReason"] = agg.stop_reason
    if agg.suppress_output:
        out["suppressOutput"] = True
    if agg.system_messages:
        out["systemMessage"] = "\n".join(agg.system_messages)
    hso: dict[str, Any] = {"hookEventName": agg.event}
    if agg.event == "PermissionRequest":
        if agg.decision in ("allow", "deny"):
            decision: dict[str, Any] = {"behavior": agg.decision}
            if agg.decision == "allow" and agg.updated_input is not None:
                decision["updatedInput"] = agg.updated_input
            if agg.decision == "deny" and agg.reason:
                decision["message"] = agg.reason
            hso["decision"] = decision
    elif agg.event in PERMISSION_EVENTS:
        if agg.decision is not None:
            hso["permissionDecision"] = agg.decision
            if agg.reason:
                hso["permissionDecisionReason"] = agg.reason
        if agg.updated_input is not None and agg.decision != "deny":
            hso["updatedInput"] = agg.updated_input
    elif agg.decision == "block":
        out["decision"] = "block"
        out["reason"] = agg.reason or "blocked by a hook"
    if agg.additional_context and agg.event in _CONTEXT_EVENTS:
        hso["additionalContext"] = agg.additional_context
    hso.update(agg.specific)
    if len(hso) > 1:
        out["hookSpecificOutput"] = hso
    return out
