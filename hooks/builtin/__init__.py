"""The built-in Orion hook set: lifecycle, guard, context and memory hooks, registered in one documented order.

The table names each hook's factory as "module:function" and imports nothing of the hooks themselves: their
modules (shell analysis, memory store, YAML front matter...) cost ~60 ms to import, which a session start should
not pay before its CLI is spawned. `builtin_registry(..., defer=True)` registers placeholders that know their
event and matcher (all the CLI's start needs); `resolve(registry)` imports and builds the real hooks, and a
session calls it while its CLI boots, before any hook can fire (sidecar/sessions.py).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.builtin.common import BuiltinEnv, Options
from hooks.registry import HookRegistry
from hooks.types import HookContext, HookFunction

log = logging.getLogger("hooks.builtin")

FILE_WRITE_TOOLS = "Write|Edit|MultiEdit|NotebookEdit"


@dataclass(slots=True, frozen=True)
class BuiltinSpec:
    """One row of the built-in table: a hook's stable name, where it attaches, and how to build it."""

    name: str
    event: str
    factory: str  # "module:function" under hooks.builtin, called as function(options, env) -> the hook
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
    BuiltinSpec("session-continuity", "SessionStart", "lifecycle:make_session_continuity", timeout=5),
    BuiltinSpec("precompact-continuity", "PreCompact", "lifecycle:make_precompact_continuity", timeout=10),
    BuiltinSpec("turn-activity", "Stop", "lifecycle:make_turn_activity", timeout=5, after_answer=True),
    BuiltinSpec("turn-activity", "PostToolUse", "lifecycle:make_file_tracker", matcher=FILE_WRITE_TOOLS, timeout=5, after_answer=True),
    BuiltinSpec("stale-cache-cleanup", "SessionEnd", "lifecycle:make_stale_cache_cleanup", timeout=30),
    # guards
    BuiltinSpec("env-isolation", "PreToolUse", "env_isolation:make_env_isolation", matcher="Bash", timeout=5),
    BuiltinSpec("protection", "PreToolUse", "protection:make_protection", matcher=f"{FILE_WRITE_TOOLS}|Bash", timeout=5),
    BuiltinSpec("document-guard", "PreToolUse", "document_guard:make_document_guard", matcher="Read", timeout=5),
    BuiltinSpec("secret-redaction", "PostToolUse", "secret_redaction:make_secret_redaction", timeout=5),
    # context
    BuiltinSpec("project-autodetect", "UserPromptSubmit", "context:make_project_autodetect", timeout=5),
    BuiltinSpec("project-detect", "PostToolUse", "context:make_project_detect", matcher="Write", timeout=5),
    BuiltinSpec("keyword-context", "UserPromptSubmit", "context:make_keyword_context", timeout=5),
    BuiltinSpec("subagent-context", "SubagentStart", "context:make_subagent_context", timeout=5),
    BuiltinSpec("subagent-log", "SubagentStop", "context:make_subagent_log", timeout=5, after_answer=True),
    BuiltinSpec("compact-summary", "PostCompact", "context:make_compact_summary", timeout=5),
    BuiltinSpec("notification-forward", "Notification", "context:make_notification_forward", timeout=5),
    # memory
    BuiltinSpec("memory-context", "SessionStart", "memory_hooks:make_memory_context", timeout=10),
    # After the answer: their timeouts cover a write that waits for another writer of the memory file (the store
    # waits up to WRITE_PATIENCE_S, 60 s, rather than lose the record); no turn waits for them.
    BuiltinSpec("memory-session", "UserPromptSubmit", "memory_hooks:make_memory_session", timeout=70, after_answer=True),
    BuiltinSpec("memory-observe", "PostToolUse", "memory_hooks:make_memory_observe", timeout=70, after_answer=True),
    BuiltinSpec("memory-summary", "Stop", "memory_hooks:make_memory_summary", timeout=90, after_answer=True),
    BuiltinSpec("memory-complete", "SessionEnd", "memory_hooks:make_memory_complete", timeout=10),
    # the user's choices (off by default; only the user's settings turn them on)
    BuiltinSpec("ambient-context", "UserPromptSubmit", "user_choice:make_ambient_context", timeout=5,
                default_enabled=False),
    BuiltinSpec("auto-approve", "PermissionRequest", "user_choice:make_auto_approve", timeout=5, default_enabled=False),
    # Changes what the model reads (past work related to the first prompt, in memory-context's budget): opt-in.
    BuiltinSpec("memory-related", "UserPromptSubmit", "memory_hooks:make_memory_related", timeout=5,
                default_enabled=False),
)

