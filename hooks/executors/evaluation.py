"""The model seam and the `{"ok": bool, "reason": str}` answer shared by prompt and agent hooks.

Exceptions:

    EvaluationError                 a model-evaluated hook could not produce a verdict
    └── UnparseableAnswer           the model answered, but not with one clear {ok, reason}
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from hooks.types import EXIT2_BLOCKS, ExecutionReport, HookCall, HookOutput, HookSpecificOutput


class EvaluationError(Exception):
    """A prompt or agent hook produced no verdict."""


class UnparseableAnswer(EvaluationError):
    """The model's text holds no `{"ok": bool, ...}` object, or holds several that disagree."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


# --------------------------------------------------------------------------- the seam


class ModelClient(Protocol):
    """What prompt and agent hooks need from a model; the sidecar implements it with claude-agent-sdk."""

    async def complete(
        self, prompt: str, *, model: str | None, timeout_s: float, system: str | None = None
    ) -> str:
        """One-shot, no tools; returns the model's text. Raises TimeoutError at the deadline."""
        ...

    async def run_agent(
        self,
        prompt: str,
        *,
        cwd: Path,
        tools: list[str],
        max_turns: int,
        model: str | None,
        timeout_s: float,
        system: str | None = None,
    ) -> str:
        """A subagent session limited to `tools`; returns its final text.

        Raises TimeoutError at the deadline, by which time every process it started is gone.
        """
        ...


# --------------------------------------------------------------------------- the prompt

ARGUMENTS_PLACEHOLDER = "$ARGUMENTS"

EVALUATION_SYSTEM_PROMPT = (
    "You are a hook evaluator inside a coding agent. You are given a condition to check and the "
    "JSON input of a hook event. Decide whether the action may proceed.\n"
    "Answer with exactly one JSON object and nothing else:\n"
    '{"ok": true, "reason": "<one short sentence>"} when the condition is satisfied and the action may proceed, or\n'
    '{"ok": false, "reason": "<one short sentence the agent will read>"} when it must be blocked.\n'
    'Add "impossible": true to a false answer only when the condition can never be satisfied however the agent '
    "goes on (judging whether the agent may stop, that lets it stop instead of trying for ever)."
)


def render_prompt(template: str, payload: dict[str, Any]) -> str:
    """The hook's prompt with `$ARGUMENTS` replaced by the payload JSON, or the JSON appended when absent."""
    arguments = json.dumps(payload, ensure_ascii=False, default=str)
    if ARGUMENTS_PLACEHOLDER in template:
        return template.replace(ARGUMENTS_PLACEHOLDER, arguments)
    return f"{template.rstrip()}\n\nHook input (JSON):\n{arguments}"


# --------------------------------------------------------------------------- the answer


@dataclass(slots=True, frozen=True)
class Evaluation:
    ok: bool
    reason: str
    impossible: bool = False  # with ok false: the condition can never hold (Claude Code's prompt-hook schema)


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def _verdicts_in(text: str) -> list[Evaluation]:
    """Every JSON object in `text` that has a boolean `ok`, in order of appearance."""
    decoder = json.JSONDecoder()
    found: list[Evaluation] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("ok"), bool):
            reason = value.get("reason")
            found.append(Evaluation(ok=value["ok"], reason=reason if isinstance(reason, str) else "",
                                    impossible=value.get("impossible") is True))
        position = text.find("{", end)
    return found


def parse_evaluation(raw: str) -> Evaluation:
    """Read `{"ok": bool, "reason": str}` leniently: bare, fenced, or with prose around it.

    Fenced blocks win over loose text (a model that fences its answer often discusses the
    format in prose). Several verdicts that disagree are refused rather than guessed at.
    """
    fenced = [verdict for block in _FENCE.findall(raw) for verdict in _verdicts_in(block)]
    verdicts = fenced or _verdicts_in(raw)
    if not verdicts:
        raise UnparseableAnswer('the model did not answer with {"ok": bool, "reason": str}', raw)
    if len({v.ok for v in verdicts}) > 1:
        raise UnparseableAnswer("the model gave contradictory answers (both ok true and ok false)", raw)
    return verdicts[-1]


# --------------------------------------------------------------------------- verdict -> report

# Events whose block is a top-level `decision: "block"` (Claude Code's schema for these events).
_DECISION_BLOCK_EVENTS = frozenset({"UserPromptSubmit", "Stop", "SubagentStop", "PostToolUse", "PreCompact"})


def _blocking_output(event: str, reason: str) -> HookOutput | None:
    if event == "PreToolUse":
        return HookOutput(
            hookSpecificOutput=HookSpecificOutput(
                hookEventName=event, permissionDecision="deny", permissionDecisionReason=reason
            )
        )
    if event == "PermissionRequest":
        return HookOutput(
            hookSpecificOutput=HookSpecificOutput(
                hookEventName=event, decision={"behavior": "deny", "message": reason}
            )
        )
    if event in _DECISION_BLOCK_EVENTS:
        return HookOutput(decision="block", reason=reason)
    return None


