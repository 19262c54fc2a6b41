"""The sidecar's side of a boundary's network: the only two ways out of a box that has no network of its own (the model endpoint's loopback port, and Orion's egress proxy with the user's allow-list), served from one background thread.

Inside the box (Linux) only loopback exists. `box_init.sh` listens on the model endpoint's port and on the proxy
port there and relays each connection to a unix socket this module listens on (bound into the box); outside, the
model socket is spliced to the real endpoint and the proxy socket is an HTTP proxy (CONNECT and plain requests)
that lets through only hosts the user allowed and the model's own. On macOS the proxy listens on a loopback TCP
port instead, the only port besides the model's that the Seatbelt profile lets the box reach.

One thread with its own event loop serves every session's relays: the model's stream does not wait on the
session's event loop, and a box costs two listening sockets, no process.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

log = logging.getLogger("sidecar.box_net")

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
_CHUNK = 64 * 1024


class _NetLoop:
    """The one background event loop (started on the first box)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="orion-box-net", daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


_net: _NetLoop | None = None
_net_lock = threading.Lock()


def _loop() -> _NetLoop:
    global _net
    with _net_lock:
        if _net is None:
            _net = _NetLoop()
        return _net


# --------------------------------------------------------------------------- the allow-list


@dataclass(slots=True, frozen=True)
class HostPolicy:
    """Which host:port the egress proxy lets through: `host` (ports 80 and 443), `*.suffix` (any name under it),
    `host:port` (that port). A name that resolves to a loopback or link-local address is refused unless listed
    as that address: an allowed name must not become a way to the machine's own services."""

    entries: tuple[str, ...]

    def allows(self, host: str, port: int) -> bool:
        host = host.strip("[]").lower().rstrip(".")
        for entry in self.entries:
            name, _, fixed = entry.partition(":")
            if fixed and int(fixed) != port:
                continue
            if not fixed and port not in (80, 443):
                continue
            if name.startswith("*."):
                if host.endswith(name[1:]) and host != name[2:]:
                    return True
            elif host == name:
                return True
        return False

    def literal(self, host: str) -> bool:
        """The host is listed as an address itself (then it may be a local one)."""
        return _is_ip(host.strip("[]")) and any(e.split(":")[0] == host.strip("[]") for e in self.entries)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _local_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast


