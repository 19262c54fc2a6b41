"""Line framing: bytes split on '\\n' into JSON messages (bad lines become FramingError items), messages written as compact JSON lines; stdio and byte-stream transports."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ipc.errors import FramingError, LineTooLong, MalformedLine

logger = logging.getLogger("ipc.framing")

Message = Any  # a decoded JSON value; the peer decides whether it is a valid JSON-RPC message
Item = Any  # Message | FramingError

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
READ_CHUNK = 256 * 1024
# Bounded queues keep memory flat when the other side stops reading: producers wait instead.
OUTGOING_QUEUE = 512
INCOMING_QUEUE = 512
WRITE_BATCH = 256

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encode_message(message: Message) -> bytes:
    """One message as it goes on the wire: compact JSON, UTF-8, one line."""
    return _dumps(message).encode("utf-8") + b"\n"


class LineDecoder:
    """Incremental splitter: feed it chunks, get back decoded messages and FramingErrors, one per non-empty line."""

    __slots__ = ("_buf", "_max", "_discarding", "_discarded")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_line_bytes
        self._discarding = False  # inside an over-long line: drop bytes until its newline
        self._discarded = 0

    def feed(self, data: bytes) -> list[Item]:
        out: list[Item] = []
        start, end = 0, len(data)
        while start < end:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._hold(data, start, end, out)
                break
            if self._discarding:
                out.append(self._too_long(self._discarded + nl - start))
                self._discarding, self._discarded = False, 0
            elif self._buf:
                self._buf += memoryview(data)[start:nl]
                if len(self._buf) > self._max:
                    out.append(self._too_long(len(self._buf)))
                else:
                    self._decode(self._buf, out)
                self._buf = bytearray()
            elif nl - start > self._max:
                out.append(self._too_long(nl - start))
            else:
                self._decode(data[start:nl], out)
            start = nl + 1
        return out

    def finish(self) -> list[Item]:
        """At EOF: a last line without its newline still counts."""
        out: list[Item] = []
        if self._discarding:
            out.append(self._too_long(self._discarded))
        elif self._buf:
            self._decode(self._buf, out)
        self._buf, self._discarding, self._discarded = bytearray(), False, 0
        return out

    def _hold(self, data: bytes, start: int, end: int, out: list[Item]) -> None:
        if self._discarding:
            self._discarded += end - start
        elif len(self._buf) + end - start > self._max:
            self._discarding, self._discarded = True, len(self._buf) + end - start
            self._buf = bytearray()
        else:
            self._buf += memoryview(data)[start:end]

    def _too_long(self, length: int) -> LineTooLong:
        logger.warning("discarded a line of %d bytes (limit %d)", length, self._max)
        return LineTooLong(f"line of {length} bytes exceeds the limit of {self._max} bytes", length=length)

    @staticmethod
    def _decode(line: bytes | bytearray, out: list[Item]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.append(MalformedLine(f"invalid UTF-8: {exc}", length=len(line)))
            return
        try:
            out.append(json.loads(text))
        except ValueError as exc:
            out.append(MalformedLine(f"invalid JSON: {exc}", length=len(line)))


@dataclass(slots=True)
class Transport:
    """A connection as two object streams: decoded items in, messages out. `broken` is set when writing fails."""

    incoming: MemoryObjectReceiveStream[Item]
    outgoing: MemoryObjectSendStream[Message]
    broken: anyio.Event = field(default_factory=anyio.Event)


async def _pump_in(read: Callable[[], Awaitable[bytes]], decoder: LineDecoder, sink: MemoryObjectSendStream[Item]) -> None:
    async with sink:
        while True:
            try:
                chunk = await read()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                logger.debug("input closed: %s", exc)
                chunk = b""
            items = decoder.feed(chunk) if chunk else decoder.finish()
            for item in items:
                try:
                    sink.send_nowait(item)
                except anyio.WouldBlock:
                    await sink.send(item)
            if not chunk:
                return


async def _pump_out(source: MemoryObjectReceiveStream[Message], write: Callable[[bytes], Awaitable[None]], broken: anyio.Event) -> None:
    async with source:
        while True:
            try:
                first = source.receive_nowait()
            except anyio.WouldBlock:
                try:
                    first = await source.receive()
                except anyio.EndOfStream:
                    return
            except anyio.EndOfStream:
                return
            batch = [encode_message(first)]
            # Coalesce whatever is already queued into one write: one syscall for a burst of notifications.
            while len(batch) < WRITE_BATCH:
                try:
                    batch.append(encode_message(source.receive_nowait()))
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            try:
                await write(b"".join(batch))
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                logger.warning("output closed by the other side: %s", exc)
                broken.set()
                return


@asynccontextmanager
async def open_stream_transport(
    receive: ByteReceiveStream, send: ByteSendStream, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    flush_timeout: float = 5.0,
) -> AsyncIterator[Transport]:
    """Frame any pair of anyio byte streams (a child's pipes, a socket, an in-memory pair)."""

    async def read() -> bytes:
        try:
            return await receive.receive(READ_CHUNK)
        except anyio.EndOfStream:
            return b""

    async with _framed(read, send.send, max_line_bytes, flush_timeout) as transport:
        yield transport


@asynccontextmanager
async def _framed(read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]],
                  max_line_bytes: int, flush_timeout: float) -> AsyncIterator[Transport]:
    in_send, in_recv = anyio.create_memory_object_stream[Item](INCOMING_QUEUE)
    out_send, out_recv = anyio.create_memory_object_stream[Message](OUTGOING_QUEUE)
    transport = Transport(in_recv, out_send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump_in, read, LineDecoder(max_line_bytes), in_send)
        writer_done = anyio.Event()

        async def writer() -> None:
            try:
                await _pump_out(out_recv, write, transport.broken)
            finally:
                writer_done.set()

        tg.start_soon(writer)
        try:
            yield transport
        finally:
            # Flush what is queued, but never hang on a reader that stopped reading.
            out_send.close()
            with anyio.move_on_after(flush_timeout, shield=True):
                await writer_done.wait()
            tg.cancel_scope.cancel()


