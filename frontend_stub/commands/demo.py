"""`orion demo`: the README's main command — an offline agent session with real hooks, rendered as a timeline."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from frontend_stub.commands._session import DEMO_PROJECT, run_session, scenario_model
from frontend_stub.session_view import SessionView

NAME = "demo"
HELP = "offline demo: a scripted agent tidies a copy of examples/demo-project while hooks guard and rewrite its tools"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="demo", help="scenario name in examples/scenarios or a file (default: demo)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary project and data directory")
    parser.add_argument("--sidecar", default=None, help="command that starts the sidecar (default: this Python's -m sidecar)")
    parser.add_argument("--quiet-progress", action="store_true", help="hide hook_progress lines")


async def run(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="orion-demo-"))
    project = work / "demo-project"
    shutil.copytree(DEMO_PROJECT, project)
    env = dict(os.environ)
    # The demo is reproducible: its own data directory (trust store, memory, tracking) and no user settings.
    env["ORION_DATA_DIR"] = str(work / "data")
    env["ORION_USER_SETTINGS"] = str(work / "no-user-settings.json")
    env["ORION_CLAUDE_USER_SETTINGS"] = str(work / "no-claude-user-settings.json")  # the demo is the same everywhere
    view = SessionView(show_progress=not args.quiet_progress)
    view.line(f"demo    ▸ project copied to {project}")
    try:
        results = await run_session(
            project=project,
            prompts=["Tidy up the project"],
            model=scenario_model(args.scenario),
            view=view,
            env=env,
            sidecar=args.sidecar,
            trust=True,
        )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    stats = view.stats
    audit_log_ran = "audit-bash" in stats.hook_names
    view.line(
        f"summary ▸ {stats.hooks_run} hook executions ({stats.hooks_blocked} blocked, {stats.hooks_failed} failed), "
        f"{stats.tool_calls} tool calls ({stats.tools_denied} denied), {stats.inputs_rewritten} inputs rewritten, "
        f"{stats.events} events"
    )
    # The demo checks itself: a demo that silently stopped showing its point must fail loudly.
    ok = (
        bool(results)
        and results[0].get("stopReason") == "end_turn"
        and stats.tools_denied >= 1
        and stats.inputs_rewritten >= 1
        and audit_log_ran
    )
    if not ok:
        view.line("demo    ✗ the demo did not show a denied tool call, a rewritten input and a project hook")
        return 1
    return 0
