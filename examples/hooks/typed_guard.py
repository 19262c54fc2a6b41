"""An example guard written with hooks.sdk, usable three ways (type-checked by tests/hooks/test_sdk.py under mypy --strict).

- `type: "python"` hook: `{"type": "python", "script": "typed_guard.py"}` calls `run(payload)`.
- command hook: `python3 typed_guard.py` reads stdin and prints the answer (the `__main__` block).
- programmatic hook: `registry.register("PreToolUse", guard_callable, matcher="Bash")`.
"""

from __future__ import annotations

from typing import Any

from hooks.sdk import (
    HookOutputJSON,
    PreToolUseInput,
    UserPromptSubmitInput,
    context,
    deny,
    parse_input,
    run_hook,
)
from hooks.sdk.inputs import AnyInput

FORBIDDEN = ("rm -rf /", "git push --force")


def decide(hook_input: AnyInput) -> HookOutputJSON | None:
    if isinstance(hook_input, PreToolUseInput) and hook_input.tool_name == "Bash":
        command = hook_input.arg("command")
        for bad in FORBIDDEN:
            if bad in command:
                return deny(f"{bad!r} is not allowed in this project")
        if command.startswith("pytest") and "-q" not in command:
            return hook_input.rewrite(command=command + " -q")
        return None  # no objection, no approval: the permission rules still apply
    if isinstance(hook_input, UserPromptSubmitInput) and "deploy" in hook_input.prompt:
        return context("Deploys go through `make deploy`, never by hand.", event="UserPromptSubmit")
    return None


def run(payload: dict[str, Any]) -> HookOutputJSON | None:
    """The `type: "python"` entry point."""
    return decide(parse_input(payload))


async def guard_callable(payload: dict[str, Any], ctx: object) -> HookOutputJSON | None:
    """The programmatic (callable) entry point."""
    return decide(parse_input(payload))


if __name__ == "__main__":
    run_hook(decide)
