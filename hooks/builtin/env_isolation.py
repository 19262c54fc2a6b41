"""`env-isolation`: no Bash command the agent runs sees the sidecar's internal environment variables.

In a sidecar session the CLI's own shell prefix takes them out of every command's environment and the command stays
as the agent wrote it (sidecar/shell_isolation.py); where that prefix cannot be placed safely, and wherever the hook
runs without a session (`python -m hooks test`), the hook rewrites the command to `unset …; <command>` instead."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hooks.builtin.common import Options, BuiltinEnv
from hooks.types import HookContext, HookFunction, HookOutput, HookSpecificOutput

# The one list of what the agent's shell must not inherit: the model endpoint and
# its credentials, the CLI's own plumbing, and the sidecar's private settings.
INTERNAL_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
    "CLAUDE_AGENT_SDK_VERSION",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CONFIG_DIR",
    "ORION_DATA_DIR",
    "ORION_USER_SETTINGS",
    "ORION_SIDECAR_TOKEN",
    "HOOK_DEBUG",
)

# Every variable present in the sidecar's environment under one of these prefixes is stripped too.
INTERNAL_ENV_PREFIXES: tuple[str, ...] = ("CLAUDE_CODE_", "ORION_", "HOOK_")

log = logging.getLogger("hooks.builtin.env_isolation")

# SessionContext.state: the session's CLI runs every command through Orion's shell prefix, which unsets these
# names itself (sidecar/shell_isolation.py); the rewrite below is then not made.
ISOLATED_BY_SHELL_PREFIX = "env_isolation.shell_prefix"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PREFIX_MARK = "unset "
_SUFFIX_MARK = " 2>/dev/null; "


def names_to_unset(
    environ: Mapping[str, str], names: Iterable[str] = INTERNAL_ENV_VARS, prefixes: Iterable[str] = INTERNAL_ENV_PREFIXES
) -> list[str]:
    """The fixed names plus every `environ` name under a prefix, sorted, shell-safe names only."""
    prefixes = tuple(prefixes)
    chosen = set(names) | {k for k in environ if k.startswith(prefixes)}
    return sorted(n for n in chosen if _NAME.fullmatch(n))


def isolate_command(command: str, names: list[str]) -> str:
    """`unset A B 2>/dev/null; <command>`: POSIX sh, the original command kept byte for byte."""
    if not names:
        return command
    prefix = _PREFIX_MARK + " ".join(names) + _SUFFIX_MARK
    if command.startswith(prefix):
        return command  # already isolated (the same input fired twice)
    return prefix + command


def display_command(command: str) -> str:
    """The command as the agent wrote it, for a person to read (a permission prompt's title, a memory record) and for
    the hooks that come after PreToolUse (hook_bridge.py: what Claude Code's hooks would see).

    Only a prefix that unsets nothing but variables env-isolation itself strips (the fixed names, or names under its
    prefixes) is taken off: an `unset PATH; ...` the agent wrote stays in view, since it changes what runs.
    """
    return command[len(isolation_prefix(command)):]


def isolation_prefix(command: str) -> str:
    """The `unset …; ` prefix env-isolation put on `command` ("" when it has none that display_command takes off)."""
    end = command.find(_SUFFIX_MARK)
    if end < 0 or not is_isolation_unset(command[:end]):
        return ""
    return command[:end + len(_SUFFIX_MARK)]


def is_isolation_unset(text: str) -> bool:
    """`unset A B` naming only variables env-isolation strips (the fixed names or names under its prefixes): its own
    command, as the CLI also quotes it in a permission rule it suggests for the rewritten command."""
    if not text.startswith(_PREFIX_MARK):
        return False
    names = text[len(_PREFIX_MARK):].split(" ")
    internal = set(INTERNAL_ENV_VARS)
    return all(_NAME.fullmatch(n) and (n in internal or n.startswith(INTERNAL_ENV_PREFIXES)) for n in names)


class _UnsetPrefix:
    """The `unset ...; ` prefix for the current environment, rebuilt only when the set of variable names changes.

    Scanning os.environ per Bash call decodes every name; comparing the raw
    name set with the last one seen is a single C-level set comparison.
    """

    __slots__ = ("names", "prefixes", "_seen", "_prefix", "_names")

    def __init__(self, names: tuple[str, ...], prefixes: tuple[str, ...]) -> None:
        self.names = names
        self.prefixes = prefixes
        self._seen: set[Any] | None = None
        self._prefix = ""
        self._names: list[str] = []

    def get(self) -> tuple[str, list[str]]:
        raw = getattr(os.environ, "_data", None)  # CPython's encoded store; anything else takes the slow path
        if raw is None or self._seen is None or raw.keys() != self._seen:
            self._names = names_to_unset(os.environ, self.names, self.prefixes)
            self._prefix = _PREFIX_MARK + " ".join(self._names) + _SUFFIX_MARK if self._names else ""
            self._seen = set(raw) if raw is not None else None
        return self._prefix, self._names


def make_env_isolation(opts: Options, env: BuiltinEnv) -> HookFunction:
    names = tuple(opts.get("names", INTERNAL_ENV_VARS)) + tuple(opts.get("extra_names", ()))
    prefixes = tuple(opts.get("prefixes", INTERNAL_ENV_PREFIXES))
    if opts.get("permissionDecision") is not None:
        # A guard rewrites, it never approves: an "allow" here would skip the user's rules and prompt.
        log.warning("env-isolation ignores its permissionDecision option: a built-in guard never approves")
    unset = _UnsetPrefix(names, prefixes)

    async def env_isolation(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        if ctx.state.get(ISOLATED_BY_SHELL_PREFIX):
            return None  # the CLI's shell prefix isolates this command; the agent's command stays as written
        tool_input = payload.get("tool_input")
        if not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
            return None
        prefix, _ = unset.get()
        command = tool_input["command"]
        if prefix and not command.startswith(prefix):  # already isolated when the same input is fired twice
            command = prefix + command
        # updatedInput alone: the CLI runs the rewritten command through its own permission flow (rules, then
        # can_use_tool and the frontend's prompt), which is asked about the rewritten input (docs/SECURITY.md).
        return HookOutput(
            hookSpecificOutput=HookSpecificOutput(
                hookEventName="PreToolUse",
                updatedInput={**tool_input, "command": command},
            )
        )

    env_isolation.options = opts  # type: ignore[attr-defined]  # the names the shell prefix takes out (sidecar)
    return env_isolation
