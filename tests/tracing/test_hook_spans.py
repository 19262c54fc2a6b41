"""Hook spans through the runner with the SDK's in-memory exporter (the `exporter` seam of hooks/tracing.configure):
parent by tool call, decision and reason, timeout, fail-closed; and tracing off costs the runner nothing but a lookup."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hooks import tracing
from hooks.hookset import load_hookset
from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.types import SessionContext


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    assert tracing.configure(env={}, exporter=memory)
    yield memory
    tracing.TRACING.enabled, tracing.TRACING.tracer, tracing.TRACING.provider = False, None, None


def test_hook_spans_sit_under_their_tool_call_with_decision_reason_and_timeout(tmp_path: Path,
                                                                              exporter: InMemorySpanExporter) -> None:
    registry = HookRegistry()

    async def deny(payload, ctx):  # noqa: ANN001, ANN202
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "not on Fridays"}}

    async def slow(payload, ctx):  # noqa: ANN001, ANN202
        await asyncio.sleep(5)

    registry.register("PreToolUse", slow, name="slow", matcher="Bash", timeout=0.2)
    registry.register("PreToolUse", deny, name="friday-gate", matcher="Bash")
    session = SessionContext("s-1", tmp_path)
    trace = tracing.start_session(session.state, "s-1", {"orion.project": str(tmp_path)})
    assert trace is not None
    trace.start_turn("run it")
    trace.start_tool("toolu_1", "Bash")
    runner = HookRunner(load_hookset(tmp_path, registry=registry))

    async def fire() -> None:
        payload = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
        await runner.fire("PreToolUse", payload, session, tool_use_id="toolu_1")
        await runner.aclose()

    asyncio.run(fire())
    trace.end_tool("toolu_1", "failed")
    trace.end("other")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool, gate, slow_span = spans["orion.tool Bash"], spans["orion.hook friday-gate"], spans["orion.hook slow"]
    assert gate.parent.span_id == tool.context.span_id and slow_span.parent.span_id == tool.context.span_id
    assert gate.attributes["orion.hook.decision"] == "deny" and gate.attributes["orion.hook.reason"] == "not on Fridays"
    assert gate.attributes["orion.hook.source"] == "programmatic" and gate.attributes["orion.hook.type"] == "callable"
    assert slow_span.attributes["orion.hook.timed_out"] is True and not slow_span.status.is_ok
    assert tool.parent.span_id == spans["orion.turn"].context.span_id
    assert spans["orion.turn"].parent.span_id == spans["orion.session"].context.span_id


def test_off_unless_the_user_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ORION_TRACING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracing, "_configured", False)
    session = SessionContext("s-2", tmp_path)
    assert tracing.start_session(session.state, "s-2", {}) is None
    assert tracing.TRACE_KEY not in session.state and not tracing.TRACING.enabled
    assert "off" in tracing.TRACING.reason
    # The switches, read as the user's environment would give them.
    assert tracing.configure(env={"ORION_TRACING": "1", "OTEL_SDK_DISABLED": "true"}) is False
    assert tracing.configure(env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_TRACES_EXPORTER": "none"}) is False
    assert tracing.configure(env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "ORION_TRACING": "0"}) is False
