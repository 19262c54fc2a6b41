#!/bin/sh
# Starts the Claude Code CLI with only the environment variables the sidecar names (sidecar/sdk_env.py), and, when
# the session has one, inside its OS boundary (sidecar/boundary.py): the SDK always hands its child the sidecar's
# whole environment, and the CLI passes its own on to every Bash command, so without this the agent could print
# Orion's secrets and the tokens meant for hooks.
#   ORION_CLI_EXEC_REAL  the CLI binary to run
#   ORION_CLI_ENV_KEEP   names of the variables to keep, separated by spaces
#   ORION_CLI_BOX        optional: bubblewrap's arguments (NUL-separated), or a Seatbelt profile
#   ORION_CLI_BOX_KIND   "bwrap" or "seatbelt"; ORION_CLI_BOX_EXEC: that program
#   ORION_CLI_BOX_INIT, ORION_CLI_BOX_SOCAT, ORION_CLI_BOX_RELAY, ORION_CLI_BOX_SHIELD  bwrap only: box_init.sh and
#                        its arguments
#   ORION_CLI_BOX_PROXY  Seatbelt only: Orion's egress proxy, as the box's HTTP(S)_PROXY
# None of these reaches the CLI. exec keeps the process id: the sidecar's pid of "the CLI" is the launcher's
# (bwrap's, whose death takes the whole box with it, or sandbox-exec's, which becomes the CLI).
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
case ${ORION_CLI_BOX:+$ORION_CLI_BOX_KIND} in
    '') set -- "$@" "$real" ;;
    bwrap)
        # bwrap reads its options from fd 3; the file goes at once (the box's own folder goes when the session ends).
        exec 3<"$ORION_CLI_BOX" || exit 126
        rm -f "$ORION_CLI_BOX"
        set -- "$@" "$ORION_CLI_BOX_EXEC" --args 3 /bin/sh "$ORION_CLI_BOX_INIT" "$ORION_CLI_BOX_SOCAT" \
            "$ORION_CLI_BOX_RELAY" "${ORION_CLI_BOX_SHIELD:--}" "$real"
        ;;
    seatbelt)
        for name in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy; do
            set -- "$@" "$name=$ORION_CLI_BOX_PROXY"
        done
        set -- "$@" NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1
        set -- "$@" "$ORION_CLI_BOX_EXEC" -f "$ORION_CLI_BOX" "$real"
        ;;
    *)
        echo "cli_exec.sh: unknown boundary kind '$ORION_CLI_BOX_KIND'" >&2
        exit 126
        ;;
esac
# Rotate the CLI's own arguments behind NAME=VALUE... and the program: env -i NAME=VALUE... PROGRAM... ARGS...
while [ "$n" -gt 0 ]; do
    set -- "$@" "$1"
    shift
    n=$((n - 1))
done
exec env -i "$@"
