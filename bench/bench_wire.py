"""Wire benchmarks: ping round trips, notification throughput, cold start and idle RSS of `python -m sidecar`, side by side with the MCP SDK's stdio server and a bare echo.

Run from the repository root:  .venv/bin/python bench/bench_wire.py
Every process is driven through real OS pipes by a blocking client in this process, so the client's own
cost is the same for every server and small (~20 µs per round trip, see the echo row).

Children start the way an installed sidecar does: with compiled bytecode. This environment sets
PYTHONDONTWRITEBYTECODE=1 and the checkout has no __pycache__, so each child gets a private bytecode cache
(PYTHONPYCACHEPREFIX, filled by one unmeasured start per server); a separate row shows the sidecar's
start without bytecode for its own sources (compiled at every start, as when run from this checkout).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

ECHO_SERVER = "import sys\nr, w = sys.stdin.buffer, sys.stdout.buffer\nwhile line := r.readline():\n    w.write(line); w.flush()\n"

SIDECAR_INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {"protocolVersion": "2026-11-01", "clientInfo": {"name": "bench", "version": "1"}}}
MCP_INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
MCP_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass(slots=True)
class Server:
    name: str
    argv: list[str]
    handshake: list[dict]  # sent first; lines with an id are answered


def servers() -> dict[str, Server]:
    return {
        # As the desktop shell launches it: no options (logs at INFO go to stderr, discarded here).
        "sidecar": Server("orion sidecar", [PY, "-m", "sidecar"], [SIDECAR_INIT]),
        "mcp": Server("MCP SDK stdio server", [PY, str(ROOT / "bench" / "mcp_ping_server.py")], [MCP_INIT, MCP_INITIALIZED]),
        "echo": Server("bare blocking echo", [PY, "-c", ECHO_SERVER], []),
    }


PYCACHE = Path(tempfile.gettempdir()) / f"orion-bench-pycache-{os.getuid()}"


def env(bytecode: bool = True) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH")]))
    if bytecode:
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        e["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    else:
        # Like this checkout: installed libraries have their bytecode, the project's own sources none.
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        e.pop("PYTHONPYCACHEPREFIX", None)
    return e


class Pipe:
    """A child on three pipes, driven synchronously: write a line, read a line."""

    def __init__(self, argv: list[str], *, bytecode: bool = True) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=ROOT, env=env(bytecode))
        assert self.proc.stdin and self.proc.stdout
        self.w, self.r = self.proc.stdin, self.proc.stdout

    def send(self, message: dict | bytes) -> None:
        self.w.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")
        self.w.flush()

    def handshake(self, lines: list[dict]) -> None:
        for message in lines:
            self.send(message)
            if "id" in message:
                self.r.readline()

    def close(self) -> None:
        self.w.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def bench_ping(table: dict[str, Server], count: int, *, rounds: int = 4, warmup: int = 1000) -> dict[str, dict[str, float]]:
    """Sequential pings to every server, taking turns: `rounds` rounds of count/rounds pings each.

    Each server gets a share of every stretch of the run, so a change in machine load during the run
    affects all of them instead of whichever happened to run then; the ratios are what this is for.
    """
    per_round = count // rounds
    pipes: dict[str, Pipe] = {}
    for key, server in table.items():
        pipe = Pipe(server.argv)
        pipe.handshake(server.handshake)
        for i in range(warmup):
            pipe.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
            pipe.r.readline()
        pipes[key] = pipe
    samples: dict[str, list[int]] = {key: [] for key in pipes}
    cpu: dict[str, float] = dict.fromkeys(pipes, 0.0)
    clock = time.perf_counter_ns
    for round_ in range(rounds):
        lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (warmup + round_ * per_round + i) for i in range(per_round)]
        for key, pipe in pipes.items():
            w, r, mine = pipe.w, pipe.r, samples[key]
            child = psutil.Process(pipe.proc.pid)
            before = child.cpu_times()
            for line in lines:
                start = clock()
                w.write(line)
                w.flush()
                r.readline()
                mine.append(clock() - start)
            after = child.cpu_times()
            cpu[key] += after.user + after.system - before.user - before.system
    for pipe in pipes.values():
        pipe.close()
    out = {}
    for key, mine in samples.items():
        mine.sort()
        out[key] = {"rps": len(mine) / (sum(mine) / 1e9), "p50_us": mine[len(mine) // 2] / 1e3,
                    "p99_us": mine[int(len(mine) * 0.99)] / 1e3, "cpu_us": cpu[key] / len(mine) * 1e6}
    return out


def _start_once(server: Server, bytecode: bool) -> tuple[float, float]:
    first = server.handshake[0] if server.handshake else {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    start = time.perf_counter()
    pipe = Pipe(server.argv, bytecode=bytecode)
    pipe.send(first)
    pipe.r.readline()
    elapsed = (time.perf_counter() - start) * 1e3
    used = psutil.Process(pipe.proc.pid).cpu_times()
    pipe.close()
    return elapsed, (used.user + used.system) * 1e3


def bench_cold_start(entries: dict[str, tuple[Server, bool]], runs: int) -> dict[str, tuple[float, float]]:
    """Per entry (server, with bytecode?): median ms from spawn to the initialize response, and median CPU ms
    the child used to get there. The entries take turns, start by start, like the pings.

    The CPU figure does not move with machine load the way wall time does.
    """
    for server, bytecode in entries.values():
        if bytecode:
            _start_once(server, bytecode)  # fills the bytecode cache; not counted
    times: dict[str, list[float]] = {key: [] for key in entries}
    cpu: dict[str, list[float]] = {key: [] for key in entries}
    for _ in range(runs):
        for key, (server, bytecode) in entries.items():
            elapsed, used = _start_once(server, bytecode)
            times[key].append(elapsed)
            cpu[key].append(used)
    return {key: (statistics.median(times[key]), statistics.median(cpu[key])) for key in entries}


def bench_idle_rss(server: Server, settle: float = 1.0) -> float:
    pipe = Pipe(server.argv)
    pipe.handshake(server.handshake)
    time.sleep(settle)  # idle means idle: let start-up garbage settle before reading RSS
    rss = psutil.Process(pipe.proc.pid).memory_info().rss / 2**20
    pipe.close()
    return rss


FLOOD_SERVER = """
import sys
from pydantic import BaseModel
from ipc import protocol as p
from sidecar.__main__ import main

