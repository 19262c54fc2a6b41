"""The `agent` hook executor: a read-only subagent (Read, Grep, Glob) that investigates, then answers {ok, reason}."""

from __future__ import annotations

import os

from hooks.executors.evaluation import DEFAULT_EVALUATOR_MODEL, ModelClient, evaluate, hook_setting, no_model_report
from hooks.types import ExecutionReport, HookCall

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_TURNS = 10
MAX_TURNS_LIMIT = 50
READ_ONLY_TOOLS = ("Read", "Grep", "Glob")
MODEL_ENV = "ORION_AGENT_HOOK_MODEL"

AGENT_SYSTEM_PROMPT = (
    "You are a verification subagent run by a hook inside a coding agent. You are given a condition "
    "to check and the JSON input of a hook event. You may inspect the project with the read-only "
    "tools Read, Grep and Glob; you cannot change anything. Investigate only as much as the "
    "condition needs.\n"
    "End with exactly one JSON object as your final message and nothing after it:\n"
    '{"ok": true, "reason": "<one short sentence>"} when the condition holds and the action may proceed, or\n'
    '{"ok": false, "reason": "<one short sentence the agent will read>"} when it must be blocked.'
)


def turn_limit(requested: object) -> int:
    """The hook's `maxTurns`, defaulting to 10 and held within 1..50."""
    if not isinstance(requested, int) or isinstance(requested, bool):
        return DEFAULT_MAX_TURNS
    return max(1, min(requested, MAX_TURNS_LIMIT))


class AgentExecutor:
    """Runs `agent` hooks in the session's project directory. Model chosen like PromptExecutor's."""

    def __init__(self, model_client: ModelClient | None, *, default_model: str | None = None) -> None:
        self.model_client = model_client
        self.default_model = default_model or os.environ.get(MODEL_ENV) or DEFAULT_EVALUATOR_MODEL

    async def run(self, call: HookCall) -> ExecutionReport:
        client = self.model_client
        if client is None:
            return no_model_report("agent")
        model = hook_setting(call.hook, "model") or self.default_model
        max_turns = turn_limit(hook_setting(call.hook, "maxTurns"))

        async def ask(prompt: str) -> str:
            return await client.run_agent(
                prompt,
                cwd=call.context.project_dir,
                tools=list(READ_ONLY_TOOLS),
                max_turns=max_turns,
                model=model,
                timeout_s=call.timeout_s,
                system=AGENT_SYSTEM_PROMPT,
            )

        return await evaluate(call, "agent", ask)
