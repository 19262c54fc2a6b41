"""Renders one agent session for a person: the streamed answer inline, tool calls, and every hook with its outcome and duration."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO


def _compact(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class SessionStats:
    """What happened, counted, so the demo can check itself and print a summary."""

    hooks_run: int = 0
    hooks_blocked: int = 0
    hooks_failed: int = 0
    inputs_rewritten: int = 0
    tool_calls: int = 0
    tools_denied: int = 0
    events: int = 0
    hook_names: set[str] = field(default_factory=set)


class SessionView:
    """Feed it events (`show(name, params)`); it prints a readable transcript with relative times."""

    def __init__(self, out: TextIO | None = None, *, show_progress: bool = True) -> None:
        self.out = out or sys.stdout
        self.start = time.monotonic()
        self.stats = SessionStats()
        self.show_progress = show_progress
        self._streaming: str | None = None  # "agent" or "thinking" while a text stream is open

    def _stamp(self) -> str:
        return f"{time.monotonic() - self.start:7.2f}s"

    def _end_stream(self) -> None:
        if self._streaming is not None:
            print(file=self.out, flush=True)
            self._streaming = None

    def line(self, text: str) -> None:
        self._end_stream()
        print(f"{self._stamp()}  {text}", file=self.out, flush=True)

    def _stream(self, kind: str, text: str) -> None:
        if self._streaming != kind:
            self._end_stream()
            label = "agent   ▸ " if kind == "agent" else "thinking▸ "
            print(f"{self._stamp()}  {label}", end="", file=self.out)
            self._streaming = kind
        print(text.replace("\n", "\n" + " " * 19), end="", file=self.out, flush=True)

    def show(self, name: str, params: dict[str, Any]) -> None:
        self.stats.events += 1
        if name == "session/update":
            self._update(params.get("update") or {})
        elif name == "hook_progress":
            if self.show_progress:
                self.line(f"   │ {params.get('hookName')} {params.get('stream')}: {_compact(params.get('line', ''))}")
        elif name == "hook_response":
            self._hook_response(params)
        elif name == "projectContextChange":
            project = params.get("project") or {}
            self.line(f"project ▸ active project is now {project.get('name')!r} ({params.get('reason')})")
        elif name == "contextSummaryUpdated":
            self.line(f"summary ▸ ({params.get('trigger')}) {_compact(params.get('summary', ''))}")
        elif name == "notification":
            self.line(f"notice  ▸ {params.get('title') or ''} {_compact(params.get('message', ''))}".rstrip())

    def show_result(self, result: dict[str, Any]) -> None:
        """A prompt's answer (Orion's fields: stopReason, numTurns, durationMs, ...)."""
        self._update({"sessionUpdate": "result", **result})

    def show_acp_update(self, update: dict[str, Any]) -> None:
        """One ACP `session/update` (the stub speaks ACP through the official SDK), shown like Orion's own."""
        self.stats.events += 1
        kind = update.get("sessionUpdate")
        orion = (update.get("_meta") or {}).get("orion") or {}
        content = update.get("content")
        text = content.get("text", "") if isinstance(content, dict) else ""
        if kind == "agent_message_chunk" and orion.get("notice"):
            self.line(f"notice  ▸ [{orion['notice'].get('level')}] {_compact(text, 200)}")
        elif kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            self._update({"sessionUpdate": {"user_message_chunk": "user_message"}.get(kind, kind), "text": text})
        elif kind == "tool_call":
            self.stats.tool_calls += 1
            self.line(f"tool    ▶ {update.get('kind')}: {_compact(update.get('title'), 120)}")
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            status = "denied" if orion.get("status") == "denied" else update["status"]
            output = "".join(c.get("content", {}).get("text", "") for c in update.get("content") or [] if isinstance(c, dict))
            self._update({"sessionUpdate": "tool_call_update", "status": status, "output": output})
        elif kind == "plan":
            self.line("plan    ▸ " + "; ".join(f"[{e.get('status')}] {e.get('content')}" for e in update.get("entries", [])))
        elif kind == "current_mode_update":
            self._update(update)

    def _update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._stream("agent", update.get("text", ""))
        elif kind == "agent_thought_chunk":
            self._stream("thinking", update.get("text", ""))
        elif kind == "user_message":
            self.line(f"you     ▸ {_compact(update.get('text', ''), 200)}")
        elif kind == "tool_call":
            self.stats.tool_calls += 1
            self.line(f"tool    ▶ {update.get('name')} {_compact(update.get('input'))}")
        elif kind == "tool_call_update":
            status = update.get("status")
            if status == "denied":
                self.stats.tools_denied += 1
            output = update.get("output")
            first = _compact(output if isinstance(output, str) else json.dumps(output), 100)
            self.line(f"tool    ■ {status}: {first}")
        elif kind == "notice":
            self.line(f"notice  ▸ [{update.get('level')}] {_compact(update.get('text', ''), 200)}")
        elif kind == "current_mode_update":
            self.line(f"mode    ▸ {update.get('currentModeId')}")
        elif kind == "result":
            self.line(
                f"result  ▸ {update.get('stopReason')} after {update.get('numTurns')} model turns, "
                f"{update.get('durationMs')} ms"
            )

    def _hook_response(self, p: dict[str, Any]) -> None:
        stats = self.stats
        stats.hooks_run += 1
        stats.hook_names.add(str(p.get("hookName")))
        outcome = p.get("outcome")
        output = p.get("output") or {}
        specific = output.get("hookSpecificOutput") or {}
        detail = ""
        if outcome == "blocked":
            stats.hooks_blocked += 1
            reason = specific.get("permissionDecisionReason") or output.get("reason") or p.get("stderr") or ""
            detail = f": {_compact(reason, 140)}"
        elif outcome in ("error", "timeout"):
            stats.hooks_failed += 1
            detail = f": {_compact(p.get('error') or p.get('stderr') or '', 140)}"
        if specific.get("updatedInput") is not None:
            stats.inputs_rewritten += 1
            detail += f" (input rewritten → {_compact(specific['updatedInput'], 100)})"
        if specific.get("additionalContext") and outcome == "success":
            detail += f" (context: {_compact(specific['additionalContext'], 70)})"
        exit_code = f" exit {p['exitCode']}" if p.get("exitCode") is not None and p.get("hookType") in ("command", "python") else ""
        marker = {"success": "✓", "blocked": "⛔", "error": "✗", "timeout": "⏱", "cancelled": "∅"}.get(outcome, "?")
        self.line(
            f"hook  {marker} {p.get('hookName')} [{p.get('hookType')}, {p.get('source')}] on {p.get('event')}"
            f" → {outcome}{exit_code} in {float(p.get('durationMs') or 0):.1f} ms{detail}"
        )

    def close(self) -> None:
        self._end_stream()
