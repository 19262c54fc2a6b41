"""Command line: ``python -m sidecar.scripted_model SCENARIO [--port N] [--log FILE]`` serves a scenario until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import sys

from sidecar.scripted_model.scenario import ScenarioError, load_scenario
from sidecar.scripted_model.server import ScriptedModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sidecar.scripted_model", description=__doc__)
    parser.add_argument("scenario", help="scenario file (.yaml/.yml/.json)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--log", help="append every request as one JSON line to this file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2

    async def serve() -> None:
        server = ScriptedModelServer(scenario, log_path=args.log, port=args.port)
        async with server.running() as url:
            # The URL goes to stdout alone so scripts can capture it: ANTHROPIC_BASE_URL=$(...).
            print(url, flush=True)
            await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, the log cannot be opened: the user's to fix, in one line
        hint = "; pick another --port, or leave it out for a free one" if exc.errno == errno.EADDRINUSE else ""
        print(f"{parser.prog}: {exc.strerror or exc}{hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
