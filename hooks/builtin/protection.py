"""`protection`: deny or ask about tool calls that would change secrets, system or git internals, Orion's own files or the project's hook machinery."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hooks.builtin.common import BuiltinEnv, Options, ask, context, deny
from hooks.builtin.guard_paths import GuardPaths, normalise, under
from hooks.builtin.shell_effects import analyse
from hooks.types import HookContext, HookFunction, HookOutput

log = logging.getLogger("hooks.builtin.protection")

FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
PREFIX = "Blocked by Orion's protection hook: "
ASK_PREFIX = "Orion's protection hook asks first: "

LOCKFILES = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "poetry.lock",
     "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock", "go.sum", "mix.lock",
     "packages.lock.json", "flake.lock"}
)


# env-isolation's own `unset NAME ... 2>/dev/null; ` prefix holds names only; skipping it keeps the common
# command cheap. A look-alike with anything else in it is not matched and is parsed like any command.
_ISOLATION_PREFIX = re.compile(r"unset(?: [A-Za-z_][A-Za-z0-9_]*)+ 2>/dev/null; ")


def _without_isolation_prefix(command: str) -> str:
    match = _ISOLATION_PREFIX.match(command)
    return command[match.end():] if match else command


@dataclass(slots=True, frozen=True)
class Verdict:
    """What protection says about one call: deny, ask, advice, or nothing. It never approves."""

    deny: str | None = None
    ask: str | None = None
    advice: str | None = None


def _paths(payload: dict[str, Any], cwd: str, project_dir: Any = None, data_dir: Any = None) -> GuardPaths:
    return GuardPaths.for_call(project_dir or cwd, data_dir, payload.get("transcript_path"))


def dangerous_command_reason(command: str, cwd: str, paths: GuardPaths | None = None) -> str | None:
    """Why this Bash command is denied, or None (an "ask" is not a deny)."""
    found = analyse(_without_isolation_prefix(command), paths or GuardPaths.for_call(cwd, None, None), cwd)
    return found.reason if found.level == "deny" else None


def sensitive_file_reason(path: str, cwd: str, paths: GuardPaths | None = None) -> str | None:
    """Why writing `path` is denied, or None."""
    paths = paths or GuardPaths.for_call(cwd, None, None)
    verdict = paths.write_verdict(normalise(path, cwd, paths.home))
    return verdict[1] if verdict and verdict[0] == "deny" else None


def _file_content(tool: str, tool_input: dict[str, Any]) -> str | None:
    # What will be in the file, when the call says: lets a new `.key` be told apart from a Keynote deck.
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    return None


def evaluate(payload: dict[str, Any], cwd: str, paths: GuardPaths | None = None) -> Verdict:
    paths = paths or _paths(payload, cwd)
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        return Verdict()
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return Verdict()
        try:
            found = analyse(_without_isolation_prefix(command), paths, cwd)
        except Exception:  # noqa: BLE001 - a guard bug must not fail open (the engine's default for a crash)
            log.exception("protection could not analyse a command")
            return Verdict(ask=f"{ASK_PREFIX}the guard could not check this command.")
        if found.level == "deny":
            return Verdict(deny=f"{PREFIX}this command is not allowed because {found.reason}.")
        if found.level == "ask":
            return Verdict(ask=f"{ASK_PREFIX}{found.reason}.")
        return Verdict()
    if tool in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            return Verdict()
        verdict = paths.write_verdict(normalise(path, cwd, paths.home), _file_content(tool, tool_input))
        if verdict and verdict[0] == "deny":
            return Verdict(
                deny=f"{PREFIX}{tool} to {path} is not allowed because {verdict[1]}. "
                "Ask the user to make this change themselves if it is really needed."
            )
        if verdict:
            return Verdict(ask=f"{ASK_PREFIX}{tool} to {path}: {verdict[1]}.")
        if PurePosixPath(path).name in LOCKFILES:
            return Verdict(
                advice=f"{PurePosixPath(path).name} is a generated lockfile. Prefer changing the dependency "
                "manifest and running the package manager over editing the lockfile by hand."
            )
    return Verdict()


def make_protection(opts: Options, env: BuiltinEnv) -> HookFunction:
    allow_paths = tuple(opts.get("allow_paths", ()))

    async def protection(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        cwd = str(payload.get("cwd") or ctx.project_dir)
        paths = _paths(payload, cwd, ctx.project_dir, env.data(ctx))
        tool_input = payload.get("tool_input") or {}
        path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
        if isinstance(path, str) and allow_paths:
            full = normalise(path, cwd, paths.home)
            # allow_paths exempts project files from the secret rules; never Orion's own files.
            if not paths.orion_reason(full) and any(under(full, normalise(a, cwd, paths.home)) for a in allow_paths):
                return None
        verdict = evaluate(payload, cwd, paths)
        if verdict.deny:
            return deny(verdict.deny)
        if verdict.ask:
            return ask(verdict.ask)
        if verdict.advice:
            return context("PreToolUse", verdict.advice)
        return None

    return protection
