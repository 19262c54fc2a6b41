"""Redaction coverage and cost: secrets caught / formats tried, false positives / look-alikes tried, and microseconds per KiB.

    .venv/bin/python bench/secret_corpus.py                       # hooks/redaction.py
    .venv/bin/python bench/secret_corpus.py --module old.py       # another implementation (e.g. `git show REV:hooks/redaction.py`)
    <venv with detect-secrets>/bin/python bench/secret_corpus.py --detect-secrets   # Yelp's scanner on the same corpus

The corpus is tests/security/secret_samples.py. A format counts as caught only
when it is caught in all four placements the tests use (plain, second line of a
tool output, inside JSON-encoded text, inside a nested structure). Cost is the
median of several runs over four kinds of tool output, each ~64 KiB.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security.secret_samples import LOOKALIKES, SECRETS  # noqa: E402

Redact = Callable[[str], str]


def load_module(path: str | None):
    if path is None:
        import hooks.redaction as module

        return module
    from bench.module_file import load_module_file

    return load_module_file(path, "redaction_under_test")


def detect_secrets_redactor() -> tuple[Redact, Callable[[str], bool]]:
    """detect-secrets as its users run it (`scan_file`: default plugins, filters and entropy limits), per text."""
    import tempfile

    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    scratch = Path(tempfile.mkdtemp(prefix="ds-bench-")) / "output.txt"

    def found(text: str) -> list[str]:
        scratch.write_text(text)
        collection = SecretsCollection()
        with default_settings():
            collection.scan_file(str(scratch))
        return [secret.secret_value for _, secret in collection if secret.secret_value]

    def redact(text: str) -> str:
        for value in sorted(set(found(text)), key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        return text

    return redact, lambda text: bool(found(text))


def placements(line: str) -> list[str]:
    return [
        line,
        f"$ ./deploy.sh\n{line}\ndone\n",
        json.dumps({"stdout": f"first line\n{line}\nlast", "exit_code": 0}),
    ]


def coverage(redact: Redact, redact_value: Callable[[object], object] | None, detects: Callable[[str], bool]):
    caught, plain, missed = 0, 0, []
    for sample in SECRETS:
        escaped = json.dumps(sample.secret)[1:-1]
        plain += sample.secret not in redact(sample.line)
        ok = all(sample.secret not in (out := redact(text)) and escaped not in out for text in placements(sample.line))
        if redact_value is not None:
            nested = json.dumps(redact_value({"r": [{"stdout": f"ok\n{sample.line}"}]}))
            ok = ok and sample.secret not in nested and escaped not in nested
        caught += ok
        if not ok:
            missed.append(sample.name)
    false_positives = [text for text in LOOKALIKES if detects(text) or redact(text) != text]
    return caught, plain, missed, false_positives


def workloads() -> dict[str, str]:
    rng = random.Random(7)
    code = "\n".join((ROOT / p).read_text() for p in ("hooks/runner.py", "hooks/hookset.py", "sidecar/sessions.py"))
    log = "\n".join(
        f"2026-11-23T20:00:{i % 60:02d}Z INFO worker[{i}]: batch {i} done in {rng.random() * 50:.1f} ms "
        f"status=ok key=value path=/var/lib/app/data/{i}.json user=ada@example.org"
        for i in range(600)
    )
    blob = "data:image/png;base64," + base64.b64encode(rng.randbytes(48_000)).decode()
    tool_json = json.dumps({"stdout": log[:40_000], "stderr": code[:20_000], "interrupted": False})
    return {name: (text * (65_536 // len(text) + 1))[:65_536] for name, text in
            {"source code": code, "log output": log, "base64 image": blob, "JSON tool response": tool_json}.items()}


def cost_us_per_kib(redact: Redact, text: str, runs: int) -> float:
    redact(text)  # warm caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        redact(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6 / (len(text) / 1024)


def import_ms(module: str, path: str, runs: int = 5) -> float:
    """Import time of `module` in fresh interpreters that already hold what the sidecar has loaded (re, dataclasses)."""
    code = (f"import sys, re, dataclasses, time; sys.path.insert(0, {path!r}); t = time.perf_counter(); "
            f"import {module}; print(time.perf_counter() - t)")
    samples = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(runs)]
    return statistics.median(samples) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", help="a redaction module file to measure instead of hooks/redaction.py")
    ap.add_argument("--detect-secrets", action="store_true", help="measure Yelp's detect-secrets instead")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()

    if args.detect_secrets:
        redact, detects = detect_secrets_redactor()
        redact_value = None
        label = "detect-secrets (default plugins)"
        imported = import_ms("detect_secrets.core.secrets_collection, detect_secrets.settings", str(ROOT))
    else:
        module = load_module(args.module)
        redact, redact_value = module.redact, getattr(module, "redact_value", None)

        def detects(text: str) -> bool:
            return bool(module.find_secrets(text))

        label = args.module or "hooks/redaction.py"
        if args.module is None:
            imported = import_ms("hooks.redaction", str(ROOT))
        else:
            imported = import_ms(Path(args.module).stem, str(Path(args.module).resolve().parent))

    caught, plain, missed, false_positives = coverage(redact, redact_value, detects)
    print(f"implementation: {label}")
    print(f"secrets caught: {caught}/{len(SECRETS)} formats in every placement ({plain}/{len(SECRETS)} in plain text)")
    if missed:
        print("  missed: " + ", ".join(missed))
    print(f"false positives: {len(false_positives)}/{len(LOOKALIKES)} look-alikes")
    for text in false_positives:
        print(f"  flagged: {text[:70]!r}")
    print(f"import: {imported:.1f} ms (median of 5 fresh interpreters that already hold re and dataclasses)")
    for name, text in workloads().items():
        print(f"cost on {name} ({len(text) // 1024} KiB): {cost_us_per_kib(redact, text, args.runs):.1f} us/KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