# Events whose prompt hook judges whether the agent may stop: its "no" is feedback, never the end of the turn.
_STOP_EVENTS = frozenset({"Stop", "SubagentStop"})


def evaluation_report(event: str, evaluation: Evaluation, raw: str, *, kind: str = "prompt",
                      template: str | None = None, continue_on_block: bool = False) -> ExecutionReport:
    """Turn a verdict into what the runner interprets.

    `ok: true` carries no decision at all: like Claude Code, it lets the action proceed
    without granting it, so permission rules and prompts still apply. `ok: false` blocks in
    the event's own terms (a blocking error as well on blocking events), worded as Claude Code
    2.1.330 words it (`[<the hook's prompt>]: <reason>` for a prompt hook, `Agent hook condition
    was not met: <reason>` for an agent hook); a prompt hook's "no" also ends the turn, as in
    Claude Code, except on Stop and SubagentStop or with `continueOnBlock`. On events that cannot
    be blocked an agent hook's "no" is reported as a system message and nothing more.
    """
    if evaluation.ok:
        return ExecutionReport(status="ok", stdout=raw)
    if kind == "prompt" and evaluation.impossible and event in _STOP_EVENTS:
        # Claude Code 2.1.330: a stop condition judged impossible is a success, not feedback: the agent stops
        # (it would otherwise be sent back to a task it cannot finish). The verdict stays in hook_response.
        return ExecutionReport(status="ok", stdout=raw)
    given = evaluation.reason or "the hook's condition was not met"
    if kind == "prompt":
        reason = f"[{template}]: {given}" if template else given
    else:
        reason = f"Agent hook condition was not met: {given}"
    ends_turn = kind == "prompt" and event not in _STOP_EVENTS and not continue_on_block
    blocks = _blocking_output(event, reason)
    output = blocks if blocks is not None else HookOutput(systemMessage=reason)
    if ends_turn:
        # The answer itself carries the end of the turn: a blocking error would drop it (as exit 2 drops stdout).
        output = output.model_copy(update={"continue_": False, "stopReason": given})
        return ExecutionReport(status="ok", stdout=raw, stderr=reason, output=output)
    if blocks is None:
        return ExecutionReport(status="ok", stdout=raw, output=output)
    # On blocking events the runner reads a blocking error like exit 2, with stderr as the
    # reason; on PostToolUse (already ran) only the `decision: "block"` output feeds the reason back.
    blocking = event in EXIT2_BLOCKS
    return ExecutionReport(status="ok", stdout=raw, stderr=reason, output=output, blocking_error=blocking)


_RAW_IN_ERROR = 2000


def unparseable_report(error: UnparseableAnswer) -> ExecutionReport:
    """A hook error (fail-open unless failClosed) that keeps the raw answer for the user to see."""
    shown = error.raw if len(error.raw) <= _RAW_IN_ERROR else error.raw[:_RAW_IN_ERROR] + "…"
    return ExecutionReport(status="error", stdout=error.raw, error=f"{error}: {shown!r}")


def hook_setting(hook: Any, key: str, default: Any = None) -> Any:
    """One key of the hook's validated settings entry (`hook.config`), tolerating absent keys."""
    config = getattr(hook, "config", None)
    if config is None:
        return default
    if isinstance(config, dict):
        value = config.get(key, default)
    else:
        value = getattr(config, key, default)
    return default if value is None else value


# --------------------------------------------------------------------------- one evaluation, start to report

DEFAULT_EVALUATOR_MODEL = "claude-haiku-4-5"


async def evaluate(call: HookCall, kind: str, ask: Callable[[str], Awaitable[str]]) -> ExecutionReport:
    """Render the hook's prompt, ask the model under the call's deadline, and report the verdict.

    `kind` names the hook type in messages ("prompt", "agent").
    """
    template = hook_setting(call.hook, "prompt")
    if not template:
        return ExecutionReport(status="error", error=f"{kind} hook has no prompt")
    prompt = render_prompt(template, call.payload)
    try:
        with anyio.fail_after(call.timeout_s):
            raw = await ask(prompt)
    except TimeoutError:
        return ExecutionReport(status="timeout", error=f"{kind} hook: no answer within {call.timeout_s:g} s")
    except EvaluationError as exc:
        return ExecutionReport(status="error", error=f"{kind} hook: {exc}")
    except Exception as exc:  # a model client bug must not take the runner down; it is a hook error
        return ExecutionReport(
            status="error", error=f"{kind} hook: {type(exc).__name__}: {exc}", traceback=traceback.format_exc()
        )
    try:
        return evaluation_report(call.event, parse_evaluation(raw), raw, kind=kind, template=template,
                                 continue_on_block=bool(hook_setting(call.hook, "continueOnBlock", False)))
    except UnparseableAnswer as exc:
        return unparseable_report(exc)


def no_model_report(kind: str) -> ExecutionReport:
    return ExecutionReport(
        status="error", error=f"{kind} hooks need a model and none is configured for this runner"
    )
