"""Deferred built-ins (hooks/builtin/__init__.py): a session's hook set is made without importing the hooks'
modules (so its CLI spawns sooner), `resolve` builds them before any can fire, and a hook called unresolved
builds itself and behaves exactly as the eager one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hooks.builtin import BuiltinOptionError, DeferredHook, builtin_registry, resolve
from hooks.hookset import load_hookset
from hooks.runner import HookRunner
from hooks.types import SessionContext

REPO = Path(__file__).resolve().parents[2]
HOOK_MODULES = ["hooks.builtin.protection", "hooks.builtin.context", "hooks.builtin.memory_hooks",
                "hooks.builtin.lifecycle", "hooks.builtin.env_isolation", "hooks.builtin.shell_effects"]


def test_a_sessions_hook_set_imports_none_of_the_hooks_modules_until_resolved(tmp_path: Path) -> None:
    # A fresh interpreter: what `session/new` imports before its CLI is spawned.
    probe = f"""
import json, sys
from pathlib import Path
from sidecar.sessions import load_session_hookset
hookset = load_session_hookset(Path({str(tmp_path)!r}), None, Path({str(tmp_path / 'data')!r}), defer=True)
before = [m for m in {HOOK_MODULES!r} if m in sys.modules]
events = sorted({{spec.event for spec in hookset.entries if spec.builtin}})
from hooks.builtin import resolve
resolve(hookset.registry)
after = [m for m in {HOOK_MODULES!r} if m in sys.modules]
print(json.dumps({{"before": before, "after": after, "events": events}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ORION_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] == []
    assert seen["after"] == HOOK_MODULES
    # What the CLI's start needs of the built-ins (which events call back) is known unresolved.
    assert {"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop"} <= set(seen["events"])


def test_resolve_builds_every_deferred_hook_with_the_real_functions_name(tmp_path: Path) -> None:
    registry = builtin_registry(data_dir=tmp_path, defer=True)
    deferred = [h.fn for h in registry]
    assert deferred and all(isinstance(fn, DeferredHook) and fn.fn is None for fn in deferred)
    resolve(registry)
    assert all(fn.fn is not None for fn in deferred)
    protection = next(h.fn for h in registry if h.name == "protection")
    assert (protection.__module__, protection.__qualname__) == ("hooks.builtin.protection",
                                                               "make_protection.<locals>.protection")


def test_a_bad_option_fails_at_resolve_not_at_the_hooks_first_call(tmp_path: Path) -> None:
    options = {"auto-approve": {"enabled": True, "bashAllow": 5}}
    registry = builtin_registry(options, data_dir=tmp_path, defer=True)  # nothing is built yet
    with pytest.raises(BuiltinOptionError, match="'auto-approve'.*bashAllow"):
        resolve(registry)
    with pytest.raises(BuiltinOptionError):
        builtin_registry(options, data_dir=tmp_path)  # eager, as `python -m hooks` and hooks/list build it


@pytest.mark.asyncio
@pytest.mark.parametrize("defer", [False, True])
async def test_an_unresolved_guard_called_directly_denies_as_the_built_one(tmp_path: Path, defer: bool) -> None:
    # Belt and braces: were a path to fire before `resolve`, the guard still judges; it never lets a call through.
    project = tmp_path / "p"
    project.mkdir()
    runner = HookRunner(load_hookset(project, registry=builtin_registry(data_dir=tmp_path / "d", defer=defer)),
                        data_dir=tmp_path / "d")
    try:
        payload = {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": str(project), "tool_name": "Write",
                   "tool_input": {"file_path": str(project / ".env"), "content": "X=1"}, "tool_use_id": "t1"}
        result = await runner.fire("PreToolUse", payload, SessionContext("s", project))
    finally:
        await runner.aclose()
    assert result.decision == "deny"
