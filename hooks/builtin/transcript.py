"""Reading the last user prompt and assistant reply out of a Claude Code transcript (JSONL) without loading all of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TAIL_BYTES = 256 * 1024


def _text_of(content: Any) -> str | None:
    """The human-visible text of a message's content; None for tool results and other non-prompt records."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if t) or None
    return None


def last_messages(transcript_path: str | Path | None, *, tail_bytes: int = TAIL_BYTES) -> tuple[str | None, str | None]:
    """(last user prompt, last assistant text) from the transcript's tail; (None, None) when unreadable. Blocking."""
    if not transcript_path:
        return None, None
    try:
        with open(transcript_path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - tail_bytes))
            raw = fh.read()
    except OSError:
        return None, None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if len(raw) >= tail_bytes and lines:
        lines = lines[1:]  # the first line is probably cut in half
    user: str | None = None
    assistant: str | None = None
    for line in reversed(lines):
        if user is not None and assistant is not None:
            break
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        kind = record.get("type")
        text = _text_of(message.get("content"))
        if text is None:
            continue
        if kind == "user" and user is None and not record.get("isMeta"):
            user = text
        elif kind == "assistant" and assistant is None:
            assistant = text
    return user, assistant
