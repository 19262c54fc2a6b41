"""Line framing: bytes split on '\\n' into JSON messages (bad lines become FramingError items), messages written as compact JSON lines; stdio and byte-stream transports."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ipc.errors import BatchTooLarge, FramingError, LineTooLong, MalformedLine

logger = logging.getLogger("ipc.framing")

Message = Any  # a decoded JSON value; the peer decides whether it is a valid JSON-RPC message
Item = Any  # Message | FramingError

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
# A batch is many requests served at once: one 15 MiB batch of pings (344k members) held the loop for over
# 80 s at 850 MB (bench/wire_batch_flood.py). Batches are bounded far below single lines; the member count
# is bounded by the peer (ipc.peer.DEFAULT_MAX_BATCH_ITEMS).
DEFAULT_MAX_BATCH_BYTES = 1024 * 1024
READ_CHUNK = 256 * 1024
# asyncio's pipe transport reads into a fresh buffer of its max_size (256 KiB) and shrinks it: above glibc's
# mmap threshold that is an mmap, an mremap and a munmap per read (strace: 3 of the 8 syscalls of a ping).
# 64 KiB, one pipe buffer, comes from the heap.
PIPE_READ_CHUNK = 64 * 1024
# Bounded queues keep memory flat when the other side stops reading: producers wait instead.
OUTGOING_QUEUE = 512
INCOMING_QUEUE = 512
WRITE_BATCH = 256

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


@dataclass(slots=True, frozen=True)
class RawLine:
    """Bytes to put on the wire verbatim as one line (tests and the `raw` command send malformed input this way)."""

    data: bytes


def encode_message(message: Message) -> bytes:
    """One message as it goes on the wire: compact JSON, UTF-8, one line."""
    if isinstance(message, RawLine):
        return message.data + b"\n"
    text = _dumps(message)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (JSON input may carry "\ud800", and errors echo it back) has no UTF-8 form;
        # \u escapes are still valid JSON, and the answer must go out rather than vanish.
        return _dumps_ascii(message).encode("ascii") + b"\n"


def _is_batch(data: bytes | bytearray, start: int = 0) -> bool:
    """Whether the line starting at `start` is a JSON array (its first non-blank byte is '[')."""
    for i in range(start, min(len(data), start + 256)):
        byte = data[i]
        if byte == 0x5B:
            return True
        if byte not in b" \t\r":
            return False
    return False


class LineDecoder:
    """Incremental splitter: feed it chunks, get back decoded messages and FramingErrors, one per non-empty line.

    A line is bounded by `max_line_bytes`, a batch (a line holding a JSON array) by `max_batch_bytes`; either
    is dropped as its bytes arrive once over its bound, so memory never holds more than the bound.
    """

    __slots__ = ("_buf", "_max", "_max_batch", "_batch", "_discarding", "_discarded")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_line_bytes
        self._max_batch = min(max_batch_bytes, max_line_bytes)
        self._batch = False  # the held line is a batch
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
                if len(self._buf) > self._max_batch and (len(self._buf) > self._max or _is_batch(self._buf)):
                    self._batch = self._batch or _is_batch(self._buf)
                    out.append(self._too_long(len(self._buf)))
                else:
                    self._decode(self._buf, out)
                self._buf = bytearray()
            elif nl - start > self._max_batch and (nl - start > self._max or _is_batch(data, start)):
                self._batch = _is_batch(data, start)
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
        self._buf, self._discarding, self._discarded, self._batch = bytearray(), False, 0, False
        return out

    def _hold(self, data: bytes, start: int, end: int, out: list[Item]) -> None:
        if self._discarding:
            self._discarded += end - start
            return
        if not self._buf:
            self._batch = _is_batch(data, start)
        limit = self._max_batch if self._batch else self._max
        if len(self._buf) + end - start > limit:
            self._discarding, self._discarded = True, len(self._buf) + end - start
            self._buf = bytearray()
        else:
            self._buf += memoryview(data)[start:end]

    def _too_long(self, length: int) -> FramingError:
        batch, self._batch = self._batch, False
        if batch:
            logger.warning("refused a batch of %d+ bytes unread (limit %d)", length, self._max_batch)
            return BatchTooLarge(f"batch of {length} bytes exceeds the batch limit of {self._max_batch} bytes",
                                 length=length, limit=self._max_batch)
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
        except RecursionError:
            # Deep nesting ([[[[...) exhausts the parser's stack; escaping here would lose the rest of the chunk.
            out.append(MalformedLine("invalid JSON: nested too deeply", length=len(line)))


class PushSource(Protocol):
    """Hands decoded items to one consumer right in the reader's callback, instead of through `incoming`.

    A consumer that takes items this way saves the event-loop turn of waking a receiving task per message.
    """

    def subscribe(self, consumer: Callable[[Item], None], on_eof: Callable[[], None]) -> None:
        """From now on every item (those already queued in `incoming` first) goes to `consumer`; `on_eof` once at the end."""

    def unsubscribe(self) -> None:
        """Back to queueing items in `incoming`."""

    def pause(self) -> None:
        """Hold further items (and stop reading) until `resume`; the consumer is behind."""

    def resume(self) -> None: ...


@dataclass(slots=True)
class Transport:
    """A connection as two object streams: decoded items in, messages out. `broken` is set when writing fails."""

    incoming: MemoryObjectReceiveStream[Item]
    outgoing: ObjectSendStream[Message]  # a memory object stream, or PipeSendStream on stdio; both have send_nowait
    broken: anyio.Event = field(default_factory=anyio.Event)
    push: PushSource | None = None  # set where items can be taken by callback (stdio pipes)


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
    flush_timeout: float = 5.0, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> AsyncIterator[Transport]:
    """Frame any pair of anyio byte streams (a child's pipes, a socket, an in-memory pair)."""

    async def read() -> bytes:
        try:
            return await receive.receive(READ_CHUNK)
        except anyio.EndOfStream:
            return b""

    async with _framed(read, send.send, LineDecoder(max_line_bytes, max_batch_bytes), flush_timeout) as transport:
        yield transport


@asynccontextmanager
async def _framed(read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]],
                  decoder: LineDecoder, flush_timeout: float) -> AsyncIterator[Transport]:
    in_send, in_recv = anyio.create_memory_object_stream[Item](INCOMING_QUEUE)
    out_send, out_recv = anyio.create_memory_object_stream[Message](OUTGOING_QUEUE)
    transport = Transport(in_recv, out_send)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump_in, read, decoder, in_send)
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