class Flood(BaseModel):
    count: int

def setup(app):
    @app.method("bench/flood", Flood)
    async def flood(params, call):
        for i in range(params.count):
            await call.notify("log", p.LogEvent(level="info", logger="bench", message="event"))
        return {"sent": params.count}

sys.exit(main(["--log-level", "WARNING"], setup=setup))
"""


def bench_notifications(count: int) -> dict[str, float]:
    """Sidecar → frontend `log` events, each a fresh pydantic model, until the request that emitted them answers."""
    pipe = Pipe([PY, "-c", FLOOD_SERVER])
    pipe.handshake([SIDECAR_INIT])
    pipe.send({"jsonrpc": "2.0", "id": "warm", "method": "bench/flood", "params": {"count": 2000}})
    _read_lines(pipe, 2001)
    start = time.perf_counter()
    pipe.send({"jsonrpc": "2.0", "id": "flood", "method": "bench/flood", "params": {"count": count}})
    tail = _read_lines(pipe, count + 1)
    elapsed = time.perf_counter() - start
    pipe.close()
    assert json.loads(tail)["result"] == {"sent": count}, tail
    return {"per_s": count / elapsed, "seconds": elapsed}


def _read_lines(pipe: Pipe, lines: int) -> bytes:
    """Read exactly `lines` lines in large chunks (the frontend's side of a flood); returns the last one."""
    fd = pipe.r.fileno()
    seen, buf = 0, b""
    while seen < lines:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RuntimeError("sidecar closed its stdout")
        seen += chunk.count(b"\n")
        buf = (buf + chunk)[-4096:]
    return buf.rstrip(b"\n").rsplit(b"\n", 1)[-1]


def bench_stub_ping(count: int) -> dict[str, float]:
    """The same pings through frontend_stub's SidecarClient (anyio process streams, JsonRpcPeer on both ends)."""
    import anyio

    sys.path.insert(0, str(ROOT))
    from frontend_stub.client import SidecarClient

    async def run() -> list[int]:
        samples = []
        async with SidecarClient.launch(servers()["sidecar"].argv, cwd=ROOT, env=env()) as client:
            for i in range(500 + count):
                start = time.perf_counter_ns()
                await client.ping()
                if i >= 500:
                    samples.append(time.perf_counter_ns() - start)
        return samples

    samples = sorted(anyio.run(run))
    return {"rps": count / (sum(samples) / 1e9), "p50_us": samples[len(samples) // 2] / 1e3,
            "p99_us": samples[int(len(samples) * 0.99)] / 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=20_000)
    parser.add_argument("--notifications", type=int, default=200_000)
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--only", choices=["notifications", "ping", "start"], help="run one measurement (for profiling)")
    args = parser.parse_args()
    if args.only == "notifications":
        print(bench_notifications(args.notifications))
        return 0
    if args.only == "ping":
        print(bench_ping({"sidecar": servers()["sidecar"]}, args.pings)["sidecar"])
        return 0
    if args.only == "start":
        print(bench_cold_start({"sidecar": (servers()["sidecar"], True)}, args.starts)["sidecar"])
        return 0
    table = servers()
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; pings={args.pings} (4 alternating rounds) notifications={args.notifications} "
          f"starts={args.starts} (alternating)")

    ping = bench_ping(table, args.pings)
    start = bench_cold_start({"sidecar": (table["sidecar"], True), "mcp": (table["mcp"], True),
                              "sidecar_source": (table["sidecar"], False)}, args.starts)
    start_nocache = start["sidecar_source"]
    rss = {key: bench_idle_rss(server) for key, server in table.items() if key != "echo"}
    flood = bench_notifications(args.notifications)
    stub = bench_stub_ping(min(args.pings, 5000))

    print()
    print("| measure | orion sidecar | MCP SDK stdio server | sidecar ÷ MCP | bare echo | goal |")
    print("|---|---|---|---|---|---|")
    s, m, e = ping["sidecar"], ping["mcp"], ping["echo"]
    print(f"| sequential ping, round trips/s | {s['rps']:,.0f} | {m['rps']:,.0f} | {s['rps'] / m['rps']:.1f}× | {e['rps']:,.0f} | ≥ 5× MCP |")
    print(f"| ping p50 round trip | {s['p50_us']:.0f} µs | {m['p50_us']:.0f} µs | {m['p50_us'] / s['p50_us']:.1f}× faster | {e['p50_us']:.0f} µs | ≤ 150 µs |")
    print(f"| server CPU per ping (user+sys) | {s['cpu_us']:.0f} µs | {m['cpu_us']:.0f} µs | {m['cpu_us'] / s['cpu_us']:.1f}× less | {e['cpu_us']:.0f} µs | |")
    print(f"| ping p99 round trip | {s['p99_us']:.0f} µs | {m['p99_us']:.0f} µs | {m['p99_us'] / s['p99_us']:.1f}× faster | {e['p99_us']:.0f} µs | |")
    print(f"| cold start to initialize response (median of {args.starts}) | {start['sidecar'][0]:.0f} ms | {start['mcp'][0]:.0f} ms | "
          f"{start['mcp'][0] / start['sidecar'][0]:.1f}× faster | | ≤ 250 ms |")
    print(f"| same, project sources without bytecode (compiled at each start) | {start_nocache[0]:.0f} ms | | | | |")
    print(f"| CPU used by the child up to that response | {start['sidecar'][1]:.0f} ms | {start['mcp'][1]:.0f} ms | "
          f"{start['mcp'][1] / start['sidecar'][1]:.1f}× less | | |")
    print(f"| idle RSS after initialize | {rss['sidecar']:.1f} MB | {rss['mcp']:.1f} MB | | | ≤ 60 MB |")
    print(f"| notifications sidecar → frontend | {flood['per_s']:,.0f} /s | | | | ≥ 100,000 /s |")
    print(f"| ping through frontend_stub's SidecarClient | {stub['rps']:,.0f} /s, p50 {stub['p50_us']:.0f} µs | | | | (reference) |")
    print(f"\n# load at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
