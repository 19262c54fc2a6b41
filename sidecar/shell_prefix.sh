#!/bin/sh
# Orion's CLAUDE_CODE_SHELL_PREFIX (sidecar/shell_isolation.py says how it is placed and why it is safe).
# The CLI runs every command the agent's Bash calls compose, and every stdio MCP server, as
#   <this file> '<the whole command line, quoted>'
# This takes the sidecar's internal variables (named in ORION_SHELL_UNSET) out of the environment and runs that
# command line in the CLI's own shell (CLAUDE_CODE_SHELL, which the sidecar sets to the shell the CLI would pick).
# The command itself is untouched: the CLI's permission rules and prompts see what the agent wrote.
# ORION_SHELL_NEXT, when set, is the line that runs the user's own CLAUDE_CODE_SHELL_PREFIX as the CLI would run it
# (the command as its "$1"): it runs after the names are gone, in place of the plain run.
if [ "$#" -ne 1 ]; then
    echo "Orion's shell prefix takes one command line, got $# arguments" >&2
    exit 126
fi
shell=${CLAUDE_CODE_SHELL:-/bin/sh}
next=${ORION_SHELL_NEXT-}
set -f
for name in $ORION_SHELL_UNSET; do
    case $name in
        '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;;  # a name, nothing else, ever reaches unset
    esac
    unset "$name" 2>/dev/null
done
unset ORION_SHELL_UNSET ORION_SHELL_NEXT CLAUDE_CODE_SHELL CLAUDE_CODE_SHELL_PREFIX 2>/dev/null
set +f
if [ -n "$next" ]; then
    exec "$shell" -c "$next" "$shell" "$1"
fi
exec "$shell" -c "$1"
