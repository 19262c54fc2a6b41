"""The inspector: time from an event taken by its server to the row rendered in a real headless Chromium.

Run from the repository root (Debian's chromium installed, as scripts/bootstrap.sh does):
    .venv/bin/python bench/bench_inspector.py [--events 1000] [--rate 200]

The real server and page (frontend_stub/inspector), fed hook_started/hook_response pairs shaped as the sidecar
sends them, at a steady rate and then as one burst; the page records Date.now() minus the event's server time
for every event it renders (same machine, same clock).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from frontend_stub.inspector.feed import Feed  # noqa: E402
from frontend_stub.inspector.server import Inspector  # noqa: E402


def hook_pair(i: int) -> list[tuple[str, dict]]:
    common = {"sessionId": "bench", "executionId": f"e{i}", "hookId": f"h{i % 7}", "hookName": f"hook-{i % 7}",
              "hookType": "command", "source": "project", "event": "PreToolUse"}
    response = {**common, "outcome": "success" if i % 5 else "blocked", "exitCode": 0 if i % 5 else 2,
                "durationMs": 3.0 + i % 11, "stdout": "", "stderr": "" if i % 5 else "denied by policy",
                "output": None, "failClosed": False, "background": False, "enforced": True}
    return [("hook_started", common), ("hook_response", response)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000, help="hook executions per phase (2 events each)")
    parser.add_argument("--rate", type=float, default=200.0, help="executions per second in the steady phase")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, object] = {}

    def serve() -> None:
        asyncio.set_event_loop(loop)
        box["inspector"] = inspector = Inspector(Feed("bench"))
        box["task"] = task = loop.create_task(inspector.serve())
        ready.set()
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    ready.wait(10)
    inspector = box["inspector"]
    assert isinstance(inspector, Inspector)
    load = os.getloadavg()
    results = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("ORION_CHROMIUM", "/usr/bin/chromium"),
                                     headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(inspector.url)
        page.wait_for_selector("body[data-ready='1']")
        sent = 0
        for phase, gap in (("steady", 1.0 / args.rate), ("burst", 0.0)):
            page.evaluate("() => window.orionLatencies.length = 0")
            for i in range(args.events):
                for kind, data in hook_pair(sent + i):
                    loop.call_soon_threadsafe(inspector.feed.add, kind, data)
                if gap:
                    time.sleep(gap)
            sent += args.events
            page.wait_for_function(f"() => window.orionLatencies.length >= {2 * args.events}", timeout=120_000)
            latencies = sorted(page.evaluate("() => window.orionLatencies.slice()"))
            results[phase] = latencies
        rows = page.locator("[data-testid=hook]").count()
        browser.close()
    loop.call_soon_threadsafe(box["task"].cancel)  # type: ignore[attr-defined]
    print(f"load average {' '.join(f'{x:.2f}' for x in load)} → {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.events} hook executions per phase, {rows} rows on the page at the end\n")
    print("| phase | events | median | p95 | max |")
    print("|---|---:|---:|---:|---:|")
    for phase, xs in results.items():
        label = f"steady, {args.rate:g} executions/s" if phase == "steady" else "one burst"
        print(f"| {label} | {len(xs)} | {statistics.median(xs):.1f} ms | {xs[int(0.95 * (len(xs) - 1))]:.1f} ms | {xs[-1]:.1f} ms |")


if __name__ == "__main__":
    main()
