"""What an execution means: hook stdout parsed as Claude Code parses it, and raw facts turned into an outcome and a decision."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from hooks.types import EXIT2_BLOCKS, ExecutionReport, HookOutput, HookResult

# Events whose stdout (exit 0, not JSON) becomes context for the model, as in Claude Code.
TEXT_CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
PERMISSION_EVENTS = frozenset({"PreToolUse", "PermissionRequest"})
STOP_EVENTS = frozenset({"Stop", "SubagentStop"})
# The tool already ran, but exit 2 still shows stderr to the model, as in Claude Code (a "block" with that reason).
FEEDBACK_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})


def parse_stdout(stdout: str, *, lenient: bool = False) -> tuple[HookOutput | None, str | None, str | None]:
    """(output, text, error): JSON when stdout starts with `{` (as the CLI does), plain text otherwise.

    `lenient` (command hooks, as Claude Code reads them): stdout that starts with `{` but does not parse is plain
    output. Otherwise (python, http, callable: Orion's own types) it is an error.
    """
    stripped = stdout.strip()
    if not stripped:
        return None, None, None
    if not stripped.startswith("{"):
        return None, stripped, None
    try:
        return HookOutput.model_validate(json.loads(stripped)), None, None
    except json.JSONDecodeError as exc:
        if lenient:
            return None, stripped, None
        return None, None, invalid_json(exc)
    except ValidationError as exc:
        return None, None, f"hook output does not match the hook output schema: {_short(exc)}"


def invalid_json(exc: json.JSONDecodeError) -> str:
    return f"hook printed invalid JSON on stdout: {exc.msg} at line {exc.lineno} column {exc.colno}"


def coerce_output(value: Any) -> tuple[HookOutput | None, str | None, str | None]:
    """A Python hook's return value: HookOutput, dict, str (plain output) or None."""
    if value is None:
        return None, None, None
    if isinstance(value, HookOutput):
        return value, None, None
    if isinstance(value, dict):
        try:
            return HookOutput.model_validate(value), None, None
        except ValidationError as exc:
            return None, None, f"hook returned a dict that does not match the hook output schema: {_short(exc)}"
    if isinstance(value, str):
        return parse_stdout(value)
    return None, None, f"hook returned {type(value).__name__}; expected a dict, HookOutput, str or None"


def _short(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])


def decision_of(result: HookResult, event: str) -> tuple[str | None, str | None]:
    """The decision this one result asks for ("allow" | "ask" | "defer" | "deny" | "block" | None) and its reason."""
    deny_word = "deny" if event in PERMISSION_EVENTS else "block"
    if result.outcome in ("error", "timeout") and result.fail_closed:
        return deny_word, f"hook {result.hook_name!r} failed and is fail-closed: {result.error or result.outcome}"
    if result.outcome not in ("success", "blocked"):
        return None, None
    if result.outcome == "blocked" and result.output is None:
        # exit 2 (or an evaluator's {"ok": false}): stderr is the reason, after the command as Claude Code writes it
        # The stderr as written, its trailing newline included: Claude Code keeps it in what the model reads.
        if result.hook_type == "command" and result.label:
            # Claude Code 2.1.330: `[<command>]: <stderr or "No stderr output">`, and for a plugin's hook the
            # plugin's id on a line of its own after it.
            reason = f"[{result.label}]: {result.stderr or 'No stderr output'}"
            if result.plugin_id:
                reason += f"\nThis hook comes from the {result.plugin_id} plugin."
            return deny_word, reason
        reason = (result.stderr if result.stderr.strip() else "") or result.text or f"blocked by hook {result.hook_name!r}"
        return deny_word, (f"[{result.label}]: {reason}" if result.label else reason)
    out = result.output
    if out is None:
        return None, None
    hso = out.hookSpecificOutput
    if event in PERMISSION_EVENTS:
        if hso is not None:
            if hso.permissionDecision:
                return hso.permissionDecision, hso.permissionDecisionReason or out.reason
            behaviour = _permission_request_decision(hso)
            if behaviour is not None:
                return behaviour
        if out.decision == "block":
            return "deny", out.reason
        if out.decision == "approve":
            return "allow", out.reason
        return None, None
    if out.decision == "block":
        return "block", out.reason or f"blocked by hook {result.hook_name!r}"
    return None, None


