"""Settings-file hook entries: the pydantic models of Claude Code's settings.json `hooks` schema (plus ours), and parsing with file + JSON-path errors.

Two shapes are accepted under `"hooks": {Event: [...]}`:

* Claude Code's: `[{"matcher": "Bash", "hooks": [{"type": "command", ...}, ...]}]`
* the Hook Infrastructure story's flat legacy form: `[{"command": "x.sh", "timeout": 5000, "continueOnError": false}]`
  (timeouts in milliseconds, bare script names resolved in `<project>/.claude/hooks/`,
  that directory as cwd, `continueOnError: false` = fail-closed), converted with a
  deprecation warning.

A bad entry drops only that entry; everything found wrong is reported as
`<file>: <json path>: <what>`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hooks.types import ALL_EVENTS


class _EntryBase(BaseModel):
    """Keys every hook type accepts; attribute names are the settings.json keys (`async` is `async_`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    name: str | None = Field(default=None, min_length=1)
    timeout: float | None = Field(default=None, gt=0)  # seconds
    async_: bool = Field(default=False, alias="async")
    failClosed: bool = False
    enabled: bool = True
    # Claude Code's: run only for tool calls this permission rule matches ("Bash(git *)"; hooks/conditions.py).
    if_: str | None = Field(default=None, alias="if")
    statusMessage: str | None = None  # shown to the user while the hook runs; the model never sees it
    once: bool = False  # a skill's hook: dropped after its first success (no effect in settings files, as in the CLI)


class CommandHookConfig(_EntryBase):
    type: Literal["command"]
    command: str = Field(min_length=1)
    # Exec form: `command` is one program, started with these arguments and no shell (hooks/executors/command.py).
    args: list[str] | None = None
    shell: Literal["bash", "powershell"] | None = None  # "bash" is /bin/sh -c on POSIX, as in Claude Code
    asyncRewake: bool = False  # async, and an exit 2 wakes the model (implies async)


class PythonHookConfig(_EntryBase):
    """Ours: a `.py` module whose `run(payload)` is called in the warm launcher."""

    type: Literal["python"]
    script: str = Field(min_length=1)


class PromptHookConfig(_EntryBase):
    type: Literal["prompt"]
    prompt: str = Field(min_length=1)
    model: str | None = None
    # Claude Code's: an `ok: false` ends the turn unless this is true (Stop and SubagentStop always go on, with the
    # reason as feedback).
    continueOnBlock: bool = False


class AgentHookConfig(_EntryBase):
    type: Literal["agent"]
    prompt: str = Field(min_length=1)
    model: str | None = None
    maxTurns: int | None = Field(default=None, gt=0)


class HttpHookConfig(_EntryBase):
    type: Literal["http"]
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    allowedEnvVars: list[str] = Field(default_factory=list)
    # Claude Code's: a failed call (unreachable, a non-2xx status, not JSON, a timeout) blocks what the event guards
    # with "block"; "continue" (the default) lets it through. Any other value reads as "block", as in the CLI.
    onFailure: str | None = None


class McpToolHookConfig(_EntryBase):
    """Claude Code's: call a tool of one of the session's MCP servers (hooks/executors/mcp_tool.py)."""

    type: Literal["mcp_tool"]
    server: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)  # the tool's arguments; `${path}` filled from the hook input
    onFailure: str | None = None  # "continue" (default) or "block"; any other value reads as "block", as in the CLI


HookConfig = Annotated[
    Union[CommandHookConfig, PythonHookConfig, PromptHookConfig, AgentHookConfig, HttpHookConfig,
          McpToolHookConfig],
    Field(discriminator="type"),
]
_HOOK_CONFIG = TypeAdapter(HookConfig)

CONFIG_TYPES = ("command", "python", "prompt", "agent", "http", "mcp_tool")


class LegacyHookEntry(BaseModel):
    """The Hook Infrastructure story's flat entry."""

    model_config = ConfigDict(extra="allow", frozen=True)

    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0)  # milliseconds
    continueOnError: bool = True
    name: str | None = None
    enabled: bool = True


# --------------------------------------------------------------------------- parse results


@dataclass(slots=True)
class RawEntry:
    """One hook entry found in a settings file, valid (config set) or not (error set)."""

    event: str
    matcher: str | None
    json_path: str
    config: Any | None  # one of the *HookConfig models
    error: str | None = None
    type_hint: str = "command"  # best guess of the type, for listing an invalid entry
    legacy: bool = False
    cwd: Path | None = None  # legacy entries run in <project>/.claude/hooks


