"""Entry point of `python -m sidecar` / `orion-sidecar`: parse options, set up logging, serve stdio until told to stop."""

from __future__ import annotations

import gc
import os
import sys
from types import SimpleNamespace
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.app import SidecarApp


DEFAULTS = SimpleNamespace(log_level=None, max_line_bytes=16 * 1024 * 1024, max_batch_bytes=1024 * 1024,
                           max_batch_items=100, grace=2.0, shutdown_budget=5.0)


_CONVERT: dict[str, Callable[[str], object]] = {"log_level": str, "max_line_bytes": int, "max_batch_bytes": int,
                                                "max_batch_items": int, "grace": float, "shutdown_budget": float}


def _parse_simple(argv: list[str]) -> SimpleNamespace | None:
    """`--option value` / `--option=value` for the known options, or None for anything argparse must judge.

    argparse (with gettext, shutil and locale behind it) costs ~15 ms of a ~100 ms start; the desktop shell
    passes no options and tests pass only these, so argparse is kept for help and errors.
    """
    args = SimpleNamespace(**vars(DEFAULTS))
    i = 0
    while i < len(argv):
        option, eq, value = argv[i].partition("=")
        if not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        i += 1
        name = option[2:].replace("-", "_")
        convert = _CONVERT.get(name)
        if not option.startswith("--") or convert is None or value.startswith("-"):
            return None
        try:
            setattr(args, name, convert(value))
        except ValueError:
            return None
    return args


def parse_args(argv: list[str] | None) -> SimpleNamespace:
    given = sys.argv[1:] if argv is None else argv
    simple = _parse_simple(given)
    if simple is not None:
        return simple
    import argparse

    parser = argparse.ArgumentParser(prog="orion-sidecar", description="Orion Sidecar: line-delimited JSON-RPC 2.0 on stdin/stdout.")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING (default; or $ORION_LOG_LEVEL), ERROR")
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULTS.max_line_bytes, help="longest accepted input line (default 16 MiB)")
    parser.add_argument("--max-batch-bytes", type=int, default=DEFAULTS.max_batch_bytes,
                        help="largest accepted batch line; larger ones are refused unread (default 1 MiB)")
    parser.add_argument("--max-batch-items", type=int, default=DEFAULTS.max_batch_items,
                        help="most members a batch may have (default 100)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds in-flight requests get at shutdown (default 2)")
    parser.add_argument("--shutdown-budget", type=float, default=5.0, help="seconds shutdown callbacks get (default 5)")
    return SimpleNamespace(**vars(parser.parse_args(argv)))


def _skip_plugin_loader() -> None:
    """With every plugin disabled, pydantic's plugin loader still imports importlib.metadata (with email, zipfile,
    csv...: ~10 ms at the first validation, inside the initialize request). Its one function answers "no plugins"
    in that case, so a module with just that answer stands in for it."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") != "__all__" or "pydantic.plugin._loader" in sys.modules:
        return
    from types import ModuleType

    loader = ModuleType("pydantic.plugin._loader", "No pydantic plugins: PYDANTIC_DISABLE_PLUGINS=__all__.")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules[loader.__name__] = loader


def main(argv: list[str] | None = None, setup: Callable[[SidecarApp], None] | None = None) -> int:
    """Run the sidecar; `setup(app)` may register extra methods first (embedders, tests)."""
    args = parse_args(argv)
    first = None
    if setup is None:
        # Before the server's imports: a plain ACP `initialize` is answered at interpreter speed (sidecar/handshake.py).
        from sidecar import handshake

        if handshake.enabled():
            try:
                first = handshake.answer_early(max_line=min(args.max_line_bytes, args.max_batch_bytes))
            except KeyboardInterrupt:
                return 0  # Ctrl-C while waiting for the first line: nothing started, an orderly exit
    # No other process of the user reads this one's environment or memory (sidecar/private_process.py): after the
    # early answer (ctypes costs a few ms), before any session can start an agent.
    from sidecar.private_process import make_private

    make_private()
    # Imports allocate hundreds of thousands of long-lived objects; the collector would run ~80 times over
    # them for nothing (~5% of start-up). Frozen afterwards, they are never scanned again either.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        # No pydantic plugins run in the sidecar; without this, the first model build scans every installed
        # distribution's entry points (~12 ms of start-up, measured with -X importtime).
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        _skip_plugin_loader()
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
    finally:
        if gc_was_enabled:
            gc.freeze()
            gc.enable()
    try:
        return anyio.run(lambda: serve_stdio(app, policy, max_line_bytes=args.max_line_bytes,
                                             max_batch_bytes=args.max_batch_bytes, max_batch_items=args.max_batch_items,
                                             first=first))
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


def drop_working_directory_from_path() -> None:
    """`python -m sidecar` puts its working directory first on sys.path; an editor may start it in the user's
    project, and a cloned project's `numpy.py` or `hooks/` would then be imported instead of ours at the first
    import made after start-up (most are made then). Dropped unless it is this checkout itself (a developer
    running from the repository). Launchers should prefer `python -P -m sidecar` or `orion-sidecar`: nothing here
    can protect the import of `sidecar` itself (docs/SECURITY.md, "What the sidecar imports")."""
    if sys.flags.safe_path or not sys.path:
        return
    try:
        first = os.path.realpath(sys.path[0] or os.getcwd())
    except OSError:
        return
    ours = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if first == os.path.realpath(os.getcwd()) and first != ours:
        del sys.path[0]


if __name__ == "__main__":
    drop_working_directory_from_path()
    exit_now(main())
