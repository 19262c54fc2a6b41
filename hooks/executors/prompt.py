"""The `prompt` hook executor: one tool-less question to a small fast model, answered with {ok, reason}."""

from __future__ import annotations

import os

from hooks.executors.evaluation import (
    DEFAULT_EVALUATOR_MODEL,
    EVALUATION_SYSTEM_PROMPT,
    ModelClient,
    evaluate,
    hook_setting,
    no_model_report,
)
from hooks.types import ExecutionReport, HookCall

DEFAULT_TIMEOUT_S = 30.0
MODEL_ENV = "ORION_PROMPT_HOOK_MODEL"


class PromptExecutor:
    """Runs `prompt` hooks. Model: the hook's `model`, else `default_model`, else $ORION_PROMPT_HOOK_MODEL, else Haiku."""

    def __init__(self, model_client: ModelClient | None, *, default_model: str | None = None) -> None:
        self.model_client = model_client
        self.default_model = default_model or os.environ.get(MODEL_ENV) or DEFAULT_EVALUATOR_MODEL

    async def run(self, call: HookCall) -> ExecutionReport:
        client = self.model_client
        if client is None:
            return no_model_report("prompt")
        model = hook_setting(call.hook, "model") or self.default_model

        async def ask(prompt: str) -> str:
            return await client.complete(
                prompt, model=model, timeout_s=call.timeout_s, system=EVALUATION_SYSTEM_PROMPT
            )

        return await evaluate(call, "prompt", ask)
