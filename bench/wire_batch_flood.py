"""One 15 MiB JSON-RPC batch against a real `python -m sidecar`: peak RSS of the sidecar, when a ping sent right behind the batch is answered, and when (and how) the batch itself is answered.

    python bench/wire_batch_flood.py                 # 15 MiB batch of pings
    python bench/wire_batch_flood.py --mib 4 --json

The frontend side is a raw pipe client (no JsonRpcPeer): it writes the batch line
and a ping line back to back, then reads lines, noting the arrival of each answer.
Peak RSS is the sidecar's VmHWM from /proc, read just before it is told to exit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def vm_hwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def ping_batch(target_bytes: int, prefix: bytes = b"") -> bytes:
    """A batch of pings of about `target_bytes`, as one wire line without its newline (tests/security uses it too)."""
    members, size, i = [], 2, 0
    while size < target_bytes:
        member = b'{"jsonrpc":"2.0","method":"ping","id":%d}' % i
        members.append(member)
        size += len(member) + 1
        i += 1
    return prefix + b"[" + b",".join(members) + b"]"


def run(mib: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "sidecar"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=ROOT, bufsize=0)
    assert proc.stdin and proc.stdout
    out = proc.stdout
    proc.stdin.write(b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2026-11-01","clientInfo":{"name":"bench","version":"0"}}}\n')
    out.readline()
    rss_idle = vm_hwm_kib(proc.pid)
    batch = ping_batch(int(mib * 1024 * 1024)) + b"\n"
    arrivals: dict[str, float] = {}
    batch_answer: dict[str, Any] = {}

    def reader() -> None:
        while True:
            line = out.readline()
            if not line:
                return
            now = time.monotonic()
            if line.startswith(b"["):
                arrivals.setdefault("batch", now)
                batch_answer["members"] = line.count(b'"jsonrpc"')
            elif b'"probe"' in line:
                arrivals.setdefault("ping", now)
            elif b'"id":null' in line and b'"error"' in line:
                arrivals.setdefault("batch", now)
                batch_answer["error"] = json.loads(line)["error"]
            if "ping" in arrivals and "batch" in arrivals:
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    started = time.monotonic()
    proc.stdin.write(batch)
    written = time.monotonic()
    proc.stdin.write(b'{"jsonrpc":"2.0","id":"probe","method":"ping"}\n')
    thread.join(120)
    rss_peak = vm_hwm_kib(proc.pid)
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"exit"}\n')
    proc.stdin.close()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    return {
        "batch_bytes": len(batch),
        "batch_members": batch.count(b'"jsonrpc"'),
        "write_s": round(written - started, 3),
        "ping_answered_s": round(arrivals["ping"] - written, 3) if "ping" in arrivals else None,
        "batch_answered_s": round(arrivals["batch"] - written, 3) if "batch" in arrivals else None,
        "ping_before_batch": arrivals.get("ping", 1e18) < arrivals.get("batch", 1e18),
        "batch_answer": batch_answer,
        "rss_idle_mib": round(rss_idle / 1024, 1),
        "rss_peak_mib": round(rss_peak / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=15.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.mib)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")
        print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
