"""What outlives a sidecar killed with SIGKILL mid-turn: processes still alive 1 s and 5 s after the kill, and the CLI home left on disk.

    python bench/kill9_leftovers.py            # one run, a table on stdout
    python bench/kill9_leftovers.py --runs 3 --json

A real `python -m sidecar` runs a real session (scripted model, real CLI) on the
project of tests/security/lingering_project.py: the CLI has a background Bash
command running, a PostToolUse command hook holds with a grandchild (own session)
and a double-forked daemon, the warm python launcher is up, and a prompt hook's
evaluator CLI is streaming. Then the sidecar gets `kill -9`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import psutil  # noqa: E402

from frontend_stub.client import SidecarClient  # noqa: E402
from tests.security import lingering_project as lp  # noqa: E402

READY_TIMEOUT_S = 60.0


def describe(proc: psutil.Process) -> str:
    try:
        env = proc.environ()
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return "?"
    if "ORION_EVALUATOR_RUN" in env and "claude" in proc.name():
        return "evaluator CLI"
    if "launcher/child.py" in cmd:
        return "python launcher"
    if "linger.py" in cmd:
        return "command hook"
    if "claude" in proc.name():
        return "session CLI"
    if "sleep 120" in cmd or (proc.name() in ("sleep", "bash", "sh") and "120" in cmd):
        return "CLI's Bash command"
    if "time.sleep" in cmd:
        return "hook grandchild/daemon"
    if "reaper" in cmd or "watchdog" in cmd:
        return "orion watchdog"
    return proc.name()


def tree(root: psutil.Process, extra: list[int]) -> dict[int, tuple[psutil.Process, str]]:
    found: dict[int, tuple[psutil.Process, str]] = {}
    procs = list(root.children(recursive=True))
    for pid in extra:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            pass
    for proc in procs:
        found[proc.pid] = (proc, describe(proc))
    return found


def alive(procs: dict[int, tuple[psutil.Process, str]], skip: set[str]) -> list[str]:
    left = []
    for proc, label in procs.values():
        if label in skip:
            continue
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} {label}")
        except psutil.Error:
            pass
    return sorted(left)


def ready(root: psutil.Process, project: Path) -> bool:
    pids = lp.recorded_pids(project)
    if not pids.get("daemon"):
        return False
    labels = {label for _, label in tree(root, []).values()}
    return {"evaluator CLI", "python launcher", "command hook", "session CLI", "CLI's Bash command"} <= labels


async def one_run(workdir: Path) -> dict[str, Any]:
    data, logs = workdir / "data", workdir / "logs"
    project = lp.make_project(workdir)
    env = lp.env_for(data, logs, ROOT)
    async with SidecarClient.launch(env=env, cwd=str(ROOT), close_timeout=2.0) as client:
        client.default_permission = "allow_always"
        await client.request("hooks/trust", {"projectDir": str(project)})
        session = await client.request("session/new", lp.session_params(project), timeout=60)
        sid = session["sessionId"]
        root = psutil.Process(client.process.pid)
        async with anyio.create_task_group() as tg:
            async def prompt() -> None:
                try:
                    await client.request("session/prompt", {"sessionId": sid, "prompt": lp.PROMPT}, timeout=120)
                except Exception:
                    pass

            tg.start_soon(prompt)
            with anyio.fail_after(READY_TIMEOUT_S):
                while not ready(root, project):
                    await anyio.sleep(0.05)
            pids = lp.recorded_pids(project)
            procs = tree(root, [pids["daemon"], pids["grandchild"]])
            home = data / "cli-home" / sid
            counts = {"started": len(procs), "labels": sorted(label for _, label in procs.values())}
            os.kill(root.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            for mark in (1.0, 5.0):
                await anyio.sleep(max(0.0, killed_at + mark - time.monotonic()))
                counts[f"alive_{mark:g}s"] = alive(procs, skip={"orion watchdog"})
            counts["cli_home_left"] = home.exists()
            run_dir = data / "run"
            counts["runtime_records_left"] = sorted(p.name for p in run_dir.iterdir()) if run_dir.is_dir() else []
            tg.cancel_scope.cancel()
    for proc, _ in procs.values():  # whatever survived: do not leave it to the next run
        try:
            proc.kill()
        except psutil.Error:
            pass
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="orion-kill9-") as tmp:
            results.append(anyio.run(one_run, Path(tmp)))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for i, r in enumerate(results, 1):
        print(f"run {i}: {r['started']} processes started ({', '.join(r['labels'])})")
        print(f"  alive 1 s after kill -9: {len(r['alive_1s'])}  {r['alive_1s']}")
        print(f"  alive 5 s after kill -9: {len(r['alive_5s'])}  {r['alive_5s']}")
        print(f"  CLI home left: {r['cli_home_left']}; runtime records left: {r['runtime_records_left']}")
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
