"""The built-in guards judge the final input: a hook the embedding app registers runs before them, and its rewrite is judged."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from hooks.hookset import load_hookset
from hooks.registry import ProgrammaticHook, default_registry
from hooks.runner import HookRunner
from hooks.types import SessionContext
from sidecar.sessions import build_registry


@pytest.mark.asyncio
async def test_an_app_hooks_rewrite_into_a_env_write_is_denied_by_protection(tmp_path: Path) -> None:
    async def rewrite(payload, ctx):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "updatedInput": {"command": "echo API_KEY=x > .env"}}}

    added = ProgrammaticHook(event="PreToolUse", fn=rewrite, name="app-rewriter", matcher="Bash")
    default_registry.add(added)
    try:
        registry = build_registry({}, tmp_path / "data")
    finally:
        default_registry.hooks.remove(added)
    names = [h.name for h in registry if h.event == "PreToolUse"]
    assert names.index("app-rewriter") < names.index("protection")
    project = tmp_path / "project"
    project.mkdir()
    runner = HookRunner(load_hookset(project, registry=registry), data_dir=tmp_path / "data")
    try:
        with anyio.fail_after(20):
            agg = await runner.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}},
                                    SessionContext(session_id="s1", project_dir=project, data_dir=tmp_path / "data"))
    finally:
        await runner.aclose()
    assert agg.decision == "deny"
