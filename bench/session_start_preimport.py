"""Session start with and without the background pre-import (sidecar/preimport.py), side by side in one run.

For each rep, in turn: spawn `python -m sidecar` → `initialize` answered → (idle gap) → `session/new` answered, on
the scripted model, with `ORION_PREIMPORT` on and off. With no gap the pre-import races the request (the cold path);
with a gap of a few seconds (a desktop app launches the sidecar long before the first prompt) it has finished.

Run: .venv/bin/python bench/session_start_preimport.py [REPS] [GAP_S]   (from the repository root; offline)
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from frontend_stub.client import SidecarClient  # noqa: E402

SCENARIO = ROOT / "examples" / "scenarios" / "basic.yaml"


async def one(preimport: bool, gap_s: float, work: Path) -> tuple[float, float]:
    """(spawn → initialize answered, idle-gap end → session/new answered) in seconds."""
    project = work / "project"
    project.mkdir(exist_ok=True)
    env = dict(os.environ, ORION_PREIMPORT="1" if preimport else "0", ORION_DATA_DIR=str(work / "data"),
               ORION_USER_SETTINGS=str(work / "none.json"), ORION_CLAUDE_USER_SETTINGS=str(work / "none-cc.json"),
               HOME=str(work / "home"))
    (work / "home").mkdir(exist_ok=True)
    t0 = time.perf_counter()
    async with SidecarClient.launch(env=env, cwd=str(ROOT)) as client:
        init = time.perf_counter() - t0
        await asyncio.sleep(gap_s)
        t1 = time.perf_counter()
        new = await client.request("session/new", {"projectDir": str(project), "model": f"scripted:{SCENARIO}"},
                                   timeout=120)
        start = time.perf_counter() - t1
        await client.request("session/end", {"sessionId": new["sessionId"]})
    return init, start


def med(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.0f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"


async def main(reps: int, gap_s: float) -> None:
    rows: dict[tuple[bool, float], list[tuple[float, float]]] = {}
    for _ in range(reps):
        for preimport in (False, True):
            for gap in (0.0, gap_s):
                work = Path(tempfile.mkdtemp(prefix="orion-bench-preimport-"))
                try:
                    rows.setdefault((preimport, gap), []).append(await one(preimport, gap, work))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    print(f"load average before/after: see below; reps={reps}, gap={gap_s}s")
    print(f"{'pre-import':>10} {'gap':>5}  {'spawn → initialize':>34}  {'session/new after the gap':>34}")
    for (preimport, gap), samples in sorted(rows.items()):
        inits, starts = [s[0] for s in samples], [s[1] for s in samples]
        print(f"{'on' if preimport else 'off':>10} {gap:>4.1f}s  {med(inits):>34}  {med(starts):>34}")


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    gap = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    print("load average:", os.getloadavg())
    asyncio.run(main(reps, gap))
    print("load average:", os.getloadavg())
