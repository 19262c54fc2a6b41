"""The `mcp_tool` hook executor: call a tool of one of the session's MCP servers, as Claude Code 2.1.330 does.

The call goes through the session's own connection to that server (`SessionContext.mcp`: the sidecar asks the
session's CLI with its `mcp_call` control request), so it reaches the instance the agent uses, after the approval,
sign-in and confinement that instance already had; a server the session has not connected fails the hook as it
fails in the CLI. The hook's `input` is the tool's arguments, with `${path}` in its strings filled from the hook's
input JSON (`${tool_input.file_path}`; a missing path is empty, an object or list its compact JSON).

The answer is read as a command hook's stdout is read, with the CLI's rules for this type (recorded on the bundled
CLI, tests/conformance cases `mcp_tool_*`): the tool's text is the hook's JSON output; plain text, nothing, or
JSON with none of a hook output's fields (or only `reason`) is read as the plain output "<Event> completed" (which
UserPromptSubmit and SessionStart hand the model, as they hand it a command hook's plain stdout). A failure (server not connected, an error result,
a timeout, an answer that is not a hook's output) is a non-blocking error, unless `onFailure` is "block" (any value
but "continue" reads as "block"): then the action the event guards is blocked with the CLI's own words, and the
model is not shown what the server wrote.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio

from hooks.executors.evaluation import hook_setting
from hooks.interpret import parse_stdout
from hooks.payload import MISSING, field_at
from hooks.types import EXIT2_BLOCKS, ExecutionReport, HookCall, HookOutput, McpCallFailed

DEFAULT_TIMEOUT_S = 60.0

# Where Claude Code ignores onFailure: a failure there never blocks.
ON_FAILURE_IGNORED = frozenset({"Setup", "SessionStart", "Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"})
# The keys of a hook's JSON output: an answer holding none of them (or only `reason`) is no answer.
OUTPUT_FIELDS = frozenset({"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason",
                           "hookSpecificOutput"})

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

# The CLI's words for a blocking failure (what the model reads after "<Event>:<Tool> hook error: [server/tool]: ").
# A timeout reads "timed out; ..." and nothing after (case mcp_tool_timeout_blocks); any other failure "failed; ...",
# then the cause on the next line.
BLOCKING_WORDS = ('blocking because onFailure is "block" and the hook got no usable answer from its MCP server. The '
                  "user needs to fix the cause (in a session, /mcp shows the server's state) or ask whoever manages "
                  "the hook; Claude should not change the hook or work around it.")
BLOCKING_FAILURE = "failed; " + BLOCKING_WORDS + "\n"
BLOCKING_TIMEOUT = "timed out; " + BLOCKING_WORDS
WITHHELD = (" Details are left out of this message, since the MCP server may have written them. To see them, start "
            "Claude Code with --debug and try again: they go to its debug log.")
TOOL_ERROR = "The MCP tool returned an error." + WITHHELD
NOT_AN_ANSWER = "The MCP tool's answer is not a hook's JSON output, {} or empty." + WITHHELD
TIMED_OUT = "The MCP tool did not answer in time."  # Orion's words for the user and the log (the CLI's model reads none)


def blocks_on_failure(on_failure: Any, event: str) -> bool:
    """Whether a failed call blocks what `event` guards: "continue" (the default) never does."""
    if on_failure is None or on_failure == "continue" or event in ON_FAILURE_IGNORED:
        return False
    return event in EXIT2_BLOCKS or event in ("PostToolUse", "PostToolUseFailure", "PermissionRequest")


def interpolate(value: Any, payload: dict[str, Any]) -> Any:
    """The hook's `input` with `${a.b}` in every string filled from the hook input (recursively through lists and
    objects; other values as they are)."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: _lookup(payload, m.group(1)), value)
    if isinstance(value, list):
        return [interpolate(v, payload) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, payload) for k, v in value.items()}
    return value


def _lookup(payload: Any, path: str) -> str:
    node = field_at(payload, path)
    if node is MISSING or node is None:
        return ""
    if isinstance(node, str):
        return node
    return json.dumps(node, ensure_ascii=False, separators=(",", ":"))


