"""The scripted model server: an offline Anthropic Messages API on 127.0.0.1 that answers from a Scenario and logs every request.

HTTP/1.1 is spoken with h11 (sans-I/O, already installed with httpx) on plain
asyncio streams: no framework start-up cost, keep-alive and chunked bodies
handled correctly, and the server runs in whichever event loop starts it.
``get_or_start`` hosts shared servers on one background thread so that every
session of the process, whatever loop it runs in, can reuse them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h11

from sidecar.scripted_model.scenario import Reply, RequestView, Scenario, load_scenario, matches
from sidecar.scripted_model.sse import encode_sse, message_body, resolve_tool_ids, stream_events

log = logging.getLogger(__name__)

_MAX_BODY = 64 * 1024 * 1024


@dataclass(slots=True)
class RequestRecord:
    """One request the server received and how it was answered."""

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    has_tools: bool
    conversation: str | None
    answered_by: str  # "turn:N", "rule:NAME", "default", "side_reply", "count_tokens", "error"
    reply: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    error: dict[str, Any] | None = None  # the API error answered instead of a message (a scenario's `error` reply)
    at: float = field(default_factory=time.time)
    size: int = 0  # bytes of the request body as received (what a byte-bounded log counts)

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)


@dataclass(slots=True)
class _Conversation:
    next_turn: int = 0
    used_rules: set[int] = field(default_factory=set)


def conversation_key(body: dict[str, Any], headers: dict[str, str]) -> str:
    """Which conversation a request belongs to, so several sessions can share one server.

    The CLI sends its session id three ways (verified on 2.1.330, see
    docs/SDK_NOTES.md): the ``x-claude-code-session-id`` header and inside
    ``metadata.user_id`` (a JSON string with ``session_id``). Other clients
    (one-shot evaluators) send neither; their conversation is named by the first
    user message, which is stable across the requests of one conversation.
    """
    session = headers.get("x-claude-code-session-id")
    if session:
        return "session:" + session
    user_id = (body.get("metadata") or {}).get("user_id")
    if isinstance(user_id, str) and user_id:
        try:
            decoded = json.loads(user_id)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and decoded.get("session_id"):
            return "session:" + str(decoded["session_id"])
        if "_session_" in user_id:
            return "session:" + user_id.rsplit("_session_", 1)[1]
    messages = body.get("messages") or []
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    return "first:" + json.dumps(first_user.get("content") if first_user else None, sort_keys=True)[:2000]


# Conversations a server remembers the script position of (least recently used forgotten first). Each is a few
# hundred bytes; a live session is forgotten only if this many other conversations were served since its last request.
MAX_CONVERSATIONS = 1024


class ScriptedModelServer:
    """Serves one Scenario. ``async with server.running() as url`` or ``await start()`` / ``await stop()``.

    ``keep`` / ``keep_bytes`` bound the in-memory request log (``requests``) to the newest records, by count and by
    the bodies' total size (the newest record is always kept); ``None`` keeps everything, for tests that inspect
    every request. The file log (``log_path``) always gets every request. ``max_conversations`` bounds how many
    conversations' script positions are remembered, least recently used forgotten first.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path,
        *,
        log_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        keep: int | None = None,
        keep_bytes: int | None = None,
        max_conversations: int = MAX_CONVERSATIONS,
    ) -> None:
        if max_conversations < 1:
            raise ValueError("max_conversations must be at least 1")
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.requests: list[RequestRecord] = []
        # Each logged body resends the whole conversation, so a record grows with its conversation: a long-lived
        # server bounds the log by count and by bytes (200 records of a 500-prompt session held ~175 MiB: bench/RESULTS.md).
        self._keep = keep
        self._keep_bytes = keep_bytes
        self._max_conversations = max_conversations
        self._recorded = 0
        self._log_path = Path(log_path) if log_path else None
        self._host, self._port = host, port
        self._server: asyncio.Server | None = None
        # Insertion order is recency of use: choose() moves a conversation to the end, the first is forgotten first.
        self._conversations: dict[str, _Conversation] = {}
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> str:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve_connection, self._host, self._port)
            log.info("scripted model %r listening on %s", self.scenario.name, self.url)
        return self.url

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        # Closing the sockets (rather than cancelling the handlers) lets each handler see EOF and
        # finish normally; asyncio's stream callback logs a spurious error for cancelled handlers.
        for writer in list(self._connections.values()):
            writer.close()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=2)
        for task in list(self._connections):
            task.cancel()
        await self._server.wait_closed()
        self._server = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        url = await self.start()
        try:
            yield url
        finally:
            await self.stop()

    # ------------------------------------------------------------------ inspection

    def main_requests(self) -> list[RequestRecord]:
        """Requests of an agent loop (they carry a ``tools`` list)."""
        return [r for r in self.requests if r.has_tools]

    def side_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if not r.has_tools and r.answered_by != "count_tokens"]

    def reset(self) -> None:
        """Forget logged requests and every conversation's position in the script."""
        with self._lock:
            self.requests.clear()
            self._recorded = 0
            self._conversations.clear()

    async def wait_for_requests(self, n: int, timeout: float = 10.0, *, main_only: bool = False) -> list[RequestRecord]:
        """Wait until at least ``n`` requests (or main-loop requests) were answered; raise TimeoutError otherwise."""
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        waiter = (loop, event)
        with self._lock:
            self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    found = self.main_requests() if main_only else list(self.requests)
                    if len(found) >= n:
                        return found
                    await event.wait()
                    event.clear()
        finally:
            with self._lock:
                self._waiters.remove(waiter)

    # ------------------------------------------------------------------ answering

    def choose(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Reply, str]:
        """Pick the reply for a request: rules first, then side_reply (no tools), then the next turn, then default."""
        view = RequestView.of(body)
        key = conversation_key(body, headers)
        with self._lock:
            convo = self._conversation(key)
            for index, rule in enumerate(self.scenario.rules):
                if rule.once and index in convo.used_rules:
                    continue
                if matches(rule.when, view):
                    if rule.once:
                        convo.used_rules.add(index)
                    return self.scenario.rule_label(index), rule.reply, key
            if not view.has_tools:
                return "side_reply", self.scenario.side_reply, key
            if convo.next_turn < len(self.scenario.turns):
                turn = convo.next_turn
                convo.next_turn += 1
                return f"turn:{turn}", self.scenario.turns[turn], key
            return "default", self.scenario.default, key

    def _conversation(self, key: str) -> _Conversation:
        """The conversation named ``key``, now the most recently used; the least recently used beyond the bound are
        forgotten (a forgotten one that comes back starts the script again). Called with the lock held."""
        convo = self._conversations.pop(key, None)
        if convo is None:
            convo = _Conversation()
        self._conversations[key] = convo
        while len(self._conversations) > self._max_conversations:
            del self._conversations[next(iter(self._conversations))]
        return convo

    def conversation_count(self) -> int:
        """How many conversations' script positions the server remembers."""
        with self._lock:
            return len(self._conversations)

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            record.index = self._recorded
            self._recorded += 1
            self.requests.append(record)
            drop = 0
            if self._keep is not None:
                drop = max(0, len(self.requests) - self._keep)
            if self._keep_bytes is not None:
                # Summed afresh: at most `keep` records, and nothing can put a running total out of step.
                total = sum(r.size for r in self.requests[drop:])
                while total > self._keep_bytes and drop < len(self.requests) - 1:
                    total -= self.requests[drop].size
                    drop += 1
            if drop:
                del self.requests[:drop]
            waiters = list(self._waiters)
        if self._log_path is not None:
            with self._log_path.open("a", encoding="utf-8") as fh:
                fh.write(record.to_json() + "\n")
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    # ------------------------------------------------------------------ HTTP

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_BODY)
        try:
            while True:
                request, body = await self._read_request(conn, reader)
                if request is None:
                    return
                await self._respond(conn, writer, request, body)
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (ConnectionError, h11.ProtocolError, asyncio.IncompleteReadError) as exc:
            log.debug("scripted model connection ended: %s", exc)
        finally:
            self._connections.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _read_request(
        conn: h11.Connection, reader: asyncio.StreamReader
    ) -> tuple[h11.Request | None, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None, b""

    async def _respond(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request, raw: bytes
    ) -> None:
        method = request.method.decode()
        target = request.target.decode()
        path = urlsplit(target).path.rstrip("/")
        headers = {k.decode().lower(): v.decode(errors="replace") for k, v in request.headers}
        body: dict[str, Any] | None = None
        if raw:
            try:
                decoded = json.loads(raw)
                body = decoded if isinstance(decoded, dict) else None
            except ValueError:
                body = None

        def record(answered_by: str, **extra: Any) -> None:
            self._record(
                RequestRecord(
                    index=0,
                    method=method,
                    path=target,
                    headers=headers,
                    body=body,
                    has_tools=bool(body and body.get("tools")),
                    conversation=extra.pop("conversation", None),
                    answered_by=answered_by,
                    size=len(raw),
                    **extra,
                )
            )

        if method != "POST" or path not in ("/v1/messages", "/v1/messages/count_tokens"):
            record("error")
            await self._send_json(conn, writer, 404, _error("not_found_error", f"no route for {method} {path}"))
            return
        if body is None:
            record("error")
            await self._send_json(conn, writer, 400, _error("invalid_request_error", "body must be a JSON object"))
            return
        if path.endswith("count_tokens"):
            record("count_tokens")
            await self._send_json(conn, writer, 200, {"input_tokens": max(1, len(raw) // 4)})
            return

        answered_by, reply, key = self.choose(body, headers)
        if reply.error is not None:
            record(answered_by, conversation=key, error=reply.error.model_dump())
            await self._send_json(conn, writer, reply.error.status, _error(reply.error.type, reply.error.message))
            return
        blocks = resolve_tool_ids(reply)
        stop_reason = reply.effective_stop_reason()
        usage = reply.usage or self.scenario.usage
        model = str(body.get("model") or self.scenario.model)
        record(answered_by, conversation=key, reply=blocks, stop_reason=stop_reason)
        if not body.get("stream"):
            await self._send_json(
                conn, writer, 200, message_body(blocks, stop_reason=stop_reason, usage=usage, model=model)
            )
            return
        await self._send(
            conn,
            writer,
            h11.Response(
                status_code=200,
                headers=[
                    ("content-type", "text/event-stream"),
                    ("cache-control", "no-cache"),
                    ("request-id", "req_scripted_" + str(self._recorded)),
                ],
            ),
        )
        delay = self.scenario.delta_delay_ms / 1000
        for name, data in stream_events(
            blocks, stop_reason=stop_reason, usage=usage, model=model, text_chunk=self.scenario.text_chunk
        ):
            await self._send(conn, writer, h11.Data(data=encode_sse(name, data)))
            if delay and name == "content_block_delta":
                await asyncio.sleep(delay)
        await self._send(conn, writer, h11.EndOfMessage())

    async def _send_json(self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        await self._send(
            conn,
            writer,
            h11.Response(
                status_code=status,
                headers=[("content-type", "application/json"), ("content-length", str(len(data)))],
            ),
        )
        await self._send(conn, writer, h11.Data(data=data))
        await self._send(conn, writer, h11.EndOfMessage())

    @staticmethod
    async def _send(conn: h11.Connection, writer: asyncio.StreamWriter, event: Any) -> None:
        data = conn.send(event)
        if data:
            writer.write(data)
            await writer.drain()


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# --------------------------------------------------------------------------- process-wide sharing


class _ServerHost:
    """A daemon thread with its own event loop hosting the shared servers, independent of any caller's loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="scripted-model", daemon=True)
        self._thread.start()
        self.servers: dict[Path, ScriptedModelServer] = {}

    def start(self, server: ScriptedModelServer) -> str:
        return asyncio.run_coroutine_threadsafe(server.start(), self._loop).result(timeout=10)

    def stop_all(self) -> None:
        for server in self.servers.values():
            asyncio.run_coroutine_threadsafe(server.stop(), self._loop).result(timeout=10)
        self.servers.clear()


_host: _ServerHost | None = None
_host_lock = threading.Lock()


# Shared servers live as long as the sidecar; the file log (ORION_SCRIPTED_LOG_DIR) keeps everything. A request of
# the real CLI is ~57 KB of JSON before any history (tools, system prompt) and ~3x that once decoded, and grows with
# its conversation: the byte bound is what holds a long session's log to a few MiB.
SHARED_SERVER_KEEP = 200
SHARED_SERVER_KEEP_BYTES = 4 * 1024 * 1024
SHARED_SERVER_CONVERSATIONS = MAX_CONVERSATIONS


def get_or_start(scenario_path: str | Path, *, log_path: str | Path | None = None) -> str:
    """Start (once per resolved path) a shared server for this scenario file and return its URL."""
    global _host
    path = Path(scenario_path).resolve()
    with _host_lock:
        if _host is None:
            _host = _ServerHost()
        server = _host.servers.get(path)
        if server is None:
            server = ScriptedModelServer(path, log_path=log_path, keep=SHARED_SERVER_KEEP,
                                         keep_bytes=SHARED_SERVER_KEEP_BYTES,
                                         max_conversations=SHARED_SERVER_CONVERSATIONS)
            _host.start(server)
            _host.servers[path] = server
        return server.url


def shared_server(scenario_path: str | Path) -> ScriptedModelServer | None:
    """The shared server started by ``get_or_start`` for this path, if any (for inspecting its requests)."""
    with _host_lock:
        return None if _host is None else _host.servers.get(Path(scenario_path).resolve())


def stop_shared_servers() -> None:
    with _host_lock:
        if _host is not None:
            _host.stop_all()
