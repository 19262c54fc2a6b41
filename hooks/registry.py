"""Programmatic hooks: the `@hook` decorator and the registry that holds Python hook closures."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from hooks.types import ALL_EVENTS, HookFunction

Scope = Literal["global", "agent", "skill"]


@dataclass(slots=True, frozen=True)
class ProgrammaticHook:
    """A Python hook closure registered in-process, with the same knobs a settings entry has."""

    event: str
    fn: HookFunction
    name: str
    matcher: str | None = None
    timeout: float = 30.0  # seconds
    fail_closed: bool = False
    run_async: bool = False  # started and not awaited by the agent
    scope: Scope = "global"
    scope_value: str | None = None  # agent_type for scope "agent", skill name for scope "skill"
    builtin: bool = False  # shipped with the sidecar: always trusted, survives disableAllHooks


@dataclass(slots=True)
class HookRegistry:
    """An ordered collection of programmatic hooks; registration order is execution order."""

    hooks: list[ProgrammaticHook] = field(default_factory=list)

    def add(self, hook: ProgrammaticHook) -> ProgrammaticHook:
        if hook.event not in ALL_EVENTS:
            raise ValueError(f"unknown hook event {hook.event!r}; expected one of {', '.join(ALL_EVENTS)}")
        if any(h.name == hook.name and h.event == hook.event for h in self.hooks):
            raise ValueError(f"a programmatic hook named {hook.name!r} is already registered for {hook.event}")
        self.hooks.append(hook)
        return hook

    def register(
        self,
        event: str,
        fn: HookFunction,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        fail_closed: bool = False,
        run_async: bool = False,
        scope: Scope = "global",
        scope_value: str | None = None,
        builtin: bool = False,
    ) -> ProgrammaticHook:
        return self.add(
            ProgrammaticHook(
                event=event,
                fn=fn,
                name=name or getattr(fn, "__name__", "hook"),
                matcher=matcher,
                timeout=timeout,
                fail_closed=fail_closed,
                run_async=run_async,
                scope=scope,
                scope_value=scope_value,
                builtin=builtin,
            )
        )

    def hook(
        self,
        event: str,
        *,
        matcher: str | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        fail_closed: bool = False,
        run_async: bool = False,
        scope: Scope = "global",
        scope_value: str | None = None,
        builtin: bool = False,
    ):
        """Decorator form: `@registry.hook("PreToolUse", matcher="Bash", name="protection", timeout=5)`."""

        def decorate(fn: HookFunction) -> HookFunction:
            self.register(
                event,
                fn,
                matcher=matcher,
                name=name,
                timeout=timeout,
                fail_closed=fail_closed,
                run_async=run_async,
                scope=scope,
                scope_value=scope_value,
                builtin=builtin,
            )
            return fn

        return decorate

    def for_event(self, event: str) -> list[ProgrammaticHook]:
        return [h for h in self.hooks if h.event == event]

    def __iter__(self) -> Iterator[ProgrammaticHook]:
        return iter(self.hooks)

    def __len__(self) -> int:
        return len(self.hooks)


# The process-wide default registry that the bare `@hook` decorator writes to.
default_registry = HookRegistry()
hook = default_registry.hook
