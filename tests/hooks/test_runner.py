"""Order, chaining, concurrency, background hooks, aggregation, the stop loop guard, programmatic hooks, observability and tracking."""

from __future__ import annotations

import json
import logging

import anyio
import pytest

from hooks.errors import InvalidSessionId
from hooks.inputs import PreToolUseInput
from hooks.registry import HookRegistry
from hooks.types import ExecutionReport, HookOutput
from tests.hooks.support import PRE_BASH, Recorder, cmd, running, session, settings


def rewrite(suffix: str, name: str):
    """A command hook that appends `suffix` to the Bash command it receives on stdin."""
    py = (
        "import json,sys; d=json.load(sys.stdin); c=d['tool_input']['command']; "
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow', "
        f"'updatedInput': {{'command': c + '{suffix}'}}}}}}))"
    )
    return cmd(f'python3 -c "{py}"', name=name)


@pytest.mark.asyncio
async def test_blocking_hooks_run_in_order_and_chain_updated_input(project):
    reg = HookRegistry()
    seen = []

    @reg.hook("PreToolUse", matcher="Bash", name="last")
    async def last(inp, ctx):
        seen.append(inp["tool_input"]["command"])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": inp["tool_input"]["command"] + " | tee log"}}}

    project.settings(settings("PreToolUse", rewrite(" -a", "first"), rewrite(" -l", "second"), matcher="Bash"))
    project.trust()
    rec = Recorder()
    with anyio.fail_after(30):
        async with running(project.load(registry=reg), rec) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert [r.hook_name for r in agg.results] == ["first", "second", "last"]
    assert seen == ["ls -a -l"]
    assert agg.updated_input == {"command": "ls -a -l | tee log"}
    assert [k for k in rec.kinds() if k[0] != "progress"] == [("started", "first"), ("response", "first"), ("started", "second"), ("response", "second"),
                           ("started", "last"), ("response", "last")]


@pytest.mark.asyncio
async def test_a_deny_ends_the_chain(project):
    marker = project.root / "after.ran"
    project.settings(settings("PreToolUse", cmd("echo no >&2; exit 2", name="gate"), cmd(f"touch {marker}", name="after")))
    project.trust()
    with anyio.fail_after(30):
        async with running(project.load()) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert [r.hook_name for r in agg.results] == ["gate"] and agg.decision == "deny" and not marker.exists()


@pytest.mark.asyncio
async def test_advisory_hooks_run_concurrently(project):
    # "waiter" finishes only after "signaller" has run: sequential execution would time "waiter" out.
    flag = project.root / "flag"
    project.settings(settings("PostToolUse",
        cmd(f"while [ ! -f {flag} ]; do sleep 0.01; done; echo waited", name="waiter", timeout=10),
        cmd(f"touch {flag}", name="signaller")))
    project.trust()
    rec = Recorder()
    with anyio.fail_after(30):
        async with running(project.load(), rec) as runner:
            agg = await runner.fire("PostToolUse", {**PRE_BASH, "tool_response": {}}, session(project))
    kinds = [k for k in rec.kinds() if k[0] != "progress"]
    # both were started before the waiter answered: run one after the other, the waiter could never finish
    assert kinds[:2] == [("started", "waiter"), ("started", "signaller")]
    assert [r.hook_name for r in agg.results] == ["waiter", "signaller"]  # registration order, not finish order
    assert [r.outcome for r in agg.results] == ["success", "success"]


@pytest.mark.asyncio
async def test_async_hooks_are_not_awaited_but_still_report(project):
    reg = HookRegistry()
    release = anyio.Event()
    done = anyio.Event()

    async def background(inp, ctx):
        await release.wait()
        return {"systemMessage": "late"}

    reg.register("PostToolUse", background, name="bg", run_async=True)

    class Rec(Recorder):
        async def on_response(self, result, session_id):
            await super().on_response(result, session_id)
            if result.hook_name == "bg":
                done.set()

    rec = Rec()
    with anyio.fail_after(20):
        async with running(project.load(registry=reg), rec) as runner:
            agg = await runner.fire("PostToolUse", {}, session(project))
            assert agg.results == [] and agg.system_messages == []
            assert ("started", "bg") in rec.kinds() and ("response", "bg") not in rec.kinds()
            release.set()
            await done.wait()
    bg = rec.responses()[0]
    assert bg.background and bg.outcome == "success" and bg.output.systemMessage == "late"


