"""The model relay puts the real credential into requests the CLI made with a placeholder (sidecar/model_credential.py):
real sockets on both sides, two requests on one kept-alive connection, a streamed (chunked) answer, and nothing
replaced that was not the placeholder. Through the real CLI in the box: tests/e2e/test_real_model_credentials.py."""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import pytest

from sidecar.boundary import BoxPlan
from sidecar.model_credential import PLACEHOLDER, keep_outside, relay, withhold


def test_withhold_takes_every_credential_out_of_the_environment_and_keeps_the_clis_precedence() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-real", "CLAUDE_CODE_OAUTH_TOKEN": "oauth-real", "ANTHROPIC_AUTH_TOKEN": "tok-real",
           "PATH": "/bin"}
    credential = withhold(env)
    assert env == {"ANTHROPIC_API_KEY": PLACEHOLDER, "CLAUDE_CODE_OAUTH_TOKEN": PLACEHOLDER,
                   "ANTHROPIC_AUTH_TOKEN": PLACEHOLDER, "PATH": "/bin"}
    assert credential is not None and "real" not in repr(credential)
    assert dict(credential.headers) == {b"x-api-key": b"sk-real", b"authorization": b"Bearer tok-real"}
    assert withhold({"PATH": "/bin"}) is None
    assert withhold(dict(env)) is None  # placeholders are no credential


def test_a_gateway_key_in_custom_headers_is_held_back_and_the_other_headers_stay() -> None:
    env = {"ANTHROPIC_AUTH_TOKEN": "tok-real",
           "ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Key: gw-real\r\nanthropic-use-case-id: ide\nCookie: sid=abc\nbroken"}
    credential = withhold(env)
    assert env["ANTHROPIC_CUSTOM_HEADERS"] == (f"X-Gateway-Key: {PLACEHOLDER}\nanthropic-use-case-id: ide\n"
                                               f"Cookie: {PLACEHOLDER}\nbroken")
    assert credential is not None and dict(credential.headers) == {
        b"authorization": b"Bearer tok-real", b"x-gateway-key": b"gw-real", b"cookie": b"sid=abc"}
    assert credential.value_for(b"x-gateway-key", PLACEHOLDER.encode()) == b"gw-real"
    assert credential.value_for(b"anthropic-use-case-id", b"ide") == b"ide"
    # without a credential of the model the headers are not touched (nothing is relayed)
    alone = {"ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Key: gw-real"}
    assert withhold(alone) is None and alone == {"ANTHROPIC_CUSTOM_HEADERS": "X-Gateway-Key: gw-real"}


def _plan() -> BoxPlan:
    return BoxPlan(project="/p", writable=("/p",), read_only=(), hidden_dirs=(), hidden_files=())


@pytest.mark.parametrize(("base", "endpoint", "tls", "given"), [
    (None, ("api.anthropic.com", 443), True, "http://api.anthropic.com"),  # the CLI's default model
    ("https://gw.example.com:8443/v1/", ("gw.example.com", 8443), True, "http://gw.example.com:8443/v1/"),
    ("https://127.0.0.1:9443", ("127.0.0.1", 9443), True, "http://127.0.0.1:9443"),
    ("http://127.0.0.1:4567", ("127.0.0.1", 4567), False, "http://127.0.0.1:4567"),
    ("https://[::1]:9443", ("::1", 9443), True, "http://[::1]:9443"),
])
def test_every_http_model_is_reached_through_the_relay_and_an_https_one_is_given_as_http(
        base: str | None, endpoint: tuple[str, int], tls: bool, given: str) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-real", **({"ANTHROPIC_BASE_URL": base} if base else {})}
    plan, credential = keep_outside(env, _plan())
    assert credential is not None and env["ANTHROPIC_API_KEY"] == PLACEHOLDER
    assert (plan.model_endpoint, plan.model_tls, env["ANTHROPIC_BASE_URL"]) == (endpoint, tls, given)


@pytest.mark.parametrize("env", [
    {"PATH": "/bin"},  # no credential: the CLI's own login or helper, nothing to hold back
    {"ANTHROPIC_API_KEY": "sk-real", "CLAUDE_CODE_USE_BEDROCK": "1"},  # a cloud provider serves the model
    {"ANTHROPIC_API_KEY": "sk-real", "ANTHROPIC_BASE_URL": "https://user:pw@gw.example.com"},  # user info: not ours
    {"ANTHROPIC_API_KEY": "sk-real", "ANTHROPIC_BASE_URL": "ftp://gw.example.com"},
    {"ANTHROPIC_API_KEY": "sk-real", "ANTHROPIC_BASE_URL": "https://gw.example.com:99999"},
])
def test_a_model_the_relay_does_not_serve_leaves_plan_and_environment_as_they_were(env: dict[str, str]) -> None:
    before = dict(env)
    plan, credential = keep_outside(env, _plan())
    assert credential is None and plan == _plan() and env == before


