#!/bin/sh
# Demo command hook: records every Bash command the agent runs and reports it on stderr.
payload=$(cat)
cmd=$(printf '%s' "$payload" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command",""))')
echo "audit: agent wants to run: $cmd" >&2
mkdir -p "$CLAUDE_PROJECT_DIR/.audit"
printf '%s\n' "$cmd" >> "$CLAUDE_PROJECT_DIR/.audit/bash.log"
exit 0
