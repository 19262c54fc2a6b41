"""The long wire-fuzzing run: the in-suite property (tests/reliability/test_wire_fuzz.py) for N examples or S seconds, counting failures instead of stopping.

Run: .venv/bin/python bench/fuzz_wire.py [--examples N] [--seconds S] [--seed K]   (from the repository root)
Prints inputs tried, failures, inputs per kind and the first failures; exit code 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.reliability.test_wire_fuzz import WireDriver, WireInput, wire_inputs  # noqa: E402

CHUNK = 500  # examples per hypothesis run; each run gets its own seed, so the whole run never repeats itself


def run(examples: int, seconds: float, first_seed: int, workdir: Path) -> WireDriver:
    driver = WireDriver(workdir)
    driver.start()
    stop_at = time.monotonic() + seconds
    restarts = 0

    def body(wire_input: WireInput) -> None:
        nonlocal driver, restarts
        if driver.stats.tried >= examples or time.monotonic() >= stop_at:
            return
        driver.exchange(wire_input)
        if not driver.alive():
            # Counted as a failure by exchange(); carry on with a fresh sidecar so the run still measures something.
            stats = driver.stats
            restarts += 1
            driver = WireDriver(workdir / f"restart-{restarts}")
            driver.stats = stats
            driver.start()

    chunk = 0
    while driver.stats.tried < examples and time.monotonic() < stop_at:
        test = settings(max_examples=CHUNK, deadline=None, database=None, phases=[Phase.generate],
                        suppress_health_check=list(HealthCheck))(given(wire_inputs())(body))
        seed(first_seed + chunk)(test)()
        chunk += 1
    driver.restarts = restarts  # type: ignore[attr-defined]
    return driver


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="stop after this many inputs (default 10000)")
    parser.add_argument("--seconds", type=float, default=600.0, help="or after this many seconds (default 600)")
    parser.add_argument("--seed", type=int, default=0, help="first hypothesis seed (default 0)")
    parser.add_argument("--failures", type=Path, help="write every failing input and its problems here (JSON lines)")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-wire-") as tmp:
        driver = run(args.examples, args.seconds, args.seed, Path(tmp))
        elapsed = time.monotonic() - started
        stats = driver.stats
        exit_code = driver.close() if driver.alive() else None
    print(f"inputs tried: {stats.tried}")
    print(f"failures: {stats.failed}")
    print(f"sidecar restarts: {getattr(driver, 'restarts', 0)}; final exit code: {exit_code}")
    print(f"elapsed: {elapsed:.1f} s ({stats.tried / elapsed:.0f} inputs/s)")
    print("inputs by kind (single kinds; a combined input counts once under its joined name):")
    single: dict[str, int] = {}
    for kind, count in stats.by_kind.items():
        for part in kind.split("+"):
            single[part] = single.get(part, 0) + count
    for kind, count in sorted(single.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:16} {count}")
    if args.failures is not None:
        with args.failures.open("w") as out:
            for wire_input, problems in stats.failures:
                out.write(json.dumps({"kind": wire_input.kind, "payload": wire_input.payload.decode("utf-8", "backslashreplace"),
                                      "codes": wire_input.codes, "problems": problems}) + "\n")
    for wire_input, problems in stats.failures[:5]:
        print(f"FAILED {wire_input.kind}: {wire_input.payload[:300]!r}")
        for problem in problems[:5]:
            print(f"    {problem}")
    return 1 if stats.failed or exit_code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
