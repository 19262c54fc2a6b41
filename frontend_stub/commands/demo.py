"""`orion demo`: the README's main command. For now the spine demo (launch, handshake, ping, timeline); the session issue turns it into the offline agent demo."""

from __future__ import annotations

import argparse

from frontend_stub.commands import ping

NAME = "demo"
HELP = "set-up check and demo: launch the sidecar, handshake, ping, show the timeline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    ping.add_arguments(parser)


async def run(args: argparse.Namespace) -> int:
    return await ping.run(args)
