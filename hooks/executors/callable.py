"""The callable executor: programmatic hooks run in-process under the same timeout and exception capture as any other hook."""

from __future__ import annotations

import asyncio
import inspect
import traceback
import typing
from typing import Any

from pydantic import BaseModel

from hooks.interpret import coerce_output
from hooks.types import ExecutionReport, HookCall

_NO_MODEL = object()


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
        try:
            arg = call.payload if model is _NO_MODEL else model.model_validate(call.payload)
            async with asyncio.timeout(call.timeout_s) as scope:
                value = fn(arg, call.context)
                if inspect.isawaitable(value):
                    value = await value
        except TimeoutError as exc:
            if scope is not None and scope.expired():
                return ExecutionReport(status="timeout", error=f"timed out after {call.timeout_s:g} s")
            return _failure(exc)
        except Exception as exc:
            return _failure(exc)
        output, text, error = coerce_output(value)
        if error:
            return ExecutionReport(status="error", error=error)
        return ExecutionReport(status="ok", exit_code=0, output=output, text=text)


def _failure(exc: BaseException) -> ExecutionReport:
    return ExecutionReport(
        status="error",
        error=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(exc)),
    )
