"""`orion inspect [--project DIR] [--scenario NAME] [--prompt TEXT]... | --session ID`: a local web page following a
session's hooks as they run, or looking back at an ended session's."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from frontend_stub.commands._session import DEMO_PROJECT, _sidecar_argv, scenario_model

NAME = "inspect"
HELP = "open a local page that shows every hook of a session as it runs (or of an ended session: --session ID)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", default=None,
                        help="project directory (default: a temporary copy of the demo project)")
    parser.add_argument("--scenario", default=None,
                        help="scripted model scenario (a name or a file); default: the real model")
    parser.add_argument("--prompt", action="append", default=[], help="a prompt to run first (repeatable); "
                        "more can be sent from the page")
    parser.add_argument("--session", default=None, help="show an ended session from its tracking file instead")
    parser.add_argument("--trust", action="store_true", help="trust the project's hooks first (hooks/trust)")
    parser.add_argument("--allow-tool", action="append", default=[], dest="allowed_tools",
                        help="a tool that runs without asking (repeatable)")
    parser.add_argument("--sidecar", default=None, help="command that starts the sidecar (default: this Python's -m sidecar)")
    parser.add_argument("--open", action="store_true", help="open the page in the default browser")


async def run(args: argparse.Namespace) -> int:
    from acp import RequestError

    from frontend_stub.inspector.feed import Feed
    from frontend_stub.inspector.server import Inspector
    from frontend_stub.inspector.sources import load_ended, run_live

    if args.session:
        feed = Feed(f"session {args.session} (ended)")
        count = load_ended(feed, args.session)
        inspector = Inspector(feed)
        _announce(inspector, f"{count} hook execution(s) recorded", args.open)
        await inspector.serve()
        return 0

    scratch = None
    if args.project is None:
        scratch = Path(tempfile.mkdtemp(prefix="orion-inspect-"))
        project = scratch / "demo-project"
        shutil.copytree(DEMO_PROJECT, project)
    else:
        project = Path(args.project).resolve()
        if not project.is_dir():
            raise SystemExit(f"orion: --project {args.project} is not a directory")
    feed = Feed(str(project))
    inspector = Inspector(feed)
    _announce(inspector, f"project {project}", args.open)
    server = asyncio.ensure_future(inspector.serve())
    model = scenario_model(args.scenario)
    try:
        try:
            await run_live(feed, argv=_sidecar_argv(args.sidecar), project=project, model=model,
                           prompts=list(args.prompt), trust=args.trust, allowed_tools=args.allowed_tools or None)
        except RequestError as exc:
            # A refusal (no credential, a bad scenario) is the user's to fix: say what, as `orion chat` does.
            hint = "" if model else "\n       or pass --scenario NAME to use the offline scripted model"
            raise SystemExit(f"orion: the sidecar refused the session: {exc}{hint}") from None
        print("orion: the session ended; the page stays up until Ctrl-C", file=sys.stderr, flush=True)
        await server
    finally:
        server.cancel()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


def _announce(inspector: object, what: str, open_browser: bool) -> None:
    url = inspector.url  # type: ignore[attr-defined]
    # The first line of stdout is the URL (tests and scripts read it); the token in it is the page's only key.
    print(url, flush=True)
    print(f"orion: inspector for {what}; open the URL above (it carries this run's token)", file=sys.stderr, flush=True)
    if open_browser:
        _open_privately(inspector, url)


OPENER_TTL_S = 60.0


def _open_privately(inspector: Any, url: str) -> None:
    """Open the page without the token in any program's arguments: a browser's command line is readable by every
    user of the machine (/proc/<pid>/cmdline). The browser gets a file of ours instead (0600, in a 0700 folder)
    that sends it on to the URL; the file goes once the page has loaded, or after a minute."""
    import webbrowser

    folder = Path(tempfile.mkdtemp(prefix="orion-inspect-open-"))
    opener = folder / "open.html"
    target = json.dumps(url).replace("<", "\\u003c")  # nothing in it can close the script element
    fd = os.open(opener, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>"
                 f"<title>Orion inspector</title><script>location.replace({target});"
                 "</script>\n")

    async def remove_when_loaded() -> None:
        try:
            await asyncio.wait_for(inspector.page_loaded.wait(), OPENER_TTL_S)
        except TimeoutError:
            pass
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    try:
        inspector.opener_cleanup = asyncio.get_running_loop().create_task(remove_when_loaded())  # kept: not collected
    except RuntimeError:  # no loop (not reached from run()): the file goes when this process ends
        import atexit

        atexit.register(shutil.rmtree, folder, True)
    webbrowser.open(opener.as_uri())