@dataclass(slots=True)
class ParsedSettings:
    """Everything the hook engine reads from one settings file."""

    file: Path
    exists: bool = False
    entries: list[RawEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    disable_all: bool = False
    allow_managed_hooks_only: bool = False  # `allowManagedHooksOnly`: honoured only from managed settings
    allowed_http_urls: list[str] | None = None
    disabled_hooks: frozenset[str] = frozenset()  # `disabledHooks`: honoured only from the user's own settings
    claude_user_hooks: bool | None = None  # `claudeUserHooks`: honoured only from Orion's user settings (None: unset)
    builtin_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    hooks_section: Any = None  # the raw `hooks` value, hashed for trust


def _fmt_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        locs = list(err["loc"])
        if locs and locs[0] in CONFIG_TYPES:  # the discriminated union's tag, not a key of the entry
            locs = locs[1:]
        loc = ".".join(str(p) for p in locs)
        parts.append(f"{loc + ': ' if loc else ''}{err['msg']}")
    return "; ".join(parts)


def parse_settings(data: Any, file: Path, *, hooks_dir: Path | None = None) -> ParsedSettings:
    """Turn a loaded settings JSON document into entries; never raises."""
    out = ParsedSettings(file=file, exists=True)
    if not isinstance(data, dict):
        out.errors.append(f"{file}: $: expected a JSON object, got {type(data).__name__}")
        return out

    dis = data.get("disableAllHooks", False)
    if not isinstance(dis, bool):
        out.errors.append(f"{file}: $.disableAllHooks: expected true or false")
    else:
        out.disable_all = dis

    amho = data.get("allowManagedHooksOnly", False)
    if not isinstance(amho, bool):
        out.errors.append(f"{file}: $.allowManagedHooksOnly: expected true or false")
    else:
        out.allow_managed_hooks_only = amho

    cuh = data.get("claudeUserHooks")
    if cuh is not None and not isinstance(cuh, bool):
        out.errors.append(f"{file}: $.claudeUserHooks: expected true or false")
    else:
        out.claude_user_hooks = cuh

    out.allowed_http_urls = _string_list(data, "allowedHttpHookUrls", "URL patterns", out)
    out.disabled_hooks = frozenset(_string_list(data, "disabledHooks", "hook names", out) or ())

    builtin = data.get("builtin")
    if builtin is not None:
        if isinstance(builtin, dict) and all(isinstance(v, dict) for v in builtin.values()):
            out.builtin_options = {str(k): dict(v) for k, v in builtin.items()}
        else:
            out.errors.append(f"{file}: $.builtin: expected an object of {{hook name: {{options}}}}")

    hooks = data.get("hooks")
    out.hooks_section = hooks
    if hooks is None:
        return out
    if not isinstance(hooks, dict):
        out.errors.append(f"{file}: $.hooks: expected an object keyed by event name")
        return out

    legacy_warned = False
    for event, groups in hooks.items():
        epath = f"$.hooks.{event}"
        if event not in ALL_EVENTS:
            out.errors.append(f"{file}: {epath}: unknown event {event!r} (known: {', '.join(ALL_EVENTS)})")
            continue
        if not isinstance(groups, list):
            out.errors.append(f"{file}: {epath}: expected a list of matcher groups")
            continue
        for gi, group in enumerate(groups):
            gpath = f"{epath}[{gi}]"
            if isinstance(group, dict) and "hooks" not in group and "command" in group:
                if not legacy_warned:
                    out.warnings.append(
                        f"{file}: {epath}: flat hook entries ({{\"command\", \"timeout\" in ms, \"continueOnError\"}}) are "
                        'deprecated; use {"matcher": ..., "hooks": [{"type": "command", "timeout": <seconds>}]}'
                    )
                    legacy_warned = True
                out.entries.append(_parse_legacy(event, group, gpath, file, hooks_dir))
                continue
            if not isinstance(group, dict):
                out.errors.append(f"{file}: {gpath}: expected an object with \"matcher\" and \"hooks\"")
                continue
            matcher = group.get("matcher")
            if matcher is not None and not isinstance(matcher, str):
                out.errors.append(f"{file}: {gpath}.matcher: expected a string")
                continue
            items = group.get("hooks")
            if not isinstance(items, list):
                out.errors.append(f"{file}: {gpath}.hooks: expected a list of hook entries")
                continue
            for hi, item in enumerate(items):
                out.entries.append(_parse_entry(event, matcher, item, f"{gpath}.hooks[{hi}]", file))
    for entry in out.entries:
        if entry.error:
            out.errors.append(f"{file}: {entry.json_path}: {entry.error}")
    return out


def _string_list(data: dict[str, Any], key: str, what: str, out: ParsedSettings) -> list[str] | None:
    """`data[key]` when it is a list of strings; None when absent, or wrong (with an error naming the key)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    out.errors.append(f"{out.file}: $.{key}: expected a list of {what}")
    return None


def _parse_entry(event: str, matcher: str | None, item: Any, path: str, file: Path) -> RawEntry:
    type_hint = item.get("type") if isinstance(item, dict) and isinstance(item.get("type"), str) else "command"
    if not isinstance(item, dict):
        return RawEntry(event, matcher, path, None, error="expected an object with a \"type\"")
    if "type" not in item:
        return RawEntry(event, matcher, path, None, error=f"missing \"type\" (one of {', '.join(CONFIG_TYPES)})")
    if item["type"] not in CONFIG_TYPES:
        return RawEntry(event, matcher, path, None, type_hint="command",
                        error=f"unknown type {item['type']!r} (one of {', '.join(CONFIG_TYPES)})")
    if item["type"] == "command" and (problem := command_entry_problem(item)) is not None:
        return RawEntry(event, matcher, path, None, error=problem, type_hint="command")
    try:
        config = _HOOK_CONFIG.validate_python(item)
    except ValidationError as exc:
        return RawEntry(event, matcher, path, None, error=_fmt_validation(exc), type_hint=type_hint)
    return RawEntry(event, matcher, path, config, type_hint=type_hint)


_EXEC_EXAMPLE = '{"type": "command", "command": "node", "args": ["hook.js"]}'


def command_entry_problem(item: dict[str, Any]) -> str | None:
    """What is wrong with a command entry's `command`, `args`, `shell` or `if`, worded to say the fix; None if nothing.

    Checked before the model so the author reads which form was meant, not a pydantic type name.
    """
    command, args, shell, cond = item.get("command"), item.get("args"), item.get("shell"), item.get("if")
    if not isinstance(command, str) or not command:
        got = "it is missing" if command is None else f"got {_kind(command)}"
        return (f'"command" is required ({got}): in the exec form (no shell) it is the program and "args" its '
                f'arguments, {_EXEC_EXAMPLE}; in the shell form it is the whole command line, '
                '{"type": "command", "command": "node hook.js"}')
    if "args" in item:
        if not isinstance(args, list):
            fix = f": write [{json.dumps(args)}]" if isinstance(args, str) else ""
            return f'args: expected a list of strings, one per argument (exec form, {_EXEC_EXAMPLE}), got {_kind(args)}{fix}'
        for i, arg in enumerate(args):
            if not isinstance(arg, str):
                fix = f": quote it, {json.dumps(json.dumps(arg))}" if isinstance(arg, (int, float, bool)) else ""
                return f"args[{i}]: expected a string, got {_kind(arg)}{fix}"
    if "shell" in item and shell not in ("bash", "powershell"):
        return (f'shell: expected "bash" or "powershell", got {json.dumps(shell) if isinstance(shell, str) else _kind(shell)} '
                '("bash" runs the command with /bin/sh -c on Linux and macOS, as Claude Code does)')
    if "if" in item and cond is not None and not isinstance(cond, str):
        return f'if: expected a permission rule such as "Bash(git *)", got {_kind(cond)}'
    return None


def _kind(value: Any) -> str:
    """A JSON value's kind, with a short sample, for error messages."""
    name = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)
    if value is None or isinstance(value, (list, dict)):
        return name
    sample = json.dumps(value)
    return f"{name} ({sample if len(sample) <= 40 else sample[:39] + '…'})"


