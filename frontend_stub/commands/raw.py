"""`orion raw '<line>'`: send one line exactly as given (after the handshake; need not be valid JSON) and show what comes back."""

from __future__ import annotations

import argparse
import json

import anyio

from frontend_stub.commands._common import add_launch_arguments, launched
from frontend_stub.timeline import Timeline

NAME = "raw"
HELP = "send one raw JSON line to the sidecar and print every reply and event"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_launch_arguments(parser)
    parser.add_argument("line", help='e.g. \'{"jsonrpc":"2.0","id":"x","method":"ping"}\'')
    parser.add_argument("--wait", type=float, default=1.0, help="seconds to keep listening for replies and events (default 1)")


async def run(args: argparse.Namespace) -> int:
    timeline = Timeline()
    async with launched(args, timeline) as client:
        timeline.request("raw", args.line)
        await client.send_line(args.line)
        with anyio.move_on_after(args.wait):
            while True:
                reply = await client.next_unmatched(timeout=args.wait + 1)
                timeline.note("⇠ " + json.dumps(reply, ensure_ascii=False))
    return 0
