"""A batch cannot take the sidecar hostage: over its byte or member bound it is refused whole (-32600 batchTooLarge) in bounded memory, and pings are answered meanwhile, through the real `python -m sidecar` and the in-process peer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from bench.wire_batch_flood import ping_batch
from frontend_stub.client import SidecarClient
from ipc.framing import LineDecoder
from ipc.errors import BatchTooLarge, LineTooLong
from ipc.memory import memory_transport_pair
from ipc.peer import JsonRpcPeer, RequestContext, Route

REPO_ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
WAIT_S = 60.0


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def launch(tmp_path: Path, *args: str):
    # No background pre-import of the SDK (sidecar/preimport.py): its ~80 MiB would count as the wire's peak here.
    env = dict(os.environ, ORION_DATA_DIR=str(tmp_path / "data"), ORION_PREIMPORT="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    import sys

    return SidecarClient.launch([sys.executable, "-m", "sidecar", *args], env=env, cwd=str(REPO_ROOT))


# --------------------------------------------------------------------------- the real sidecar


@pytest.mark.asyncio
async def test_a_15_mib_batch_is_refused_unread_in_bounded_memory_and_the_ping_behind_it_is_answered(tmp_path):
    async with launch(tmp_path) as client:
        before = peak_rss_mib(client.process.pid)
        with anyio.fail_after(WAIT_S):
            await client.send_line(ping_batch(15 * MIB))
            await client.ping()  # written right behind the batch: the same pipe, so it is read after it
            refusal = await client.next_unmatched()
        peak = peak_rss_mib(client.process.pid)
    error = refusal["error"]
    assert refusal["id"] is None
    assert error["code"] == -32600 and error["message"] == "Batch too large"
    assert error["data"]["reason"] == "batchTooLarge" and error["data"]["limit"] == MIB
    assert error["data"]["length"] > 15 * MIB
    # Before the bound: 764 MiB peak (bench/wire_batch_flood.py). Discarded as it arrives: a few MiB of read buffers.
    assert peak - before < 64, (before, peak)


@pytest.mark.asyncio
async def test_a_batch_over_the_member_bound_runs_none_of_its_members_and_later_requests_are_served(tmp_path):
    async with launch(tmp_path, "--max-batch-items", "5") as client:
        with anyio.fail_after(WAIT_S):
            await client.send_line(
                b"[" + b",".join(b'{"jsonrpc":"2.0","method":"ping","id":"m%d"}' % i for i in range(6)) + b"]"
            )
            refusal = await client.next_unmatched()
            await client.send_line(
                b"[" + b",".join(b'{"jsonrpc":"2.0","method":"ping","id":"k%d"}' % i for i in range(5)) + b"]"
            )
            answers = [await client.next_unmatched() for _ in range(5)]
            await client.ping()
    assert refusal["error"]["code"] == -32600
    assert refusal["error"]["data"] == {"reason": "batchTooLarge", "detail": "batch of 6 members exceeds the limit of 5",
                                        "limit": 5, "items": 6}
    # No "m*" member was answered: the refused batch ran nothing; the one at the bound was served whole.
    assert sorted(a["id"] for a in answers) == [f"k{i}" for i in range(5)]
    assert all(a["result"] is None or a["result"] == {} for a in answers)


@pytest.mark.asyncio
async def test_max_batch_bytes_refuses_a_blank_prefixed_batch_but_not_a_single_large_request(tmp_path):
    async with launch(tmp_path, "--max-batch-bytes", "4096") as client:
        with anyio.fail_after(WAIT_S):
            # Leading blanks do not hide a batch.
            await client.send_line(ping_batch(8192, prefix=b"  \t"))
            refusal = await client.next_unmatched()
            # A 2 MiB single request is bounded by --max-line-bytes only: it is read and judged on its merits.
            await client.send_line(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"' + b"x" * (2 * MIB) + b'"}}')
            big = await client.next_unmatched()
            await client.ping()
    assert refusal["error"]["data"]["reason"] == "batchTooLarge" and refusal["error"]["data"]["limit"] == 4096
    assert big["id"] == "big"
    assert "error" not in big or big["error"]["data"].get("reason") != "batchTooLarge"


# --------------------------------------------------------------------------- the peer, in process


@pytest.mark.asyncio
async def test_a_ping_is_answered_while_a_batch_of_slow_members_is_still_running():
    release = anyio.Event()
    started = 0

    async def slow(_params: Any, _ctx: RequestContext) -> Any:
        nonlocal started
        started += 1
        await release.wait()
        return {"slow": True}

    async def ping(_params: Any, _ctx: RequestContext) -> Any:
        return {}

    server_t, raw = memory_transport_pair()
    server = JsonRpcPeer(server_t, routes={"slow": Route(slow), "ping": Route(ping)}, name="server")
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            await raw.outgoing.send([{"jsonrpc": "2.0", "id": i, "method": "slow"} for i in range(100)])
            await raw.outgoing.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
            first = await raw.incoming.receive()
            # The ping came back first, with every member of the batch started and none answered yet.
            assert first == {"jsonrpc": "2.0", "result": {}, "id": "ping"}
            assert started == 100
            release.set()
            batch = await raw.incoming.receive()
            tg.cancel_scope.cancel()
    assert isinstance(batch, list) and len(batch) == 100


@pytest.mark.asyncio
async def test_101_members_are_refused_before_any_runs_100_are_served():
    ran = 0

    async def count(_params: Any, _ctx: RequestContext) -> Any:
        nonlocal ran
        ran += 1
        return ran

    server_t, raw = memory_transport_pair()
    server = JsonRpcPeer(server_t, routes={"count": Route(count)}, name="server")
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            await raw.outgoing.send([{"jsonrpc": "2.0", "id": i, "method": "count"} for i in range(101)])
            refused = await raw.incoming.receive()
            assert ran == 0
            await raw.outgoing.send([{"jsonrpc": "2.0", "id": i, "method": "count"} for i in range(100)])
            served = await raw.incoming.receive()
            tg.cancel_scope.cancel()
    assert refused["id"] is None and refused["error"]["data"]["items"] == 101
    assert len(served) == 100 and ran == 100


def test_the_decoder_never_holds_more_than_the_batch_bound_of_a_batch_arriving_in_pieces():
    decoder = LineDecoder(max_line_bytes=16 * MIB, max_batch_bytes=64 * 1024)
    batch = ping_batch(4 * MIB) + b"\n"
    items = []
    for at in range(0, len(batch), 65536):
        items += decoder.feed(batch[at:at + 65536])
        assert len(decoder._buf) <= 64 * 1024  # what a 4 MiB batch costs while it streams in
    items += decoder.feed(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert isinstance(items[0], BatchTooLarge) and items[0].length == len(batch) - 1
    assert items[1] == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    # A non-batch line of the same size is within --max-line-bytes and decoded whole.
    line = b'{"pad":"' + b"x" * (4 * MIB) + b'"}\n'
    assert decoder.feed(line)[0]["pad"] == "x" * (4 * MIB)
    # And past the line bound it is still a line, not a batch.
    small = LineDecoder(max_line_bytes=1024, max_batch_bytes=4096)
    assert isinstance(small.feed(b'{"pad":"' + b"x" * 2000 + b'"}\n')[0], LineTooLong)