@pytest.mark.asyncio
async def test_two_requests_on_one_connection_get_the_real_credential_and_stream_back() -> None:
    seen: list[list[tuple[bytes, bytes]]] = []

    async def model(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                conn.receive_data(data)
                if not data:
                    break
                continue
            if isinstance(event, h11.Request):
                seen.append(list(event.headers))
            elif isinstance(event, h11.EndOfMessage):
                writer.write(conn.send(h11.Response(status_code=200, headers=[("transfer-encoding", "chunked")])))
                for part in (b"event: a\n\n", b"event: b\n\n"):
                    writer.write(conn.send(h11.Data(data=part)))
                    await writer.drain()
                writer.write(conn.send(h11.EndOfMessage()))
                await writer.drain()
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                break
        writer.close()

    upstream, relay_server = await relayed(model)
    relay_port = relay_server.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", relay_port), 5)
        client = h11.Connection(h11.CLIENT)
        bodies = []
        for key in (PLACEHOLDER, "sk-the-cli-made-up"):
            body = b'{"stream": true}'
            writer.write(client.send(h11.Request(method="POST", target="/v1/messages", headers=[
                ("host", "127.0.0.1"), ("x-api-key", key), ("content-length", str(len(body)))])))
            writer.write(client.send(h11.Data(data=body)) + client.send(h11.EndOfMessage()))
            await writer.drain()
            got = b""
            while True:
                event = client.next_event()
                if event is h11.NEED_DATA:
                    client.receive_data(await asyncio.wait_for(reader.read(65536), 5))
                elif isinstance(event, h11.Data):
                    got += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            bodies.append(got)
            client.start_next_cycle()
        writer.close()
    finally:
        relay_server.close()
        upstream.close()
    assert bodies == [b"event: a\n\nevent: b\n\n"] * 2
    keys = [dict(headers)[b"x-api-key"] for headers in seen]
    assert keys == [b"sk-real-0451", b"sk-the-cli-made-up"]  # only the placeholder is replaced


@pytest.mark.asyncio
async def test_a_model_closing_an_idle_connection_closes_the_clis_too() -> None:
    """A model server closes a kept-alive connection after its idle timeout: the relay closes the CLI's side of it
    as well, so the CLI's next request goes on a new connection (as through a plain tunnel) instead of into a dead
    one. A request the CLI sends while the model's side is open still goes through."""
    async def model(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await asyncio.wait_for(reader.read(65536), 2.0)  # its keep-alive timeout
                except asyncio.TimeoutError:
                    break
                conn.receive_data(data)
                if not data:
                    break
            elif isinstance(event, h11.EndOfMessage):
                writer.write(conn.send(h11.Response(status_code=200, headers=[("content-length", "2")])))
                writer.write(conn.send(h11.Data(data=b"ok")) + conn.send(h11.EndOfMessage()))
                await writer.drain()
                conn.start_next_cycle()
        writer.close()

    upstream, relay_server = await relayed(model)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", relay_server.sockets[0].getsockname()[1])
        client = h11.Connection(h11.CLIENT)
        for _ in range(2):  # two requests inside the keep-alive window: one connection serves both
            writer.write(client.send(h11.Request(method="POST", target="/v1/messages", headers=[
                ("host", "127.0.0.1"), ("x-api-key", PLACEHOLDER), ("content-length", "0")])))
            writer.write(client.send(h11.EndOfMessage()))
            await writer.drain()
            while not isinstance(event := client.next_event(), h11.EndOfMessage):
                if event is h11.NEED_DATA:
                    client.receive_data(await asyncio.wait_for(reader.read(65536), 5))
            client.start_next_cycle()
        # idle past the model's timeout: the CLI's connection ends too (read sees EOF, it does not hang)
        assert await asyncio.wait_for(reader.read(65536), 5) == b""
        writer.close()
    finally:
        relay_server.close()
        upstream.close()


async def relayed(model: Any) -> tuple[asyncio.Server, asyncio.Server]:
    """A model server running `model`, and the relay before it with a real credential (`sk-real-0451`), as the box's
    model socket serves it (here on loopback TCP): (the model's server, the relay's)."""
    credential = withhold({"ANTHROPIC_API_KEY": "sk-real-0451"})
    assert credential is not None
    upstream = await asyncio.start_server(model, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]

    async def box_side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up = await asyncio.open_connection("127.0.0.1", port)
        try:
            await relay(reader, writer, *up, credential)
        finally:
            up[1].close()
            writer.close()

    return upstream, await asyncio.start_server(box_side, "127.0.0.1", 0)
