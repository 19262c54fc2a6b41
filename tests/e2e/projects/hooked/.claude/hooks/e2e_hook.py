"""The end-to-end tests' project hook: records every call in .e2e/calls.jsonl and reacts to marker words in its input."""

import json
import os
import sys
import time
from pathlib import Path

SESSION_START_CONTEXT = "E2E-SESSION-START-CONTEXT: the project codename is quartz-heron."
DENY_REASON = "E2E-DENY: denied-marker must never be created."
POST_CONTEXT = "E2E-POST-CONTEXT: the probe output was checked by the project hook."
STOP_REASON = "E2E-STOP-REASON: check the work once more before stopping."
ASK_REASON = "E2E-ASK: the project wants a person to confirm this probe."
SYSTEM_MESSAGE = "E2E-SYSTEM-MESSAGE: the project hook has something to tell the user."
HOLD_LIMIT_S = 30.0


def record(state: Path, entry: dict) -> None:
    # One O_APPEND write per line: concurrent hook processes cannot interleave within it.
    fd = os.open(state / "calls.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


def main() -> int:
    payload = json.load(sys.stdin)
    event = payload.get("hook_event_name")
    state = Path(os.environ["CLAUDE_PROJECT_DIR"]) / ".e2e"
    state.mkdir(exist_ok=True)
    tool_input = payload.get("tool_input") or {}
    command = str(tool_input.get("command", ""))
    record(state, {
        "event": event,
        "session_id": payload.get("session_id"),
        "tool_use_id": payload.get("tool_use_id"),
        "command": command,
        "stop_hook_active": payload.get("stop_hook_active"),
        "reason": payload.get("reason"),
        "source": payload.get("source"),
        "pid": os.getpid(),
    })
    if event == "SessionStart":
        print(SESSION_START_CONTEXT)
    elif event == "UserPromptSubmit" and "forbidden-prompt" in payload.get("prompt", ""):
        print("E2E-PROMPT-BLOCKED: this prompt is not allowed here.", file=sys.stderr)
        return 2
    elif event == "PreToolUse":
        if "touch denied-marker" in command:
            print(DENY_REASON, file=sys.stderr)
            return 2
        if "ask-user-probe" in command:
            print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                                     "permissionDecisionReason": ASK_REASON}}))
        if "echo original" in command:
            rewritten = {**tool_input, "command": command.replace("echo original", "echo rewritten")}
            print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": rewritten}}))
        if "system-message-probe" in command:
            print(json.dumps({"systemMessage": SYSTEM_MESSAGE}))
        if "hold-hook-probe" in command:
            # Stays alive (bounded) so a test can see it among the sidecar's descendants and shut down under it.
            print("holding", file=sys.stderr, flush=True)
            deadline = time.monotonic() + HOLD_LIMIT_S
            while time.monotonic() < deadline:
                time.sleep(0.05)
    elif event == "PostToolUse" and "post-context-probe" in command:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": POST_CONTEXT}}))
    elif event == "Stop" and "please-block-stop" in str(payload.get("last_assistant_message", "")):
        if not payload.get("stop_hook_active"):
            print(json.dumps({"decision": "block", "reason": STOP_REASON}))
    elif event == "SessionEnd":
        (state / "session-end.txt").write_text(str(payload.get("reason")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
