"""Core methods every connection has: initialize, ping, shutdown and the exit notification."""

from __future__ import annotations

import asyncio
import logging

from ipc import protocol as p
from ipc.errors import InvalidRequest
from sidecar.app import SERVER_NAME, SERVER_VERSION, CallContext, SidecarApp

logger = logging.getLogger("sidecar.methods.core")


def register(app: SidecarApp) -> None:
    @app.method("initialize")
    async def initialize(params: p.InitializeParams, call: CallContext) -> p.InitializeResult:
        if app.state != "new":
            raise InvalidRequest("Already initialized")
        app.client_info = params.client_info.model_dump()
        app.state = "initialized"
        if params.protocol_version != p.PROTOCOL_VERSION:
            # The client decides whether it can speak our version; we answer with the one we speak.
            logger.warning("client asked for protocol %s; this sidecar speaks %s", params.protocol_version, p.PROTOCOL_VERSION)
        # Logged once the answer is on its way: the first log line loads the redaction patterns (hooks.redaction),
        # which the frontend should not wait for.
        asyncio.get_running_loop().call_soon(
            logger.info, "initialized by %s %s", params.client_info.name, params.client_info.version)
        return p.InitializeResult(
            protocol_version=p.PROTOCOL_VERSION,
            server_info=p.ServerInfo(name=SERVER_NAME, version=SERVER_VERSION),
            capabilities=p.ServerCapabilities(methods=app.method_names, events=app.event_names),
        )

    @app.method("ping")
    async def ping(params: p.Empty, call: CallContext) -> p.Empty:
        return params  # Empty in, Empty out: a model is only dumped, where a dict would be validated first

    @app.method("shutdown")
    async def shutdown(params: p.Empty, call: CallContext) -> None:
        # Sessions end now, while the frontend still listens; the process waits for `exit` (or EOF).
        app.state = "shutting_down"
        await app.run_shutdown_callbacks()
        return None

    @app.method("exit")
    async def exit_(params: p.Empty, call: CallContext) -> None:
        app.request_stop("exit notification")
