"""A model reached over TLS, for tests: a TLS front (a test CA's certificate, made with trustme) before a plain
local Messages API, and a CONNECT proxy standing in for a company's proxy. Both real sockets, each on its own
event loop thread; each records what it saw (handshakes, server names, CONNECT targets), so that a test can show
the TLS was real and verified, and which way the connection went."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme


@dataclass
class Seen:
    handshakes: int = 0  # TLS handshakes completed
    refused: int = 0  # connections whose handshake failed (the client did not trust the certificate, or spoke no TLS)
    server_names: list[str] = field(default_factory=list)  # SNI the clients sent
    connects: list[str] = field(default_factory=list)  # the proxy's CONNECT targets


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, RuntimeError):
        pass
    finally:
        writer.close()


@contextmanager
def tls_model(target: tuple[str, int], tmp_path: Path, names: tuple[str, ...] = ("127.0.0.1", "localhost"),
              ) -> Iterator[tuple[int, Path, Seen]]:
    """A TLS front on 127.0.0.1 for the plain HTTP server at `target`, with a certificate for `names` from a fresh
    test CA. Yields (its port, the CA's PEM file, what it saw)."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    ca_file = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    seen = Seen()

    def sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
        seen.server_names.append(name or "")

    context.sni_callback = sni  # type: ignore[assignment]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await writer.start_tls(context, ssl_handshake_timeout=10)
        except (ssl.SSLError, OSError, asyncio.TimeoutError):
            seen.refused += 1
            writer.close()
            return
        seen.handshakes += 1
        up_reader, up_writer = await asyncio.open_connection(*target)
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))

    loop = _Loop()
    server = loop.run(asyncio.start_server(serve, "127.0.0.1", 0))
    try:
        yield server.sockets[0].getsockname()[1], ca_file, seen
    finally:
        server.close()
        loop.stop()


@contextmanager
def connect_proxy(to: tuple[str, int]) -> Iterator[tuple[int, Seen]]:
    """An HTTP proxy on 127.0.0.1 that answers every CONNECT by tunnelling to `to` (whatever host was asked: it
    plays the company proxy that resolves names the machine cannot). Yields (its port, what it saw)."""
    seen = Seen()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, target = head.split(b" ", 2)[:2]
        if method != b"CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        seen.connects.append(target.decode())
        up_reader, up_writer = await asyncio.open_connection(*to)
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))

    loop = _Loop()
    server = loop.run(asyncio.start_server(serve, "127.0.0.1", 0))
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()
        loop.stop()
