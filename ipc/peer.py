"""JsonRpcPeer: one end of a JSON-RPC 2.0 connection; inbound requests run concurrently through jsonrpcserver's async dispatcher, outbound requests wait in a pending table."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from oslash.either import Left  # type: ignore[import-untyped]
from pydantic import BaseModel, ValidationError

from ipc.errors import (
    BatchTooLarge,
    ConnectionClosed,
    FramingError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    RemoteError,
    RequestCancelled,
    RequestTimeout,
    ServerBusy,
    to_wire_error,
    validation_errors,
)
from ipc._jsonrpcserver import async_dispatcher, dispatcher, response, result, sentinels
from ipc.framing import PushSource, RawLine, Transport

logger = logging.getLogger("ipc.peer")

call_method = async_dispatcher.call
create_request, to_response = dispatcher.create_request, dispatcher.to_response
to_serializable_one = response.to_serializable_one
ErrorResult, Success = result.ErrorResult, result.Success
NODATA = sentinels.NODATA

RequestId = int | str
Handler = Callable[[Any, "RequestContext"], Awaitable[Any]]
Guard = Callable[[str, bool], None]  # (method, is_notification); raise RpcError to refuse
NotificationSink = Callable[[str, Any], None]

CANCEL_METHOD = "$/cancelRequest"
# ACP's name for it, with the id under "requestId" (agentclientprotocol.com, protocol/cancellation).
ACP_CANCEL_METHOD = "$/cancel_request"
_NOTIFY_HEADS: dict[str, bytes] = {}  # per method name: the envelope up to the params


def _dumps(value: str) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")

DEFAULT_REQUEST_TIMEOUT = 60.0
BACKLOG_LIMIT = 64  # queued answers at which the reader stops taking new requests until output drains
# Requests of the other side served at once: past this, a new one is answered ServerBusy at once. The reader never
# stops reading (answers to our own requests arrive on the same stream, and a call may wait for one of them), so
# an impatient client meets a refusal, not a queue that grows with everything it sends.
DEFAULT_MAX_INFLIGHT = 256
# Members of one inbound batch: each becomes a task and an answer held until the whole batch is done, so an
# unbounded batch is unbounded memory and a loop busy spawning instead of answering pings.
DEFAULT_MAX_BATCH_ITEMS = 100


@dataclass(slots=True, frozen=True)
class Route:
    """How one inbound method is served: params are validated with `params` and the result shaped by `result`."""

    handler: Handler
    params: type[BaseModel] | None = None
    result: type[BaseModel] | None = None


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the call it serves."""

    peer: JsonRpcPeer
    method: str
    id: RequestId | None  # None for a notification


@dataclass(slots=True)
class _Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    response: dict[str, Any] | None = None  # None after done: the connection closed


@dataclass(slots=True)
class _Batch:
    """Collects the responses of one inbound batch; sent as one array once every member has answered."""

    pending: int = 0  # members still being served
    responses: list[dict[str, Any]] = field(default_factory=list)
    sealed: bool = False


