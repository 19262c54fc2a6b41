"""The sidecar server application: the open method table, the call context handlers get, events, shutdown callbacks and the init/shutdown gate."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from pydantic import BaseModel

from ipc.errors import InvalidRequest, NotInitialized
from ipc.peer import DEFAULT_REQUEST_TIMEOUT, JsonRpcPeer, RequestContext, Route
from ipc.registry import ACP_METHODS, CLIENT_REQUESTS, EVENTS, METHODS

if TYPE_CHECKING:
    from sidecar.acp.dialect import AcpDialect

logger = logging.getLogger("sidecar.app")

SERVER_NAME = "orion-sidecar"
SERVER_VERSION = "0.1.0"

State = Literal["new", "initialized", "shutting_down"]
ShutdownCallback = Callable[[], Awaitable[None]]
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])

# Notifications are never refused by the gate: `exit` must work in every state.
_ALWAYS_ALLOWED = frozenset({"initialize"})


Dialect = Literal["orion", "acp"]
# Orion's methods reach an ACP client under this prefix (ACP: custom methods start with `_`).
EXT_PREFIX = "_orion/"
# Names an ACP connection reaches without the prefix besides ACP's own: the handshake, and `exit` (a notification).
_ACP_SHARED = frozenset({"initialize", "exit"})
# What the agent's tools ask an ACP client that offered its files and terminals, or forms (AskUserQuestion's
# questions: sidecar/ask_user.py); ACP's own shapes, sent as built.
ACP_CLIENT_TOOL_REQUESTS = frozenset({"fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
                                      "terminal/wait_for_exit", "terminal/release", "terminal/kill",
                                      "elicitation/create"})
ACP_REDEFINED = frozenset({"session/new", "session/prompt", "session/cancel", "session/list", "session/prepare"})


class RouteTable(Mapping[str, Route]):
    """Method name → Route, each built on its first lookup: the models of most methods load on first use (ipc.registry).

    Two dialects share the table. Orion's first protocol sees the plain names; once `initialize` chose ACP, ACP's
    methods (registered with `acp=True`) come first, and Orion's own are reached as `_orion/<name>`.
    """

    __slots__ = ("_routes", "_pending", "_acp", "_acp_pending", "dialect")

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._pending: dict[str, Callable[[], Route]] = {}
        self._acp: dict[str, Route] = {}
        self._acp_pending: dict[str, Callable[[], Route]] = {}
        self.dialect: Dialect = "orion"

    def add(self, name: str, build: Callable[[], Route], *, acp: bool = False) -> None:
        (self._acp_pending if acp else self._pending)[name] = build

    def __getitem__(self, name: str) -> Route:
        route = self._routes.get(name)
        if route is None:
            route = self._routes[name] = self._pending.pop(name)()
        return route

    def _orion(self, name: str) -> Route | None:
        route = self._routes.get(name)
        if route is not None:
            return route
        return self[name] if name in self._pending else None

    def _acp_route(self, name: str) -> Route | None:
        route = self._acp.get(name)
        if route is None and name in self._acp_pending:
            route = self._acp[name] = self._acp_pending.pop(name)()
        return route

    def get(self, name: str, default: Any = None) -> Any:  # on every request: no exception round trip
        if self.dialect == "orion":
            route = self._orion(name)
            return default if route is None else route
        route = self._acp_route(name)
        if route is not None:
            return route
        if name.startswith(EXT_PREFIX):
            plain = name[len(EXT_PREFIX):]
            # ACP's own session methods are not reachable a second time in Orion's first shape.
            route = None if plain in ACP_REDEFINED or plain in _ACP_SHARED else self._orion(plain)
        elif name in _ACP_SHARED:
            route = self._orion(name)
        return default if route is None else route

    def acp_names(self) -> list[str]:
        return sorted({*self._acp, *self._acp_pending})

    def __contains__(self, name: object) -> bool:
        return name in self._routes or name in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter([*self._routes, *self._pending])  # a lookup while iterating moves a name between the two

    def __len__(self) -> int:
        return len(self._routes) + len(self._pending)


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
        self.routes = RouteTable()
        self.state: State = "new"
        self.client_info: dict[str, Any] | None = None
        self.shutdown_budget = shutdown_budget  # seconds all on_shutdown callbacks get together
        self.stop_requested = anyio.Event()
        self.stop_reason: str | None = None
        self._peer: JsonRpcPeer | None = None
        self._shutdown_callbacks: list[ShutdownCallback] = []
        self._callbacks_ran = False
        self.acp: AcpDialect | None = None  # set when `initialize` chose ACP

    @property
    def dialect(self) -> Dialect:
        return self.routes.dialect

    def use_acp(self, client_capabilities: dict[str, Any]) -> AcpDialect:
        """From now on this connection speaks ACP (sidecar/acp/dialect.py)."""
        from sidecar.acp.dialect import AcpDialect

        self.acp = AcpDialect(client_capabilities, cwd_of=self._session_dir)
        self.routes.dialect = "acp"
        if self._peer is not None:
            self._peer.acp_cancel = True
        return self.acp

    def _session_dir(self, session_id: str) -> str | None:
        """A live session's project directory (ACP's tool-call paths are absolute, taken from it)."""
        manager = getattr(self, "_orion_sessions", None)  # sidecar/methods/_services.py, once a session was asked for
        session = getattr(manager, "_sessions", {}).get(session_id) if manager is not None else None
        return str(session.project_dir) if session is not None else None

    # ------------------------------------------------------------------ registration

    def method(self, name: str, params: type[BaseModel] | None = None, result: type[BaseModel] | None = None,
               *, acp: bool = False) -> Callable[[H], H]:
        """Register `async def handler(params, call: CallContext) -> ResultModel | dict | None` for `name`.

        Models default to the protocol table's entry for `name` (`ACP_METHODS` with `acp=True`, which registers
        the ACP dialect's method of that name); a name outside the table needs them given.
        """
        spec = (ACP_METHODS if acp else METHODS).get(name)
        if params is None and spec is None:
            raise ValueError(f"{name!r} is not in ipc.registry's method table: pass its params model")

        def decorator(handler: H) -> H:
            if (name in self.routes.acp_names()) if acp else (name in self.routes):
                raise ValueError(f"method {name!r} is already registered")

            async def adapter(validated: Any, ctx: RequestContext) -> Any:
                return await handler(validated, CallContext(self, ctx.peer, ctx.method, ctx.id))

            def route() -> Route:
                return Route(adapter, params or spec.params, result or (spec.result if spec else None))  # type: ignore[union-attr]

            self.routes.add(name, route, acp=acp)
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
        """Refuse requests before `initialize` (-31002) and after `shutdown` (-32600)."""
        if is_notification:
            return
        if self.state == "new" and method not in _ALWAYS_ALLOWED:
            raise NotInitialized(data={"method": method})
        if self.state == "shutting_down":
            raise InvalidRequest("Server is shutting down", data={"method": method})

    async def notify(self, event: str, params: BaseModel | dict[str, Any]) -> None:
        """Emit an event from the table; a dict is validated against the event's model first.

        On an ACP connection the dialect decides what, if anything, the client receives for it.
        """
        model = EVENTS.get(event)
        if model is None:
            raise ValueError(f"unknown event {event!r}; add it to ipc.registry.EVENTS")
        if not isinstance(params, BaseModel):
            params = model.model_validate(params)
        if self.acp is not None:
            for method, body in self.acp.notifications(event, params.model_dump(mode="json", by_alias=True)):
                await self.peer.notify(method, body)
            return
        await self.peer.notify(event, params)

    async def request_frontend(self, method: str, params: BaseModel | dict[str, Any], *, timeout: float | None = DEFAULT_REQUEST_TIMEOUT) -> Any:
        """Send a sidecar → frontend request from the table; the answer comes back as its result model."""
        if self.acp is not None and method in ACP_CLIENT_TOOL_REQUESTS:
            # The client's files and terminals (sidecar/acp/client_tools.py): ACP's own shapes, sent as built.
            return await self.peer.request(method, params, timeout=timeout)
        spec = CLIENT_REQUESTS.get(method)
        if spec is None:
            raise ValueError(f"unknown frontend request {method!r}; add it to ipc.registry.CLIENT_REQUESTS")
        if not isinstance(params, BaseModel):
            params = spec.params.model_validate(params)
        if self.acp is not None and method == "session/request_permission":
            acp_params = self.acp.permission_request(params.model_dump(mode="json", by_alias=True))
            return await self.peer.request(method, acp_params, timeout=timeout, result_model=spec.result)
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
