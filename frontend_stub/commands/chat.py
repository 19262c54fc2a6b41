"""`orion chat "PROMPT" --project DIR [--scenario FILE]`: run one prompt in a new session and stream the answer and its hooks."""

from __future__ import annotations

import argparse
from pathlib import Path

from frontend_stub.commands._session import run_session, scenario_model
from frontend_stub.session_view import SessionView
from ipc.errors import RemoteError

NAME = "chat"
HELP = "run one prompt in a project and stream the agent's answer, tool calls and hooks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="what to ask the agent")
    parser.add_argument("--project", default=".", help="project directory (default: the current directory)")
    parser.add_argument("--vault", default=None, help="notes vault directory (PARA layout) for vault settings and project detection")
    parser.add_argument("--scenario", default=None,
                        help="scripted model scenario (name in examples/scenarios or a file); default: the real model, with whatever "
                             "credential Claude Code would use (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, apiKeyHelper, "
                             "claude /login, ...)")
    parser.add_argument("--trust", action="store_true", help="trust the project's hooks first (hooks/trust)")
    parser.add_argument("--permission", default="reject_once",
                        choices=["allow_once", "allow_always", "reject_once", "reject_always"],
                        help="how to answer permission requests (default: reject_once)")
    parser.add_argument("--allow-tool", action="append", default=[], dest="allowed_tools",
                        help="a tool that runs without asking (repeatable), e.g. --allow-tool Bash")
    parser.add_argument("--sidecar", default=None, help="command that starts the sidecar (default: this Python's -m sidecar)")


async def run(args: argparse.Namespace) -> int:
    project = Path(args.project).resolve()
    if not project.is_dir():
        raise SystemExit(f"orion: --project {args.project} is not a directory")
    model = scenario_model(args.scenario)
    view = SessionView()
    # Whether the real model is reachable is the sidecar's call (it knows every credential source Claude Code
    # accepts: sidecar/credentials.py); a refusal names what to set.
    try:
        results = await run_session(
            project=project,
            prompts=[args.prompt],
            model=model,
            view=view,
            sidecar=args.sidecar,
            trust=args.trust,
            vault=Path(args.vault).resolve() if args.vault else None,
            permission_option=args.permission,
            allowed_tools=args.allowed_tools or None,
        )
    except RemoteError as exc:
        hint = "" if model else "\n       or pass --scenario NAME to use the offline scripted model"
        raise SystemExit(f"orion: the sidecar refused the session: {exc.message}{hint}") from None
    return 0 if results and results[0].get("stopReason") not in ("error",) else 1
