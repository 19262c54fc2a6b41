"""Helpers shared by subcommands: launching the sidecar with the CLI's options and echoing its events on a timeline."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from frontend_stub.client import SidecarClient
from frontend_stub.timeline import Timeline


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sidecar", default=None, help="command that starts the sidecar (default: this Python's -m sidecar)")
    parser.add_argument("--show-stderr", action="store_true", help="echo the sidecar's stderr log")


@asynccontextmanager
async def launched(args: argparse.Namespace, timeline: Timeline) -> AsyncIterator[SidecarClient]:
    """A launched, initialized sidecar whose events are printed on `timeline` as they arrive."""
    argv = shlex.split(args.sidecar) if args.sidecar else None
    timeline.note("launching sidecar")
    async with SidecarClient.launch(argv, echo_stderr=args.show_stderr, initialize=False) as client:
        async with anyio.create_task_group() as tg:
            events = client.events()

            async def show() -> None:
                async for event in events:
                    timeline.event(event.name, event.params, event.received_at)

            tg.start_soon(show)
            timeline.request("initialize")
            result = await client.initialize()
            timeline.response("initialize", f"{result.server_info.name} {result.server_info.version}, "
                                            f"protocol {result.protocol_version}, methods {', '.join(result.capabilities.methods)}")
            try:
                yield client
            finally:
                timeline.request("shutdown")
                code = await client.close()
                timeline.note(f"sidecar exited with code {code}")
                tg.cancel_scope.cancel()
