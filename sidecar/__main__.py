"""Entry point of `python -m sidecar` / `orion-sidecar`: parse options, set up logging, serve stdio until told to stop."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.app import SidecarApp


DEFAULTS = SimpleNamespace(log_level=None, max_line_bytes=16 * 1024 * 1024, grace=2.0, shutdown_budget=5.0)


def parse_args(argv: list[str] | None) -> SimpleNamespace:
    if not (sys.argv[1:] if argv is None else argv):
        return SimpleNamespace(**vars(DEFAULTS))  # the desktop shell passes no options: argparse stays unimported
    import argparse

    parser = argparse.ArgumentParser(prog="orion-sidecar", description="Orion Sidecar: line-delimited JSON-RPC 2.0 on stdin/stdout.")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default; or $ORION_LOG_LEVEL), WARNING, ERROR")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULTS.max_line_bytes, help="longest accepted input line (default 16 MiB)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds in-flight requests get at shutdown (default 2)")
    parser.add_argument("--shutdown-budget", type=float, default=5.0, help="seconds shutdown callbacks get (default 5)")
    return SimpleNamespace(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None, setup: Callable[[SidecarApp], None] | None = None) -> int:
    """Run the sidecar; `setup(app)` may register extra methods first (embedders, tests)."""
    args = parse_args(argv)
    # No pydantic plugins run in the sidecar; without this, the first model build scans every installed
    # distribution's entry points (~12 ms of start-up, measured with -X importtime).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from sidecar import logging_setup

    logging_setup.configure(args.log_level)

    import anyio

    from sidecar.app import SidecarApp
    from sidecar.lifecycle import ShutdownPolicy, serve_stdio
    from sidecar.methods import register_all

    app = SidecarApp(shutdown_budget=args.shutdown_budget)
    register_all(app)
    if setup is not None:
        setup(app)
    policy = ShutdownPolicy(grace=args.grace, hard_deadline=args.grace + args.shutdown_budget + 8.0)
    try:
        return anyio.run(lambda: serve_stdio(app, policy, max_line_bytes=args.max_line_bytes))
    except KeyboardInterrupt:
        # Ctrl-C before the signal handlers were installed: still an orderly, successful exit.
        return 0


def exit_now(code: int) -> None:
    """Exit without finalizing the interpreter: after a session, freeing every module (SDK, pydantic...) takes
    over a second the frontend would wait for. Everything is flushed and the exit handlers run first."""
    import atexit
    import logging
    import os

    logging.shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