@pytest.mark.asyncio
async def test_decisions_aggregate_deny_over_defer_over_ask_over_allow(project):
    reg = HookRegistry()
    for name, decision in [("a", "allow"), ("b", "defer"), ("c", "ask")]:
        def make(d=decision, n=name):
            async def fn(inp, ctx):
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d, "permissionDecisionReason": n}}
            return fn
        reg.register("PreToolUse", make(), name=name)
    with anyio.fail_after(20):
        async with running(project.load(registry=reg)) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
            assert (agg.decision, agg.reason) == ("defer", "b")

            async def deny(inp, ctx):
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}

            reg.register("PreToolUse", deny, name="d")
            runner.hookset = project.load(registry=reg)
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
            assert agg.decision == "deny" and len(agg.results) == 4


@pytest.mark.asyncio
async def test_stop_loop_guard_reports_a_second_block_without_enforcing_it(project):
    project.settings(settings("Stop", cmd("echo 'tests are failing' >&2; exit 2", name="tests-gate")))
    project.trust()
    with anyio.fail_after(20):
        async with running(project.load()) as runner:
            first = await runner.fire("Stop", {"stop_hook_active": False}, session(project))
            second = await runner.fire("Stop", {"stop_hook_active": True}, session(project))
    assert first.decision == "block" and first.results[0].enforced
    assert second.decision is None and second.to_hook_json().get("decision") is None
    assert second.results[0].outcome == "blocked" and second.results[0].enforced is False
    assert "loop guard" in second.system_messages[0] and "tests are failing" in second.system_messages[0]


@pytest.mark.asyncio
async def test_programmatic_hooks_typed_input_context_timeout_and_exception(project):
    reg = HookRegistry()
    emitted = []

    async def emit(event, payload):
        emitted.append((event, payload))

    @reg.hook("PreToolUse", matcher="Bash", name="typed")
    async def typed(inp: PreToolUseInput, ctx) -> HookOutput:
        ctx.state["count"] = ctx.state.get("count", 0) + 1
        await ctx.emit("projectContextChange", {"tool": inp.tool_name})
        return HookOutput(systemMessage=f"{inp.tool_input['command']} {ctx.session_id} {ctx.tool_use_id} {ctx.project_dir.name}")

    @reg.hook("PreToolUse", name="slow", timeout=0.2)
    async def slow(inp, ctx):
        await anyio.sleep(100)

    @reg.hook("PreToolUse", name="buggy")
    async def buggy(inp, ctx):
        return inp["nope"]

    @reg.hook("PreToolUse", name="garbage")
    async def garbage(inp, ctx):
        return {"decision": "maybe"}

    sess = session(project, emit=emit)
    with anyio.fail_after(20):
        async with running(project.load(registry=reg)) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, sess, tool_use_id="toolu_9")
    by = {r.hook_name: r for r in agg.results}
    assert agg.system_messages == ["ls sess-1 toolu_9 proj"]
    assert sess.state["count"] == 1 and emitted == [("projectContextChange", {"tool": "Bash"})]
    assert by["slow"].outcome == "timeout"
    assert by["buggy"].outcome == "error" and by["buggy"].error == "KeyError: 'nope'" and "return inp[\"nope\"]" in by["buggy"].traceback
    assert by["garbage"].outcome == "error" and "schema" in by["garbage"].error
    assert agg.decision is None


@pytest.mark.asyncio
async def test_agent_and_skill_scoped_hooks_run_only_in_their_scope(project):
    reg = HookRegistry()
    ran = []

    async def rec(inp, ctx):
        ran.append(ctx.hook_name)

    reg.register("PostToolUse", rec, name="global")
    reg.register("PostToolUse", rec, name="reviewer-only", scope="agent", scope_value="reviewer")
    reg.register("PostToolUse", rec, name="pdf-only", scope="skill", scope_value="pdf")
    with anyio.fail_after(20):
        async with running(project.load(registry=reg)) as runner:
            await runner.fire("PostToolUse", {}, session(project))
            assert sorted(ran) == ["global"]
            ran.clear()
            await runner.fire("PostToolUse", {}, session(project, agent_type="reviewer", skill="pdf"))
            assert sorted(ran) == ["global", "pdf-only", "reviewer-only"]


@pytest.mark.asyncio
async def test_a_type_without_executor_reports_error_and_fails_open(project):
    project.settings(settings("PreToolUse", {"type": "http", "url": "http://127.0.0.1:9/h", "name": "policy", "failClosed": True}))
    project.trust()

    class Fake:
        async def run(self, call):
            assert call.hook.config.url == "http://127.0.0.1:9/h" and call.timeout_s == 30.0
            return ExecutionReport(status="ok", exit_code=0, output=HookOutput(systemMessage=f"via {call.hook.name}"))

    with anyio.fail_after(20):
        async with running(project.load()) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
            assert agg.results[0].outcome == "error" and agg.results[0].error == "no executor for type http"
            assert agg.decision is None
            runner.executors["http"] = Fake()
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
            assert agg.system_messages == ["via policy"]