def answer_text(answer: dict[str, Any]) -> str:
    """The text of a tool's answer as the hook reads it, as Claude Code's own mcp_tool hook does: its text blocks.
    The sidecar asks `mcp_call` for the server's own blocks (`result_not_for_model`, sidecar/agent.py); a CLI
    without that hands back the JSON of the structured content in place of the blocks, where a tool of the MCP SDKs
    that returned a plain value has it wrapped as `{"result": value}`, whose text block was that value."""
    content = answer.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    structured = answer.get("structuredContent")
    if isinstance(structured, dict) and set(structured) == {"result"} and isinstance(structured["result"], str):
        return structured["result"]
    if isinstance(content, str):
        return content
    return ""


class McpToolExecutor:
    """Runs `mcp_tool` hooks through the session's MCP connection (`call.context.session.mcp`)."""

    async def run(self, call: HookCall) -> ExecutionReport:
        server, tool = hook_setting(call.hook, "server"), hook_setting(call.hook, "tool")
        failed = _Failure(f"{server}/{tool}", call.event, hook_setting(call.hook, "onFailure"))
        caller = call.context.session.mcp
        if caller is None:
            return failed(f"MCP server '{server}' not connected",
                          "no session: an mcp_tool hook calls the session's own MCP servers")
        arguments = interpolate(hook_setting(call.hook, "input", {}), call.payload)
        try:
            with anyio.fail_after(call.timeout_s + 1):  # the caller's own deadline comes first, and cleans up
                answer = await caller.call_mcp_tool(server, tool, arguments, call.timeout_s)
        except TimeoutError:
            return failed(TIMED_OUT, f"no answer within {call.timeout_s:g} s", status="timeout")
        except McpCallFailed as exc:
            return failed(f"MCP server '{server}' not connected" if exc.not_connected else TOOL_ERROR, str(exc))
        text = answer_text(answer)
        if answer.get("isError"):
            return failed(TOOL_ERROR, text)
        output, plain, problem = parse_stdout(text)
        if output is not None:
            fields = set(output.model_dump(by_alias=True, exclude_none=True)) & OUTPUT_FIELDS
            if not fields or fields == {"reason"}:
                output, problem = None, "its JSON holds none of a hook output's fields"
        if output is None and text.strip() != "{}":
            if text.strip() and failed.blocks:
                return failed(NOT_AN_ANSWER, problem or "plain text")
            # The tool's own words are no context for this type: what the CLI says in their place, "<Event>
            # completed", is (UserPromptSubmit and SessionStart give a hook's plain output to the model).
            return ExecutionReport(status="ok", exit_code=0, stdout=text, text=f"{call.event} completed")
        return ExecutionReport(status="ok", exit_code=0, stdout=text, output=output)


class _Failure:
    """How one hook's failed call is reported: a blocking error in the CLI's words (what the server wrote is kept
    out of them, and goes to the user and the log) where onFailure blocks, else a non-blocking error."""

    def __init__(self, label: str, event: str, on_failure: Any) -> None:
        self.label, self.event = label, event
        self.blocks = blocks_on_failure(on_failure, event)

    def __call__(self, words: str, detail: str, *, status: str = "error") -> ExecutionReport:
        summary = words.split(" Details are")[0]
        error = f"{summary} ({detail})" if detail and detail not in words else summary
        if not self.blocks:
            return ExecutionReport(status=status, error=error)  # type: ignore[arg-type]
        reason = BLOCKING_TIMEOUT if status == "timeout" else BLOCKING_FAILURE + words
        return blocking_report(self.event, reason, error, label=self.label)


def blocking_report(event: str, reason: str, error: str | None, *, label: str | None = None) -> ExecutionReport:
    """A hook's failure that blocks (onFailure "block"): read like exit 2, `reason` on stderr (the runner puts
    `[<label>]: ` before it where the hook has one); on PermissionRequest, where exit 2 means nothing, a deny of the
    request with the same words."""
    if event == "PermissionRequest":
        message = f"[{label}]: {reason}" if label else reason
        output = HookOutput.model_validate({"hookSpecificOutput": {"hookEventName": event,
                                                                   "decision": {"behavior": "deny", "message": message}}})
        return ExecutionReport(status="ok", exit_code=0, output=output, error=error)
    return ExecutionReport(status="ok", exit_code=2, blocking_error=True, stderr=reason, error=error)
