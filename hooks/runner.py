"""HookRunner: select the hooks an event reaches, run them (chained, concurrent or in the background), observe and track every execution, aggregate one answer."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hooks.aggregate import aggregate
from hooks.executors.callable import CallableExecutor
from hooks.executors.command import KILL_GRACE_S, CommandExecutor, run_cwd
from hooks.executors.mcp_tool import McpToolExecutor
from hooks.executors.python import PythonExecutor
from hooks.hookset import TRUST_SOURCES, HookSet, HookSpec
from hooks.manifest import argv_files, changed_pin, command_files
from hooks.interpret import STOP_EVENTS, decision_of, make_result, updated_input_of
from hooks.late_answers import late_answer
from hooks.matchers import match_target
from hooks.paths import data_dir as default_data_dir
from hooks.paths import project_hash, validate_session_id
from hooks.tracing import TRACE_KEY
from hooks.tracking import Execution, TrackingWriter
from hooks.types import (
    BLOCKING_EVENTS,
    AggregateResult,
    ExecutionReport,
    HookCall,
    HookContext,
    HookExecutor,
    HookObserver,
    HookProgress,
    HookResult,
    HookStarted,
    SessionContext,
    no_progress,
)

log = logging.getLogger("hooks")

BACKGROUND_GRACE_S = 2.0  # how long aclose() lets `async: true` hooks finish
# The most aclose() waits for queued bookkeeping: every hook in it has its own timeout, this only bounds a backlog.
AFTER_ANSWER_LIMIT_S = 60.0
# The most after-answer bookkeeping batches a session may have waiting. Past it, the next event waits for the
# oldest to finish before it is answered: the queue (and what it holds) cannot grow without bound, and the log
# says the bookkeeping is behind. One batch is one event's built-in hooks (a memory write is ~1 ms).
AFTER_ANSWER_BOUND = 64
_SLACK_S = 0.5  # interpretation, observer and tracking on top of a hook's own timeout
# Extra time a hook can take past its timeout before it is reaped (process kill grace).
_KILL_GRACE = {"command": KILL_GRACE_S, "python": KILL_GRACE_S}


class HookRunner:
    """Runs the hooks of one HookSet. `executors` maps a hook type to its executor; add more by assignment."""

    def __init__(
        self,
        hookset: HookSet,
        observer: HookObserver | None = None,
        *,
        executors: dict[str, HookExecutor] | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.hookset = hookset
        self.observer = observer
        self.executors: dict[str, HookExecutor] = {
            "command": CommandExecutor(),
            "python": PythonExecutor(),
            "callable": CallableExecutor(),
            "mcp_tool": McpToolExecutor(),
        }
        if executors:
            self.executors.update(executors)
        self.data_dir = Path(data_dir) if data_dir else None
        self._tracker = TrackingWriter()
        self._background: set[asyncio.Task[HookResult]] = set()
        # Built-in bookkeeping run after the answer: one chain per session, so it runs in event order.
        self._after_tail: dict[str, asyncio.Task[Any]] = {}
        self._after_tasks: set[asyncio.Task[Any]] = set()
        self._after_queued: dict[str, list[asyncio.Task[Any]]] = {}  # per session, oldest first
        self._behind: set[str] = set()  # sessions whose bookkeeping was last reported behind
        self._prefix = os.urandom(4).hex()
        self._seq = itertools.count(1)
        self._track_paths: dict[tuple[str, Path | None], tuple[Path, Path, str]] = {}
        self._debug = os.environ.get("HOOK_DEBUG") == "1"
        if self._debug:
            _enable_debug_logging()

    # ------------------------------------------------------------------ public

    def reload(self) -> HookSet:
        """Re-read the settings files; later fires use the new set."""
        self.hookset = self.hookset.reload()
        return self.hookset

    def budget_s(self, event: str) -> float:
        """The longest fire(event) can take: sum (blocking) or max (advisory) of timeouts plus kill grace."""
        spans = [s.timeout_s + _KILL_GRACE.get(s.type, 0.0) + _SLACK_S for s in self.hookset.active_for(event) if not s.run_async]
        if not spans:
            return _SLACK_S
        return (sum(spans) if event in BLOCKING_EVENTS else max(spans)) + _SLACK_S

    async def fire(
        self, event: str, payload: dict[str, Any], session: SessionContext, *, tool_use_id: str | None = None
    ) -> AggregateResult:
        validate_session_id(session.session_id)
        specs = self._select(event, payload, session)
        if not specs:
            return AggregateResult(event=event)
        payload = _complete(event, payload, session, tool_use_id)
        if self._debug:
            log.debug("fire %s session=%s hooks=%s", event, session.session_id, [s.name for s in specs])
        foreground, after_answer = [], []
        for spec in specs:
            if spec.run_async and spec.builtin:
                after_answer.append(spec)
            elif spec.run_async:
                await self._start_background(spec, event, payload, session, tool_use_id)
            else:
                foreground.append(spec)
        if not foreground:
            results: list[HookResult] = []
        elif event in BLOCKING_EVENTS:
            results = await self._chain(foreground, event, payload, session, tool_use_id)
        elif len(foreground) == 1:
            results = [await self._execute(foreground[0], event, payload, session, tool_use_id)]
        else:
            results = list(
                await asyncio.gather(*(self._execute(s, event, payload, session, tool_use_id) for s in foreground))
            )
        agg = aggregate(event, results)
        if self._debug:
            log.debug("aggregate %s decision=%s reason=%s", event, agg.decision, agg.reason)
        if after_answer and not (event in BLOCKING_EVENTS and (agg.blocked or agg.stop_reason is not None)):
            # What the chain refused never happened: bookkeeping records only what went on, as when it ran inline.
            await self._make_room(session.session_id)
            self._queue_after_answer(after_answer, event, payload, session, tool_use_id)
        return agg

    async def _make_room(self, session_id: str) -> None:
        """Backpressure: with AFTER_ANSWER_BOUND batches waiting, wait for the oldest before queueing another."""
        queued = self._after_queued.get(session_id)
        if not queued or len(queued) < AFTER_ANSWER_BOUND:
            return
        if session_id not in self._behind:
            self._behind.add(session_id)
            log.warning("session %s: hook bookkeeping (memory, tracking) is %d events behind; new events wait for "
                        "it", session_id, len(queued))
        await asyncio.wait([queued[0]])

    def pending_after_answer(self) -> int:
        """How many after-answer bookkeeping batches have not finished yet (all sessions)."""
        return sum(1 for task in self._after_tasks if not task.done())

    def _queue_after_answer(self, specs: list[HookSpec], event: str, payload: dict[str, Any],
                            session: SessionContext, tool_use_id: str | None) -> None:
        previous = self._after_tail.get(session.session_id)

        async def run_in_order() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            for spec in specs:
                await self._execute(spec, event, payload, session, tool_use_id)  # bounded by the hook's timeout

        task = asyncio.get_running_loop().create_task(run_in_order())
        self._after_tail[session.session_id] = task
        self._after_tasks.add(task)
        self._after_queued.setdefault(session.session_id, []).append(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._after_tasks.discard(finished)
            queued = self._after_queued.get(session.session_id)
            if queued is not None:
                with contextlib.suppress(ValueError):
                    queued.remove(finished)
                if not queued:
                    del self._after_queued[session.session_id]
            if session.session_id in self._behind and len(queued or ()) <= AFTER_ANSWER_BOUND // 2:
                self._behind.discard(session.session_id)
                log.info("session %s: hook bookkeeping caught up", session.session_id)
            if self._after_tail.get(session.session_id) is finished:
                del self._after_tail[session.session_id]

        task.add_done_callback(done)

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait until the bookkeeping queued so far has run (each hook is bounded by its own timeout);
        False if ``timeout`` ran out first. Readers of what it records call this first (read your own writes)."""
        pending = [t for t in self._after_tasks if not t.done()]
        if not pending:
            return True
        _done, still = await asyncio.wait(pending, timeout=timeout)
        return not still

    async def aclose(self) -> None:
        """Let the bookkeeping queue finish (each hook bounded by its timeout) and background hooks too (short grace),
        kill leftovers, stop the python launchers, flush tracking."""
        await self.drain(timeout=AFTER_ANSWER_LIMIT_S)
        pending = [t for t in self._background if not t.done()]
        if pending:
            _done, still = await asyncio.wait(pending, timeout=BACKGROUND_GRACE_S)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still, timeout=KILL_GRACE_S + 1.0)
        for executor in self.executors.values():
            closer = getattr(executor, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:
                    log.exception("closing executor %r failed", executor)
        await asyncio.to_thread(self._tracker.close)

    async def flush_tracking(self) -> None:
        """Write out the tracking records taken so far (the file writes run off the event loop)."""
        await asyncio.to_thread(self._tracker.flush)

    # ------------------------------------------------------------------ selection and order

    def _select(self, event: str, payload: dict[str, Any], session: SessionContext) -> list[HookSpec]:
        candidates = self.hookset.active_for(event)
        if not candidates:
            return candidates
        target = match_target(event, payload)
        cwd = payload["cwd"] if isinstance(payload.get("cwd"), str) else str(session.project_dir)
        chosen: list[HookSpec] = []
        seen: set[tuple[str, ...]] = set()
        for spec in candidates:
            if target is not None and not spec.match(target):  # type: ignore[misc]
                continue
            if spec.scope == "agent" and session.agent_type != spec.scope_value:
                continue
            if spec.scope == "skill" and session.skill != spec.scope_value:
                continue
            if (spec.condition is not None or spec.once) and spec.skips(event, payload, session.state, cwd):
                continue  # the entry's `if` / `once` (hooks/conditions.py)
            if spec.dedupe_key is not None:
                if spec.dedupe_key in seen:
                    continue  # identical command hooks run once, as in Claude Code
                seen.add(spec.dedupe_key)
            chosen.append(spec)
        return chosen

    async def _chain(
        self, specs: list[HookSpec], event: str, payload: dict[str, Any], session: SessionContext, tool_use_id: str | None
    ) -> list[HookResult]:
        # Loop guard: Claude Code sets stop_hook_active on the Stop that follows a blocked Stop.
        loop_guard = event in STOP_EVENTS and payload.get("stop_hook_active") is True
        results = []
        current = payload
        for spec in specs:
            result = await self._execute(spec, event, current, session, tool_use_id, loop_guard=loop_guard)
            results.append(result)
            if not result.enforced:
                continue
            decision, _ = decision_of(result, event)
            if decision in ("deny", "block"):
                break
            updated = updated_input_of(result)
            if updated is not None and "tool_input" in current:
                current = {**current, "tool_input": updated}
            if result.output is not None and result.output.continue_ is False:
                break
        return results

    async def _start_background(
        self, spec: HookSpec, event: str, payload: dict[str, Any], session: SessionContext, tool_use_id: str | None
    ) -> None:
        # hook_started goes out before fire() returns; the run itself is not awaited
        execution_id = await self._announce(spec, event, session, tool_use_id)
        task = asyncio.get_running_loop().create_task(
            self._run_background(spec, event, payload, session, tool_use_id, execution_id)
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _run_background(self, spec: HookSpec, event: str, payload: dict[str, Any], session: SessionContext,
                              tool_use_id: str | None, execution_id: str) -> HookResult:
        """One background hook; what its answer has for the model reaches it afterwards (hooks/late_answers.py)."""
        result = await self._execute(spec, event, payload, session, tool_use_id, execution_id)
        teller = session.late_answers
        answer = late_answer(spec, result) if teller is not None else None
        if teller is not None and answer is not None:
            try:
                await teller.tell_model(answer.text, wake=answer.wake)
            except Exception:  # noqa: BLE001 - a session that went away must not fail the hook's own report
                log.warning("session %s: the late answer of hook %r did not reach the model", session.session_id,
                            spec.name, exc_info=True)
        return result

    # ------------------------------------------------------------------ one execution

    async def _announce(self, spec: HookSpec, event: str, session: SessionContext, tool_use_id: str | None) -> str:
        execution_id = f"{self._prefix}-{next(self._seq)}"
        observer = self.observer
        if observer is not None:
            # Awaited here, not through _notify: one coroutine less per execution on the hot path.
            try:
                await observer.on_started(
                    HookStarted(execution_id, spec.id, spec.name, spec.type, spec.source, event, session.session_id, tool_use_id)
                )
            except Exception:  # an observer bug must not change what hooks decide
                log.exception("hook observer on_started failed")
        return execution_id

    async def _execute(
        self,
        spec: HookSpec,
        event: str,
        payload: dict[str, Any],
        session: SessionContext,
        tool_use_id: str | None,
        execution_id: str | None = None,
        loop_guard: bool = False,
    ) -> HookResult:
        observer = self.observer
        if execution_id is None:
            execution_id = await self._announce(spec, event, session, tool_use_id)
        ctx = HookContext(
            session=session,
            event=event,
            hook_name=spec.name,
            execution_id=execution_id,
            tool_use_id=tool_use_id,
            deadline=asyncio.get_running_loop().time() + spec.timeout_s,
            log=spec.log or log,
        )
        progress = no_progress
        if observer is not None:
            progress = _Progress(self, observer, execution_id, spec.name, event, session.session_id)
        if self._debug:
            log.debug("start %s %s (%s, %s, timeout %gs)", execution_id, spec.name, spec.type, spec.source, spec.timeout_s)
        executor = self.executors.get(spec.type)
        trace = session.state.get(TRACE_KEY)  # hooks/tracing.py: None unless the user switched tracing on
        span = trace.start_hook(spec, event, tool_use_id, payload.get("tool_name")) if trace is not None else None
        started = time.perf_counter()
        fail_open = False
        try:
            if executor is None:
                report = ExecutionReport(status="error", error=f"no executor for type {spec.type}")
                fail_open = True
            elif ((spec.source in TRUST_SOURCES or spec.runs_project_code)
                  and (unreviewed := unreviewed_code(spec, payload, session)) is not None):
                # Trust binds content: a script edited after review (a git pull, the agent), or another file reached
                # through the agent's `cd`, does not run on the old trust.
                report = ExecutionReport(status="error", error=unreviewed)
            else:
                report = await executor.run(HookCall(spec, event, payload, ctx, spec.timeout_s, progress))
        except asyncio.CancelledError:
            result = make_result(spec, event, ExecutionReport(status="cancelled", error="cancelled"), execution_id,
                                 (time.perf_counter() - started) * 1000)
            if span is not None:
                result.trace_id, result.span_id = trace.end_hook(span, result, None, None)
            self._finish_cancelled(result, session)
            raise
        except Exception as exc:  # an executor bug fails this hook only
            report = ExecutionReport(status="error", error=f"executor failed: {type(exc).__name__}: {exc}",
                                     traceback=traceback.format_exc())
        result = make_result(spec, event, report, execution_id, (time.perf_counter() - started) * 1000)
        spec.finished(result.outcome, session.state)
        if fail_open:
            result.fail_closed = False
        if loop_guard and result.outcome != "cancelled" and decision_of(result, event)[0] == "block":
            result.enforced = False  # reported, not enforced: a second Stop block would loop forever
        if span is not None:
            decision, reason = decision_of(result, event)
            result.trace_id, result.span_id = trace.end_hook(span, result, decision, reason)
        if result.outcome != "success" and result.error:
            log.warning("hook %r (%s) on %s: %s: %s", spec.name, spec.type, event, result.outcome, result.error)
        elif self._debug:
            log.debug("done %s %s outcome=%s exit=%s %.2fms", execution_id, spec.name, result.outcome, result.exit_code, result.duration_ms)
        if observer is not None:
            try:
                await observer.on_response(result, session.session_id)
            except Exception:  # an observer bug must not change what hooks decide
                log.exception("hook observer on_response failed")
        self._track(result, session)
        return result

    def _finish_cancelled(self, result: HookResult, session: SessionContext) -> None:
        self._track(result, session)
        observer = self.observer
        if observer is not None:
            # The caller is being cancelled; report on a task of its own so the response is still delivered.
            task = asyncio.get_running_loop().create_task(self._notify(observer.on_response, result, session.session_id))
            self._background.add(task)  # type: ignore[arg-type]
            task.add_done_callback(self._background.discard)  # type: ignore[arg-type]

    async def _notify(self, method: Any, *args: Any) -> None:
        try:
            await method(*args)
        except Exception:  # an observer bug must not change what hooks decide
            log.exception("hook observer %s failed", getattr(method, "__name__", method))

    # ------------------------------------------------------------------ runs made elsewhere

    async def external_started(self, started: HookStarted) -> None:
        """A hook someone else runs (the CLI's own: an organization's managed hooks) began: observed like ours."""
        if self.observer is not None:
            await self._notify(self.observer.on_started, started)

    async def external_finished(self, result: HookResult, session: SessionContext) -> None:
        """... and ended: observed and tracked like the runner's own runs (it decided nothing here)."""
        if self.observer is not None:
            await self._notify(self.observer.on_response, result, session.session_id)
        self._track(result, session)

    # ------------------------------------------------------------------ tracking

    def _track(self, result: HookResult, session: SessionContext) -> None:
        try:
            key = (session.session_id, session.data_dir)
            paths = self._track_paths.get(key)
            if paths is None:
                root = self.data_dir or session.data_dir or default_data_dir()
                paths = (
                    root / "sessions" / session.session_id / "events.jsonl",
                    root / "analytics" / "hook-timing.jsonl",
                    project_hash(session.project_dir),
                )
                self._track_paths[key] = paths
            # The records are built and encoded on the writer thread; ts is taken now.
            self._tracker.track(Execution(paths[0], paths[1], session.session_id, paths[2], time.time(), result))
        except Exception:
            log.exception("tracking failed for %s", result.execution_id)


class _Progress:
    """The ProgressFn handed to an executor when someone observes: one HookProgress per line."""

    __slots__ = ("runner", "observer", "execution_id", "hook_name", "event", "session_id")

    def __init__(self, runner: HookRunner, observer: HookObserver, execution_id: str, hook_name: str, event: str, session_id: str) -> None:
        self.runner = runner
        self.observer = observer
        self.execution_id = execution_id
        self.hook_name = hook_name
        self.event = event
        self.session_id = session_id

    async def __call__(self, stream: str, line: str) -> None:
        await self.runner._notify(
            self.observer.on_progress,
            HookProgress(self.execution_id, self.hook_name, self.event, self.session_id, stream, line),  # type: ignore[arg-type]
        )


def unreviewed_code(spec: HookSpec, payload: dict[str, Any], session: SessionContext) -> str | None:
    """Why this hook must not run now (a file it runs is not the one the user trusted), or None."""
    if spec.pinned and (changed := changed_pin(spec.pinned)) is not None:
        return (f"{changed} changed since the project was trusted; the hook did not run "
                "(review the change, then trust the project again)")
    moved = payload.get("cwd")
    # Only after the agent's `cd` (the input names another directory): the common case costs no stat.
    if (spec.type == "command" and spec.command and spec.cwd is None
            and isinstance(moved, str) and moved != str(session.project_dir)):
        cwd = run_cwd(spec, payload, session.project_dir)
        if cwd != session.project_dir:
            reached = (argv_files(spec.argv, cwd) if spec.argv is not None
                       else command_files(spec.command, cwd, session.project_dir))
            if reached != [path for path, _ in spec.pinned]:
                return (f"in {cwd} (the agent's current directory) this hook would run "
                        f"{', '.join(map(str, reached)) or 'other files'}, not the reviewed "
                        f"{', '.join(str(p) for p, _ in spec.pinned) or 'command'}; the hook did not run "
                        "(name its scripts with \"$CLAUDE_PROJECT_DIR\"/... to run them from anywhere)")
    return None


def _complete(event: str, payload: dict[str, Any], session: SessionContext, tool_use_id: str | None) -> dict[str, Any]:
    """Fill the keys every CLI payload has when the caller left them out (e.g. `python -m hooks test`)."""
    missing: dict[str, Any] = {}
    if "hook_event_name" not in payload:
        missing["hook_event_name"] = event
    if "session_id" not in payload:
        missing["session_id"] = session.session_id
    if "cwd" not in payload:
        missing["cwd"] = str(session.project_dir)
    if tool_use_id is not None and "tool_use_id" not in payload and event != "PermissionRequest":
        missing["tool_use_id"] = tool_use_id
    return {**payload, **missing} if missing else payload


def _enable_debug_logging() -> None:
    if not any(getattr(h, "_orion_debug", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handler._orion_debug = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(logging.DEBUG)
