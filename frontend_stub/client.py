"""SidecarClient: what a desktop shell does — spawn the sidecar with pipes, initialize, call methods, subscribe to events, answer its requests, shut it down."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectSendStream
from pydantic import BaseModel

from ipc import protocol as p
from ipc.errors import ConnectionClosed, IpcError, RpcError
from ipc.framing import RawLine, open_stream_transport
from ipc.peer import DEFAULT_REQUEST_TIMEOUT, JsonRpcPeer, RequestContext, Route
from ipc.registry import CLIENT_REQUESTS, EVENTS, METHODS

logger = logging.getLogger("frontend_stub.client")

# Answers a sidecar → frontend request: (method, validated params) -> result model or dict.
RequestHandler = Callable[[str, BaseModel], Awaitable[BaseModel | dict[str, Any]]]

CLIENT_NAME = "orion-frontend-stub"
CLIENT_VERSION = "0.1.0"
STDERR_KEEP = 1024 * 1024  # bytes of the sidecar's stderr kept for diagnostics
EVENT_BUFFER = 10_000  # events a subscriber may fall behind by before its iterator fails
HISTORY = 10_000


class EventOverflow(IpcError):
    """A subscriber fell more than its buffer behind; its iterator ends with this instead of losing events silently."""


@dataclass(slots=True, frozen=True)
class Event:
    """One notification from the sidecar, with the time it arrived (time.monotonic())."""

    name: str
    params: Any
    received_at: float

    def parsed(self) -> BaseModel | None:
        """The params as the event's protocol model, or None for a name outside the table."""
        model = EVENTS.get(self.name)
        return model.model_validate(self.params) if model is not None else None


@dataclass(slots=True)
class _Subscriber:
    name: str | None
    sink: MemoryObjectSendStream[Event]
    overflowed: bool = False


@dataclass(slots=True)
class _StderrTail:
    data: bytearray = field(default_factory=bytearray)
    echo: bool = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > STDERR_KEEP:
            del self.data[: len(self.data) - STDERR_KEEP]
        if self.echo:
            sys.stderr.buffer.write(chunk)
            sys.stderr.flush()


def default_sidecar_argv() -> list[str]:
    # -P: the working directory is not put on the import path (docs/SECURITY.md, "What the sidecar imports").
    return [sys.executable, "-P", "-m", "sidecar"]