def _error_response(error: dict[str, Any], id_: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": error, "id": id_}


def _valid_id(value: Any) -> bool:
    return (isinstance(value, (int, str)) and not isinstance(value, bool)) or value is None


def _to_params(params: Any) -> Any:
    if params is None:
        return None
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json", by_alias=True)
    return params


class JsonRpcPeer:
    """Serves inbound calls with `routes`, sends requests and notifications; symmetric, so the frontend stub uses it too."""

    def __init__(
        self,
        transport: Transport,
        *,
        routes: Mapping[str, Route] | None = None,
        guard: Guard | None = None,
        on_notification: NotificationSink | None = None,
        on_unmatched: Callable[[Any], None] | None = None,
        name: str = "peer",
        max_batch_items: int = DEFAULT_MAX_BATCH_ITEMS,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
    ) -> None:
        self._transport = transport
        self._max_inflight = max_inflight
        self._routes: Mapping[str, Route] = routes if routes is not None else {}
        self._guard = guard
        # Cancel our own timed-out requests the ACP way ($/cancel_request {requestId}) once the connection speaks ACP.
        self.acp_cancel = False
        self._on_notification = on_notification
        self._on_unmatched = on_unmatched  # responses nobody waits for (e.g. errors with id null)
        self.name = name
        self._max_batch_items = max_batch_items
        self._ids: Iterator[int] = itertools.count(1)
        self._pending: dict[RequestId, _Waiter] = {}
        self._inflight: dict[RequestId, anyio.CancelScope] = {}
        self._calls: dict[int, asyncio.Task[None]] = {}  # by a serial number the task itself knows
        self._call_ids: Iterator[int] = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle = asyncio.Event()  # reused (clear/set) rather than a new anyio.Event per busy period
        self._idle.set()
        self._tg: TaskGroup | None = None
        self._backlog: deque[Any] = deque()  # answers waiting for a congested output
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope
        self._push: PushSource | None = None  # while items are taken by callback (see _take_pushed)
        self._drained = anyio.Event()
        self.eof = anyio.Event()  # the other side closed its end (or the transport broke)
        # jsonrpcserver calls every method through our one adapter, which routes by ctx.method (so the
        # init/shutdown guard and "method not found" go through our single error mapping). Its own name lookup
        # and argument binding (dispatch_request) are skipped: the lookup would always find the adapter and
        # the bind always succeed; that saved ~10% of a ping's CPU. Request, call, Result and Response remain its own.
        self._adapter = self._invoke

    # ------------------------------------------------------------------ public

    @property
    def closed(self) -> bool:
        return self.eof.is_set()

    @property
    def inflight(self) -> int:
        """Inbound calls (requests and notifications) still being served."""
        return len(self._calls)

    async def run(self) -> None:
        """Read and serve until the other side closes; returns once every in-flight call has finished."""
        # The backend's own CancelScope class, constructed directly: anyio.CancelScope() looks the backend up
        # (sniffio) on every call, once per request here.
        self._new_scope = type(anyio.CancelScope())
        self._loop = asyncio.get_running_loop()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._watch_broken)
                if self._transport.push is not None:
                    await self._take_pushed(self._transport.push)
                else:
                    await self._receive_all()
                self._close_pending()
                await self.wait_idle()
                tg.cancel_scope.cancel()
        finally:
            self._close_pending()
            await self._abandon_calls()

    async def _receive_all(self) -> None:
        incoming = self._transport.incoming
        try:
            while True:
                try:
                    item = incoming.receive_nowait()
                except anyio.WouldBlock:
                    item = await incoming.receive()
                self._on_item(item)
                if len(self._backlog) >= BACKLOG_LIMIT:
                    await self._drained.wait()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def _take_pushed(self, source: PushSource) -> None:
        # Items arrive in the reader's own callback: a request's task is created in the same loop turn
        # that read it, instead of one turn later after waking a receiving task.
        ended = asyncio.Event()
        self._push = source

        def consume(item: Any) -> None:
            self._on_item(item)
            if len(self._backlog) >= BACKLOG_LIMIT:
                source.pause()  # resumed when the backlog has drained (_drain_backlog)

        source.subscribe(consume, ended.set)
        try:
            await ended.wait()
        finally:
            self._push = None
            source.unsubscribe()

    async def _abandon_calls(self) -> None:
        if not self._calls:
            return
        calls = dict(self._calls)
        for task in calls.values():
            task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.gather(*calls.values(), return_exceptions=True)
        for key in calls:
            self._calls.pop(key, None)
        if not self._calls:
            self._idle.set()

    async def request(self, method: str, params: Any = None, *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
                      result_model: type[BaseModel] | None = None) -> Any:
        """Send a request and wait for its result; RemoteError on an error answer, RequestTimeout, ConnectionClosed."""
        if self.closed:
            raise ConnectionClosed(f"cannot send {method!r}: connection closed")
        id_ = next(self._ids)
        waiter = _Waiter()
        self._pending[id_] = waiter
        try:
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
            wire_params = _to_params(params)
            if wire_params is not None:
                message["params"] = wire_params
            await self._send(message)
            try:
                with anyio.fail_after(timeout):
                    await waiter.done.wait()
            except TimeoutError:
                self._cancel_remote(id_)
                raise RequestTimeout(f"{method!r} got no response within {timeout} s") from None
            except anyio.get_cancelled_exc_class():
                self._cancel_remote(id_)
                raise
        finally:
            self._pending.pop(id_, None)
        response = waiter.response
        if response is None:
            raise ConnectionClosed(f"connection closed before {method!r} was answered")
        if "error" in response:
            raise RemoteError.from_wire(response["error"])
        result = response.get("result")
        return result_model.model_validate(result) if result_model is not None else result

    async def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification; notifications leave in the order they were queued. Waits while the queue is full."""
        if isinstance(params, BaseModel):
            # pydantic-core writes the JSON itself (no dict, no json.dumps): a third of the per-event cost.
            head = _NOTIFY_HEADS.get(method)
            if head is None:
                head = _NOTIFY_HEADS[method] = b'{"jsonrpc":"2.0","method":%s,"params":' % _dumps(method)
            await self._send(RawLine(head + params.__pydantic_serializer__.to_json(params, by_alias=True) + b"}"))
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def send_raw(self, message: Any) -> None:
        """Put any JSON value on the wire as is (tests, the `raw` command)."""
        await self._send(message)

    def cancel(self, id_: RequestId) -> bool:
        """Cancel one in-flight inbound request; it answers -32800."""
        scope = self._inflight.get(id_)
        if scope is None:
            return False
        scope.cancel()
        return True

    def cancel_inflight(self) -> int:
        """Cancel every in-flight inbound request (shutdown after the grace period)."""
        for scope in list(self._inflight.values()):
            scope.cancel()
        return len(self._inflight)

    async def wait_idle(self) -> None:
        while self._calls:
            await self._idle.wait()

    # ------------------------------------------------------------------ inbound

    def _on_item(self, item: Any) -> None:
        if isinstance(item, FramingError):
            self._reply(_error_response(to_wire_error(item), None))
        elif isinstance(item, dict):
            self._on_message(item, None)
        elif isinstance(item, list):
            if not item:
                self._reply(_error_response(InvalidRequest(data={"reason": "empty batch"}).to_wire(), None))
                return
            if len(item) > self._max_batch_items:
                refused = BatchTooLarge(f"batch of {len(item)} members exceeds the limit of {self._max_batch_items}",
                                        limit=self._max_batch_items, items=len(item))
                logger.warning("%s: %s", self.name, refused.detail)
                self._reply(_error_response(to_wire_error(refused), None))
                return
            batch = _Batch()
            for member in item:
                self._on_message(member, batch)
            batch.sealed = True
            self._maybe_finish_batch(batch)
        else:
            self._reply(_error_response(InvalidRequest(data={"reason": "not an object"}).to_wire(), None))

    def _on_message(self, msg: Any, batch: _Batch | None) -> None:
        if not isinstance(msg, dict):
            self._answer(_error_response(InvalidRequest(data={"reason": "not an object"}).to_wire(), None), batch)
            return
        if "method" in msg:
            method, id_, params = msg["method"], msg.get("id"), msg.get("params")
            problem = None
            if msg.get("jsonrpc") != "2.0":
                problem = 'jsonrpc must be "2.0"'
            elif not isinstance(method, str):
                problem = "method must be a string"
            elif not _valid_id(id_):
                problem = "id must be a string, an integer or null"
            elif params is not None and not isinstance(params, (dict, list)):
                problem = "params must be an object or an array"
            if problem is not None:
                self._answer(_error_response(InvalidRequest(data={"reason": problem}).to_wire(),
                                             id_ if _valid_id(id_) else None), batch)
                return
            if "id" not in msg:
                if method in (CANCEL_METHOD, ACP_CANCEL_METHOD):
                    key = "id" if method == CANCEL_METHOD else "requestId"
                    target = params.get(key) if isinstance(params, dict) else None
                    if _valid_id(target) and target is not None:
                        self.cancel(target)
                    return
                if method not in self._routes and self._on_notification is not None:
                    # Events are delivered in the reader itself: in order, and without a task per event.
                    try:
                        self._on_notification(method, params)
                    except Exception:
                        logger.exception("%s: notification handler failed for %r", self.name, method)
                    return
                self._spawn(self._serve_notification, msg)
                return
            if id_ in self._inflight:
                self._answer(_error_response(InvalidRequest(data={"reason": "a request with this id is in flight"}).to_wire(), id_), batch)
                return
            if len(self._inflight) >= self._max_inflight:
                busy = ServerBusy(f"{len(self._inflight)} requests are already being served (the limit is "
                                  f"{self._max_inflight}); wait for their answers before sending more",
                                  data={"limit": self._max_inflight, "inflight": len(self._inflight)})
                self._answer(_error_response(busy.to_wire(), id_), batch)
                return
            if batch is not None:
                batch.pending += 1
            scope = self._new_scope()
            self._inflight[id_] = scope
            self._spawn(self._serve_request, msg, scope, batch)
        elif "id" in msg and ("result" in msg or "error" in msg):
            waiter = self._pending.get(msg["id"]) if _valid_id(msg["id"]) else None
            if waiter is not None and waiter.done.is_set():
                # A second answer before the waiter even woke up (same read chunk): the first one stands.
                waiter = None
            if waiter is None:
                if self._on_unmatched is not None:
                    self._on_unmatched(msg)
                else:
                    logger.debug("%s: response for unknown id %r ignored", self.name, msg["id"])
                return
            waiter.response = msg
            waiter.done.set()
        else:
            self._answer(_error_response(InvalidRequest(data={"reason": "neither a request nor a response"}).to_wire(),
                                         msg.get("id") if _valid_id(msg.get("id")) else None), batch)

    def _spawn(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        # A plain asyncio task, not tg.start_soon: anyio's spawn costs ~45 µs more per call (bench/), a third
        # of the round-trip budget. The peer owns these tasks: run() cancels and awaits them when it ends.
        if not self._calls:
            self._idle.clear()
        loop = self._loop or asyncio.get_running_loop()
        key = next(self._call_ids)
        self._calls[key] = loop.create_task(self._tracked(key, fn, *args))

    async def _tracked(self, key: int, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        # Bookkeeping in the task itself rather than a done callback: one loop callback less per request
        # (and by key, not current_task(): asyncio checks getpid() on each such lookup, a syscall).
        # A task cancelled before its first step never gets here; _abandon_calls forgets those.
        try:
            await fn(*args)
        except Exception:
            logger.exception("%s: inbound call crashed", self.name)
        finally:
            self._calls.pop(key, None)
            if not self._calls:
                self._idle.set()

    async def _serve_request(self, msg: dict[str, Any], scope: anyio.CancelScope, batch: _Batch | None) -> None:
        id_ = msg["id"]
        response: dict[str, Any] | None = None
        try:
            with scope:
                request = create_request(msg)
                result = await call_method(request, RequestContext(self, msg["method"], id_), self._adapter)
                response = to_serializable_one(to_response(request, result))
        finally:
            self._inflight.pop(id_, None)
        if response is None:
            response = _error_response(RequestCancelled().to_wire(), id_)
        self._answer_member(response, batch)

    async def _serve_notification(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        result = await call_method(create_request(msg), RequestContext(self, method, None), self._adapter)
        if isinstance(result, Left):
            logger.warning("%s: notification %r failed: %s", self.name, method, result._error.message)

    async def _invoke(self, ctx: RequestContext, /, *args: Any, **kwargs: Any) -> Any:
        """The single adapter jsonrpcserver calls: guard, route lookup, pydantic params, handler, result shaping."""
        try:
            if self._guard is not None:
                self._guard(ctx.method, ctx.id is None)
            route = self._routes.get(ctx.method)
            if route is None:
                raise MethodNotFound(data={"method": ctx.method})
            if args:
                raise InvalidParams(data={"errors": [{"loc": [], "msg": "params must be an object (by name)", "type": "dict_type"}]})
            if route.params is not None:
                try:
                    params: Any = route.params.model_validate(kwargs)
                except ValidationError as exc:
                    raise InvalidParams(data={"errors": validation_errors(exc)}) from None
            else:
                params = kwargs
            result = await route.handler(params, ctx)
            return Success(_shape_result(route, ctx.method, result))
        except Exception as exc:
            error = to_wire_error(exc)
            return Left(ErrorResult(error["code"], error["message"], error.get("data", NODATA)))

    # ------------------------------------------------------------------ outbound plumbing

    def _answer(self, response: dict[str, Any], batch: _Batch | None) -> None:
        if batch is None:
            self._reply(response)
            return
        batch.responses.append(response)
        self._maybe_finish_batch(batch)

    def _answer_member(self, response: dict[str, Any], batch: _Batch | None) -> None:
        if batch is not None:
            batch.pending -= 1
        self._answer(response, batch)

    def _maybe_finish_batch(self, batch: _Batch) -> None:
        # A batch of only notifications gets no answer at all (JSON-RPC 2.0 §6).
        if batch.sealed and batch.pending == 0 and batch.responses:
            responses, batch.responses = batch.responses, []
            self._reply(responses)

    def _reply(self, response: Any) -> None:
        if not self._backlog:
            try:
                self._transport.outgoing.send_nowait(response)
                return
            except anyio.WouldBlock:
                pass
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                logger.debug("%s: response dropped, connection closed", self.name)
                return
        # The other side is not reading: keep answers in order in one backlog, drained by one task;
        # the reader stops taking new requests while the backlog is long (see run()), so it stays bounded.
        self._backlog.append(response)
        if len(self._backlog) == 1:
            assert self._tg is not None
            self._drained = anyio.Event()
            self._tg.start_soon(self._drain_backlog)

    async def _drain_backlog(self) -> None:
        try:
            while self._backlog:
                await self._send(self._backlog[0])
                self._backlog.popleft()
        except ConnectionClosed:
            logger.debug("%s: %d response(s) dropped, connection closed", self.name, len(self._backlog))
            self._backlog.clear()
        finally:
            self._drained.set()
            if self._push is not None:
                self._push.resume()

    async def _send(self, message: Any) -> None:
        outgoing = self._transport.outgoing
        try:
            try:
                outgoing.send_nowait(message)
            except anyio.WouldBlock:
                await outgoing.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise ConnectionClosed("connection closed") from None

    def _cancel_remote(self, id_: RequestId) -> None:
        try:
            method, key = (ACP_CANCEL_METHOD, "requestId") if self.acp_cancel else (CANCEL_METHOD, "id")
            self._transport.outgoing.send_nowait({"jsonrpc": "2.0", "method": method, "params": {key: id_}})
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _close_pending(self) -> None:
        self.eof.set()
        for waiter in self._pending.values():
            waiter.done.set()

    async def _watch_broken(self) -> None:
        await self._transport.broken.wait()
        self._close_pending()


def wire_form(model: BaseModel) -> Any:
    # A model that knows its wire form (ACP's leave absent fields out) says so; any other is dumped by alias.
    wire = getattr(model, "wire", None)
    return wire() if wire is not None else model.model_dump(mode="json", by_alias=True)


def _shape_result(route: Route, method: str, result: Any) -> Any:
    if isinstance(result, BaseModel):
        return wire_form(result)
    if result is None or route.result is None:
        return result
    try:
        return wire_form(route.result.model_validate(result))
    except ValidationError as exc:
        logger.error("result of %r does not match %s: %s", method, route.result.__name__, exc)
        raise InternalError(data={"reason": f"result of {method} failed validation"}) from None
