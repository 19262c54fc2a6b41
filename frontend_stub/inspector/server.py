"""The inspector's local web server: the page, its event stream, and what the page sends back.

Bound to 127.0.0.1 on a random port. Every request must carry the run's token (a query parameter for the page and
its event stream, the `X-Orion-Token` header for what the page posts, which a cross-origin page cannot send without
a CORS preflight we never answer), and a `Host` of this address (no DNS rebinding). Answers are never cached and
never send a referrer, so the token stays in this tab.

starlette and uvicorn (already installed with the SDK's `mcp` dependency, declared in pyproject.toml for this): an
HTTP server and streaming responses we would otherwise write and harden by hand.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from frontend_stub.inspector.feed import Feed

PAGE = Path(__file__).resolve().parent / "page.html"
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
           "X-Frame-Options": "DENY"}
# The page is one static file: its script and style inline, talking only to this server.
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:"
KEEPALIVE_S = 15.0


class Inspector:
    def __init__(self, feed: Feed) -> None:
        self.feed = feed
        self.token = secrets.token_urlsafe(24)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)  # before the URL is printed: a browser that comes at once waits in the backlog
        self.port = self.sock.getsockname()[1]
        self.app = Starlette(routes=[
            Route("/", self.page),
            Route("/events", self.events),
            Route("/state", self.state),
            Route("/permission", self.permission, methods=["POST"]),
            Route("/prompt", self.prompt, methods=["POST"]),
            Route("/end", self.end, methods=["POST"]),
        ])

        self.page_loaded = asyncio.Event()  # the first page load with the token (the browser opener's file goes)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    async def serve(self) -> None:
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        await server.serve(sockets=[self.sock])

    # ------------------------------------------------------------------ checks

    def _refused(self, request: Request, *, header: bool = False) -> Response | None:
        host = request.headers.get("host", "")
        if host not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            return Response("wrong host\n", status_code=403, headers=HEADERS)
        given = request.headers.get("x-orion-token", "") if header else request.query_params.get("token", "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return Response("this inspector needs the token from its URL\n", status_code=403, headers=HEADERS)
        return None

    # ------------------------------------------------------------------ routes

    async def page(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        self.page_loaded.set()
        return Response(PAGE.read_text(encoding="utf-8"), media_type="text/html; charset=utf-8",
                        headers={**HEADERS, "Content-Security-Policy": CSP})

    async def state(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return JSONResponse({"title": self.feed.title, "live": self.feed.live, "events": list(self.feed.events)},
                            headers=HEADERS)

    async def events(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:  # a reconnecting EventSource says where it was in Last-Event-ID
            after = max(int(request.query_params.get("after", "0") or 0), int(request.headers.get("last-event-id", "0") or 0))
        except ValueError:
            after = 0

        async def stream() -> AsyncIterator[str]:
            seq = after
            while True:
                fresh = await self.feed.wait_after(seq, KEEPALIVE_S)
                if not fresh:
                    yield ": keep-alive\n\n"
                    continue
                for event in fresh:
                    seq = event["seq"]
                    yield f"id: {seq}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers=HEADERS)

    async def _body(self, request: Request) -> dict[str, Any] | Response:
        refused = self._refused(request, header=True)
        if refused is not None:
            return refused
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the body must be JSON"}, status_code=400, headers=HEADERS)
        return body if isinstance(body, dict) else JSONResponse({"error": "the body must be an object"}, status_code=400,
                                                                headers=HEADERS)

    async def permission(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        ok = self.feed.answer(str(body.get("id")), str(body.get("optionId")))
        return JSONResponse({"answered": ok}, status_code=200 if ok else 409, headers=HEADERS)

    async def prompt(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        text = body.get("text")
        if not isinstance(text, str) or not text.strip() or not self.feed.live:
            return JSONResponse({"error": "no live session, or no text"}, status_code=409, headers=HEADERS)
        await self.feed.prompts.put(text)
        return JSONResponse({"queued": True}, headers=HEADERS)

    async def end(self, request: Request) -> Response:
        body = await self._body(request)
        if isinstance(body, Response):
            return body
        self.feed.end_requested.set()
        return JSONResponse({"ending": True}, headers=HEADERS)
