"""Renders a sidecar conversation as a readable timeline: one line per request, response and event, with relative times."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

_MAX = 160


def _short(value: Any, limit: int = _MAX) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_event(name: str, params: Any) -> str:
    """One line for one event; known events get a tailored summary, others their JSON."""
    p = params if isinstance(params, dict) else {}
    if name == "hook_started":
        return f"hook ▶ {p.get('hookName')} [{p.get('hookType')}/{p.get('source')}] on {p.get('event')}"
    if name == "hook_progress":
        return f"hook │ {p.get('hookName')} {p.get('stream')}: {_short(p.get('line', ''))}"
    if name == "hook_response":
        extra = f" exit={p['exitCode']}" if p.get("exitCode") is not None else ""
        err = f" error={_short(p['error'], 80)}" if p.get("error") else ""
        return f"hook ■ {p.get('hookName')} → {p.get('outcome')}{extra} {p.get('durationMs')} ms{err}"
    if name == "session/update":
        update = p.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind in ("user_message", "agent_message_chunk", "agent_thought_chunk"):
            return f"{kind}: {_short(update.get('text', ''))}"
        if kind == "tool_call":
            return f"tool_call {update.get('name')} {_short(update.get('input'), 100)}"
        if kind == "tool_call_update":
            return f"tool_call_update {update.get('status')} {_short(update.get('output'), 100)}"
        if kind == "notice":
            return f"notice {update.get('level')} {_short(update.get('text', ''), 120)}"
        if kind == "result":
            return f"result {update.get('stopReason')} turns={update.get('numTurns')} {_short(update.get('resultText') or '', 100)}"
        return f"session/update {_short(update)}"
    if name == "notification":
        return f"notification {p.get('title') or ''} {_short(p.get('message', ''))}".strip()
    if name == "log":
        return f"log {p.get('level')} {p.get('logger')}: {_short(p.get('message', ''))}"
    if name == "projectContextChange":
        project = p.get("project") or {}
        return f"project → {project.get('name')} ({project.get('path')}) {p.get('reason')}"
    if name == "contextSummaryUpdated":
        return f"context summary ({p.get('trigger')}): {_short(p.get('summary', ''), 100)}"
    return f"{name} {_short(params)}"


class Timeline:
    """Prints lines like `+  0.012s ⇢ ping {}` to a stream (stdout by default), times relative to creation."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.start = time.monotonic()

    def _line(self, arrow: str, text: str, at: float | None = None) -> None:
        elapsed = (at if at is not None else time.monotonic()) - self.start
        print(f"+{elapsed:8.3f}s {arrow} {text}", file=self.out, flush=True)

    def request(self, method: str, params: Any = None) -> None:
        self._line("⇢", f"{method} {_short(params) if params else ''}".rstrip())

    def response(self, method: str, result: Any) -> None:
        self._line("⇠", f"{method} ok {_short(result)}")

    def error(self, method: str, code: int, message: str, data: Any = None) -> None:
        self._line("✗", f"{method} error {code} {message}" + (f" {_short(data, 100)}" if data is not None else ""))

    def event(self, name: str, params: Any, at: float | None = None) -> None:
        self._line("•", describe_event(name, params), at)

    def note(self, text: str) -> None:
        self._line(" ", text)