BUILTIN_HOOK_NAMES: tuple[str, ...] = tuple(dict.fromkeys(spec.name for spec in BUILTIN_HOOKS))
# The modules `resolve` imports (sidecar/preimport.py has an idle sidecar import them ahead).
BUILTIN_HOOK_MODULES: tuple[str, ...] = tuple(dict.fromkeys(f"{__name__}.{spec.factory.partition(':')[0]}"
                                                            for spec in BUILTIN_HOOKS))


class BuiltinOptionError(ValueError):
    """A built-in hook's factory refused its options; the message names the hook and the option keys."""

    def __init__(self, name: str, options: Options, exc: Exception) -> None:
        keys = ", ".join(sorted(k for k in options if k not in ("enabled", "timeout"))) or "none"
        super().__init__(f"built-in hook {name!r}: its options (keys: {keys}) in Orion's user settings are not valid: "
                         f"{type(exc).__name__}: {exc}")
        self.hook = name


class DeferredHook:
    """A built-in hook not built yet: its factory is imported and called by `build()` (or at its first call).

    Called, it calls the real hook with the same arguments and returns what that returns (a coroutine for an
    async hook), so the callable executor drives it exactly as the hook itself.
    """

    def __init__(self, spec: BuiltinSpec, options: Options, env: BuiltinEnv) -> None:
        self.spec, self.options, self.env = spec, options, env
        self.fn: HookFunction | None = None
        module, _, factory = spec.factory.partition(":")
        self.__module__ = f"{__name__}.{module}"  # until built: the factory's module and name
        self.__qualname__ = self.__name__ = factory

    def build(self) -> HookFunction:
        if self.fn is None:
            make = getattr(importlib.import_module(self.__module__), self.__name__)
            try:
                fn = make(self.options, self.env)
            except Exception as exc:  # a factory only reads its options: what fails there is an option
                raise BuiltinOptionError(self.spec.name, self.options, exc) from exc
            self.__module__, self.__qualname__ = fn.__module__, fn.__qualname__
            self.__name__ = fn.__name__
            self.fn = fn
        return self.fn

    def __call__(self, payload: dict[str, Any], ctx: HookContext) -> Any:
        return (self.fn or self.build())(payload, ctx)


def resolve(registry: HookRegistry) -> None:
    """Build every deferred built-in of `registry` now: imports their modules and runs their factories, so a
    bad option fails here (at session start), not at a hook's first call."""
    for hook in registry:
        if isinstance(hook.fn, DeferredHook):
            hook.fn.build()


def builtin_registry(options: Mapping[str, Mapping[str, Any]] | None = None, *, data_dir: Path,
                     defer: bool = False) -> HookRegistry:
    """A fresh registry holding every built-in hook (builtin=True), in BUILTIN_HOOKS order.

    `options[<hook name>]` configures one hook: `{"enabled": false}` leaves it
    out, `{"timeout": s}` changes its timeout, other keys are the hook's own
    (docs/BUILTIN_HOOKS.md). `data_dir` is where the hooks keep their files
    when the firing context has no `data_dir` of its own. With `defer`, the hooks are
    `DeferredHook`s until `resolve(registry)`.
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
        deferred = DeferredHook(spec, opts, env)
        registry.register(
            spec.event,
            deferred if defer else deferred.build(),
            matcher=spec.matcher,
            name=spec.name,
            timeout=float(opts.get("timeout", spec.timeout)),
            builtin=True,
            run_async=spec.after_answer,
        )
    return registry


__all__ = ["BUILTIN_HOOKS", "BUILTIN_HOOK_MODULES", "BUILTIN_HOOK_NAMES", "BuiltinOptionError", "BuiltinSpec", "DeferredHook", "builtin_registry", "resolve"]