@pytest.mark.asyncio
async def test_a_broken_observer_does_not_change_the_outcome(project):
    reg = HookRegistry()

    @reg.hook("PreToolUse", name="deny")
    async def deny(inp, ctx):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}

    class Broken:
        async def on_started(self, s):
            raise RuntimeError("ui gone")

        async def on_progress(self, p):
            raise RuntimeError("ui gone")

        async def on_response(self, r, sid):
            raise RuntimeError("ui gone")

    with anyio.fail_after(20):
        async with running(project.load(registry=reg), Broken()) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert agg.decision == "deny"


@pytest.mark.asyncio
async def test_tracking_lines_per_execution_and_session_id_check(project, isolated_home):
    reg = HookRegistry()

    @reg.hook("Stop", name="tracked")
    async def tracked(inp, ctx):
        return None

    with anyio.fail_after(20):
        async with running(project.load(registry=reg)) as runner:
            await runner.fire("Stop", {}, session(project, "track-1"))
            await runner.fire("Stop", {}, session(project, "track-1"))
            with pytest.raises(InvalidSessionId):
                await runner.fire("Stop", {}, session(project, "../../etc"))
    data = isolated_home / ".local/share/orion"
    events = [json.loads(l) for l in (data / "sessions/track-1/events.jsonl").read_text().splitlines()]
    timing = [json.loads(l) for l in (data / "analytics/hook-timing.jsonl").read_text().splitlines()]
    assert len(events) == 2 and len(timing) == 2
    assert events[0]["name"] == "tracked" and events[0]["outcome"] == "success" and events[0]["sessionId"] == "track-1"
    assert events[0]["executionId"] != events[1]["executionId"]
    assert set(timing[0]) == {"ts", "name", "event", "durationMs", "outcome", "project"}
    assert str(project.root) not in json.dumps(timing) and len(timing[0]["project"]) == 16
    assert not (data / "sessions" / ".." / "etc").exists()


@pytest.mark.asyncio
async def test_budget_covers_sequential_sum_and_concurrent_max(project):
    project.settings({"hooks": {
        "PreToolUse": [{"hooks": [cmd("true", timeout=3), cmd("false", timeout=5), cmd("sleep 1", timeout=9, **{"async": True})]}],
        "PostToolUse": [{"hooks": [cmd("true", timeout=3), cmd("false", timeout=5)]}],
    }})
    project.trust()
    async with running(project.load()) as runner:
        blocking, advisory = runner.budget_s("PreToolUse"), runner.budget_s("PostToolUse")
    assert blocking >= 3 + 5 + 2 * 2 and blocking < 20
    assert 5 + 2 <= advisory < blocking


@pytest.mark.asyncio
async def test_hook_debug_logs_every_step_to_stderr(project, monkeypatch, capsys):
    monkeypatch.setenv("HOOK_DEBUG", "1")
    reg = HookRegistry()

    @reg.hook("Stop", name="dbg")
    async def dbg(inp, ctx):
        return None

    hooks_log = logging.getLogger("hooks")
    level, handlers = hooks_log.level, list(hooks_log.handlers)
    try:
        async with running(project.load(registry=reg)) as runner:
            await runner.fire("Stop", {}, session(project))
    finally:
        # as it was: a level left at WARNING dropped every later test's INFO records of hooks.* (caplog saw none)
        hooks_log.setLevel(level)
        hooks_log.handlers[:] = handlers
    err = capsys.readouterr().err
    assert "fire Stop" in err and "start " in err and "done " in err and "aggregate Stop" in err


def test_permission_request_json_shape():
    from hooks.types import AggregateResult

    deny = AggregateResult(event="PermissionRequest", decision="deny", reason="nope")
    assert deny.to_hook_json() == {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                                          "decision": {"behavior": "deny", "message": "nope"}}}
    allow = AggregateResult(event="PermissionRequest", decision="allow", updated_input={"a": 1})
    assert allow.to_hook_json()["hookSpecificOutput"]["decision"] == {"behavior": "allow", "updatedInput": {"a": 1}}


