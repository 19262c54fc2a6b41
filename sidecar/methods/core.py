"""Core methods every connection has: initialize, ping, shutdown and the exit notification."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pydantic import ValidationError

from ipc import protocol as p
from ipc.errors import InvalidParams, InvalidRequest, validation_errors
from sidecar.app import SERVER_NAME, SERVER_VERSION, CallContext, SidecarApp

logger = logging.getLogger("sidecar.methods.core")


def accept_handshake(app: SidecarApp, params: p.HandshakeParams) -> Any:
    """`initialize`'s work and answer: the dialect, the state, the client; then (once the answer is on its way) the
    log line and the background pre-import. Also how the server takes an `initialize` answered before it was
    imported (sidecar/handshake.py)."""
    # Params first, as for every method: a malformed handshake is -32602 whatever the state.
    try:
        if isinstance(params.protocol_version, int):
            handshake: Any = p.AcpInitializeParams.model_validate(params.model_dump(by_alias=True))
        else:
            handshake = p.InitializeParams.model_validate(params.model_dump(by_alias=True))
    except ValidationError as exc:
        raise InvalidParams(data={"errors": validation_errors(exc)}) from None
    if app.state != "new":
        raise InvalidRequest("Already initialized")
    if isinstance(params.protocol_version, int):
        from sidecar.methods.acp import acp_initialize

        result = acp_initialize(app, handshake)
        client = params.client_info or {}
    else:
        legacy = handshake
        if legacy.protocol_version != p.PROTOCOL_VERSION:
            # The client decides whether it can speak our version; we answer with the one we speak.
            logger.warning("client asked for protocol %s; this sidecar speaks %s", legacy.protocol_version, p.PROTOCOL_VERSION)
        result = p.InitializeResult(
            protocol_version=p.PROTOCOL_VERSION,
            server_info=p.ServerInfo(name=SERVER_NAME, version=SERVER_VERSION),
            capabilities=p.ServerCapabilities(methods=app.method_names, events=app.event_names),
        )
        client = legacy.client_info.model_dump()
        # What Orion's own frontend says it can show: forms for the model's and MCP servers' questions.
        elicitation = (legacy.capabilities or {}).get("elicitation")
        app.frontend_capabilities = {"elicitation": elicitation} if isinstance(elicitation, dict) else {}  # type: ignore[attr-defined]
    app.client_info = client
    app.state = "initialized"
    # Logged once the answer is on its way: the first log line loads the redaction patterns (hooks.redaction),
    # which the frontend should not wait for.
    loop = asyncio.get_running_loop()
    loop.call_soon(logger.info, "initialized by %s %s (%s)", client.get("name"), client.get("version"), app.dialect)
    # Then, with the answer sent, import what the first session needs (sidecar/preimport.py).
    from sidecar import preimport

    loop.call_later(0.05, preimport.start)
    # And the data directory's retention pass, on a thread of its own (sidecar/janitor.py).
    loop.call_later(0.1, _start_janitor)
    return result


def _start_janitor() -> None:
    from sidecar import janitor

    janitor.start()


def register(app: SidecarApp) -> None:
    @app.method("initialize", params=p.HandshakeParams)
    async def initialize(params: p.HandshakeParams, call: CallContext) -> Any:
        return accept_handshake(app, params)

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
