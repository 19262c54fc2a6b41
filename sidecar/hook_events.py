"""Turns the hook engine's observer callbacks into the hook_started / hook_progress / hook_response IPC events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hooks.redaction import redact, redact_value
from hooks.types import HookProgress, HookResult, HookStarted

NotifyFn = Callable[[str, dict[str, Any]], Awaitable[None]]

# hook_progress lines longer than this are cut: a hook printing one 50 MB line must not become one 50 MB event.
MAX_PROGRESS_LINE = 4096
# stdout/stderr carried in hook_response; the full capped text stays in the tracking files.
MAX_RESPONSE_TEXT = 16 * 1024


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def hook_response_params(result: HookResult, session_id: str) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sessionId": session_id,
        "executionId": result.execution_id,
        "hookId": result.hook_id,
        "hookName": result.hook_name,
        "hookType": result.hook_type,
        "source": result.source,
        "event": result.event,
        "outcome": result.outcome,
        "durationMs": round(result.duration_ms, 3),
        "failClosed": result.fail_closed,
        "background": result.background,
        "enforced": result.enforced,
    }
    if result.exit_code is not None:
        params["exitCode"] = result.exit_code
    # What a hook printed or answered is redacted before it leaves the sidecar (hooks/redaction.py), as in the
    # tracking files: a frontend, an inspector page or an editor's log is one more place a secret would land.
    if result.output is not None:
        params["output"] = redact_value(result.output.to_json_dict())
    if result.text:
        params["text"] = redact(_cut(result.text, MAX_RESPONSE_TEXT))
    if result.stdout:
        params["stdout"] = redact(_cut(result.stdout, MAX_RESPONSE_TEXT))
    if result.stderr:
        params["stderr"] = redact(_cut(result.stderr, MAX_RESPONSE_TEXT))
    if result.error:
        params["error"] = redact(result.error)
    if result.traceback:
        params["traceback"] = redact(result.traceback)
    return params


def hook_notice(result: HookResult) -> dict[str, Any] | None:
    """What Claude Code would show the user about one hook run, beside the conversation: its `systemMessage`,
    or that it timed out or gave no usable answer (and what that meant for the agent). None when nothing is."""
    base = {"sessionUpdate": "notice", "source": "hook", "event": result.event, "hookName": result.hook_name}
    message = result.output.systemMessage if result.output is not None else None
    if message:
        return {**base, "level": "info", "text": redact(_cut(message, MAX_PROGRESS_LINE))}
    what = "the call was denied (failClosed)" if result.fail_closed else "the agent went on without it"
    if result.outcome == "timeout":
        return {**base, "level": "warning", "text": f"{result.event} hook {result.hook_name} timed out; {what}."}
    if result.outcome == "error":
        why = result.error or (f"exit code {result.exit_code}" if result.exit_code is not None else "no usable answer")
        return {**base, "level": "warning",
                "text": redact(_cut(f"{result.event} hook {result.hook_name} failed ({why}); {what}.", MAX_PROGRESS_LINE))}
    return None


class IpcHookObserver:
    """A HookObserver that forwards every execution to the frontend as notifications; with ``notices`` (a live
    session), what the user should see of a run also arrives as a `notice` session update."""

    __slots__ = ("_notify", "_notices")

    def __init__(self, notify: NotifyFn, *, notices: bool = False) -> None:
        self._notify = notify
        self._notices = notices

    async def on_started(self, started: HookStarted) -> None:
        params: dict[str, Any] = {
            "sessionId": started.session_id,
            "executionId": started.execution_id,
            "hookId": started.hook_id,
            "hookName": started.hook_name,
            "hookType": started.hook_type,
            "source": started.source,
            "event": started.event,
        }
        if started.tool_use_id:
            params["toolUseId"] = started.tool_use_id
        await self._notify("hook_started", params)

    async def on_progress(self, progress: HookProgress) -> None:
        await self._notify(
            "hook_progress",
            {
                "sessionId": progress.session_id,
                "executionId": progress.execution_id,
                "hookName": progress.hook_name,
                "event": progress.event,
                "stream": progress.stream,
                "line": redact(_cut(progress.line, MAX_PROGRESS_LINE)),
            },
        )

    async def on_response(self, result: HookResult, session_id: str) -> None:
        await self._notify("hook_response", hook_response_params(result, session_id))
        if self._notices:
            notice = hook_notice(result)
            if notice is not None:
                await self._notify("session/update", {"sessionId": session_id, "update": notice})
