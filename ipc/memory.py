"""In-memory transports: two cross-wired Transports for connecting peers in one process (tests, embedding)."""

from __future__ import annotations

import anyio

from ipc.framing import Item, Message, Transport

DEFAULT_BUFFER = 64


def memory_transport_pair(buffer: int = DEFAULT_BUFFER) -> tuple[Transport, Transport]:
    """What one side sends, the other receives, as decoded JSON values (no bytes, no framing)."""
    a_to_b_send, a_to_b_recv = anyio.create_memory_object_stream[Message](buffer)
    b_to_a_send, b_to_a_recv = anyio.create_memory_object_stream[Item](buffer)
    return Transport(b_to_a_recv, a_to_b_send), Transport(a_to_b_recv, b_to_a_send)
