"""The built-in Orion hook set: lifecycle, guard, context and memory hooks, registered in one documented order."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.builtin import context as ctx_hooks
from hooks.builtin import lifecycle, memory_hooks, user_choice
from hooks.builtin.common import BuiltinEnv, Options
from hooks.builtin.document_guard import make_document_guard
from hooks.builtin.env_isolation import make_env_isolation
from hooks.builtin.protection import make_protection
from hooks.builtin.secret_redaction import make_secret_redaction
from hooks.registry import HookRegistry
from hooks.types import HookFunction

log = logging.getLogger("hooks.builtin")

FILE_WRITE_TOOLS = "Write|Edit|MultiEdit|NotebookEdit"


@dataclass(slots=True, frozen=True)
class BuiltinSpec:
    """One row of the built-in table: a hook's stable name, where it attaches, and how to build it."""

    name: str
    event: str
    factory: Callable[[Options, BuiltinEnv], HookFunction]
    matcher: str | None = None
    timeout: float = 10.0
    # Bookkeeping that decides nothing (it only records): it runs after the answer, off the agent's critical
    # path, in order per session, and is never dropped (the runner waits for it at session end and before
    # memory/search reads).
    after_answer: bool = False
    # Off unless the user's own settings turn it on ({"enabled": true}); the opt-in hooks of hooks/builtin/user_choice.py.
    default_enabled: bool = True


# Registration order is execution order for blocking events (docs/BUILTIN_HOOKS.md).
# On PreToolUse: env-isolation first (it rewrites the command), then protection
# (which judges the rewritten command), then document-guard.
BUILTIN_HOOKS: tuple[BuiltinSpec, ...] = (
    # lifecycle
    BuiltinSpec("session-continuity", "SessionStart", lifecycle.make_session_continuity, timeout=5),
    BuiltinSpec("precompact-continuity", "PreCompact", lifecycle.make_precompact_continuity, timeout=10),
    BuiltinSpec("turn-activity", "Stop", lifecycle.make_turn_activity, timeout=5, after_answer=True),
    BuiltinSpec("turn-activity", "PostToolUse", lifecycle.make_file_tracker, matcher=FILE_WRITE_TOOLS, timeout=5, after_answer=True),
    BuiltinSpec("stale-cache-cleanup", "SessionEnd", lifecycle.make_stale_cache_cleanup, timeout=30),
    # guards
    BuiltinSpec("env-isolation", "PreToolUse", make_env_isolation, matcher="Bash", timeout=5),
    BuiltinSpec("protection", "PreToolUse", make_protection, matcher=f"{FILE_WRITE_TOOLS}|Bash", timeout=5),
    BuiltinSpec("document-guard", "PreToolUse", make_document_guard, matcher="Read", timeout=5),
    BuiltinSpec("secret-redaction", "PostToolUse", make_secret_redaction, timeout=5),
    # context
    BuiltinSpec("project-autodetect", "UserPromptSubmit", ctx_hooks.make_project_autodetect, timeout=5),
    BuiltinSpec("project-detect", "PostToolUse", ctx_hooks.make_project_detect, matcher="Write", timeout=5),
    BuiltinSpec("keyword-context", "UserPromptSubmit", ctx_hooks.make_keyword_context, timeout=5),
    BuiltinSpec("subagent-context", "SubagentStart", ctx_hooks.make_subagent_context, timeout=5),
    BuiltinSpec("subagent-log", "SubagentStop", ctx_hooks.make_subagent_log, timeout=5, after_answer=True),
    BuiltinSpec("compact-summary", "PostCompact", ctx_hooks.make_compact_summary, timeout=5),
    BuiltinSpec("notification-forward", "Notification", ctx_hooks.make_notification_forward, timeout=5),
    # memory
    BuiltinSpec("memory-context", "SessionStart", memory_hooks.make_memory_context, timeout=10),
    BuiltinSpec("memory-session", "UserPromptSubmit", memory_hooks.make_memory_session, timeout=10, after_answer=True),
    BuiltinSpec("memory-observe", "PostToolUse", memory_hooks.make_memory_observe, timeout=10, after_answer=True),
    BuiltinSpec("memory-summary", "Stop", memory_hooks.make_memory_summary, timeout=30, after_answer=True),
    BuiltinSpec("memory-complete", "SessionEnd", memory_hooks.make_memory_complete, timeout=10),
    # the user's choices (off by default; only the user's settings turn them on)
    BuiltinSpec("ambient-context", "UserPromptSubmit", user_choice.make_ambient_context, timeout=5,
                default_enabled=False),
    BuiltinSpec("auto-approve", "PermissionRequest", user_choice.make_auto_approve, timeout=5, default_enabled=False),
)

BUILTIN_HOOK_NAMES: tuple[str, ...] = tuple(dict.fromkeys(spec.name for spec in BUILTIN_HOOKS))


def builtin_registry(options: Mapping[str, Mapping[str, Any]] | None = None, *, data_dir: Path) -> HookRegistry:
    """A fresh registry holding every built-in hook (builtin=True), in BUILTIN_HOOKS order.

    `options[<hook name>]` configures one hook: `{"enabled": false}` leaves it
    out, `{"timeout": s}` changes its timeout, other keys are the hook's own
    (docs/BUILTIN_HOOKS.md). `data_dir` is where the hooks keep their files
    when the firing context has no `data_dir` of its own.
    """
    options = dict(options or {})
    unknown = sorted(set(options) - set(BUILTIN_HOOK_NAMES))
    if unknown:
        # A typo here would silently leave a guard configured the default way: say so.
        log.warning("options given for unknown built-in hook(s): %s", ", ".join(unknown))
    env = BuiltinEnv(data_dir=Path(data_dir))
    registry = HookRegistry()
    for spec in BUILTIN_HOOKS:
        opts = dict(options.get(spec.name) or {})
        if opts.get("enabled", spec.default_enabled) is not True:
            continue
        registry.register(
            spec.event,
            spec.factory(opts, env),
            matcher=spec.matcher,
            name=spec.name,
            timeout=float(opts.get("timeout", spec.timeout)),
            builtin=True,
            run_async=spec.after_answer,
        )
    return registry


__all__ = ["BUILTIN_HOOKS", "BUILTIN_HOOK_NAMES", "BuiltinSpec", "builtin_registry"]
