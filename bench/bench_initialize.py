"""Spawn → `initialize` answered, under load: `python -m sidecar` with its early answer (sidecar/handshake.py), without
it (`ORION_EARLY_HANDSHAKE=0`, the full server answers), and the Claude ACP adapter (node), side by side.

Run from the repository root (offline):
    .venv/bin/python bench/bench_initialize.py [--reps 15] [--load 3] [--session]

`--load N` starts N busy loops (one process each) for the whole run, so the load average climbs towards N; the load
average is printed before and after. `--session` also times spawn → `session/new` answered for a scripted session
(which the early answer does not change: the server's imports still come before it). Launches alternate between the
subjects; medians and p25–p75 are reported.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_binary  # noqa: E402  - its launch(): spawn, initialize, optionally a scripted session/new

ADAPTER_JS = ROOT / "bench" / "acp_node" / "node_modules" / "@zed-industries" / "claude-agent-acp" / "dist" / "index.js"


def _spin() -> None:
    while True:
        pass


def launch(subject: str, session: bool) -> tuple[float, float | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if subject == "adapter":
        return bench_binary.launch(["node", str(ADAPTER_JS)], ROOT, env, session=False)
    env["ORION_EARLY_HANDSHAKE"] = "1" if subject == "early" else "0"
    return bench_binary.launch([sys.executable, "-m", "sidecar"], ROOT, env, session=session)


def summary(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):.0f} ms ({q[0]:.0f}–{q[2]:.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--load", type=int, default=0, help="busy loops to run beside the launches")
    parser.add_argument("--session", action="store_true", help="also time spawn → session/new answered")
    args = parser.parse_args()
    subjects = ["early", "late"] + (["adapter"] if ADAPTER_JS.is_file() else [])
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for spinner in spinners:
        spinner.start()
    if spinners:
        time.sleep(60)  # let the 1-minute load average climb to about N
    load_before = os.getloadavg()
    results: dict[str, list[tuple[float, float | None]]] = {s: [] for s in subjects}
    try:
        for subject in subjects:  # warm-up: page cache and bytecode
            launch(subject, args.session)
        for rep in range(args.reps):
            for subject in subjects[rep % len(subjects):] + subjects[:rep % len(subjects)]:
                results[subject].append(launch(subject, args.session))
    finally:
        for spinner in spinners:
            spinner.terminate()
    load_after = os.getloadavg()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"{args.load} busy loops; load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} CPUs); {args.reps} launches each\n")
    names = {"early": "`python -m sidecar`, early answer", "late": "`python -m sidecar`, `ORION_EARLY_HANDSHAKE=0`",
             "adapter": "Claude ACP adapter (node)"}
    print("| subject | spawn → initialize answered, median (p25–p75) |" + (" spawn → session/new answered |" if args.session else ""))
    print("|---|---|" + ("---|" if args.session else ""))
    for subject in subjects:
        inits = [r[0] for r in results[subject]]
        row = f"| {names[subject]} | {summary(inits)} |"
        if args.session:
            news = [r[1] for r in results[subject] if r[1] is not None]
            row += f" {summary(news) if news else '–'} |"
        print(row)
    early, late = (statistics.median(r[0] for r in results[s]) for s in ("early", "late"))
    print(f"\nearly ÷ late: {early / late:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
