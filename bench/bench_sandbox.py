"""What the session's OS boundary costs: Orion with the boundary, Orion unconfined, the bare CLI and the bare CLI with its
own per-command sandbox, side by side in one run (issue 24), then the boundary's own pieces.

    .venv/bin/python bench/bench_sandbox.py [--reps 7] [--turns 3] [--micro-runs 50] [--json out.json]

Part 1 runs bench/bench_acp.py's harness (the same scripted model server, ACP client, checks and medians; see its
docstring) on four subjects, in round-robin after one uncounted warm-up round:

* ``ours``: ``python -m sidecar``, the defaults: built-in hooks on, the session's OS boundary (bubblewrap around the
  whole CLI, no per-command sandbox);
* ``ours-unconfined``: the same with ``sandbox: "off"`` (built-in hooks still on): the boundary's cost is
  ``ours − ours-unconfined``;
* ``bare-cli``: the bundled CLI alone in stream-json mode;
* ``bare-cli-sandbox``: the same with the CLI's own per-command sandbox on (bubblewrap + socat per Bash command),
  as Orion ran it before the boundary.

Goals: the boundary adds ≤ 10 ms to a Bash turn and ≤ 50 ms to session start over ``ours-unconfined``.

Part 2 times the boundary's pieces alone: the plan (sidecar/boundary.py, stat calls), opening a box (its folder,
argument file, the relays' unix sockets) and closing it, bubblewrap with a session's real arguments starting
``date`` through box_init.sh against a bare spawn (spawn to the program running), a minimal box with and without a
network namespace, and cli_exec.sh in front of the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import bench_acp as acp  # noqa: E402

from sidecar import boundary, sandbox  # noqa: E402
from sidecar.agent import CLI_EXEC  # noqa: E402

SUBJECTS = ("ours", "ours-unconfined", "bare-cli", "bare-cli-sandbox")
LABELS = {
    "ours": "ours, the OS boundary (default)",
    "ours-unconfined": "ours, `sandbox: \"off\"` (unconfined)",
    "bare-cli": "bare CLI (stream-json)",
    "bare-cli-sandbox": "bare CLI, its own per-command sandbox",
}
RATIOS = [
    ("ours", "ours-unconfined", "ours with the boundary ÷ ours unconfined"),
    ("ours", "bare-cli", "ours with the boundary ÷ bare CLI"),
    ("ours", "bare-cli-sandbox", "ours with the boundary ÷ bare CLI with its own sandbox"),
    ("bare-cli-sandbox", "bare-cli", "the CLI's own sandbox ÷ bare CLI"),
]
DIFFS = [
    ("ours", "ours-unconfined", "the boundary: ours − ours unconfined"),
    ("bare-cli-sandbox", "bare-cli", "the CLI's own sandbox: bare with it − bare"),
]
DIFF_METRICS = [("start_ms", "session start"), ("first_request_ms", "spawn → first model request"),
                ("text_ms", "warm text turn"), ("bash_ms", "warm Bash turn")]


def _acp_command(original):  # type: ignore[no-untyped-def]
    def command(subject: str, cli: Path):  # type: ignore[no-untyped-def]
        if subject != "ours-unconfined":
            return original(subject, cli)
        argv, extra, meta = original("ours", cli)
        meta["orion"]["sandbox"] = "off"
        return argv, extra, meta
    return command


def diff_table(summary: dict) -> str:  # type: ignore[type-arg]
    lines = ["| difference of medians | " + " | ".join(name for _, name in DIFF_METRICS) + " |",
             "|" + "---|" * (1 + len(DIFF_METRICS))]
    for a, b, name in DIFFS:
        if a in summary and b in summary:
            cells = [f"{summary[a]['median'][k] - summary[b]['median'][k]:+.0f} ms" for k, _ in DIFF_METRICS]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def timed(fn, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def p50_p90(times: list[float]) -> str:
    ordered = sorted(times)
    return f"p50 {statistics.median(ordered):6.2f} ms  p90 {ordered[int(len(ordered) * 0.9)]:6.2f} ms"


def micro(runs: int) -> None:
    """The boundary's pieces, one at a time, on a throwaway home and project shaped like a scripted session's."""
    root = Path(tempfile.mkdtemp(prefix="bench_box_"))
    try:
        home, project = root / "home", root / "project"
        data = home / ".local" / "share" / "orion"
        cli_home = data / "cli-home" / "s1"
        for path in (project, cli_home / ".claude", home / ".ssh", home / ".aws", home / ".config" / "orion"):
            path.mkdir(parents=True)
        (home / ".netrc").write_text("machine x login y password z\n")
        env = {"HOME": str(cli_home), "CLAUDE_CONFIG_DIR": str(cli_home / ".claude"), "PATH": os.environ["PATH"],
               "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
        orion = [data, home / ".config" / "orion"]
        started = time.perf_counter()
        problem = sandbox.backend_problem(os.environ.get("PATH"))
        print(f"bwrap probe, once per process: {(time.perf_counter() - started) * 1000:.2f} ms; problem: {problem}")
        started = time.perf_counter()
        status = sandbox.decide("auto", os.environ.get("PATH"), (), project=project, cli_env=env, orion_dirs=orion)
        print(f"decide (probe cached, plan included): {(time.perf_counter() - started) * 1000:.2f} ms")
        if status.boundary is None:
            return
        print(f"plan:                {p50_p90(timed(lambda: boundary.plan(project, env, orion_dirs=orion, home=home), runs))}")
        print(f"open + close a box:  {p50_p90(timed(lambda: status.boundary.open().close(), runs))}")
        true = shutil.which("true") or "/bin/true"
        date = shutil.which("date") or "/bin/date"
        print(f"spawn `true`:        {p50_p90(timed(lambda: subprocess.run([true], check=True), runs))}")

        def started_after(argv: list[str], env: dict[str, str] | None = None) -> float:
            """From spawn to the first program inside running (it prints the wall clock in ns)."""
            before = time.time_ns()
            out = subprocess.run(argv, env=env, check=True, cwd=project, capture_output=True, text=True).stdout
            return (int(out.split()[-1]) - before) / 1e6

        bare, boxed, unshielded = [], [], []
        plain = dataclasses.replace(status.boundary, shield="")
        for _ in range(runs):
            bare.append(started_after([date, "+%s%N"]))
            for subject, times in ((status.boundary, boxed), (plain, unshielded)):
                box = subject.open()
                try:
                    env_box = {**os.environ, **box.launch_env(), "ORION_CLI_EXEC_REAL": date,
                               "ORION_CLI_ENV_KEEP": "PATH"}
                    times.append(started_after([str(CLI_EXEC), "+%s%N"], env_box))
                finally:
                    box.close()
        print(f"spawn → `date` running, bare:  {p50_p90(bare)}")
        print(f"spawn → `date` running inside a box (cli_exec.sh, bwrap, box_init.sh starting the proxy relay, the "
              f"CLI's shield preloaded: {bool(status.boundary.shield)}): {p50_p90(boxed)}")
        print(f"the same without the shield: {p50_p90(unshielded)}")
        # The network namespace's own price: the same minimal box running `true`, with and without one.
        bwrap = shutil.which("bwrap") or "bwrap"
        minimal = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--as-pid-1",
                   "--die-with-parent"]
        for label, extra in (("without", []), ("with", ["--unshare-net"])):
            times = timed(lambda: subprocess.run([*minimal, *extra, true], check=True), runs)
            print(f"bwrap `true`, {label} a network namespace: {p50_p90(times)}")
        keep = " ".join(sorted({*os.environ, "CLAUDE_CODE_ENTRYPOINT", "PWD"}))
        env_exec = {**os.environ, "ORION_CLI_EXEC_REAL": true, "ORION_CLI_ENV_KEEP": keep}
        print(f"cli_exec.sh alone:   {p50_p90(timed(lambda: subprocess.run([str(CLI_EXEC)], env=env_exec, check=True), runs))}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--micro-runs", type=int, default=50)
    parser.add_argument("--only", help="comma-separated subset of " + ",".join(SUBJECTS))
    parser.add_argument("--json")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-sessions", action="store_true", help="part 2 only")
    args = parser.parse_args()
    print("command: .venv/bin/python bench/bench_sandbox.py " + " ".join(sys.argv[1:]))
    code = 0
    if not args.no_sessions:
        acp.SUBJECTS = SUBJECTS
        acp.LABELS.update(LABELS)
        acp.RATIOS[:] = RATIOS
        acp.acp_command = _acp_command(acp.acp_command)
        captured: dict = {}  # type: ignore[type-arg]
        summarize = acp.summarize

        def keep_summary(runs, subjects):  # type: ignore[no-untyped-def]
            captured.update(summarize(runs, subjects))
            return captured

        acp.summarize = keep_summary
        ns = argparse.Namespace(reps=args.reps, turns=args.turns, only=args.only or ",".join(SUBJECTS),
                                no_adapter_own_cli=True, idle=0.0, baseline_root=None, json=args.json,
                                sidecar_root=None, keep=args.keep)
        code = asyncio.run(acp.main_async(ns))
        print()
        print(diff_table(captured))
        print()
    load = os.getloadavg()
    print(f"part 2, the boundary's pieces (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}):")
    micro(args.micro_runs)
    return code


if __name__ == "__main__":
    sys.exit(main())
