#!/usr/bin/env python3
"""Demo command hook: asks Bash for plain output. An `ls` gets `--color=never`, so a listing reads the same in a
terminal and in a log. A PreToolUse rewrite: it answers `updatedInput` alone, so the permission flow still judges the
command that will run."""

import json
import sys

call = json.load(sys.stdin)
tool_input = call.get("tool_input") or {}
command = tool_input.get("command") or ""
if command.split()[:1] == ["ls"] and "--color" not in command:
    rewritten = {**tool_input, "command": command + " --color=never"}
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": rewritten}}))