class _PipeReader(asyncio.Protocol):
    """Decodes right in the event loop's read callback and hands items on without a reader task.

    Items go to the stream until a consumer subscribes (PushSource), then straight to the consumer.
    """

    def __init__(self, decoder: LineDecoder, sink: MemoryObjectSendStream[Item], source: MemoryObjectReceiveStream[Item]) -> None:
        self._decoder = decoder
        self._sink = sink
        self._source = source  # the stream's other end, drained into a consumer when one subscribes
        self._backlog: deque[Item] = deque()
        self._wake = anyio.Event()
        self._eof = False
        self._transport: asyncio.ReadTransport | None = None
        self._consumer: Callable[[Item], None] | None = None
        self._on_eof: Callable[[], None] | None = None
        self._held = False  # the consumer asked for a pause
        self._sending = False  # drain_backlog is inside sink.send(backlog[0])

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        for item in self._decoder.feed(data):
            self._deliver(item)

    def eof_received(self) -> bool:
        self._finish()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish()

    def _finish(self) -> None:
        if self._eof:
            return
        for item in self._decoder.finish():
            self._deliver(item)
        self._eof = True
        if self._consumer is not None:
            self._sink.close()
            self._pump()
        elif self._backlog:
            self._wake.set()
        else:
            self._sink.close()

    def _deliver(self, item: Item) -> None:
        if self._backlog:
            self._backlog.append(item)
            return
        if self._consumer is not None:
            if self._held:
                self._backlog.append(item)
            else:
                self._consume(item)
            return
        try:
            self._sink.send_nowait(item)
        except anyio.WouldBlock:
            # The consumer is behind: stop reading (the pipe fills, the writer on the other side waits).
            self._backlog.append(item)
            self._pause_reading()
            self._wake.set()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _consume(self, item: Item) -> None:
        assert self._consumer is not None
        try:
            self._consumer(item)
        except Exception:
            # Escaping here would drop the rest of the read chunk: later requests would go unanswered.
            logger.exception("consumer failed on an input item")

    def _pause_reading(self) -> None:
        if self._transport is not None and not self._eof:
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._transport is not None and not self._eof and not self._transport.is_closing():
            self._transport.resume_reading()

    def _pump(self) -> None:
        """Consumer mode: hand over the backlog until the consumer pauses; then read on, or report the end."""
        if self._sending:
            return  # drain_backlog owns backlog[0] until its send returns; it pumps after that
        while self._backlog and not self._held and self._consumer is not None:
            self._consume(self._backlog.popleft())
        if self._held or self._backlog or self._consumer is None:
            return
        if self._eof:
            on_eof, self._on_eof = self._on_eof, None
            if on_eof is not None:
                on_eof()
        else:
            self._resume_reading()

    # -- PushSource
    def subscribe(self, consumer: Callable[[Item], None], on_eof: Callable[[], None]) -> None:
        self._consumer, self._on_eof, self._held = consumer, on_eof, False
        # Whatever reached the stream first goes first; taking an item from a full stream also moves a
        # waiting drain_backlog send into it, which is then received here as well (in order).
        while True:
            try:
                item = self._source.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            self._consume(item)
            if self._consumer is None:
                return
        self._pump()

    def unsubscribe(self) -> None:
        self._consumer = self._on_eof = None
        self._held = False
        if self._backlog:
            self._wake.set()
        elif self._eof:
            self._sink.close()

    def pause(self) -> None:
        if self._consumer is not None and not self._held:
            self._held = True
            self._pause_reading()

    def resume(self) -> None:
        if self._held:
            self._held = False
            self._pump()

    async def drain_backlog(self) -> None:
        """Runs for the transport's lifetime: feeds the backlog to a slow stream consumer, then resumes reading."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                while self._backlog and self._consumer is None:
                    self._sending = True
                    try:
                        await self._sink.send(self._backlog[0])
                    finally:
                        self._sending = False
                    self._backlog.popleft()
                if self._consumer is not None:
                    self._pump()
                    continue
                if self._eof:
                    self._sink.close()
                    return
                self._resume_reading()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


class PipeSendStream(ObjectSendStream[Message]):
    """Messages out to a pipe: encoded at once, coalesced per event-loop turn into one write, no writer task.

    When the pipe backs up (the frontend stopped reading), `send_nowait` raises WouldBlock and `send`
    waits in FIFO order, so memory stays bounded and messages keep the order they were sent in.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, broken: anyio.Event) -> None:
        self._loop = loop
        self._broken_event = broken
        self._transport: asyncio.WriteTransport | None = None
        self._pending = bytearray()
        self._flush_scheduled = False
        self._paused = False
        self._waiting: deque[tuple[bytes, asyncio.Future[None]]] = deque()
        self._closed = False
        self._lost: asyncio.Future[None] = loop.create_future()
        self._lost_flag = False

    # -- asyncio protocol side (flow control callbacks from the pipe transport)
    def protocol(self) -> asyncio.BaseProtocol:
        stream = self

        class _Flow(asyncio.BaseProtocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                stream._transport = transport  # type: ignore[assignment]

            def pause_writing(self) -> None:
                stream._paused = True

            def resume_writing(self) -> None:
                stream._paused = False
                stream._release_waiting()

            def connection_lost(self, exc: Exception | None) -> None:
                stream._on_lost(exc)

        return _Flow()

    def _on_lost(self, exc: Exception | None) -> None:
        self._lost_flag = True
        if exc is not None:
            logger.warning("output closed by the other side: %s", exc)
        if exc is not None or not self._closed:
            # The reader went away; with nothing buffered the pipe transport reports that without an exception.
            self._broken_event.set()
        if not self._lost.done():
            self._lost.set_result(None)
        while self._waiting:
            _, fut = self._waiting.popleft()
            if not fut.done():
                fut.set_exception(anyio.BrokenResourceError())

    # -- object stream side
    def send_nowait(self, item: Message) -> None:
        self._check()
        if self._paused or self._waiting:
            raise anyio.WouldBlock
        self._write(encode_message(item))

    async def send(self, item: Message) -> None:
        self._check()
        if not (self._paused or self._waiting):
            self._write(encode_message(item))
            return
        fut: asyncio.Future[None] = self._loop.create_future()
        entry = (encode_message(item), fut)
        self._waiting.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if not fut.done():
                self._waiting.remove(entry)
            raise

    def _check(self) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._lost_flag:
            raise anyio.BrokenResourceError

    def _write(self, data: bytes) -> None:
        if not self._flush_scheduled and self._transport is not None and not self._transport.is_closing():
            # First message of this loop turn goes out at once (latency); the rest of the turn's
            # messages are coalesced into one write at the start of the next turn (throughput).
            self._transport.write(data)
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)
            return
        self._pending += data
        if len(self._pending) >= READ_CHUNK:
            self._flush()
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending or self._transport is None or self._transport.is_closing():
            self._pending.clear()
            return
        data, self._pending = bytes(self._pending), bytearray()
        self._transport.write(data)

    def _release_waiting(self) -> None:
        while self._waiting and not self._paused:
            data, fut = self._waiting.popleft()
            if fut.done():
                continue
            self._write(data)
            fut.set_result(None)

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()

    async def drain_and_close(self, timeout: float) -> None:
        """Flush everything (queued senders included) and close the pipe, giving up after `timeout` seconds."""
        self._closed = True
        with anyio.move_on_after(timeout):
            while self._waiting and not self._lost.done():
                await asyncio.wait([self._waiting[-1][1]])
        self._flush()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()  # flushes the transport's own buffer, then reports connection_lost
        with anyio.move_on_after(timeout):
            await asyncio.shield(self._lost)
        if self._transport is not None and not self._lost.done():
            self._transport.abort()


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


