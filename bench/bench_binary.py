"""The built sidecar (`./dev build`) against `python -m sidecar`, side by side in one run: cold start and size.

Run from the repository root (offline):
    ./dev build && .venv/bin/python bench/bench_binary.py [--exe dist/orion-sidecar-<triple>/orion-sidecar-<triple>] [--reps 9]

Per launch, alternating between the two: spawn → `initialize` answered, and spawn → `session/new` answered for a
scripted session (the CLI started, the built-in hooks loaded), each in a fresh data dir and HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bundle.build import target_triple  # noqa: E402


def launch(argv: list[str], cwd: Path, env: dict[str, str], session: bool = True) -> tuple[float, float | None]:
    """Spawn → `initialize` answered, and (with `session`) spawn → a scripted `session/new` answered, in ms."""
    project = Path(tempfile.mkdtemp(prefix="orion-bench-bin-"))
    home = project / "home"
    home.mkdir()
    env = {**env, "HOME": str(home), "ORION_DATA_DIR": str(project / "data")}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def call(i: int, method: str, params: dict) -> dict:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        proc.stdin.flush()
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") == i:
                if "error" in message:
                    raise SystemExit(f"{argv[0]}: {method} failed: {message['error']}")
                return message

    try:
        call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        initialized = (time.perf_counter() - started) * 1000
        if not session:
            return initialized, None
        call(2, "session/new", {"cwd": str(project), "mcpServers": [], "_meta": {"orion": {"model": "scripted:demo"}}})
        return initialized, (time.perf_counter() - started) * 1000
    finally:
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def size_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    name = f"orion-sidecar-{target_triple()}"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exe", type=Path, default=ROOT / "dist" / name / name)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANTHROPIC_API_KEY")}
    subjects = {
        "built executable": ([str(args.exe)], Path(tempfile.gettempdir()), env),
        "python -m sidecar (venv)": ([str(ROOT / ".venv" / "bin" / "python"), "-m", "sidecar"], ROOT, env),
    }
    load = os.getloadavg()
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in subjects}
    for _ in range(args.reps + 1):  # the first round warms the page cache for both
        for label, (argv, cwd, subject_env) in subjects.items():
            results[label].append(launch(argv, cwd, subject_env))
    print(f"load average {' '.join(f'{x:.2f}' for x in load)} → {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.reps} launches each after one warm-up, alternating\n")
    print("| subject | spawn → initialize (median, p25–p75) | spawn → session/new (median, p25–p75) |")
    print("|---|---|---|")
    medians = {}
    for label, samples in results.items():
        init = sorted(s[0] for s in samples[1:])
        new = sorted(s[1] for s in samples[1:])
        q = lambda xs: f"{statistics.median(xs):.0f} ms ({xs[len(xs) // 4]:.0f}–{xs[(3 * len(xs)) // 4]:.0f})"  # noqa: E731
        medians[label] = (statistics.median(init), statistics.median(new))
        print(f"| {label} | {q(init)} | {q(new)} |")
    (bi, bn), (pi, pn) = medians["built executable"], medians["python -m sidecar (venv)"]
    print(f"| built ÷ python | {bi / pi:.2f} | {bn / pn:.2f} |")
    out = args.exe.parent
    cli = next(out.rglob("claude_agent_sdk/_bundled/claude"))
    print(f"\nsize of {out.name}/: {size_mib(out):.0f} MiB, of which the Claude Code CLI {cli.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
