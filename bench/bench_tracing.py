"""Hook dispatch with tracing off against the code before tracing existed, and with tracing on, side by side.

Run from the repository root:
    git archive <commit before tracing> | tar -x -C /tmp/orion-before
    .venv/bin/python bench/bench_tracing.py --before /tmp/orion-before [--rounds 7]

Each measurement is a fresh interpreter importing the hook engine from one tree (this one, or --before), firing
PreToolUse with 10 trivial programmatic hooks on one session many times; per-hook cost = (t(10) - t(0)) / 10. The
trees alternate round by round, so machine load moves them alike. Goal (issue 16): tracing off within 5 % of before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import asyncio, json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
mode = sys.argv[2]
tmp = Path(tempfile.mkdtemp())
os.environ.update(ORION_DATA_DIR=str(tmp / "d"), ORION_USER_SETTINGS=str(tmp / "u.json"),
                  ORION_CLAUDE_USER_SETTINGS=str(tmp / "c.json"))
from hooks.hookset import load_hookset
from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.types import SessionContext
payload = {"session_id": "b", "hook_event_name": "PreToolUse", "cwd": str(tmp), "tool_name": "Bash",
           "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
async def main():
    out = {}
    for n in (0, 10):
        reg = HookRegistry()
        for i in range(n):
            async def fn(inp, ctx):
                return None
            reg.register("PreToolUse", fn, name=f"h{i}", matcher="Bash")
        runner = HookRunner(load_hookset(tmp, registry=reg))
        session = SessionContext("b", tmp)
        if mode == "on":
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
            from hooks import tracing
            tracing.configure(env={}, exporter=InMemorySpanExporter())
            trace = tracing.start_session(session.state, "b", {})
            trace.start_turn("x"); trace.start_tool("toolu_1", "Bash")
        for _ in range(300):
            await runner.fire("PreToolUse", payload, session, tool_use_id="toolu_1")
        best = None
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(400):
                await runner.fire("PreToolUse", payload, session, tool_use_id="toolu_1")
            per = (time.perf_counter() - t0) / 400
            best = per if best is None else min(best, per)
        out[n] = best * 1e6
        await runner.aclose()
    print(json.dumps({"per_hook_us": (out[10] - out[0]) / 10, "fire0_us": out[0]}))
asyncio.run(main())
'''


def measure(root: Path, mode: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "ORION_TRACING"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), mode], capture_output=True, text=True, env=env,
                          timeout=300, cwd=root)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout)["per_hook_us"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a tree of the code before tracing")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    subjects = {"before (no tracing code)": (args.before, "off"), "now, tracing off": (ROOT, "off"),
                "now, tracing on (in-memory exporter)": (ROOT, "on")}
    load = os.getloadavg()
    samples: dict[str, list[float]] = {k: [] for k in subjects}
    for _ in range(args.rounds):
        for label, (root, mode) in subjects.items():
            samples[label].append(measure(root, mode))
    print(f"load average {' '.join(f'{x:.2f}' for x in load)} → {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.rounds} rounds, alternating\n")
    print("| subject | per programmatic hook, median µs (min–max) | ÷ before |")
    print("|---|---|---|")
    base = statistics.median(samples["before (no tracing code)"])
    for label, xs in samples.items():
        print(f"| {label} | {statistics.median(xs):.2f} ({min(xs):.2f}–{max(xs):.2f}) | {statistics.median(xs) / base:.3f} |")


if __name__ == "__main__":
    main()
