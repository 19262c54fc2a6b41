"""What a hook costs inside the session's boundary (sidecar/hook_box.py) against the same hook outside, in one run.

Each subject runs the same `command` hook (`/bin/sh -c 'cat >/dev/null; echo ok'`, reading its payload) through
the real command executor (hooks/executors/command.py), alternating boxed and unboxed runs so that load drifts
hit both alike; the boxed one is started by the session's hook box (its spawner, inside bubblewrap with the
session's plan; the box itself comes up once, in the warm-up, and its start is timed apart). Also a `python`
hook: the sidecar's shared warm launcher outside, the box's warm launcher inside.

    .venv/bin/python -m bench.bench_hook_box [--runs 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hooks.executors.command import CommandExecutor
from hooks.executors.python import PythonExecutor
from hooks.types import HookCall, HookContext, SessionContext, no_progress
from sidecar import sandbox
from sidecar.hook_box import HookBox


def _call(spec: Any, session: SessionContext) -> HookCall:
    ctx = HookContext(session=session, event="PreToolUse", hook_name=spec.name, execution_id="bench",
                      tool_use_id="t1", deadline=0.0, log=__import__("logging").getLogger("bench"))
    payload = {"hook_event_name": "PreToolUse", "session_id": "bench", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "cwd": str(session.project_dir)}
    return HookCall(hook=spec, event="PreToolUse", payload=payload, context=ctx, timeout_s=30.0,
                    progress=no_progress)


def p50_p90(times: list[float]) -> str:
    ordered = sorted(times)
    return f"p50 {statistics.median(ordered):7.2f} ms  p90 {ordered[int(len(ordered) * 0.9) - 1]:7.2f} ms"


async def main_async(runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench_hook_box_", dir="/var/tmp"))
    try:
        project = root / "project"
        (project / ".claude" / "hooks").mkdir(parents=True)
        (project / ".claude" / "hooks" / "probe.py").write_text("def run(payload):\n    return None\n")
        data = root / "data"
        env = {"HOME": str(root), "PATH": os.environ["PATH"]}
        status = sandbox.decide("auto", os.environ["PATH"], (), project=project, cli_env=env, orion_dirs=[data])
        if status.boundary is None:
            print(f"no boundary here: {status.reason}")
            return
        box = HookBox(status.boundary, lambda: False, {"project"})
        command = SimpleNamespace(name="bench", source="project", argv=None, shell=None,
                                  command="cat >/dev/null; echo ok", config=SimpleNamespace(command=""), cwd=None,
                                  env=None)
        python = SimpleNamespace(name="bench-py", source="project", script=str(project / ".claude/hooks/probe.py"),
                                 config=None, cwd=None, env=None)
        outside = SessionContext(session_id="bench", project_dir=project)
        inside = SessionContext(session_id="bench", project_dir=project, box=box)
        commands, pythons = CommandExecutor(), PythonExecutor()
        times: dict[str, list[float]] = {k: [] for k in ("command outside", "command boxed", "python outside",
                                                         "python boxed")}
        for executor, spec, kind in ((commands, command, "command"), (pythons, python, "python")):
            for session in (outside, inside):  # warm both (the box's folder, relay and spawner, a launcher)
                started = time.perf_counter()
                report = await executor.run(_call(spec, session))
                assert report.status == "ok" and not report.exit_code, report
                if kind == "command" and session is inside:
                    print(f"the hook box's start with its first hook: {(time.perf_counter() - started) * 1000:.1f} ms")
            for _ in range(runs):
                for label, session in ((f"{kind} outside", outside), (f"{kind} boxed", inside)):
                    started = time.perf_counter()
                    report = await executor.run(_call(spec, session))
                    times[label].append((time.perf_counter() - started) * 1000)
                    assert report.status == "ok" and not report.exit_code, report
        await commands.aclose()
        await pythons.aclose()
        await box.aclose()
        print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
        for label, values in times.items():
            print(f"{label:16s} {p50_p90(values)}   ({len(values)} runs)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    print(f"command: .venv/bin/python -m bench.bench_hook_box --runs {args.runs}")
    print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    asyncio.run(main_async(args.runs))


if __name__ == "__main__":
    main()
