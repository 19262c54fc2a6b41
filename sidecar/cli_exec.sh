#!/bin/sh
# Starts the Claude Code CLI with only the environment variables the sidecar names (sidecar/sdk_env.py):
# the SDK always hands its child the sidecar's whole environment, and the CLI passes its own on to every
# Bash command, so without this the agent could print Orion's secrets and the tokens meant for hooks.
#   ORION_CLI_EXEC_REAL  the CLI binary to run
#   ORION_CLI_ENV_KEEP   names of the variables to keep, separated by spaces (both of these are dropped)
# exec keeps the process id: the sidecar's pid of "the CLI" stays true.
set -f
real=$ORION_CLI_EXEC_REAL
if [ -z "$real" ]; then
    echo "cli_exec.sh: ORION_CLI_EXEC_REAL is not set" >&2
    exit 127
fi
n=$#
for name in $ORION_CLI_ENV_KEEP; do
    case $name in
        '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;;  # only plain names ever reach eval
    esac
    eval "if [ \"\${$name+set}\" = set ]; then set -- \"\$@\" \"$name=\${$name}\"; fi"
done
set -- "$@" "$real"
# Rotate the CLI's own arguments behind NAME=VALUE... and the binary: env -i NAME=VALUE... CLI ARGS...
while [ "$n" -gt 0 ]; do
    set -- "$@" "$1"
    shift
    n=$((n - 1))
done
exec env -i "$@"