def _permission_request_decision(hso: Any) -> tuple[str, str | None] | None:
    extra = hso.model_extra or {}
    decision = extra.get("decision")
    if isinstance(decision, dict) and decision.get("behavior") in ("allow", "deny"):
        return decision["behavior"], decision.get("message")
    return None


def updated_input_of(result: HookResult) -> dict[str, Any] | None:
    out = result.output
    if out is None or out.hookSpecificOutput is None or result.outcome != "success":
        return None
    hso = out.hookSpecificOutput
    if hso.updatedInput is not None:
        return hso.updatedInput
    decision = (hso.model_extra or {}).get("decision")
    if isinstance(decision, dict) and isinstance(decision.get("updatedInput"), dict):
        return decision["updatedInput"]
    return None


def context_of(result: HookResult, event: str) -> str | None:
    if result.outcome not in ("success", "blocked"):
        return None
    if result.output is not None and result.output.hookSpecificOutput is not None:
        ctx = result.output.hookSpecificOutput.additionalContext
        if ctx:
            return ctx
    if result.output is None and result.text and event in TEXT_CONTEXT_EVENTS and result.exit_code in (0, None):
        return result.text
    return None


# The hook types Claude Code has: their answers are held to its rules. Orion's own (python, callable) may leave
# `hookEventName` out; the event they ran for is implied.
CLAUDE_CODE_TYPES = frozenset({"command", "http", "prompt", "agent", "mcp_tool"})


def _named_event(output: HookOutput | None) -> str | None:
    """The event a JSON answer's hookSpecificOutput names ("" when it has one without a name); None without one."""
    if output is None or output.hookSpecificOutput is None:
        return None
    return output.hookSpecificOutput.hookEventName or ""


def make_result(spec: Any, event: str, report: ExecutionReport, execution_id: str, duration_ms: float) -> HookResult:
    """Interpret one report with Claude Code's exit-code and JSON semantics."""
    result = HookResult(
        execution_id=execution_id,
        hook_id=spec.id,
        hook_name=spec.name,
        hook_type=spec.type,
        source=spec.source,
        event=event,
        outcome="success",
        duration_ms=duration_ms,
        exit_code=report.exit_code,
        output=report.output,
        text=report.text,
        stdout=report.stdout,
        stderr=report.stderr,
        error=report.error,
        traceback=report.traceback,
        fail_closed=spec.fail_closed,
        background=spec.run_async,
        # What Claude Code names the hook by in the words the model reads (exec form: the command with its args).
        label=(getattr(spec, "label", spec.command) if spec.type == "command"
               else f"{spec.config.server}/{spec.config.tool}" if spec.type == "mcp_tool" and spec.config else None),
        plugin_id=spec.plugin.id if getattr(spec, "plugin", None) is not None else None,
    )
    if report.status != "ok":
        result.outcome = report.status
        result.output = None
        if result.error is None:
            result.error = "timed out" if report.status == "timeout" else report.status
        return result
    if report.blocking_error:
        # A JSON "allow" cannot override exit 2: the CLI ignores stdout then, and so do we.
        result.output = None
        if event in EXIT2_BLOCKS or event in FEEDBACK_EVENTS:
            result.outcome = "blocked"
        else:
            result.outcome = "error"
            result.error = report.stderr.strip() or "hook exited with code 2"
        return result
    if report.exit_code not in (0, None):
        result.outcome = "error"
        result.output = None
        result.error = result.error or report.stderr.strip()[:4000] or f"hook exited with code {report.exit_code}"
        return result
    named = _named_event(result.output)
    if named is not None and named != event and spec.type in CLAUDE_CODE_TYPES:
        # Claude Code refuses an answer meant for another event: a non-blocking error, the answer ignored.
        result.outcome = "error"
        result.output = None
        result.error = f"Hook returned incorrect event name: expected {event!r} but got {named!r}"
        return result
    decision, _ = decision_of(result, event)
    if decision in ("deny", "block"):
        result.outcome = "blocked"
    return result
