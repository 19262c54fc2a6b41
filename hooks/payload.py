"""Encoding a hook payload for a child process: JSON, trimmed when over 512 KiB, and how it travels (stdin, env var or file)."""

from __future__ import annotations

import json
from typing import Any

MAX_STDIN_BYTES = 512 * 1024
# Linux refuses a single env string over 128 KiB (MAX_ARG_STRLEN); stay under it with the name.
MAX_ENV_PAYLOAD_BYTES = 128 * 1024 - 64
_KEEP_CHARS = 1024  # every trimmed string keeps at least its head
TRIM_KEY = "_orion_trimmed"


def encode_payload(payload: dict[str, Any]) -> bytes:
    """The payload as UTF-8 JSON, trimmed to at most 512 KiB when it is larger (see trim_payload)."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    if len(data) <= MAX_STDIN_BYTES:
        return data
    return json.dumps(trim_payload(payload, len(data)), ensure_ascii=False, separators=(",", ":")).encode()


def trim_payload(payload: dict[str, Any], size: int | None = None, limit: int = MAX_STDIN_BYTES) -> dict[str, Any]:
    """Shorten the largest string values, biggest first, until the JSON fits in `limit` bytes.

    Each shortened string keeps its head followed by `…[trimmed N chars]`, and the
    payload gains `"_orion_trimmed": {"originalBytes": N, "paths": ["tool_response.stdout", ...]}`
    so a hook can tell it did not see everything. Keys and structure are never removed.
    """
    size = size if size is not None else len(json.dumps(payload, ensure_ascii=False).encode())
    work: dict[str, Any] = json.loads(json.dumps(payload))
    leaves: list[tuple[int, list[Any]]] = []
    _collect(work, [], leaves)
    leaves.sort(key=lambda item: item[0], reverse=True)
    excess = size - limit + 256  # room for the marker and the _orion_trimmed note
    trimmed: list[str] = []
    for length, path in leaves:
        if excess <= 0:
            break
        parent, key = _parent(work, path)
        value: str = parent[key]
        raw_len = len(value.encode())
        cut_bytes = min(raw_len - _KEEP_CHARS, excess + 64)
        if cut_bytes <= 0:
            continue
        keep = value.encode()[: raw_len - cut_bytes].decode(errors="ignore")
        dropped = len(value) - len(keep)
        parent[key] = f"{keep}…[trimmed {dropped} chars]"
        excess -= cut_bytes - 32
        trimmed.append(".".join(str(p) for p in path))
    work[TRIM_KEY] = {"originalBytes": size, "paths": trimmed}
    return work


def _collect(node: Any, path: list[Any], out: list[tuple[int, list[Any]]]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _collect(v, path + [k], out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _collect(v, path + [i], out)
    elif isinstance(node, str) and len(node) > _KEEP_CHARS:
        out.append((len(node.encode()), path))


def _parent(root: Any, path: list[Any]) -> tuple[Any, Any]:
    node = root
    for key in path[:-1]:
        node = node[key]
    return node, path[-1]


MISSING = object()


def field_at(payload: Any, path: str) -> Any:
    """The value at a dotted path of a hook input (`tool_input.file_path`, `edits.0.old_string`), or MISSING."""
    node = payload
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node
