#!/bin/sh
# Demo command hook: records every Bash command the agent runs and reports it on stderr.
# Plain sh (no interpreter start-up): pulls "command" out of the tool_input JSON on stdin.
cmd=$(sed -n 's/.*"tool_input": *{[^}]*"command": *"\(\([^"\\]\|\\.\)*\)".*/\1/p' | head -n 1)
echo "audit: agent wants to run: $cmd" >&2
mkdir -p "$CLAUDE_PROJECT_DIR/.audit"
printf '%s\n' "$cmd" >> "$CLAUDE_PROJECT_DIR/.audit/bash.log"
exit 0