def _loopback_name(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- upstream (the user's own proxy)


@dataclass(slots=True, frozen=True)
class Upstream:
    host: str
    port: int
    auth: str | None = None  # the Proxy-Authorization value, from the proxy URL's user info

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Upstream | None:
        url = env.get("HTTPS_PROXY") or env.get("https_proxy") or env.get("HTTP_PROXY") or env.get("http_proxy")
        if not url:
            return None
        parts = urlsplit(url if "://" in url else "http://" + url)
        if parts.scheme != "http" or not parts.hostname:
            log.warning("the user's proxy %s://%s is not an http:// proxy; the box's traffic goes direct",
                        parts.scheme, parts.hostname)
            return None
        auth = None
        if parts.username:
            token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            auth = "Basic " + base64.b64encode(token).decode()
        return cls(parts.hostname, parts.port or 80, auth)


def _bypass(host: str, env: Mapping[str, str]) -> bool:
    listed = env.get("NO_PROXY") or env.get("no_proxy") or ""
    for item in (i.strip().lower() for i in listed.split(",")):
        if item == "*" or (item and (host == item.lstrip(".") or host.endswith("." + item.lstrip(".")))):
            return True
    return False


# --------------------------------------------------------------------------- one box's relays


@dataclass(slots=True)
class Relays:
    """A box's listening sockets: on Linux the model's and the proxy's unix sockets (bound into the box); on macOS
    the proxy's loopback port."""

    model_socket: str | None = None
    proxy_socket: str | None = None
    proxy_tcp_port: int = 0
    _servers: list[Any] = field(default_factory=list)
    _streams: set[Any] = field(default_factory=set)
    denied: list[str] = field(default_factory=list)  # host:port the proxy refused, newest last (bounded)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            _loop().run(self._aclose())

    async def _aclose(self) -> None:
        for server in self._servers:
            server.close()
        for writer in list(self._streams):
            writer.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2.0)


def open_relays(plan: Any, *, unix_dir: str | None, env: Mapping[str, str] | None = None,
                credential: Any = None) -> Relays:
    """Start listening for a box of `plan` (sidecar.boundary.BoxPlan): under `unix_dir` on Linux, on loopback TCP
    for the proxy when `unix_dir` is None (macOS: the box reaches the model's loopback port directly there)."""
    env = os.environ if env is None else env
    relays = Relays()
    policy = HostPolicy(tuple(plan.allowed_hosts))
    upstream = Upstream.from_env(env)
    no_proxy = {k: v for k, v in env.items() if k in ("NO_PROXY", "no_proxy")}
    _loop().run(_start(relays, plan, unix_dir, policy, upstream, no_proxy, credential))
    return relays


async def _start(relays: Relays, plan: Any, unix_dir: str | None, policy: HostPolicy, upstream: Upstream | None,
                 no_proxy: Mapping[str, str], credential: Any = None) -> None:
    def tracked(handler: Any) -> Any:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            relays._streams.add(writer)
            try:
                await handler(reader, writer)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError):
                pass
            finally:
                relays._streams.discard(writer)
                writer.close()
        return serve

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_proxy(reader, writer, policy, upstream, no_proxy, relays)

    if unix_dir is None:
        server = await asyncio.start_server(tracked(proxy), host="127.0.0.1", port=0, limit=HEAD_LIMIT)
        relays._servers.append(server)
        relays.proxy_tcp_port = server.sockets[0].getsockname()[1]
        return
    if plan.model_endpoint is not None:
        host, port = plan.model_endpoint
        tls = bool(getattr(plan, "model_tls", False))

        async def model(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                target = await _connect_model(host.strip("[]"), port, tls, upstream, no_proxy)
            except (OSError, asyncio.TimeoutError) as exc:
                log.warning("the model at %s:%s could not be reached%s: %s", host, port, " over TLS" if tls else "",
                            exc)
                raise
            if credential is None:
                await _splice(reader, writer, *target, relays)
                return
            from sidecar.model_credential import relay

            relays._streams.add(target[1])
            try:  # the request's credential header gets its real value here, outside the box
                await relay(reader, writer, *target, credential)
            finally:
                relays._streams.discard(target[1])
                target[1].close()

        relays.model_socket = os.path.join(unix_dir, "model.sock")
        relays._servers.append(await asyncio.start_unix_server(tracked(model), path=relays.model_socket))
    relays.proxy_socket = os.path.join(unix_dir, "proxy.sock")
    relays._servers.append(await asyncio.start_unix_server(tracked(proxy), path=relays.proxy_socket, limit=HEAD_LIMIT))


async def _connect_model(host: str, port: int, tls: bool, upstream: Upstream | None,
                         no_proxy: Mapping[str, str]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the session's model, from the sidecar: direct (a loopback model, a host the user's NO_PROXY
    lists, no proxy set) or through the user's own proxy with CONNECT; TLS when the model's URL is https, the
    certificate verified for `host` (model_tls_context)."""
    context = await model_tls_context() if tls else None
    if upstream is None or _loopback_name(host) or _bypass(host, no_proxy):
        return await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context,
                                                              server_hostname=host if context else None),
                                      CONNECT_TIMEOUT_S)
    reader, writer = await _via_upstream(upstream, host, port, "CONNECT", b"")
    if context is not None:
        try:
            await asyncio.wait_for(writer.start_tls(context, server_hostname=host), CONNECT_TIMEOUT_S)
        except BaseException:
            writer.close()
            raise
    return reader, writer


_TLS: dict[str | None, Any] = {}


async def model_tls_context(env: Mapping[str, str] | None = None) -> Any:
    """The certificates the sidecar trusts for an https model, as the CLI would: the system's (OpenSSL's defaults,
    SSL_CERT_FILE/SSL_CERT_DIR) and the file NODE_EXTRA_CA_CERTS names (a company's proxy or gateway CA). Built
    once per process (reading the system's store takes a few ms, off the event loop)."""
    import ssl

    env = os.environ if env is None else env
    extra = env.get("NODE_EXTRA_CA_CERTS") or None
    if extra not in _TLS:
        def build() -> ssl.SSLContext:
            context = ssl.create_default_context()
            if extra:
                try:
                    context.load_verify_locations(cafile=extra)
                except (OSError, ssl.SSLError) as exc:
                    log.warning("NODE_EXTRA_CA_CERTS=%s could not be read (%s); the system's certificates only",
                                extra, exc)
            return context

        _TLS[extra] = await asyncio.to_thread(build)
    return _TLS[extra]


async def _splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader,
                  up_writer: asyncio.StreamWriter, relays: Relays) -> None:
    relays._streams.add(up_writer)
    try:
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
    finally:
        relays._streams.discard(up_writer)
        up_writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()


async def _serve_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, policy: HostPolicy,
                       upstream: Upstream | None, no_proxy: Mapping[str, str], relays: Relays) -> None:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, version = (request_line.split(" ", 2) + ["", ""])[:3]
    if method.upper() == "CONNECT":
        host, _, port_text = target.rpartition(":")
        port = int(port_text) if port_text.isdigit() else 443
    else:
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            await _refuse(writer, 400, "Bad Request", "Orion's sandbox proxy takes CONNECT and absolute http:// requests.")
            return
        host, port = parts.hostname, parts.port or 80
    host = host.strip("[]").lower()
    if not host or not policy.allows(host, port):
        _note_denied(relays, f"{host}:{port}")
        await _refuse(writer, 403, "Forbidden",
                      f"Orion's sandbox: {host}:{port} is not in the network allow-list. The user can add it to "
                      "sandbox.network.allowedHosts in Orion's user settings.")
        return
    try:
        if upstream is not None and not _bypass(host, no_proxy):
            up_reader, up_writer = await _via_upstream(upstream, host, port, method, head)
        else:
            up_reader, up_writer = await _direct(host, port, policy)
    except PermissionError as exc:
        _note_denied(relays, f"{host}:{port}")
        await _refuse(writer, 403, "Forbidden", f"Orion's sandbox: {exc}")
        return
    except (OSError, asyncio.TimeoutError, ValueError) as exc:
        await _refuse(writer, 502, "Bad Gateway", f"Orion's sandbox proxy could not reach {host}:{port}: {exc}")
        return
    if method.upper() == "CONNECT":
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
    elif upstream is None or _bypass(host, no_proxy):
        up_writer.write(_origin_form(request_line, header_lines, version))
    await _splice(reader, writer, up_reader, up_writer, relays)


