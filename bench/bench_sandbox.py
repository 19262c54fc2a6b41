"""What confinement costs a session start: cli_exec.sh in front of the CLI, and the one-off bubblewrap probe.

    python bench/bench_sandbox.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sidecar import sandbox  # noqa: E402
from sidecar.agent import CLI_EXEC  # noqa: E402


def spawn_ms(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    true = shutil.which("true") or "/bin/true"
    keep = " ".join(sorted({*os.environ, "CLAUDE_CODE_ENTRYPOINT", "PWD"}))
    env = {**os.environ, "ORION_CLI_EXEC_REAL": true, "ORION_CLI_ENV_KEEP": keep}
    for label, argv in (("direct", [true]), ("cli_exec.sh", [str(CLI_EXEC)])):
        times = spawn_ms(argv, env, args.runs)
        print(f"{label:12s} p50 {statistics.median(times):6.2f} ms  p90 {sorted(times)[int(len(times) * 0.9)]:6.2f} ms"
              f"  ({len(os.environ)} variables named)")
    started = time.perf_counter()
    problem = sandbox.backend_problem(os.environ.get("PATH"))
    first = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    sandbox.backend_problem(os.environ.get("PATH"))
    again = (time.perf_counter() - started) * 1000
    print(f"backend check: first {first:.2f} ms (bwrap probe), cached {again:.3f} ms; problem: {problem}")


if __name__ == "__main__":
    main()
