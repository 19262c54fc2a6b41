"""Turns a scenario Reply into the Anthropic Messages API's streaming events (and the non-streaming message body)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from sidecar.scripted_model.scenario import Reply, Usage


def new_tool_use_id() -> str:
    return "toolu_scripted_" + uuid.uuid4().hex[:20]


def new_message_id() -> str:
    return "msg_scripted_" + uuid.uuid4().hex[:20]


def _chunks(text: str, size: int) -> list[str]:
    # An empty string still gets one delta so clients see the block's (empty) content arrive.
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def resolve_tool_ids(reply: Reply) -> list[dict[str, Any]]:
    """The reply's blocks as Messages API content blocks, with fresh ids for tool uses that have none."""
    blocks: list[dict[str, Any]] = []
    for block in reply.content:
        if block.text is not None:
            blocks.append({"type": "text", "text": block.text})
        elif block.thinking is not None:
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": "scripted"})
        else:
            assert block.tool_use is not None
            tool = block.tool_use
            blocks.append(
                {"type": "tool_use", "id": tool.id or new_tool_use_id(), "name": tool.name, "input": tool.input}
            )
    return blocks


def stream_events(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str,
    usage: Usage,
    model: str,
    text_chunk: int,
    message_id: str | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(event name, data)`` in the order the real API streams them."""
    yield "message_start", {
        "type": "message_start",
        "message": {
            "id": message_id or new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "output_tokens": 1,
            },
        },
    }
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", _start(index, {"type": "text", "text": ""})
            for piece in _chunks(block["text"], text_chunk):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        elif kind == "thinking":
            yield "content_block_start", _start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in _chunks(block["thinking"], text_chunk):
                yield "content_block_delta", _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield "content_block_delta", _delta(index, {"type": "signature_delta", "signature": block["signature"]})
        else:
            yield "content_block_start", _start(
                index, {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            )
            for piece in _chunks(json.dumps(block["input"]), text_chunk):
                yield "content_block_delta", _delta(index, {"type": "input_json_delta", "partial_json": piece})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": usage.output_tokens},
    }
    yield "message_stop", {"type": "message_stop"}


def encode_sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_body(blocks: list[dict[str, Any]], *, stop_reason: str, usage: Usage, model: str) -> dict[str, Any]:
    """The non-streaming answer (``"stream": false``), for callers such as one-shot evaluators."""
    return {
        "id": new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage.model_dump(),
    }


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}
