"""builtin_registry: every hook present and trusted, options, and disabling through hook-overrides.json."""

from __future__ import annotations

import json

import pytest

from hooks.builtin import BUILTIN_HOOK_NAMES, builtin_registry
from hooks.hookset import load_hookset
from hooks.runner import HookRunner
from hooks.types import SessionContext
from tests.builtin.harness import sandbox


def test_every_builtin_hook_is_registered_in_order(tmp_path):
    registry = builtin_registry(data_dir=tmp_path)
    assert all(h.builtin for h in registry)
    opt_in = ("ambient-context", "auto-approve", "memory-related")  # off unless the user's settings turn them on
    assert tuple(dict.fromkeys(h.name for h in registry)) == tuple(n for n in BUILTIN_HOOK_NAMES if n not in opt_in)
    assert len(BUILTIN_HOOK_NAMES) == 23
    both = builtin_registry({name: {"enabled": True} for name in opt_in}, data_dir=tmp_path)
    assert tuple(dict.fromkeys(h.name for h in both)) == BUILTIN_HOOK_NAMES
    pre = [h.name for h in registry.for_event("PreToolUse")]
    assert pre == ["env-isolation", "protection", "document-guard"]


def test_options_disable_and_retime(tmp_path, caplog):
    registry = builtin_registry({"protection": {"enabled": False}, "memory-summary": {"timeout": 3},
                                 "protecton": {"enabled": False}}, data_dir=tmp_path)
    assert "protection" not in {h.name for h in registry}
    assert [h.timeout for h in registry if h.name == "memory-summary"] == [3.0]
    assert "protecton" in caplog.text  # a misspelt name is reported, not silently ignored


@pytest.mark.asyncio
async def test_only_the_users_settings_disable_a_builtin_never_the_projects_overrides(tmp_path):
    async with sandbox(tmp_path) as sb:
        denied = await sb.tool("PreToolUse", "Write", {"file_path": ".env", "content": "x"})
    assert denied.decision == "deny"
    claude = tmp_path / "project" / ".claude"
    claude.mkdir()
    (claude / "hook-overrides.json").write_text(json.dumps({"disabled": ["protection"]}))
    registry = builtin_registry(data_dir=tmp_path / "data")
    payload = {"tool_name": "Write", "tool_input": {"file_path": ".env", "content": "x"}}
    context = SessionContext(session_id="s1", project_dir=tmp_path / "project", data_dir=tmp_path / "data")
    hookset = load_hookset(tmp_path / "project", tmp_path / "vault", registry=registry)
    states = {s.name: s.state for s in hookset.entries if s.event == "PreToolUse"}
    assert states["protection"] == "active"  # a cloned project cannot switch the guard off
    runner = HookRunner(hookset, data_dir=tmp_path / "data")
    agg = await runner.fire("PreToolUse", payload, context)
    await runner.aclose()
    assert agg.decision == "deny"

    user = tmp_path / "user.json"
    user.write_text(json.dumps({"disabledHooks": ["protection"]}))
    hookset = load_hookset(tmp_path / "project", tmp_path / "vault", registry=registry, user_settings=user)
    assert {s.name: s.state for s in hookset.entries if s.event == "PreToolUse"}["protection"] == "disabled"
    runner = HookRunner(hookset, data_dir=tmp_path / "data")
    agg = await runner.fire("PreToolUse", payload, context)
    await runner.aclose()
    assert agg.decision is None
