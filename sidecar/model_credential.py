"""The model credential stays outside the session's boundary: the CLI inside holds a placeholder, and the sidecar's
model relay puts the real credential into each request on its way out.

When the credential comes from the sidecar's environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`,
`CLAUDE_CODE_OAUTH_TOKEN`), the CLI is given the same variable with a placeholder value: it still authenticates the
way it would (the header it sends, its precedence), and nothing in the box (`env`, `/proc/<pid>/environ`, a core
dump, the CLI's memory) holds the credential. The CLI reaches the model (wherever it is: `api.anthropic.com`, a
gateway, the scripted model on loopback) only through the box's model socket (`ANTHROPIC_UNIX_SOCKET`), in plain
HTTP; the sidecar's relay (sidecar/box_net.py) reads each request with h11, replaces the value of the credential
header the CLI sent with the real one, and sends it on, over TLS when the model's URL is https (verified against
the system's certificates and the user's `NODE_EXTRA_CA_CERTS`, as the CLI would, and through the user's
`HTTPS_PROXY`), streaming the request and the answer (Server-Sent Events included) through unchanged otherwise.

Not covered (docs/SECURITY.md "Limits"): a credential the CLI finds itself (an `apiKeyHelper`, the `env` of the
user's Claude Code settings, its own login) and a cloud provider's (Bedrock, Vertex, Foundry): those requests
leave through the egress proxy, TLS from the CLI itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import h11

from sidecar.credentials import PROVIDERS, cli_truthy

PLACEHOLDER = "orion-credential-outside-the-box"
DEFAULT_BASE_URL = "https://api.anthropic.com"  # the CLI's own, when ANTHROPIC_BASE_URL is not set
# A custom header that carries a credential, by its name (a gateway's key, a bearer token, a cookie).
_SECRET_HEADER = re.compile(r"auth|key|token|secret|passw|cookie|session|credential|signature", re.IGNORECASE)
_READ = 64 * 1024

# Environment variable -> the request header the CLI sends it in, and how.
_HEADERS = {"ANTHROPIC_API_KEY": ("x-api-key", "{}"), "ANTHROPIC_AUTH_TOKEN": ("authorization", "Bearer {}"),
            "CLAUDE_CODE_OAUTH_TOKEN": ("authorization", "Bearer {}")}


@dataclass(slots=True, frozen=True)
class Credential:
    """The real values of the credential headers the CLI may send, by header name (lower case); never logged."""

    headers: tuple[tuple[bytes, bytes], ...]

    def __repr__(self) -> str:  # a plan or a box may be logged: the values never are
        return f"Credential({', '.join(name.decode() for name, _ in self.headers)})"

    def value_for(self, name: bytes, sent: bytes) -> bytes:
        """The real value for a credential header the CLI sent (its placeholder), else what it sent."""
        for header, value in self.headers:
            if header == name and PLACEHOLDER.encode() in sent:
                return value
        return sent


def withhold(env: dict[str, str]) -> Credential | None:
    """Take the credential out of the CLI's environment `env` (in place: placeholders instead) and return it; None
    when the environment holds none. ANTHROPIC_AUTH_TOKEN outranks CLAUDE_CODE_OAUTH_TOKEN for `authorization`, as
    in the CLI. A gateway's key in ANTHROPIC_CUSTOM_HEADERS ("Name: value" lines, as the CLI reads them) is held
    back too, header by header, when its name says it is one (`_SECRET_HEADER`); the others stay as written (the CLI
    reads some of them itself)."""
    headers: dict[bytes, bytes] = {}
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"):
        value = env.get(name)
        if not value or value == PLACEHOLDER:
            continue
        header, form = _HEADERS[name]
        headers[header.encode()] = form.format(value).encode()
        env[name] = PLACEHOLDER
    if not headers:
        return None
    if env.get("ANTHROPIC_CUSTOM_HEADERS"):
        lines = []
        for line in re.split(r"\r?\n", env["ANTHROPIC_CUSTOM_HEADERS"]):
            name, colon, value = line.partition(":")
            name, value = name.strip(), value.strip()
            if colon and name and value and value != PLACEHOLDER and _SECRET_HEADER.search(name):
                headers.setdefault(name.lower().encode(), value.encode())
                line = f"{name}: {PLACEHOLDER}"
            lines.append(line)
        env["ANTHROPIC_CUSTOM_HEADERS"] = "\n".join(lines)
    return Credential(tuple(headers.items()))


def holds_credential(env: Mapping[str, str]) -> bool:
    return any(env.get(name) and env.get(name) != PLACEHOLDER for name in _HEADERS)


@dataclass(slots=True, frozen=True)
class _RelayPlan:
    """What box_net.open_relays reads of a plan, for a relay that serves no box."""

    model_endpoint: tuple[str, int]
    model_tls: bool
    allowed_hosts: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class ModelRelay:
    """A session without an OS box still keeps the credential out of the CLI: the CLI reaches the model through a
    unix socket in a private (0700) folder of the sidecar's, whose relay puts the credential in. Nothing the agent
    runs can then read the key (its environment, the CLI's, a core dump); it can only use the model through the
    socket, as the CLI does."""

    endpoint: tuple[str, int]
    tls: bool
    credential: Credential = dataclasses.field(repr=False, compare=False)

    def open(self) -> OpenRelay:
        """Blocking (a folder and a listening socket): run it off the event loop."""
        return OpenRelay(self)


class OpenRelay:
    def __init__(self, spec: ModelRelay) -> None:
        import shutil

        from sidecar import box_net
        from sidecar.boundary import _private_tmp_dir, _sweep_once

        _sweep_once()
        self.dir = _private_tmp_dir()
        try:
            self.relays = box_net.open_relays(_RelayPlan(spec.endpoint, spec.tls), unix_dir=self.dir,
                                              credential=spec.credential)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.socket = str(self.relays.model_socket)

    def close(self) -> None:
        import shutil

        self.relays.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def relay_without_a_box(env: dict[str, str]) -> ModelRelay | None:
    """For a session the CLI runs without an OS box (`sandbox: "off"`, a machine without bubblewrap, macOS): the
    credential out of `env` (in place, placeholders instead; an https model given as http) and the relay that puts
    it back; None when there is nothing to hold back (as keep_outside) or no unix sockets (Windows)."""
    if sys.platform == "win32":
        return None
    plan, credential = keep_outside(env, _RelayPlan(("", 0), False))
    if credential is None:
        return None
    return ModelRelay(plan.model_endpoint, plan.model_tls, credential)


def keep_outside(env: dict[str, str], plan: Any) -> tuple[Any, Credential | None]:
    """Route the model through the box's model socket and take the credential out of the CLI's environment `env`
    (in place). Returns the plan (sidecar.boundary.BoxPlan) with its model endpoint, and the credential the relay
    puts back; `(plan, None)` unchanged when the environment holds no credential, a cloud provider serves the
    model, or the model's URL is not a plain http(s) one (the CLI then reaches it as before).

    An https model is given to the CLI as http at the same host, port and path: the CLI speaks plain HTTP into the
    socket (the Host header it sends is the model's), and the relay speaks TLS to the model."""
    if not holds_credential(env) or any(cli_truthy(env.get(switch)) for switch, _ in PROVIDERS):
        return plan, None
    parts = urlsplit(env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return plan, None  # a port that is not one: the CLI reports its own error
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return plan, None
    tls = parts.scheme == "https"
    if tls:
        env["ANTHROPIC_BASE_URL"] = urlunsplit(("http", parts.netloc, parts.path, parts.query, ""))
    credential = withhold(env)
    return dataclasses.replace(plan, model_endpoint=(parts.hostname, port), model_tls=tls), credential


async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader,
                up_writer: asyncio.StreamWriter, credential: Credential) -> None:
    """HTTP/1.1 from the CLI (`reader`/`writer`) to the model (`up_*`), request after request on one connection,
    with the credential headers' placeholders replaced. Returns when either side closes or breaks the protocol."""
    try:
        await _relay(reader, writer, up_reader, up_writer, credential)
    except h11.ProtocolError:
        return  # either side spoke something that is not HTTP/1.1: the connection ends, nothing is guessed


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader,
                 up_writer: asyncio.StreamWriter, credential: Credential) -> None:
    inbound, outbound = h11.Connection(h11.SERVER), h11.Connection(h11.CLIENT)
    while True:
        request = await _next_request(inbound, reader, up_reader)
        if not isinstance(request, h11.Request):
            return
        headers = [(name, credential.value_for(name, value)) for name, value in request.headers]
        up_writer.write(outbound.send(h11.Request(method=request.method, target=request.target, headers=headers,
                                                  http_version=request.http_version)))
        if not await _body(inbound, reader, outbound, up_writer):
            return
        while True:
            response = await _next(outbound, up_reader)
            if isinstance(response, h11.InformationalResponse):
                writer.write(inbound.send(response))
                continue
            if not isinstance(response, h11.Response):
                return
            writer.write(inbound.send(h11.Response(status_code=response.status_code, headers=response.headers,
                                                   reason=response.reason, http_version=response.http_version)))
            break
        if not await _body(outbound, up_reader, inbound, writer):
            return
        if inbound.our_state is not h11.DONE or outbound.our_state is not h11.DONE or \
                inbound.their_state is not h11.DONE or outbound.their_state is not h11.DONE:
            return
        inbound.start_next_cycle()
        outbound.start_next_cycle()


async def _next_request(inbound: h11.Connection, reader: asyncio.StreamReader,
                        up_reader: asyncio.StreamReader) -> object:
    """The CLI's next request; ConnectionClosed instead when the model closes the idle connection first (a server's
    keep-alive timeout) or says anything unasked. The CLI's side is then closed too, as a direct connection would be,
    so its HTTP client opens a new one for its next request instead of sending it into a dead one."""
    following = asyncio.ensure_future(_next(inbound, reader))
    upstream = asyncio.ensure_future(up_reader.read(1))
    try:
        await asyncio.wait({following, upstream}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (following, upstream):
            if not task.done():
                task.cancel()
        await asyncio.gather(following, upstream, return_exceptions=True)
    if upstream.done() and not upstream.cancelled():
        return h11.ConnectionClosed()  # closed (b"") or spoke out of turn: this connection is over
    return following.result()


async def _body(source: h11.Connection, stream: asyncio.StreamReader, target: h11.Connection,
                out: asyncio.StreamWriter) -> bool:
    """Pass one message's body on, chunk by chunk as it comes (a streamed answer's events arrive as they are sent);
    False when the connection broke off instead of ending the message."""
    while True:
        event = await _next(source, stream)
        if isinstance(event, h11.Data):
            out.write(target.send(h11.Data(data=event.data)))
        elif isinstance(event, h11.EndOfMessage):
            out.write(target.send(h11.EndOfMessage(headers=event.headers)))
            await out.drain()
            return True
        else:
            return False
        await out.drain()


async def _next(conn: h11.Connection, stream: asyncio.StreamReader) -> object:
    """The next h11 event of `conn`, reading `stream` as needed; ConnectionClosed at the end of the stream."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await stream.read(_READ)
        conn.receive_data(data)  # b"" is the end of the stream
        if not data and conn.their_state in (h11.IDLE, h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
            return h11.ConnectionClosed()
