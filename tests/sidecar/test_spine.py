"""The real `python -m sidecar` through frontend_stub: handshake, concurrency, cancellation, frontend requests, malformed input, lifecycle, stdout purity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import psutil
import pytest

from frontend_stub.client import SidecarClient
from ipc.errors import RemoteError
from ipc.registry import EVENTS, METHODS

ROOT = Path(__file__).resolve().parents[2]

# The real sidecar entry point plus a few test-only methods (registered through the same open table).
TEST_SERVER = textwrap.dedent('''
    import os, subprocess, sys
    import anyio
    from ipc import protocol as p
    from pydantic import BaseModel
    from sidecar.__main__ import main

    class Key(BaseModel):
        key: str

    class Count(BaseModel):
        count: int

    def setup(app):
        gates = {}

        @app.method("test/block", Key)
        async def block(params, call):
            gates.setdefault(params.key, anyio.Event())
            await gates[params.key].wait()
            return {"released": params.key}

        @app.method("test/release", Key)
        async def release(params, call):
            gates.setdefault(params.key, anyio.Event()).set()
            return {}

        @app.method("test/ask", p.Empty)
        async def ask(params, call):
            answer = await call.request("session/request_permission", {
                "sessionId": "s1", "toolUseId": "t1", "toolName": "Bash", "toolInput": {"command": "ls"},
                "options": [{"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"}]}, timeout=10)
            return answer.model_dump(mode="json", by_alias=True)

        @app.method("test/emit", Count)
        async def emit(params, call):
            for i in range(params.count):
                await call.notify("log", {"level": "info", "logger": "test", "message": str(i)})
            return {"emitted": params.count}

        @app.method("test/noisy", p.Empty)
        async def noisy(params, call):
            print("stray print from a handler")
            sys.stdout.flush()
            os.system("echo from a shell child")
            subprocess.run(["echo", "from a subprocess child"])
            return {"noisy": True}

    sys.exit(main(sys.argv[1:], setup=setup))
''')


def server_argv(*extra: str) -> list[str]:
    return [sys.executable, "-c", TEST_SERVER, *extra]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


@pytest.mark.asyncio
async def test_handshake_lists_registered_methods_and_all_events_then_clean_exit():
    with anyio.fail_after(30):
        async with SidecarClient.launch(cwd=ROOT, env=child_env()) as client:
            info = client.initialize_result
            assert info.server_info.name == "orion-sidecar"
            assert {"initialize", "ping", "shutdown", "exit"} <= set(info.capabilities.methods)
            assert set(info.capabilities.methods) <= set(METHODS)  # only names from the protocol table
            assert info.capabilities.events == list(EVENTS)
            assert await client.request("ping") == {}
    assert client.returncode == 0
    assert "initialized by orion-frontend-stub" in client.stderr_text()


@pytest.mark.asyncio
async def test_requests_before_initialize_are_refused_and_bad_initialize_params_located():
    with anyio.fail_after(30):
        async with SidecarClient.launch(initialize=False, cwd=ROOT, env=child_env()) as client:
            with pytest.raises(RemoteError) as early:
                await client.ping()
            with pytest.raises(RemoteError) as no_version:
                await client.request("initialize", {"clientInfo": {"name": "x"}})
            with pytest.raises(RemoteError) as bad_orion:
                await client.request("initialize", {"protocolVersion": "2026-11-01", "clientInfo": {"name": "x"}})
            with pytest.raises(RemoteError) as bad_acp:  # an integer version is ACP's handshake: its clientInfo too
                await client.request("initialize", {"protocolVersion": 1, "clientInfo": {"name": "x"}})
            await client.initialize()  # none of the refused handshakes initialized the connection
            await client.ping()
    assert early.value.code == -31002
    assert no_version.value.code == bad_orion.value.code == bad_acp.value.code == -32602
    assert {tuple(e["loc"]) for e in no_version.value.data["errors"]} == {("protocolVersion",)}
    assert {tuple(e["loc"]) for e in bad_orion.value.data["errors"]} == {("clientInfo", "version")}
    assert {tuple(e["loc"]) for e in bad_acp.value.data["errors"]} == {("clientInfo", "version")}


@pytest.mark.asyncio
async def test_concurrent_requests_are_answered_out_of_order():
    with anyio.fail_after(30):
        async with SidecarClient.launch(server_argv(), cwd=ROOT, env=child_env()) as client:
            finished: list[str] = []
            async with anyio.create_task_group() as tg:
                async def blocked() -> None:
                    await client.request("test/block", {"key": "a"})
                    finished.append("block")

                tg.start_soon(blocked)
                await client.ping()
                await client.request("test/release", {"key": "never-mind"})
                finished.append("ping")
                assert finished == ["ping"]  # the blocked request is still running on the sidecar
                await client.request("test/release", {"key": "a"})
            assert finished == ["ping", "block"]


@pytest.mark.asyncio
async def test_cancel_request_stops_an_in_flight_request_with_32800():
    with anyio.fail_after(30):
        async with SidecarClient.launch(server_argv(), cwd=ROOT, env=child_env()) as client:
            await client.send_line(json.dumps({"jsonrpc": "2.0", "id": "blk", "method": "test/block", "params": {"key": "c"}}))
            await client.ping()  # the block request is dispatched before this answer
            await client.notify("$/cancelRequest", {"id": "blk"})
            answer = await client.next_unmatched()
            assert answer["id"] == "blk" and answer["error"]["code"] == -32800
            await client.ping()


@pytest.mark.asyncio
async def test_sidecar_to_frontend_request_round_trip():
    seen = []

    async def on_request(method, params):
        seen.append((method, params.tool_name, params.tool_input))
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    with anyio.fail_after(30):
        async with SidecarClient.launch(server_argv(), cwd=ROOT, env=child_env(), on_request=on_request) as client:
            answer = await client.request("test/ask")
            client.on_request = None  # the default handler answers "cancelled"
            default = await client.request("test/ask")
    assert seen == [("session/request_permission", "Bash", {"command": "ls"})]
    assert answer == {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    assert default == {"outcome": {"outcome": "cancelled"}}


@pytest.mark.asyncio
async def test_events_reach_subscribers_in_order():
    with anyio.fail_after(30):
        async with SidecarClient.launch(server_argv(), cwd=ROOT, env=child_env()) as client:
            async with client.events("log") as events:
                await client.request("test/emit", {"count": 300})
                got = []
                async for event in events:
                    got.append(event.params["message"])
                    if len(got) == 300:
                        break
    assert got == [str(i) for i in range(300)]


@pytest.mark.asyncio
async def test_malformed_input_of_every_kind_gets_the_right_answer_and_the_sidecar_keeps_serving():
    with anyio.fail_after(60):
        async with SidecarClient.launch(cwd=ROOT, env=child_env()) as client:
            async def answer_to(line: bytes | str) -> dict:
                await client.send_line(line)
                return await client.next_unmatched()

            garbage = await answer_to("this is not json")
            assert (garbage["id"], garbage["error"]["code"]) == (None, -32700)
            bad_utf8 = await answer_to(b'{"jsonrpc":"2.0","id":"u","method":"ping","x":"\xff"}')
            assert (bad_utf8["id"], bad_utf8["error"]["code"]) == (None, -32700)
            huge = await answer_to(b'{"jsonrpc":"2.0","id":"h","method":"ping","params":{"x":"' + b"a" * (20 * 1024 * 1024) + b'"}}')
            assert huge["error"]["code"] == -32700 and huge["error"]["data"]["reason"] == "lineTooLong"
            await client.send_line("")
            await client.send_line("   ")
            batch = await answer_to('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"ping"},'
                                    '{"jsonrpc":"2.0","id":"b2","method":"nope"}]')
            # The stub's peer splits an array answer into its members; both arrive, nothing for the notification.
            second = await client.next_unmatched()
            answers = {batch["id"]: batch, second["id"]: second}
            assert answers["b1"]["result"] == {} and answers["b2"]["error"]["code"] == -32601
            await client.send_line('{"jsonrpc":"2.0","method":"ping"}')  # a notification: no answer
            wrong_types = await answer_to('{"jsonrpc":"2.0","id":"w","method":"ping","params":[1,2]}')
            assert wrong_types["error"]["code"] == -32602
            not_rpc = await answer_to('{"hello":"world"}')
            assert not_rpc["error"]["code"] == -32600
            assert await client.request("ping") == {}
            assert len(client.unmatched) == 7  # empty lines and the notification produced nothing
    assert client.returncode == 0


@pytest.mark.asyncio
async def test_shutdown_refuses_further_requests_and_exit_ends_with_code_0():
    with anyio.fail_after(30):
        async with SidecarClient.launch(cwd=ROOT, env=child_env()) as client:
            assert await client.request("shutdown") is None
            with pytest.raises(RemoteError) as after:
                await client.ping()
            await client.notify("exit")
            with anyio.fail_after(10):
                await client.process.wait()
    assert after.value.code == -32600
    assert client.returncode == 0
    assert "exit notification" in client.stderr_text()


@pytest.mark.asyncio
async def test_sigterm_cancels_in_flight_requests_after_the_grace_period_and_exits_0():
    with anyio.fail_after(30):
        async with SidecarClient.launch(server_argv("--grace", "0.2"), cwd=ROOT, env=child_env()) as client:
            await client.send_line('{"jsonrpc":"2.0","id":"t","method":"test/block","params":{"key":"k"}}')
            await client.ping()
            client.process.send_signal(signal.SIGTERM)
            answer = await client.next_unmatched()
            await client.process.wait()
    assert answer["id"] == "t" and answer["error"]["code"] == -32800
    assert client.returncode == 0
    assert "signal SIGTERM" in client.stderr_text()


FRONTEND = textwrap.dedent('''
    import sys, anyio
    from frontend_stub.client import SidecarClient
    async def main():
        async with SidecarClient.launch() as client:
            print(client.process.pid, flush=True)
            await anyio.sleep_forever()
    anyio.run(main)
''')


@pytest.mark.asyncio
async def test_sidecar_exits_on_its_own_when_the_frontend_is_killed():
    frontend = subprocess.Popen([sys.executable, "-c", FRONTEND], cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, text=True)
    try:
        sidecar_pid = int(frontend.stdout.readline())
        sidecar = psutil.Process(sidecar_pid)
        assert sidecar.is_running()
        frontend.kill()
        frontend.wait(timeout=10)
        assert sidecar.wait(timeout=20) == 0 or not psutil.pid_exists(sidecar_pid)
    finally:
        frontend.kill()
        frontend.wait()
    assert not psutil.pid_exists(sidecar_pid) or psutil.Process(sidecar_pid).status() == psutil.STATUS_ZOMBIE


def test_stdout_carries_nothing_but_protocol_messages():
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2026-11-01", "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "test/noisy"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines) + "garbage\n"
    proc = subprocess.run(server_argv(), input=stdin.encode(), capture_output=True, cwd=ROOT, env=child_env(), timeout=30)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.endswith("\n")
    messages = [json.loads(line) for line in out.splitlines()]
    assert all(m.get("jsonrpc") == "2.0" and "id" in m and ("result" in m or "error" in m) for m in messages)
    assert sorted(m["id"] for m in messages if m["id"] is not None) == [1, 2, 3]
    err = proc.stderr.decode()
    for noise in ("stray print from a handler", "from a shell child", "from a subprocess child"):
        assert noise in err and noise not in out
