"""The executors for hooks evaluated by a model or a remote server (prompt, agent, http), built together for a runner."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hooks.executors.agent import AgentExecutor
from hooks.executors.evaluation import ModelClient
from hooks.executors.http import HttpExecutor
from hooks.executors.prompt import PromptExecutor
from hooks.types import HookExecutor

if TYPE_CHECKING:
    import httpx


def default_llm_executors(
    model_client: ModelClient | None,
    http_client: httpx.AsyncClient | None = None,
    *,
    default_model: str | None = None,
) -> dict[str, HookExecutor]:
    """`{"prompt": ..., "agent": ..., "http": ...}` to merge into `HookRunner.executors`.

    With no model client, prompt and agent hooks still run and report a hook error saying
    so (fail-open unless failClosed) instead of vanishing. The http executor owns a client it
    creates: close it with `await executors["http"].aclose()`. `default_model` is the model for prompt and agent
    hooks that name none (else each executor's own default).
    """
    return {
        "prompt": PromptExecutor(model_client, default_model=default_model),
        "agent": AgentExecutor(model_client, default_model=default_model),
        "http": HttpExecutor(http_client),
    }