@pytest.mark.asyncio
async def test_after_answer_bookkeeping_is_bounded_and_loses_nothing(project, caplog: pytest.LogCaptureFixture):
    """Built-in bookkeeping (memory, tracking) runs after the answer, one chain per session. When it falls behind by
    AFTER_ANSWER_BOUND events, the next event waits for the oldest batch before it is answered (backpressure): the
    queue never holds more than the bound, the log says it is behind and then caught up, and every event is still
    recorded, in order."""
    from hooks import runner as runner_module

    reg = HookRegistry()
    gate = anyio.Event()
    recorded: list[int] = []

    async def bookkeeping(inp, ctx):
        await gate.wait()
        recorded.append(inp["tool_input"]["n"])
        return {}

    reg.register("PostToolUse", bookkeeping, name="book", run_async=True)
    hookset = project.load(registry=reg)
    for spec in hookset.entries:
        spec.builtin = True  # what makes an async hook bookkeeping rather than a background hook
    bound = runner_module.AFTER_ANSWER_BOUND
    total = bound + 10
    answered = 0
    caplog.set_level(logging.INFO, logger="hooks")
    with anyio.fail_after(30):
        async with running(hookset, Recorder()) as runner:
            async def fire_all() -> None:
                nonlocal answered
                for n in range(total):
                    await runner.fire("PostToolUse", {"tool_name": "Bash", "tool_input": {"n": n}}, session(project))
                    answered += 1

            async with anyio.create_task_group() as tg:
                tg.start_soon(fire_all)
                while answered < bound:
                    await anyio.sleep(0.01)
                await anyio.sleep(0.2)
                # the bound is reached: the next event waits, nothing more is queued
                assert answered == bound and runner.pending_after_answer() == bound
                gate.set()
            assert await runner.drain(timeout=10)
    assert recorded == list(range(total))
    assert any("events behind" in r.getMessage() for r in caplog.records)
    assert any("caught up" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
async def test_a_background_hooks_answer_reaches_the_model_afterwards(project):
    """What an `async` hook answers goes to the session's model once it is in (no wake); an `asyncRewake` hook's
    exit 2 wakes the model with Claude Code's words; a failed or empty answer and a foreground hook say nothing."""
    told: list[tuple[str, bool]] = []
    heard = anyio.Event()

    class Teller:
        async def tell_model(self, text: str, *, wake: bool) -> None:
            told.append((text, wake))
            if len(told) == 2:
                heard.set()

    answer = {"systemMessage": "lint: 2 warnings",
              "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "see lint.log"}}
    project.settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        cmd(f"echo '{json.dumps(answer)}'", name="lint", **{"async": True}),
        cmd("echo 'tests fail' >&2; exit 2", name="tests", asyncRewake=True),
        cmd("exit 1", name="broken", **{"async": True}),
        cmd("true", name="quiet", **{"async": True}),
        cmd(f"echo '{json.dumps(answer)}'", name="foreground"),
    ]}]}})
    project.trust()
    with anyio.fail_after(30):
        async with running(project.load()) as runner:
            ctx = session(project, late_answers=Teller())
            await runner.fire("PreToolUse", PRE_BASH, ctx)
            await heard.wait()
            await anyio.sleep(0.5)  # the failed and the quiet hook have had time to answer too
    assert sorted(told) == [
        ("Stop hook blocking error from command \"PreToolUse:Bash\": tests fail", True),
        ("lint: 2 warnings\nsee lint.log", False),
    ]


def test_a_late_answer_is_capped_and_built_in_bookkeeping_never_speaks():
    from types import SimpleNamespace

    from hooks.late_answers import MAX_LATE_TEXT, late_answer
    from hooks.types import HookResult

    def result(**kw):
        return HookResult(**{"execution_id": "x", "hook_id": "h", "hook_name": "n", "hook_type": "command",
                             "source": "project", "event": "Stop", "outcome": "success", "duration_ms": 1.0, **kw})

    hook = SimpleNamespace(builtin=False, run_async=True, rewake=False, matcher=None)
    long = late_answer(hook, result(output=HookOutput(systemMessage="x" * (MAX_LATE_TEXT + 5))))
    assert long is not None and long.text.endswith("… [5 more characters]") and not long.wake
    builtin = SimpleNamespace(builtin=True, run_async=True, rewake=False, matcher=None)
    assert late_answer(builtin, result(output=HookOutput(systemMessage="memory saved"))) is None
    rewake = SimpleNamespace(builtin=False, run_async=True, rewake=True, matcher=None)
    woke = late_answer(rewake, result(outcome="blocked", exit_code=2))
    assert woke is not None and woke.wake and woke.text == 'Stop hook blocking error from command "Stop": No stderr output'