# --------------------------------------------------------------------------- stdio


@dataclass(slots=True)
class _StdioFds:
    read_fd: int
    write_fd: int
    saved_in: int
    saved_out: int


def _claim_stdio() -> _StdioFds:
    """Give the protocol private copies of fds 0 and 1, then point 0 at /dev/null and 1 at stderr.

    After this, a stray print() or a child process (hooks start many) can neither write on the
    wire nor swallow bytes meant for us. os.dup makes non-inheritable fds, so children never see them.
    """
    sys.stdout.flush()
    read_fd, write_fd = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    os.dup2(2, 1)
    return _StdioFds(read_fd, write_fd, saved_in, saved_out)


def _release_stdio(fds: _StdioFds) -> None:
    sys.stdout.flush()
    # The event loop made the shared pipe descriptions non-blocking; give them back as we found them.
    for fd in (fds.saved_in, fds.saved_out):
        try:
            os.set_blocking(fd, True)
        except OSError:
            pass
    os.dup2(fds.saved_in, 0)
    os.dup2(fds.saved_out, 1)
    for fd in (fds.saved_in, fds.saved_out):
        os.close(fd)


async def _fd_reader(fd: int) -> tuple[Callable[[], Awaitable[bytes]], Callable[[], None]]:
    loop = asyncio.get_running_loop()
    fileobj = os.fdopen(fd, "rb", buffering=0)
    try:
        reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), fileobj)
    except ValueError:
        # A regular file (e.g. `< requests.jsonl`) is not a pipe: read it from a worker thread.
        async def read_file() -> bytes:
            return await anyio.to_thread.run_sync(os.read, fd, READ_CHUNK)

        return read_file, fileobj.close

    async def read_pipe() -> bytes:
        return await reader.read(READ_CHUNK)

    return read_pipe, transport.close


async def _fd_writer(fd: int) -> tuple[Callable[[bytes], Awaitable[None]], Callable[[], None]]:
    loop = asyncio.get_running_loop()
    fileobj = os.fdopen(fd, "wb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, fileobj)
    except ValueError:
        def write_file_sync(data: bytes) -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]

        async def write_file(data: bytes) -> None:
            write_file_sync(data)

        return write_file, fileobj.close
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write_pipe(data: bytes) -> None:
        if transport.is_closing():
            raise BrokenPipeError("stdout is closed")
        writer.write(data)
        if transport.get_write_buffer_size():
            await writer.drain()

    return write_pipe, transport.close


@asynccontextmanager
async def open_stdio_transport(*, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, flush_timeout: float = 5.0) -> AsyncIterator[Transport]:
    """Frame this process's stdin/stdout, with fds 0 and 1 redirected away from everyone else while it is open."""
    fds = _claim_stdio()
    closers: list[Callable[[], None]] = []
    try:
        read, close_read = await _fd_reader(fds.read_fd)
        closers.append(close_read)
        write, close_write = await _fd_writer(fds.write_fd)
        closers.append(close_write)
        async with _framed(read, write, max_line_bytes, flush_timeout) as transport:
            yield transport
    finally:
        for close in closers:
            try:
                close()
            except OSError:
                pass
        _release_stdio(fds)
