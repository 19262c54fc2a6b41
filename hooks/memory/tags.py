"""Linear-time stripping of `<private>` sections and the sidecar's own injected context tags before anything is stored."""

from __future__ import annotations

from typing import Any

# `<private>` is the user's; the others are blocks the built-in hooks inject into
# the model's context. Storing those would feed memory back into memory.
STRIPPED_TAGS: tuple[str, ...] = (
    "private",
    "session-continuity",
    "workflow-hint",
    "project-context",
    "memory-context",
    "system-reminder",
    "document-guard",
    "secret-warning",
)

# Claude-mem's bound. Our scanner is linear anyway; the cap bounds the work on
# hostile input. Past it the rest of the text is dropped, never kept: an
# unprocessed `<private>` must not leak.
MAX_TAGS = 100

_FIRST_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")


def _tag_at(lower: str, pos: int, names: tuple[str, ...]) -> tuple[str, bool, int] | None:
    """If `lower[pos]` starts `<name ...>` or `</name>` for one of `names`: (name, closing, index after `>`)."""
    closing = lower.startswith("</", pos)
    start = pos + (2 if closing else 1)
    if lower[start : start + 1] not in _FIRST_LETTERS:
        return None
    for name in names:
        if not lower.startswith(name, start):
            continue
        after = start + len(name)
        if after >= len(lower):
            return None
        nxt = lower[after]
        if nxt == ">":
            return name, closing, after + 1
        if nxt in " \t\r\n/" and not closing:
            # An attribute list never spans past the next `<`; bounding the search keeps the scan linear.
            lt = lower.find("<", after)
            gt = lower.find(">", after, lt if lt >= 0 else len(lower))
            if gt >= 0:
                return name, closing, gt + 1
    return None


def strip_tags(text: str, names: tuple[str, ...] = STRIPPED_TAGS, *, max_tags: int = MAX_TAGS) -> str:
    """`text` without any `<name>…</name>` section (nesting-aware); an unclosed section runs to the end.

    Removing a section can splice a new tag together (`<priv<private>x</private>ate>`),
    so passes repeat until nothing changes; every pass removes at least one tag,
    and all passes together handle at most `max_tags` tags.
    """
    budget = max_tags
    while "<" in text:
        stripped, used = _strip_pass(text, names, budget)
        if stripped == text:
            return text
        text = stripped
        budget -= used
        if budget < 0:
            return text
    return text


def _strip_pass(text: str, names: tuple[str, ...], max_tags: int) -> tuple[str, int]:
    """One linear pass: every `<` is examined once and each step moves forward. Returns (text, tags handled)."""
    lower = text.lower()
    out: list[str] = []
    pos = 0  # start of the text not yet copied
    scan = 0
    handled = 0
    while True:
        lt = lower.find("<", scan)
        if lt < 0:
            out.append(text[pos:])
            break
        tag = _tag_at(lower, lt, names)
        if tag is None:
            scan = lt + 1
            continue
        handled += 1
        if handled > max_tags:
            out.append(text[pos:lt])
            break
        name, closing, after = tag
        out.append(text[pos:lt])
        if closing:
            # A stray closing tag: drop the tag itself.
            pos = scan = after
            continue
        depth = 1
        cursor = after
        while depth:
            nxt = lower.find("<", cursor)
            if nxt < 0:
                cursor = len(text)
                break
            inner = _tag_at(lower, nxt, (name,))
            if inner is None:
                cursor = nxt + 1
                continue
            handled += 1
            if handled > max_tags:
                cursor = len(text)
                break
            depth += -1 if inner[1] else 1
            cursor = inner[2]
        if handled > max_tags or (depth and cursor >= len(text)):
            break
        pos = scan = cursor
    return "".join(out), handled


def strip_tags_value(value: Any) -> Any:
    """A JSON-like value with `strip_tags` applied to every string in it."""
    if isinstance(value, str):
        return strip_tags(value)
    if isinstance(value, dict):
        return {k: strip_tags_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strip_tags_value(v) for v in value]
    return value