def _parse_legacy(event: str, item: dict[str, Any], path: str, file: Path, hooks_dir: Path | None) -> RawEntry:
    try:
        legacy = LegacyHookEntry.model_validate(item)
    except ValidationError as exc:
        return RawEntry(event, None, path, None, error=_fmt_validation(exc), legacy=True)
    common: dict[str, Any] = {
        "name": legacy.name,
        "timeout": legacy.timeout / 1000.0 if legacy.timeout else None,
        "failClosed": not legacy.continueOnError,
        "enabled": legacy.enabled,
    }
    words = split_command(legacy.command)
    script = _launcher_script(words)
    if script is not None:
        # "uv run python hook_launcher.py x.py": the story's launcher; ours is warm and in-process-managed.
        config: Any = PythonHookConfig(type="python", script=script, **common)
        return RawEntry(event, None, path, config, type_hint="python", legacy=True, cwd=hooks_dir)
    command = legacy.command
    if hooks_dir is not None and words and "/" not in words[0] and (hooks_dir / words[0]).is_file():
        rest = legacy.command.lstrip()[len(legacy.command.lstrip().split(None, 1)[0]):]
        command = shlex.quote(str(hooks_dir / words[0])) + rest
    config = CommandHookConfig(type="command", command=command, **common)
    return RawEntry(event, None, path, config, legacy=True, cwd=hooks_dir)


def split_command(command: str) -> list[str]:
    """A command line's words as the shell would split them; plain whitespace when its quoting is broken."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _launcher_script(words: list[str]) -> str | None:
    for i, word in enumerate(words[:-1]):
        if word.endswith("hook_launcher.py") and words[i + 1].endswith(".py"):
            return words[i + 1]
    return None


def first_word(command: str) -> str | None:
    words = split_command(command)
    return words[0] if words else None


# `async` and `if` are Python keywords, so the fields are `async_` and `if_`; `getattr(config, "async")` reads them too.
setattr(_EntryBase, "async", property(lambda self: self.async_))
setattr(_EntryBase, "if", property(lambda self: self.if_))
