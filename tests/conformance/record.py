"""Re-record the goldens: every case on the bare bundled CLI (it runs the hooks from the project's settings), offline.

`python -m tests.conformance.record [CASE ...]` writes tests/conformance/goldens/<case>.json.
Run it when the bundled CLI changes (a claude-agent-sdk bump), then read the diff.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from tests.conformance.cases import BY_NAME, CASES
from tests.conformance.compare import GOLDEN_DIR
from tests.conformance.harness import cli_path, normalise, run_cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*")
    names = parser.parse_args().cases
    chosen = [BY_NAME[n] for n in names] if names else CASES
    GOLDEN_DIR.mkdir(exist_ok=True)
    import subprocess

    version = subprocess.run([cli_path(), "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="conformance-cli-") as tmp:
        for case in chosen:
            root = Path(tmp) / case.name
            observed = normalise(asyncio.run(run_cli(case, root)).to_json(), root)
            observed["cli_version"] = version
            (GOLDEN_DIR / f"{case.name}.json").write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")
            print(f"recorded {case.name}: {len(observed['hook_calls'])} hook calls, "
                  f"{len(observed['requests'])} model requests, stop {observed['result'].get('stop_reason')}")


if __name__ == "__main__":
    main()
