"""Hook engine benchmarks: programmatic dispatch overhead, command hook vs a raw spawn, warm Python hook vs a cold interpreter.

Run from the repository root:  .venv/bin/python bench/bench_hooks.py
Each comparison is measured side by side in the same run (interleaved), and the
median is reported, so machine load moves both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hooks.hookset import load_hookset  # noqa: E402
from hooks.registry import HookRegistry  # noqa: E402
from hooks.runner import HookRunner  # noqa: E402
from hooks.trust import TrustStore  # noqa: E402
from hooks.types import SessionContext  # noqa: E402

PAYLOAD = {
    "session_id": "bench",
    "hook_event_name": "PreToolUse",
    "cwd": "/tmp",
    "tool_name": "Bash",
    "tool_input": {"command": "ls -la"},
    "tool_use_id": "toolu_bench",
}


def _isolate(tmp: Path) -> None:
    # Never touch the real user's trust store, settings or data.
    os.environ["ORION_DATA_DIR"] = str(tmp / "data")
    os.environ["ORION_USER_SETTINGS"] = str(tmp / "user-settings.json")
    os.environ["ORION_CLAUDE_USER_SETTINGS"] = str(tmp / "no-claude-user-settings.json")


def _project(tmp: Path, hooks: dict | None) -> Path:
    proj = tmp / f"proj-{len(list(tmp.iterdir()))}"
    (proj / ".claude" / "hooks").mkdir(parents=True)
    if hooks is not None:
        (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        TrustStore().trust(proj)
    return proj


async def bench_dispatch(tmp: Path, iterations: int) -> list[tuple[int, float, float]]:
    """Mean fire() time with N trivial programmatic hooks; per-hook overhead = (t(N) - t(0)) / N."""
    proj = _project(tmp, None)
    session = SessionContext("bench", proj)
    rows = []
    base = None
    for n in (0, 1, 10, 100):
        reg = HookRegistry()
        for i in range(n):
            async def fn(inp, ctx):
                return None
            reg.register("PreToolUse", fn, name=f"h{i}", matcher="Bash")
        runner = HookRunner(load_hookset(proj, registry=reg))
        iters = max(200, iterations * 20 // max(n, 1))
        for _ in range(50):
            await runner.fire("PreToolUse", PAYLOAD, session)
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                await runner.fire("PreToolUse", PAYLOAD, session)
            samples.append((time.perf_counter() - t0) / iters)
        await runner.aclose()
        per_fire = min(samples)
        if base is None:
            base = per_fire
        rows.append((n, per_fire * 1e6, ((per_fire - base) / n * 1e6) if n else 0.0))
    return rows


async def bench_command(tmp: Path, iterations: int, *, moved: bool) -> tuple[float, float, float]:
    """One `true` command hook through fire() vs subprocess.run of the same command with the same stdin.

    `moved`: the agent has `cd`'d out of the project (the payload's cwd is /tmp), so the hook runs there and its
    files are checked against the reviewed ones on every run; otherwise the agent is in the project (the usual case).
    """
    command = "true"
    proj = _project(tmp, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]})
    runner = HookRunner(load_hookset(proj, registry=HookRegistry()))
    session = SessionContext("bench", proj)
    payload = PAYLOAD if moved else {**PAYLOAD, "cwd": str(proj)}
    data = json.dumps(payload).encode()
    ours, raw, araw = [], [], []
    for i in range(iterations + 10):
        t0 = time.perf_counter()
        agg = await runner.fire("PreToolUse", payload, session)
        t1 = time.perf_counter()
        subprocess.run(["/bin/sh", "-c", command], input=data, capture_output=True, cwd=proj)
        t2 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=proj,
        )
        await proc.communicate(data)
        t3 = time.perf_counter()
        assert agg.results and agg.results[0].outcome == "success", agg.results
        if i >= 10:
            ours.append(t1 - t0)
            raw.append(t2 - t1)
            araw.append(t3 - t2)
    await runner.aclose()
    o, r, a = (statistics.median(x) * 1e3 for x in (ours, raw, araw))
    return o, r, a


HOOK_SOURCE = '''
import json
def run(payload):
    cmd = payload["tool_input"]["command"]
    if "rm -rf" in cmd:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

if __name__ == "__main__":
    import sys
    print(json.dumps(run(json.load(sys.stdin))))
'''


async def bench_python(tmp: Path, iterations: int) -> tuple[float, float, float]:
    """A Python hook through the warm launcher vs `python hook.py` (cold interpreter) on the same payload."""
    proj = _project(tmp, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "python", "script": "gate.py"}]}]})
    script = proj / ".claude" / "hooks" / "gate.py"
    script.write_text(HOOK_SOURCE)
    TrustStore().trust(proj)
    runner = HookRunner(load_hookset(proj, registry=HookRegistry()))
    session = SessionContext("bench", proj)
    data = json.dumps(PAYLOAD).encode()
    warm, cold = [], []
    for i in range(iterations + 5):
        t0 = time.perf_counter()
        agg = await runner.fire("PreToolUse", PAYLOAD, session)
        t1 = time.perf_counter()
        out = subprocess.run([sys.executable, str(script)], input=data, capture_output=True, cwd=proj)
        t2 = time.perf_counter()
        assert agg.decision == "allow", agg.results
        assert b"allow" in out.stdout
        if i >= 5:
            warm.append(t1 - t0)
            cold.append(t2 - t1)
    await runner.aclose()
    w, c = statistics.median(warm) * 1e3, statistics.median(cold) * 1e3
    return w, c, c / w


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        _isolate(tmp)
        dispatch = await bench_dispatch(tmp, args.iterations)
        commands = [(label, await bench_command(tmp, args.iterations, moved=moved))
                    for label, moved in (("agent in the project", False), ("agent after `cd /tmp`", True))]
        python = await bench_python(tmp, max(30, args.iterations // 4))
    print("### Programmatic hook dispatch (PreToolUse, trivial async hooks, tracking on, no observer)\n")
    print("| hooks | fire() µs | per hook µs (vs 0 hooks) |")
    print("|---:|---:|---:|")
    for n, per_fire, per_hook in dispatch:
        print(f"| {n} | {per_fire:.1f} | {per_hook:.1f} |" if n else f"| {n} | {per_fire:.1f} | – |")
    print("\n### Command hook vs raw spawn (`true`, payload on stdin, medians, interleaved)\n")
    print("| case | fire() with 1 command hook | subprocess.run (blocking) | ratio | asyncio.create_subprocess_exec | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, (o, r, a) in commands:
        print(f"| {label} | {o:.2f} ms | {r:.2f} ms | {o / r:.2f}× | {a:.2f} ms | {o / a:.2f}× |")
    w, c, speedup = python
    print("\n### Python hook: warm launcher vs cold `python hook.py` (medians)\n")
    print("| warm (fire() through the launcher) | cold interpreter | speed-up |")
    print("|---:|---:|---:|")
    print(f"| {w:.2f} ms | {c:.2f} ms | {speedup:.1f}× |")
    # Other work on the machine moves every figure; say how busy it was.
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in load_before)} at the start, "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end ({os.cpu_count()} cores)")


if __name__ == "__main__":
    asyncio.run(main())
