"""Test harness for the built-in hooks: a session with a recording frontend, fired through the real HookRunner."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from hooks.builtin import builtin_registry
from hooks.hookset import load_hookset
from hooks.runner import HookRunner
from hooks.types import AggregateResult, SessionContext


@dataclass(slots=True)
class Sandbox:
    """One project, vault and data dir, a runner over the built-in hooks, and the events hooks emitted."""

    root: Path
    project: Path
    vault: Path
    data: Path
    runner: HookRunner
    emitted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sessions: dict[str, SessionContext] = field(default_factory=dict)

    def session(self, session_id: str = "sess-1") -> SessionContext:
        if session_id not in self.sessions:

            async def emit(event: str, payload: dict[str, Any], _sid: str = session_id) -> None:
                self.emitted.append((event, {**payload, "sessionId": _sid}))

            self.sessions[session_id] = SessionContext(
                session_id=session_id, project_dir=self.project, vault_dir=self.vault, data_dir=self.data, emit=emit
            )
        return self.sessions[session_id]

    async def fire(self, event: str, payload: dict[str, Any] | None = None, *, session_id: str = "sess-1",
                   tool_use_id: str | None = None) -> AggregateResult:
        body = {"session_id": session_id, "transcript_path": "", "cwd": str(self.project), "hook_event_name": event}
        body.update(payload or {})
        with anyio.fail_after(20):
            agg = await self.runner.fire(event, body, self.session(session_id), tool_use_id=tool_use_id)
            await self.runner.drain()  # the bookkeeping built-ins run after the answer: let them finish
            return agg

    async def tool(self, event: str, tool_name: str, tool_input: dict[str, Any], response: Any = None,
                   *, session_id: str = "sess-1") -> AggregateResult:
        payload: dict[str, Any] = {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": "toolu_1"}
        if event.startswith("Post"):
            payload["tool_response"] = response
        return await self.fire(event, payload, session_id=session_id, tool_use_id="toolu_1")

    def hook_names(self, agg: AggregateResult) -> list[str]:
        return [r.hook_name for r in agg.results]

    def errors(self, agg: AggregateResult) -> list[str]:
        return [f"{r.hook_name}: {r.error}" for r in agg.results if r.outcome in ("error", "timeout")]


@asynccontextmanager
async def sandbox(tmp_path: Path, options: Mapping[str, Mapping[str, Any]] | None = None):
    project = tmp_path / "project"
    vault = tmp_path / "vault"
    data = tmp_path / "data"
    for d in (project, vault, data):
        d.mkdir(parents=True, exist_ok=True)
    registry = builtin_registry(options, data_dir=data)
    hookset = load_hookset(project, vault, registry=registry)
    runner = HookRunner(hookset, data_dir=data)
    try:
        yield Sandbox(tmp_path, project, vault, data, runner)
    finally:
        with anyio.fail_after(10):
            await runner.aclose()
