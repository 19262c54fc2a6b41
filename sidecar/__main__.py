"""Entry point of `python -m sidecar` / `orion-sidecar`: parse options, set up logging, serve stdio until told to stop."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.app import SidecarApp


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orion-sidecar", description="Orion Sidecar: line-delimited JSON-RPC 2.0 on stdin/stdout.")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default; or $ORION_LOG_LEVEL), WARNING, ERROR")
    parser.add_argument("--max-line-bytes", type=int, default=16 * 1024 * 1024, help="longest accepted input line (default 16 MiB)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds in-flight requests get at shutdown (default 2)")
    parser.add_argument("--shutdown-budget", type=float, default=5.0, help="seconds shutdown callbacks get (default 5)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, setup: Callable[[SidecarApp], None] | None = None) -> int:
    """Run the sidecar; `setup(app)` may register extra methods first (embedders, tests)."""
    args = parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
