"""In-memory transports: two cross-wired Transports for connecting peers in one process (tests, embedding)."""

from __future__ import annotations

from typing import Any

import anyio
from anyio.abc import ObjectSendStream
from anyio.streams.memory import MemoryObjectSendStream

from ipc.framing import Item, LineDecoder, Message, RawLine, Transport

DEFAULT_BUFFER = 64


class _DecodingSendStream(ObjectSendStream[Message]):
    """Forwards messages as objects; pre-encoded lines (RawLine) are decoded on the way, as the far end's framing would."""

    def __init__(self, inner: MemoryObjectSendStream[Item]) -> None:
        self._inner = inner

    @staticmethod
    def _item(message: Message) -> Any:
        if isinstance(message, RawLine):
            items = LineDecoder().feed(message.data + b"\n")
            return items[0] if items else None
        return message

    def send_nowait(self, item: Message) -> None:
        decoded = self._item(item)
        if decoded is not None:
            self._inner.send_nowait(decoded)

    async def send(self, item: Message) -> None:
        decoded = self._item(item)
        if decoded is not None:
            await self._inner.send(decoded)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        self._inner.close()


def memory_transport_pair(buffer: int = DEFAULT_BUFFER) -> tuple[Transport, Transport]:
    """What one side sends, the other receives, as decoded JSON values (no bytes, no framing)."""
    a_to_b_send, a_to_b_recv = anyio.create_memory_object_stream[Item](buffer)
    b_to_a_send, b_to_a_recv = anyio.create_memory_object_stream[Item](buffer)
    return (Transport(b_to_a_recv, _DecodingSendStream(a_to_b_send)),
            Transport(a_to_b_recv, _DecodingSendStream(b_to_a_send)))
