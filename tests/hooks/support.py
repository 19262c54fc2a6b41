"""Helpers for the hook engine tests: project trees on disk, a recording observer, a runner factory."""

from __future__ import annotations

import json
import stat
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.hookset import HookSet, load_hookset
from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.trust import TrustStore
from hooks.types import HookProgress, HookResult, HookStarted, SessionContext
from tests.waiting import pids_alive  # noqa: F401 - the hook tests take it from here


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return path


def script(path: Path, body: str, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def cmd(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


def settings(event: str, *entries: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": list(entries)}
    if matcher is not None:
        group["matcher"] = matcher
    return {"hooks": {event: [group]}}


@dataclass
class Project:
    root: Path

    @property
    def claude(self) -> Path:
        return self.root / ".claude"

    @property
    def hooks_dir(self) -> Path:
        return self.claude / "hooks"

    def settings(self, data: Any, local: bool = False) -> Path:
        return write_json(self.claude / ("settings.local.json" if local else "settings.json"), data)

    def trust(self) -> str:
        return TrustStore().trust(self.root)

    def load(self, registry: HookRegistry | None = None, vault: Path | None = None, **kw: Any) -> HookSet:
        kw.setdefault("managed_settings", ())  # not the machine's /etc/claude-code
        return load_hookset(self.root, vault, registry=registry if registry is not None else HookRegistry(), **kw)


@dataclass
class Recorder:
    """An observer that keeps every call, in order."""

    log: list[tuple[str, Any]] = field(default_factory=list)

    async def on_started(self, started: HookStarted) -> None:
        self.log.append(("started", started))

    async def on_progress(self, progress: HookProgress) -> None:
        self.log.append(("progress", progress))

    async def on_response(self, result: HookResult, session_id: str) -> None:
        self.log.append(("response", (result, session_id)))

    def kinds(self) -> list[tuple[str, str]]:
        out = []
        for kind, item in self.log:
            name = item[0].hook_name if kind == "response" else item.hook_name
            out.append((kind, name))
        return out

    def responses(self) -> list[HookResult]:
        return [item[0] for kind, item in self.log if kind == "response"]

    def progress_lines(self, name: str, stream: str = "stdout") -> list[str]:
        return [p.line for kind, p in self.log if kind == "progress" and p.hook_name == name and p.stream == stream]


def session(project: Project, sid: str = "sess-1", **kw: Any) -> SessionContext:
    return SessionContext(session_id=sid, project_dir=project.root, **kw)


@asynccontextmanager
async def running(hookset: HookSet, observer: Any = None, **kw: Any):
    runner = HookRunner(hookset, observer, **kw)
    try:
        yield runner
    finally:
        await runner.aclose()


PRE_BASH = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
