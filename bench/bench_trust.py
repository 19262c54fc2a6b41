"""What binding trust to content costs: the check of a hook's pinned files before each run, and building a project's manifest at load.

Run: .venv/bin/python bench/bench_trust.py [--files N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hooks.manifest import _digest_cache, build_manifest, changed_pin, pins  # noqa: E402


def _per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=50, help="files under .claude/hooks")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-trust-"))
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text('{"hooks": {}}')
    gate = hooks / "gate.sh"
    gate.write_text("#!/bin/sh\n" + "exit 0\n" * 200)
    link = hooks / "linked.sh"
    link.symlink_to(gate)
    for i in range(args.files):
        (hooks / f"h{i}.py").write_text("x = 1\n" * 400)

    plain, linked = pins([gate]), pins([link])
    rows = {"pin check, 1 file": [], "pin check, 1 symlinked file": [], "manifest, warm (us)": [],
            "manifest, cold (us)": []}
    for _ in range(args.rounds):
        rows["pin check, 1 file"].append(_per_call_us(lambda: changed_pin(plain), 50_000))
        rows["pin check, 1 symlinked file"].append(_per_call_us(lambda: changed_pin(linked), 50_000))
        rows["manifest, warm (us)"].append(_per_call_us(lambda: build_manifest(root, None, [gate]), 200))

        def cold() -> None:
            _digest_cache.clear()
            build_manifest(root, None, [gate])

        rows["manifest, cold (us)"].append(_per_call_us(cold, 50))
    print(f"project: {args.files + 2} files under .claude/hooks ({sum(p.stat().st_size for p in hooks.iterdir())} bytes)")
    for name, values in rows.items():
        print(f"{name:32s} median {statistics.median(values):9.2f} us   min {min(values):9.2f} us")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
