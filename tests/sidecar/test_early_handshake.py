"""The early answer to `initialize` (sidecar/handshake.py): sent before the server is imported, it must be exactly
what the server itself answers, for every kind of first line, and it may only take the requests the server accepts.

The differential tests launch the real `python -m sidecar` twice per input, with the early path on and off, feed
both the same bytes and compare everything each wrote to stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ipc import protocol as p
from sidecar import handshake
from sidecar._handshake_result import RESULT

REPO = Path(__file__).resolve().parents[2]


def init(params: object, id_: object = 1, **extra: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params, **extra}).encode()


PLAIN = init({"protocolVersion": 1, "clientCapabilities": {}})
AFTER = b'{"jsonrpc":"2.0","id":99,"method":"session/list","params":{}}\n{"jsonrpc":"2.0","id":100,"method":"ping"}\n'

FIRST_LINES = {
    "plain": PLAIN + b"\n",
    "string id, client info with title, opted-in events": init(
        {"protocolVersion": 1, "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200"},
         "clientCapabilities": {"fs": {"readTextFile": True}, "terminal": True, "_meta": {"orion": {"events": True}}},
         "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}, "req-1") + b"\n",
    "an unsupported version": init({"protocolVersion": 7}) + b"\n",
    "crlf": PLAIN + b"\r\n",
    "a lone surrogate in the id": PLAIN.replace(b'"id": 1', b'"id": "\\ud800"') + b"\n",
    "Orion's date-string dialect": init({"protocolVersion": "2025-01-01", "clientInfo": {"name": "ui", "version": "1"}}) + b"\n",
    "version as a boolean": init({"protocolVersion": True}) + b"\n",
    "version as a string digit": init({"protocolVersion": "1"}) + b"\n",
    "version as a float": init({"protocolVersion": 1.0}) + b"\n",
    "no version": init({"clientCapabilities": {}}) + b"\n",
    "capabilities not an object": init({"protocolVersion": 1, "clientCapabilities": []}) + b"\n",
    "client info without version": init({"protocolVersion": 1, "clientInfo": {"name": "x"}}) + b"\n",
    "client info name not a string": init({"protocolVersion": 1, "clientInfo": {"name": 3, "version": "1"}}) + b"\n",
    "an extra top-level member": init({"protocolVersion": 1}, extra=True) + b"\n",
    "params as a list": init([1]) + b"\n",
    "a null id": init({"protocolVersion": 1}, None) + b"\n",
    "a boolean id": init({"protocolVersion": 1}, True) + b"\n",
    "ping first": b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
    "a batch": b"[" + PLAIN + b"]\n",
    "not JSON": b"hello\n",
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"initialize\xff"}\n',
    "a byte order mark": b"\xef\xbb\xbf" + PLAIN + b"\n",
    "a blank line first": b"\n" + PLAIN + b"\n",
    "a first line over the early path's limit": init(
        {"protocolVersion": 1, "_meta": {"pad": "x" * (handshake.READ_LIMIT + 10)}}) + b"\n",
    "two initializes": PLAIN + b"\n" + PLAIN.replace(b'"id": 1', b'"id": 2') + b"\n",
    "no newline before EOF": PLAIN,
}


def run(data: bytes, early: bool, tmp: Path, *args: str) -> list[object]:
    env = {**os.environ, "ORION_EARLY_HANDSHAKE": "1" if early else "0", "ORION_DATA_DIR": str(tmp / "data"),
           "HOME": str(tmp), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "sidecar", *args], input=data, capture_output=True, env=env,
                          cwd=REPO, timeout=90, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert b"differs from the server's" not in done.stderr and b"refuses the request" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("name", FIRST_LINES)
def test_every_first_line_gets_the_servers_own_answers(name: str, tmp_path: Path) -> None:
    data = FIRST_LINES[name] + (AFTER if FIRST_LINES[name].endswith(b"\n") else b"")
    late = run(data, False, tmp_path / "late")
    early = run(data, True, tmp_path / "early")
    assert early == late
    assert late, "the server answered nothing"


def test_a_handshake_over_the_servers_line_limit_is_the_servers_to_refuse(tmp_path: Path) -> None:
    data = init({"protocolVersion": 1, "_meta": {"pad": "x" * 300}}) + b"\n" + AFTER
    limits = ("--max-line-bytes", "200", "--max-batch-bytes", "200")
    late = run(data, False, tmp_path / "late", *limits)
    early = run(data, True, tmp_path / "early", *limits)
    assert early == late
    assert late[0]["error"]["code"] == -32700  # line too long: refused, not answered early


def test_the_fixed_result_is_the_servers_answer() -> None:
    assert json.loads(RESULT) == handshake.live_result(), \
        "sidecar/_handshake_result.py is stale: run `python -m sidecar.handshake --write`"


def test_the_early_answer_comes_before_the_server_is_imported(tmp_path: Path) -> None:
    # Answered with the other end still open and nothing else sent: the early path answered (the full server
    # would too, later); then what came before the answer on stderr shows nothing of the server was imported.
    env = {**os.environ, "ORION_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           "PYTHONVERBOSE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "sidecar"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(PLAIN + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["result"] == json.loads(RESULT)
        proc.stdin.close()
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    imports = [line for line in err.decode(errors="replace").splitlines() if line.startswith("import ")]
    first_heavy = next(i for i, line in enumerate(imports) if line.startswith(("import 'pydantic'", "import 'anyio'")))
    early_modules = {line.split("'")[1] for line in imports[:first_heavy] if "'" in line}
    assert "sidecar._handshake_result" in early_modules
    assert not {"asyncio", "pydantic", "anyio", "ipc.protocol"} & early_modules


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                           max_leaves=8)
param_keys = st.sampled_from(["protocolVersion", "clientCapabilities", "clientInfo", "_meta", "capabilities"])
params = st.dictionaries(param_keys, json_values | st.integers(), max_size=4) | st.fixed_dictionaries(
    {"protocolVersion": st.integers()},
    optional={"clientCapabilities": st.dictionaries(st.text(max_size=6), json_values, max_size=3),
              "clientInfo": st.fixed_dictionaries({"name": st.text(max_size=5), "version": st.text(max_size=5)},
                                                  optional={"title": st.none() | st.text(max_size=5) | st.integers()}),
              "_meta": st.dictionaries(st.text(max_size=6), json_values, max_size=3)})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=params, id_=st.integers() | st.text(max_size=4) | st.booleans() | st.none())
def test_the_early_path_takes_only_what_the_server_accepts(params: dict, id_: object) -> None:
    taken = handshake.plain_initialize(init(params, id_))
    if taken is None:
        return
    handshake_params = p.HandshakeParams.model_validate(taken[1])  # raises if the server would refuse it
    p.AcpInitializeParams.model_validate(handshake_params.model_dump(by_alias=True))


def test_ctrl_c_before_the_first_line_is_an_orderly_exit(tmp_path: Path) -> None:
    import signal
    import time

    env = {**os.environ, "ORION_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sidecar"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    try:
        # Waiting in the early read, nothing sent yet: its main thread blocked in read(0, ...), the one read of stdin
        # (x86-64 and arm64 number read 0 and 63; /proc/<pid>/syscall starts with the number, then the descriptor).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                call = Path(f"/proc/{proc.pid}/syscall").read_text().split()[:2]
            except OSError:
                call = []
            if call in (["0", "0x0"], ["63", "0x0"]):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the sidecar never waited in its early read")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert out == b"" and b"Traceback" not in err
