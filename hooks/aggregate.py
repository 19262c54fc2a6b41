"""One answer per fired event: every hook's result combined (deny > defer > ask > allow, or block), and that answer in Claude Code's hook output JSON."""

from __future__ import annotations

from typing import Any

from hooks.interpret import PERMISSION_EVENTS, context_of, decision_of, updated_input_of
from hooks.types import DECISION_RANK, AggregateResult, HookResult

# Events whose hookSpecificOutput may carry additionalContext for the model.
_CONTEXT_EVENTS = frozenset(
    {"PreToolUse", "UserPromptSubmit", "SessionStart", "PostToolUse", "PostToolUseFailure", "SubagentStart", "Notification"}
)


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
    if len(hso) > 1:
        out["hookSpecificOutput"] = hso
    return out
