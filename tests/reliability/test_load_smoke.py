"""Load smoke: two concurrent scripted sessions through a real sidecar, each tool call and prompt gets each of its 10 hooks exactly once."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import anyio
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "load_sessions.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_load_sessions", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.mark.cli
@pytest.mark.asyncio
async def test_two_sessions_every_tool_call_gets_exactly_its_ten_hooks(tmp_path: Path) -> None:
    bench = load_bench()
    steps = 3
    plan = bench.LoadPlan(sessions=2, duration_s=60.0, steps=steps, parallel=1, max_prompts=2)
    with anyio.fail_after(150):
        report = await bench.run_load(plan, tmp_path, env=bench.sidecar_env(tmp_path))
    tally = report.tally

    assert report.problems() == []
    assert sorted(report.prompts.values()) == [2, 2]
    assert report.stop_reasons == {"end_turn": 4}
    # 2 sessions x 2 prompts x 3 steps, each a Bash call that completed
    assert sum(len(ids) for ids in tally.tool_calls.values()) == 2 * 2 * steps
    assert tally.completed_tools == {"completed": 2 * 2 * steps}
    ours = sorted(bench.our_hook_names())
    assert len(ours) == 10
    per_event = {event: 0 for event in bench.HOOKED_EVENTS}
    for (_sid, event, _tool), names in tally.groups.items():
        assert sorted(names) == ours  # each of the 10, once: none missing, none doubled
        per_event[event] += 1
    assert per_event == {"UserPromptSubmit": 4, "PreToolUse": 12, "PostToolUse": 12, "Stop": 4}
    assert tally.outcomes.keys() == {"success"}
    assert report.sidecar_exit == 0
    assert report.leftover_processes == []


def test_the_check_catches_a_doubled_and_a_missing_hook() -> None:
    """The correctness check the smoke test relies on reports a hook fired twice and one that never ran."""
    bench = load_bench()
    tally = bench.EventTally(bench.our_hook_names())
    names = sorted(bench.our_hook_names())
    tally.tool_calls["s1"] = {"t1"}
    for event in ("PreToolUse", "PostToolUse"):
        for name in names:
            tally.add("hook_started", {"sessionId": "s1", "event": event, "toolUseId": "t1", "hookName": name}, 0.0)
    tally.add("hook_started", {"sessionId": "s1", "event": "PreToolUse", "toolUseId": "t1", "hookName": names[0]}, 0.0)
    assert bench.check_hooks(tally, {}) != []
    assert any("extra" in p and names[0] in p for p in bench.check_hooks(tally, {}))

    tally = bench.EventTally(bench.our_hook_names())
    tally.tool_calls["s1"] = {"t1"}
    for event in ("PreToolUse", "PostToolUse"):
        for name in names[1:]:
            tally.add("hook_started", {"sessionId": "s1", "event": event, "toolUseId": "t1", "hookName": name}, 0.0)
    problems = bench.check_hooks(tally, {"s1": 1})
    assert any("missing" in p and names[0] in p for p in problems)
    assert any("UserPromptSubmit" in p for p in problems)  # a prompt whose hooks never ran
