"""The sidecar's resident memory while idle: launch, `initialize`, wait, read RSS (the background pre-import done).

Run from the repository root: .venv/bin/python bench/idle_rss.py [ROOT ...]   (each ROOT a checkout or snapshot
with .venv; default: this one). Three runs per root, alternating, so load moves them alike.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

WAIT_S = 4.0


def idle_rss(root: Path) -> float:
    proc = subprocess.Popen([str(root / ".venv" / "bin" / "python"), "-m", "sidecar"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n')
    proc.stdin.flush()
    proc.stdout.readline()
    time.sleep(WAIT_S)
    rss = psutil.Process(proc.pid).memory_info().rss / 2**20
    proc.stdin.close()
    proc.wait(10)
    return rss


def main() -> None:
    roots = [Path(p) for p in sys.argv[1:]] or [Path(__file__).resolve().parents[1]]
    for _ in range(3):
        for root in roots:
            print(f"{root}: idle RSS {idle_rss(root):.1f} MiB")


if __name__ == "__main__":
    main()