class EventStream:
    """An async iterator over events, subscribed from the moment it is created."""

    def __init__(self, client: SidecarClient, name: str | None, buffer: int) -> None:
        self._client = client
        send, self._receive = anyio.create_memory_object_stream[Event](buffer)
        self._subscriber = _Subscriber(name, send)
        self._buffer = buffer
        client._subscribers.append(self._subscriber)
        if client.peer.closed:
            send.close()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.close()
            if self._subscriber.overflowed:
                raise EventOverflow(f"event subscriber fell more than {self._buffer} events behind") from None
            raise StopAsyncIteration from None

    def close(self) -> None:
        if self._subscriber in self._client._subscribers:
            self._client._subscribers.remove(self._subscriber)
        self._subscriber.sink.close()

    async def aclose(self) -> None:
        self.close()
        self._receive.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class SidecarClient:
    """A connected sidecar. Create with `async with SidecarClient.launch(...) as client:`."""

    def __init__(self, process: Process, peer: JsonRpcPeer, stderr: _StderrTail) -> None:
        self.process = process
        self.peer = peer
        self._stderr = stderr
        self._subscribers: list[_Subscriber] = []
        self._listeners: list[Callable[[Event], None]] = []
        self.history: deque[Event] = deque(maxlen=HISTORY)  # the most recent events, oldest first
        self.initialize_result: p.InitializeResult | None = None
        self.on_request: RequestHandler | None = None
        # Answer to session/request_permission when no on_request handler is set.
        self.default_permission: str = "cancelled"
        self._closed = False
        self.unmatched: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self._unmatched_send, self._unmatched_receive = anyio.create_memory_object_stream[dict[str, Any]](HISTORY)

    # ------------------------------------------------------------------ launching

    @classmethod
    @asynccontextmanager
    async def launch(
        cls,
        argv: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        on_request: RequestHandler | None = None,
        *,
        initialize: bool = True,
        capabilities: Mapping[str, Any] | None = None,
        echo_stderr: bool = False,
        startup_timeout: float = 30.0,
        close_timeout: float = 10.0,
    ) -> AsyncIterator[SidecarClient]:
        """Spawn the sidecar the way a desktop shell does (a child with three pipes) and hand back a connected client."""
        command = list(argv) if argv is not None else default_sidecar_argv()
        child_env = dict(os.environ if env is None else env)
        if env is None and cwd is None:
            # Launched from a checkout without `pip install`: make the project importable for the child.
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, child_env.get("PYTHONPATH")]))
        process = await anyio.open_process(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, env=child_env, cwd=cwd, start_new_session=True)
        stderr = _StderrTail(echo=echo_stderr)
        try:
            assert process.stdout is not None and process.stdin is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain_stderr, process, stderr)
                async with open_stream_transport(process.stdout, process.stdin) as transport:
                    client_box: list[SidecarClient] = []
                    routes = {name: Route(_answer_request(client_box), spec.params, spec.result)
                              for name, spec in CLIENT_REQUESTS.items()}
                    peer = JsonRpcPeer(transport, routes=routes, on_notification=lambda n, prm: client_box[0]._on_event(n, prm),
                                       on_unmatched=lambda msg: client_box[0]._on_unmatched(msg), name="frontend")
                    client = cls(process, peer, stderr)
                    client.on_request = on_request
                    client_box.append(client)
                    async def run_peer() -> None:
                        try:
                            await peer.run()
                        finally:
                            client._end_events()

                    tg.start_soon(run_peer)
                    try:
                        if initialize:
                            with anyio.fail_after(startup_timeout):
                                await client.initialize(capabilities)
                        yield client
                    finally:
                        with anyio.CancelScope(shield=True):
                            await client.close(close_timeout)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _reap(process, close_timeout)

    # ------------------------------------------------------------------ calls

    async def initialize(self, capabilities: Mapping[str, Any] | None = None) -> p.InitializeResult:
        """`capabilities`: what this frontend shows, e.g. `{"elicitation": {"form": {}}}` for the questions as forms."""
        params = p.InitializeParams(protocol_version=p.PROTOCOL_VERSION,
                                    client_info=p.ClientInfo(name=CLIENT_NAME, version=CLIENT_VERSION),
                                    capabilities=dict(capabilities or {}))
        self.initialize_result = await self.peer.request("initialize", params, result_model=p.InitializeResult)
        return self.initialize_result

    async def request(self, method: str, params: BaseModel | dict[str, Any] | list[Any] | None = None, *,
                      timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> Any:
        """Raw request: the result as decoded JSON; RemoteError carries the sidecar's error code and data."""
        return await self.peer.request(method, params, timeout=timeout)

    async def call(self, method: str, params: BaseModel | dict[str, Any] | None = None, *,
                   timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> Any:
        """Typed request for a method in the protocol table: the result comes back as its model."""
        spec = METHODS[method]
        return await self.peer.request(method, params if params is not None else {}, timeout=timeout, result_model=spec.result)

    async def notify(self, method: str, params: BaseModel | dict[str, Any] | None = None) -> None:
        await self.peer.notify(method, params)

    async def ping(self, *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> None:
        await self.peer.request("ping", timeout=timeout)

    # ------------------------------------------------------------------ events

    def events(self, name: str | None = None, *, buffer: int = EVENT_BUFFER) -> EventStream:
        """Every event (or every event called `name`) emitted from this call on, in order, until the sidecar closes.

        `async with client.events("log") as events: async for e in events: ...` unsubscribes deterministically;
        a plain `async for` works too.
        """
        return EventStream(self, name, buffer)

    def listen(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback` with every event as it is read, before anything read after it is handled: when a request's
        answer arrives, every event the sidecar sent before that answer has been seen. Returns the unsubscribe."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    async def send_line(self, line: bytes | str) -> None:
        """Put one line on the wire verbatim (malformed input included); answers arrive in `unmatched`."""
        await self.peer.send_raw(RawLine(line.encode("utf-8") if isinstance(line, str) else line))

    async def next_unmatched(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next response no request of ours waits for (answers to `send_line`, errors with id null)."""
        with anyio.fail_after(timeout):
            return await self._unmatched_receive.receive()

    def _on_unmatched(self, message: dict[str, Any]) -> None:
        self.unmatched.append(message)
        try:
            self._unmatched_send.send_nowait(message)
        except anyio.WouldBlock:
            logger.warning("unmatched response buffer full; %r only kept in client.unmatched", message)

    def _end_events(self) -> None:
        self._unmatched_send.close()
        for subscriber in list(self._subscribers):
            subscriber.sink.close()

    def _on_event(self, name: str, params: Any) -> None:
        event = Event(name, params, time.monotonic())
        self.history.append(event)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a listener's bug must not stop the reader
                logger.exception("event listener failed on %s", name)
        for subscriber in self._subscribers:
            if subscriber.name is not None and subscriber.name != name or subscriber.overflowed:
                continue
            try:
                subscriber.sink.send_nowait(event)
            except anyio.WouldBlock:
                subscriber.overflowed = True
                subscriber.sink.close()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    # ------------------------------------------------------------------ diagnostics and shutdown

    def stderr_text(self) -> str:
        return self._stderr.data.decode("utf-8", "replace")

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def close(self, timeout: float = 10.0) -> int | None:
        """shutdown → exit → wait; the child is killed if it does not end within `timeout` seconds."""
        if self._closed:
            return self.process.returncode
        self._closed = True
        if self.process.returncode is None and not self.peer.closed:
            with anyio.move_on_after(timeout):
                try:
                    await self.peer.request("shutdown", timeout=timeout)
                    await self.peer.notify("exit")
                except (ConnectionClosed, RpcError, TimeoutError) as exc:
                    logger.debug("shutdown handshake: %r", exc)
        return await _reap(self.process, timeout)


def _answer_request(client_box: list[SidecarClient]) -> Callable[[Any, RequestContext], Awaitable[Any]]:
    async def answer(params: Any, ctx: RequestContext) -> Any:
        client = client_box[0]
        if client.on_request is not None:
            return await client.on_request(ctx.method, params)
        if ctx.method == "session/request_permission":
            if client.default_permission == "cancelled":
                return {"outcome": {"outcome": "cancelled"}}
            return {"outcome": {"outcome": "selected", "optionId": client.default_permission}}
        raise RpcError(f"the frontend has no handler for {ctx.method}", code=-32601)

    return answer


async def _drain_stderr(process: Process, tail: _StderrTail) -> None:
    assert process.stderr is not None
    try:
        async for chunk in process.stderr:
            tail.add(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _reap(process: Process, timeout: float) -> int | None:
    """Wait for the child; after `timeout` seconds kill its whole process group (hooks start grandchildren)."""
    if process.returncode is None:
        if process.stdin is not None:
            try:
                await process.stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        with anyio.move_on_after(timeout):
            await process.wait()
    if process.returncode is None:
        logger.warning("sidecar did not exit within %.1f s; killing it", timeout)
        try:
            os.killpg(process.pid, 9)
        except (ProcessLookupError, PermissionError):
            process.kill()
        await process.wait()
    return process.returncode
