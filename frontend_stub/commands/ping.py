"""`orion ping`: launch the sidecar, handshake, ping it, show the timeline and the round-trip times."""

from __future__ import annotations

import argparse
import time

from frontend_stub.commands._common import add_launch_arguments, launched
from frontend_stub.timeline import Timeline

NAME = "ping"
HELP = "launch the sidecar, initialize, ping it and show the timeline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_launch_arguments(parser)
    parser.add_argument("-n", "--count", type=int, default=3, help="number of pings (default 3)")


async def run(args: argparse.Namespace) -> int:
    timeline = Timeline()
    async with launched(args, timeline) as client:
        for _ in range(args.count):
            timeline.request("ping")
            started = time.perf_counter()
            await client.ping()
            timeline.response("ping", f"{{}} in {(time.perf_counter() - started) * 1e6:.0f} µs")
    return 0
