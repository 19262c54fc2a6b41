"""The callable executor: programmatic hooks run in-process under the same timeout and exception capture as any other hook, with a watchdog for hooks that block the event loop."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import threading
import time
import traceback
import types
import typing
from types import coroutine as types_coroutine
from typing import Any

from pydantic import BaseModel

from hooks.interpret import coerce_output
from hooks.types import ExecutionReport, HookCall

_NO_MODEL = object()
_CORO = types.CoroutineType  # an exact type check first: cheaper than inspect.iscoroutine
_DONE, _SUSPENDED, _AWAITABLE = object(), object(), object()  # what _Steps.start left to do

# A synchronous stretch longer than this freezes every session's IPC, hooks and timers: it is reported.
BLOCK_WARN_S = 0.25
_WATCH_POLL_S = 0.1

log = logging.getLogger("hooks")


class CallableExecutor:
    """Runs `type: "callable"` hooks: `async def fn(input, ctx) -> HookOutput | dict | str | None`."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        self._models: dict[Any, Any] = {}

    def _input_model(self, fn: Any) -> Any:
        model = self._models.get(fn)
        if model is None:
            model = _NO_MODEL
            try:
                params = list(inspect.signature(fn).parameters.values())
                hints = typing.get_type_hints(fn) if params else {}
                ann = hints.get(params[0].name) if params else None
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    model = ann
            except Exception:  # unresolvable annotations: the hook gets the dict
                pass
            self._models[fn] = model
        return model

    async def run(self, call: HookCall) -> ExecutionReport:
        fn = call.hook.fn
        if fn is None:
            return ExecutionReport(status="error", error="programmatic hook has no function")
        model = self._input_model(fn)
        scope = None
        steps = _Steps(call.hook.name)
        started = time.monotonic()
        deadline = asyncio.get_running_loop().time() + call.timeout_s
        try:
            arg = call.payload if model is _NO_MODEL else model.model_validate(call.payload)
            state, value = steps.start(fn, arg, call.context)
            # A timeout can only act at an await, so only a hook that suspends needs the timer
            # (most finish in their first step; arming and cancelling it was a fifth of their cost).
            if state is _SUSPENDED:
                coro, first_yield = value
                async with asyncio.timeout_at(deadline) as scope:
                    value = await steps.drive(coro, first_yield)
            elif state is _AWAITABLE:
                async with asyncio.timeout_at(deadline) as scope:
                    value = await value
        except TimeoutError as exc:
            if scope is not None and scope.expired():
                return ExecutionReport(status="timeout", error=f"timed out after {call.timeout_s:g} s{steps.blame()}")
            return _failure(exc)
        except Exception as exc:
            return _failure(exc)
        if steps.longest_s > BLOCK_WARN_S:
            log.warning("hook %r blocked the event loop for %d ms", call.hook.name, steps.longest_s * 1000)
            if time.monotonic() - started > call.timeout_s:
                # The timeout could not fire while the loop was held: the answer came too late to count.
                return ExecutionReport(status="timeout", error=f"overran its {call.timeout_s:g} s timeout{steps.blame()}")
        output, text, error = coerce_output(value)
        if error:
            return ExecutionReport(status="error", error=error)
        report = ExecutionReport(status="ok", exit_code=0, output=output, text=text)
        if steps.longest_s > BLOCK_WARN_S:
            report.stderr = f"[orion] hook{steps.blame(' ')}"
        return report


class _Steps:
    """Runs a hook's synchronous stretches (the call, then each coroutine step) under the watchdog and keeps the longest."""

    __slots__ = ("name", "longest_s")

    def __init__(self, name: str) -> None:
        self.name = name
        self.longest_s = 0.0

    def blame(self, sep: str = "; ") -> str:
        if self.longest_s <= BLOCK_WARN_S:
            return ""
        return f"{sep}blocked the event loop for {self.longest_s * 1000:.0f} ms (synchronous work in an async hook: move it to a thread)"

    def start(self, fn: Any, *args: Any) -> tuple[object, Any]:
        """Call the hook and, when it gives a coroutine, run that coroutine's first step: one watched stretch.

        Returns (_DONE, the answer), (_SUSPENDED, (coroutine, what it yielded)) or (_AWAITABLE, another awaitable).
        """
        token = _watchdog.enter(self.name)
        try:
            value = fn(*args)
            if type(value) is _CORO or inspect.iscoroutine(value):
                try:
                    return _SUSPENDED, (value, value.send(None))
                except StopIteration as stop:
                    return _DONE, stop.value
            return (_AWAITABLE if inspect.isawaitable(value) else _DONE), value
        finally:
            self._note(_watchdog.leave(token))

    def _note(self, seconds: float) -> None:
        if seconds > self.longest_s:
            self.longest_s = seconds

    @types_coroutine
    def drive(self, coro: Any, yielded: Any) -> Any:
        # What `await coro` does after its first step, one send() at a time, so each step is timed and watched.
        while True:
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # cancellation included: it goes on into the hook
                value, error = None, exc
            token = _watchdog.enter(self.name)
            try:
                yielded = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration as stop:
                return stop.value
            finally:
                self._note(_watchdog.leave(token))


class _Watchdog:
    """A daemon thread that notices a hook step still running on the loop after BLOCK_WARN_S and logs it while it happens.

    The step itself cannot be interrupted from here (synchronous code holds the
    loop); the log line says who is holding it, and the step's duration is
    reported in the hook's result once it lets go.
    """

    def __init__(self) -> None:
        self._active: dict[int, tuple[str, float]] = {}
        self._warned: dict[int, float] = {}
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def enter(self, name: str) -> int:
        if self._thread is None:
            self._start()
        token = next(self._tokens)
        self._active[token] = (name, time.monotonic())
        return token

    def leave(self, token: int) -> float:
        name_started = self._active.pop(token, None)
        self._warned.pop(token, None)
        return 0.0 if name_started is None else time.monotonic() - name_started[1]

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="hooks-loop-watchdog", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while True:
            time.sleep(_WATCH_POLL_S)
            now = time.monotonic()
            active = dict(self._active)
            for token in [t for t in self._warned if t not in active]:
                self._warned.pop(token, None)
            for token, (name, started) in active.items():
                held = now - started
                # Warn once past the threshold, then again each time the stretch doubles.
                if held > max(BLOCK_WARN_S, 2 * self._warned.get(token, 0.0)):
                    self._warned[token] = held
                    log.warning("hook %r is blocking the event loop: %d ms so far", name, held * 1000)


_watchdog = _Watchdog()


def _failure(exc: BaseException) -> ExecutionReport:
    return ExecutionReport(
        status="error",
        error=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(exc)),
    )