@asynccontextmanager
async def open_stdio_transport(*, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, flush_timeout: float = 5.0,
                               max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES, prefix: bytes = b"") -> AsyncIterator[Transport]:
    """Frame this process's stdin/stdout, with fds 0 and 1 redirected away from everyone else while it is open.

    Pipes (the normal case) are served straight from event-loop callbacks; a regular file on either side
    (e.g. `< requests.jsonl > out.jsonl`) or /dev/null as stdin falls back to the generic path with blocking
    calls in a worker thread. `prefix`: bytes already read from stdin (sidecar/handshake.py), decoded first.
    """
    fds = _claim_stdio()
    try:
        loop = asyncio.get_running_loop()
        in_send, in_recv = anyio.create_memory_object_stream[Item](INCOMING_QUEUE)
        broken = anyio.Event()
        decoder = LineDecoder(max_line_bytes, max_batch_bytes)
        reader = _PipeReader(decoder, in_send, in_recv)
        if prefix:
            reader.data_received(prefix)
        writer = PipeSendStream(loop, broken)
        in_file = os.fdopen(fds.read_fd, "rb", buffering=0)
        out_file = os.fdopen(fds.write_fd, "wb", buffering=0)
        try:
            if not _pollable(fds.read_fd):
                # asyncio accepts any character device, but epoll refuses /dev/null: no read, and no EOF, ever.
                raise ValueError("stdin cannot be polled")
            read_transport, _ = await loop.connect_read_pipe(lambda: reader, in_file)
            read_transport.max_size = PIPE_READ_CHUNK  # type: ignore[attr-defined]
            await loop.connect_write_pipe(writer.protocol, out_file)
        except ValueError:
            async with _framed_files(in_file, out_file, decoder, flush_timeout) as transport:
                yield transport
            return
        transport = Transport(in_recv, writer, broken, reader)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader.drain_backlog)
                try:
                    yield transport
                finally:
                    await writer.drain_and_close(flush_timeout)
                    read_transport.close()
                    tg.cancel_scope.cancel()
        finally:
            read_transport.close()
    finally:
        _release_stdio(fds)


@asynccontextmanager
async def _framed_files(in_file: Any, out_file: Any, decoder: LineDecoder, flush_timeout: float) -> AsyncIterator[Transport]:
    async def read() -> bytes:
        return await anyio.to_thread.run_sync(in_file.read, READ_CHUNK)

    async def write(data: bytes) -> None:
        await anyio.to_thread.run_sync(out_file.write, data)

    try:
        async with _framed(read, write, decoder, flush_timeout) as transport:
            yield transport
    finally:
        for f in (in_file, out_file):
            try:
                f.close()
            except OSError:
                pass
