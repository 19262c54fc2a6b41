"""JsonRpcPeer over in-memory transports: dispatch, validation errors, concurrency, cancellation, outbound requests, EOF, batches, flow control."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from ipc.errors import ConnectionClosed, NotInitialized, RemoteError, RequestTimeout, SessionNotFound
from ipc.memory import memory_transport_pair
from ipc.peer import JsonRpcPeer, RequestContext, Route
from ipc.protocol import Empty, MemorySearchParams, MemorySearchResult


class Pair:
    def __init__(self, server: JsonRpcPeer, client: JsonRpcPeer, server_t, client_t) -> None:
        self.server, self.client, self.server_t, self.client_t = server, client, server_t, client_t
        self.events: list[tuple[str, Any]] = []
        self.unmatched: list[Any] = []
        self._arrivals_send, self._arrivals = anyio.create_memory_object_stream[Any](10_000)

    def arrived(self, item: Any) -> None:
        self._arrivals_send.send_nowait(item)

    async def wait_for(self, predicate) -> None:
        """Wait (event-driven) until the collected events/unmatched responses satisfy `predicate`."""
        while not predicate():
            await self._arrivals.receive()


@asynccontextmanager
async def connected(routes: dict[str, Route], *, guard=None, client_routes=None, buffer: int = 64) -> AsyncIterator[Pair]:
    server_t, client_t = memory_transport_pair(buffer)
    server = JsonRpcPeer(server_t, routes=routes, guard=guard, name="server")
    pair_box: list[Pair] = []
    client = JsonRpcPeer(client_t, routes=client_routes or {}, name="client",
                         on_notification=lambda n, p: (pair_box[0].events.append((n, p)), pair_box[0].arrived(n)),
                         on_unmatched=lambda m: (pair_box[0].unmatched.append(m), pair_box[0].arrived(m)))
    pair = Pair(server, client, server_t, client_t)
    pair_box.append(pair)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            tg.start_soon(client.run)
            yield pair
            tg.cancel_scope.cancel()


async def echo(params: Any, ctx: RequestContext) -> Any:
    return {"echo": params if not isinstance(params, BaseModel) else params.model_dump(by_alias=True)}


@pytest.mark.asyncio
async def test_request_response_and_typed_params():
    async def search(params: MemorySearchParams, ctx: RequestContext) -> dict:
        return {"results": [{"kind": "prompt", "sessionId": "s", "project": params.project or "-", "text": params.query,
                             "snippet": "", "createdAt": "now", "score": params.limit,
                             "why": {"text": {"rank": 1, "score": 1.0}}, "matchedBy": ["text"]}]}

    async with connected({"memory/search": Route(search, MemorySearchParams, MemorySearchResult)}) as pair:
        result = await pair.client.request("memory/search", {"query": "hello", "limit": 3})
    assert result["results"][0]["text"] == "hello"
    assert result["results"][0]["score"] == 3.0
    assert result["results"][0]["sessionId"] == "s"  # camelCase on the wire


@pytest.mark.asyncio
async def test_invalid_params_report_pydantic_locations():
    async with connected({"memory/search": Route(echo, MemorySearchParams)}) as pair:
        with pytest.raises(RemoteError) as info:
            await pair.client.request("memory/search", {"query": 5, "limit": 1000})
    assert info.value.code == -32602
    locs = {tuple(e["loc"]) for e in info.value.data["errors"]}
    assert locs == {("query",), ("limit",)}


@pytest.mark.asyncio
async def test_positional_params_and_unknown_methods_are_refused():
    async with connected({"echo": Route(echo, Empty)}) as pair:
        with pytest.raises(RemoteError) as positional:
            await pair.client.request("echo", [1, 2])
        with pytest.raises(RemoteError) as unknown:
            await pair.client.request("nope")
    assert positional.value.code == -32602
    assert unknown.value.code == -32601 and unknown.value.data == {"method": "nope"}


@pytest.mark.asyncio
async def test_typed_errors_raised_by_handlers_keep_their_code_and_crashes_do_not_leak():
    async def missing(params: Any, ctx: RequestContext) -> Any:
        raise SessionNotFound(data={"sessionId": "x"})

    async def crash(params: Any, ctx: RequestContext) -> Any:
        raise KeyError("secret internals")

    async with connected({"missing": Route(missing), "crash": Route(crash)}) as pair:
        with pytest.raises(RemoteError) as a:
            await pair.client.request("missing")
        with pytest.raises(RemoteError) as b:
            await pair.client.request("crash")
    assert (a.value.code, a.value.data) == (-31001, {"sessionId": "x"})
    assert b.value.code == -32603 and "secret" not in str(b.value.data)


@pytest.mark.asyncio
async def test_result_that_breaks_its_model_is_an_internal_error():
    async def bad(params: Any, ctx: RequestContext) -> Any:
        return {"results": "not a list"}

    async with connected({"bad": Route(bad, Empty, MemorySearchResult)}) as pair:
        with pytest.raises(RemoteError) as info:
            await pair.client.request("bad")
    assert info.value.code == -32603


@pytest.mark.asyncio
async def test_requests_run_concurrently_and_answer_out_of_order():
    release = anyio.Event()

    async def slow(params: Any, ctx: RequestContext) -> str:
        await release.wait()
        return "slow"

    async def fast(params: Any, ctx: RequestContext) -> str:
        return "fast"

    done: list[str] = []
    async with connected({"slow": Route(slow), "fast": Route(fast)}) as pair:
        async with anyio.create_task_group() as tg:
            async def call(name: str) -> None:
                done.append(await pair.client.request(name))

            tg.start_soon(call, "slow")
            await call("fast")
            assert done == ["fast"]
            release.set()
    assert done == ["fast", "slow"]


@pytest.mark.asyncio
async def test_cancel_request_notification_answers_32800():
    started = anyio.Event()

    async def block(params: Any, ctx: RequestContext) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    async with connected({"block": Route(block)}) as pair:
        await pair.client.send_raw({"jsonrpc": "2.0", "id": "b1", "method": "block"})
        await started.wait()
        assert pair.server.inflight == 1
        await pair.client.notify("$/cancelRequest", {"id": "b1"})
        await pair.wait_for(lambda: pair.unmatched)
        assert pair.unmatched[0]["id"] == "b1"
        assert pair.unmatched[0]["error"]["code"] == -32800
        await pair.server.wait_idle()


@pytest.mark.asyncio
async def test_outbound_request_roundtrip_timeout_and_cancel_sent_to_the_other_side():
    cancelled = anyio.Event()

    async def answer(params: Any, ctx: RequestContext) -> dict:
        return {"got": params}

    async def never(params: Any, ctx: RequestContext) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with connected({}, client_routes={"ask": Route(answer), "never": Route(never)}) as pair:
        assert await pair.server.request("ask", {"q": 1}) == {"got": {"q": 1}}
        with pytest.raises(RequestTimeout):
            await pair.server.request("never", timeout=0.05)
        await cancelled.wait()  # the timed-out request was cancelled on the far side too


@pytest.mark.asyncio
async def test_eof_fails_every_waiter_with_connection_closed():
    server_t, raw = memory_transport_pair()
    server = JsonRpcPeer(server_t, name="server")
    errors: list[BaseException] = []

    async def wait_forever() -> None:
        try:
            await server.request("unanswered", timeout=None)
        except ConnectionClosed as exc:
            errors.append(exc)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            for _ in range(3):
                tg.start_soon(wait_forever)
            for _ in range(3):
                await raw.incoming.receive()  # all three requests are on the wire, unanswered
            raw.outgoing.close()  # the other side hangs up
    assert len(errors) == 3
    assert server.closed
    with pytest.raises(ConnectionClosed):
        await server.request("after", timeout=1)


@pytest.mark.asyncio
async def test_guard_refuses_before_dispatch():
    def guard(method: str, is_notification: bool) -> None:
        if method != "initialize" and not is_notification:
            raise NotInitialized()

    async with connected({"ping": Route(echo), "initialize": Route(echo)}, guard=guard) as pair:
        with pytest.raises(RemoteError) as info:
            await pair.client.request("ping")
        assert await pair.client.request("initialize") == {"echo": {}}
    assert info.value.code == -31002


@pytest.mark.asyncio
async def test_batch_answers_as_one_array_and_notifications_get_nothing():
    server_t, raw = memory_transport_pair()
    server = JsonRpcPeer(server_t, routes={"echo": Route(echo)}, name="server")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            await raw.outgoing.send([
                {"jsonrpc": "2.0", "id": "r1", "method": "echo", "params": {"a": 1}},
                {"jsonrpc": "2.0", "method": "echo"},
                {"jsonrpc": "2.0", "id": "r2", "method": "missing"},
                {"foo": "bar"},
            ])
            await raw.outgoing.send([{"jsonrpc": "2.0", "method": "echo"}])
            await raw.outgoing.send([])
            await raw.outgoing.send({"jsonrpc": "2.0", "id": "last", "method": "echo"})
            answers = []
            while not any(isinstance(a, dict) and a.get("id") == "last" for a in answers):
                answers.append(await raw.incoming.receive())
            tg.cancel_scope.cancel()
    batches = [a for a in answers if isinstance(a, list)]
    assert len(batches) == 1  # the all-notification batch got no answer at all
    by_id = {m["id"]: m for m in batches[0]}
    assert len(batches[0]) == 3
    assert by_id["r1"]["result"] == {"echo": {"a": 1}}
    assert by_id["r2"]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    singles = [a for a in answers if isinstance(a, dict) and a["id"] != "last"]
    assert [m["error"]["code"] for m in singles] == [-32600]  # the empty batch


@pytest.mark.asyncio
async def test_invalid_envelopes_answer_invalid_request():
    async with connected({"echo": Route(echo)}) as pair:
        for bad in ({"jsonrpc": "1.0", "id": "i1", "method": "echo"}, {"jsonrpc": "2.0", "id": "i2", "method": 7},
                    {"jsonrpc": "2.0", "id": "i3", "method": "echo", "params": "x"}, {"jsonrpc": "2.0", "id": True, "method": "echo"},
                    42):
            await pair.client.send_raw(bad)
        await pair.wait_for(lambda: len(pair.unmatched) == 5)
    codes = [m["error"]["code"] for m in pair.unmatched]
    assert codes == [-32600] * 5
    assert [m["id"] for m in pair.unmatched] == ["i1", "i2", "i3", None, None]


@pytest.mark.asyncio
async def test_notifications_arrive_in_emission_order():
    async with connected({}) as pair:
        for i in range(500):
            await pair.server.notify("log", {"i": i})
        await pair.wait_for(lambda: len(pair.events) == 500)
    assert [p["i"] for _, p in pair.events] == list(range(500))


@pytest.mark.asyncio
async def test_a_reader_that_stops_reading_makes_producers_wait_instead_of_buffering():
    server_t, client_t = memory_transport_pair(8)
    server = JsonRpcPeer(server_t, name="server")
    sent = 0

    async def produce() -> None:
        nonlocal sent
        for i in range(100):
            await server.notify("log", {"i": i})
            sent += 1

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            while sent < 8:
                await anyio.sleep(0)
            for _ in range(20):
                await anyio.sleep(0)
            assert sent == 8  # bounded: the ninth notify waits for the reader
            received = [await client_t.incoming.receive() for _ in range(100)]
    assert [m["params"]["i"] for m in received] == list(range(100))


@pytest.mark.asyncio
async def test_a_client_that_sends_but_never_reads_stops_being_read_instead_of_growing_memory():
    server_t, raw = memory_transport_pair(4)
    server = JsonRpcPeer(server_t, routes={"echo": Route(echo)}, name="server")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            sent = 0

            async def flood() -> None:
                nonlocal sent
                for i in range(1000):
                    await raw.outgoing.send({"jsonrpc": "2.0", "id": i, "method": "echo"})
                    sent += 1

            tg.start_soon(flood)
            for _ in range(200):
                await anyio.sleep(0)
            assert sent < 200  # the server stopped reading: the frontend's own sends wait
            answers = [await raw.incoming.receive() for _ in range(1000)]
            tg.cancel_scope.cancel()
    assert sorted(a["id"] for a in answers) == list(range(1000))
