"""The sidecar server application: the open method table, the call context handlers get, events, shutdown callbacks and the init/shutdown gate."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
from pydantic import BaseModel

from ipc.errors import InvalidRequest, NotInitialized
from ipc.peer import DEFAULT_REQUEST_TIMEOUT, JsonRpcPeer, RequestContext, Route
from ipc.registry import CLIENT_REQUESTS, EVENTS, METHODS

logger = logging.getLogger("sidecar.app")

SERVER_NAME = "orion-sidecar"
SERVER_VERSION = "0.1.0"

State = Literal["new", "initialized", "shutting_down"]
ShutdownCallback = Callable[[], Awaitable[None]]
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])

# Notifications are never refused by the gate: `exit` must work in every state.
_ALWAYS_ALLOWED = frozenset({"initialize"})


@dataclass(slots=True)
class CallContext:
    """Given to every handler: the app, the connection, and the id of the call being served."""

    app: SidecarApp
    peer: JsonRpcPeer
    method: str
    request_id: int | str | None

    async def notify(self, event: str, params: BaseModel | dict[str, Any]) -> None:
        await self.app.notify(event, params)

    async def request(self, method: str, params: BaseModel | dict[str, Any], *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> Any:
        return await self.app.request_frontend(method, params, timeout=timeout)


class SidecarApp:
    """Holds the method table and the connection; later modules add methods with `app.method(...)`."""

    def __init__(self, *, shutdown_budget: float = 5.0) -> None:
        self.routes: dict[str, Route] = {}
        self.state: State = "new"
        self.client_info: dict[str, Any] | None = None
        self.shutdown_budget = shutdown_budget  # seconds all on_shutdown callbacks get together
        self.stop_requested = anyio.Event()
        self.stop_reason: str | None = None
        self._peer: JsonRpcPeer | None = None
        self._shutdown_callbacks: list[ShutdownCallback] = []
        self._callbacks_ran = False

    # ------------------------------------------------------------------ registration

    def method(self, name: str, params: type[BaseModel] | None = None, result: type[BaseModel] | None = None) -> Callable[[H], H]:
        """Register `async def handler(params, call: CallContext) -> ResultModel | dict | None` for `name`.

        Models default to the protocol table's entry for `name`; a name outside the table needs them given.
        """
        spec = METHODS.get(name)
        params_model = params or (spec.params if spec else None)
        result_model = result or (spec.result if spec else None)
        if params_model is None:
            raise ValueError(f"{name!r} is not in ipc.registry.METHODS: pass its params model")

        def decorator(handler: H) -> H:
            if name in self.routes:
                raise ValueError(f"method {name!r} is already registered")

            async def adapter(validated: Any, ctx: RequestContext) -> Any:
                return await handler(validated, CallContext(self, ctx.peer, ctx.method, ctx.id))

            self.routes[name] = Route(adapter, params_model, result_model)
            return handler

        return decorator

    def on_shutdown(self, callback: ShutdownCallback) -> ShutdownCallback:
        """Run `callback` once on shutdown (request, exit, EOF, SIGTERM/SIGINT), within the shutdown budget."""
        self._shutdown_callbacks.append(callback)
        return callback

    @property
    def method_names(self) -> list[str]:
        return sorted(self.routes)

    @property
    def event_names(self) -> list[str]:
        return list(EVENTS)

    # ------------------------------------------------------------------ connection

    @property
    def peer(self) -> JsonRpcPeer:
        if self._peer is None:
            raise RuntimeError("the app is not serving a connection")
        return self._peer

    def attach(self, peer: JsonRpcPeer) -> None:
        self._peer = peer

    def guard(self, method: str, is_notification: bool) -> None:
        """Refuse requests before `initialize` (-32002) and after `shutdown` (-32600)."""
        if is_notification:
            return
        if self.state == "new" and method not in _ALWAYS_ALLOWED:
            raise NotInitialized(data={"method": method})
        if self.state == "shutting_down":
            raise InvalidRequest("Server is shutting down", data={"method": method})

    async def notify(self, event: str, params: BaseModel | dict[str, Any]) -> None:
        """Emit an event from the table; a dict is validated against the event's model first."""
        model = EVENTS.get(event)
        if model is None:
            raise ValueError(f"unknown event {event!r}; add it to ipc.registry.EVENTS")
        if not isinstance(params, BaseModel):
            params = model.model_validate(params)
        await self.peer.notify(event, params)

    async def request_frontend(self, method: str, params: BaseModel | dict[str, Any], *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> Any:
        """Send a sidecar → frontend request from the table; the answer comes back as its result model."""
        spec = CLIENT_REQUESTS.get(method)
        if spec is None:
            raise ValueError(f"unknown frontend request {method!r}; add it to ipc.registry.CLIENT_REQUESTS")
        if not isinstance(params, BaseModel):
            params = spec.params.model_validate(params)
        return await self.peer.request(method, params, timeout=timeout, result_model=spec.result)

    # ------------------------------------------------------------------ lifecycle

    def request_stop(self, reason: str) -> None:
        if not self.stop_requested.is_set():
            self.stop_reason = reason
            logger.info("stopping: %s", reason)
            self.stop_requested.set()

    async def run_shutdown_callbacks(self) -> None:
        """Run every on_shutdown callback once, concurrently, all within `shutdown_budget` seconds."""
        if self._callbacks_ran:
            return
        self._callbacks_ran = True
        self.state = "shutting_down"

        async def run_one(callback: ShutdownCallback) -> None:
            try:
                await callback()
            except Exception:
                logger.exception("shutdown callback %r failed", callback)

        with anyio.move_on_after(self.shutdown_budget) as scope:
            async with anyio.create_task_group() as tg:
                for callback in self._shutdown_callbacks:
                    tg.start_soon(run_one, callback)
        if scope.cancelled_caught:
            logger.warning("shutdown callbacks overran their %.1f s budget and were cancelled", self.shutdown_budget)
