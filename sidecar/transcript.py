"""A past session's conversation, read back from the CLI's own transcript, as the session updates a frontend shows.

The CLI writes one JSON record per line (`<config>/projects/<project>/<session id>.jsonl`). What a person saw is
replayed: their prompts, the agent's text and thinking, each tool call and its result. Bookkeeping records (meta
messages, summaries, snapshots) are not. A damaged line is skipped, never fatal: a resumed session must start.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sidecar.agent import tool_result_text

log = logging.getLogger(__name__)

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


def _user_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(parts) if parts else None
    return None


def history_updates(path: Path) -> list[dict[str, Any]]:
    """The session updates (Orion's core vocabulary) that retell the conversation in ``path``."""
    try:
        if path.stat().st_size > MAX_TRANSCRIPT_BYTES:
            log.warning("transcript %s is over %d MiB; its history is not replayed", path, MAX_TRANSCRIPT_BYTES >> 20)
            return []
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        log.warning("transcript %s unreadable: %s", path, exc)
        return []
    updates: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(record, dict) or record.get("isMeta") or record.get("isCompactSummary"):
            continue
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        if record.get("type") == "user":
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        is_error = bool(block.get("is_error"))
                        updates.append({"sessionUpdate": "tool_call_update", "toolUseId": str(block.get("tool_use_id")),
                                        "status": "failed" if is_error else "completed",
                                        "output": tool_result_text(block.get("content")), "isError": is_error})
            text = _user_text(content)
            if text and not _is_cli_markup(text):
                updates.append({"sessionUpdate": "user_message", "text": text, "replay": True})
        elif record.get("type") == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    updates.append({"sessionUpdate": "agent_message_chunk", "text": block["text"]})
                elif block.get("type") == "thinking" and block.get("thinking"):
                    updates.append({"sessionUpdate": "agent_thought_chunk", "text": block["thinking"]})
                elif block.get("type") == "tool_use":
                    updates.append({"sessionUpdate": "tool_call", "toolUseId": str(block.get("id")),
                                    "name": str(block.get("name")),
                                    "input": block.get("input") if isinstance(block.get("input"), dict) else {}})
    if skipped:
        log.warning("transcript %s: %d damaged line(s) skipped", path, skipped)
    return _with_plans(updates)


def _with_plans(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The task list's `plan` updates where the live session sent them (sidecar/task_plan.py)."""
    from sidecar.task_plan import TaskPlan

    plan, out = TaskPlan(), []
    for update in updates:
        out.append(update)
        made = plan.follow(update)
        if made is not None:
            out.append(made)
    return out


def _is_cli_markup(text: str) -> bool:
    # The CLI's own records of slash commands, local command output and a cancelled turn ("[Request interrupted by
    # user]", "... for tool use]"), not words the user typed.
    return text.startswith(("<command-name>", "<local-command-stdout>", "<command-message>",
                            "[Request interrupted by user"))