def _note_denied(relays: Relays, what: str) -> None:
    log.info("sandbox proxy refused %s (not in sandbox.network.allowedHosts)", what)
    relays.denied.append(what)
    del relays.denied[:-50]


async def _direct(host: str, port: int, policy: HostPolicy) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=1), CONNECT_TIMEOUT_S)  # SOCK_STREAM
    addresses = [str(info[4][0]) for info in infos]
    if not policy.literal(host) and any(_local_address(a) for a in addresses):
        raise PermissionError(f"{host} resolves to a local address")
    last: Exception | None = None
    for address in addresses:
        try:
            return await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT_S)
        except OSError as exc:
            last = exc
    raise last or OSError(f"no address for {host}")


async def _via_upstream(upstream: Upstream, host: str, port: int, method: str,
                        head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(upstream.host, upstream.port),
                                                  CONNECT_TIMEOUT_S)
    auth = f"Proxy-Authorization: {upstream.auth}\r\n" if upstream.auth else ""
    if method.upper() != "CONNECT":
        # A plain request goes to the upstream proxy as it came (absolute form), with the user's credentials.
        lines = [line for line in head.decode("latin-1").split("\r\n") if not line.lower().startswith("proxy-")]
        up_writer.write(("\r\n".join(lines[:1]) + "\r\n" + auth + "\r\n".join(lines[1:])).encode("latin-1"))
        return up_reader, up_writer
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    up_writer.write(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n".encode("latin-1"))
    reply = await asyncio.wait_for(up_reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
    status = reply.split(b" ", 2)[1:2]
    if status != [b"200"]:
        up_writer.close()
        raise OSError(f"the user's proxy answered {reply.splitlines()[0].decode('latin-1', 'replace')[:100]}")
    return up_reader, up_writer


def _origin_form(request_line: str, header_lines: Iterable[str], version: str) -> bytes:
    method, target, _ = (request_line.split(" ", 2) + ["", ""])[:3]
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [h for h in header_lines if h and not h.lower().startswith(("proxy-", "connection:"))]
    return (f"{method} {path} {version or 'HTTP/1.1'}\r\n" + "".join(h + "\r\n" for h in kept)
            + "Connection: close\r\n\r\n").encode("latin-1")


async def _refuse(writer: asyncio.StreamWriter, code: int, reason: str, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                 f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()
