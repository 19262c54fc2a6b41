#!/bin/sh
# Orion's CLAUDE_CODE_SHELL for a session whose organization's managed settings set a CLAUDE_CODE_SHELL_PREFIX
# (sidecar/shell_isolation.py says why and where it is placed). The managed prefix outranks Orion's, so Orion's
# prefix never runs; the CLI still starts every shell it uses through CLAUDE_CODE_SHELL (its start-up shells, and
# each command: `<this> -c "'<managed prefix>' '<command line>'"`). This takes the sidecar's internal variables
# (named in ORION_SHELL_UNSET) out of the environment and becomes the real shell (ORION_SHELL_REAL) with the same
# arguments. The CLI tells bash from zsh by this file's name, so it is placed as orion-bash.sh or orion-zsh.sh.
real=${ORION_SHELL_REAL-}
case $real in
    /*) ;;
    *)
        echo "Orion's shell wrapper: ORION_SHELL_REAL is not an absolute path" >&2
        exit 126
        ;;
esac
set -f
for name in $ORION_SHELL_UNSET; do
    case $name in
        '' | [0-9]* | *[!A-Za-z0-9_]*) continue ;;  # a name, nothing else, ever reaches unset
    esac
    unset "$name" 2>/dev/null
done
unset ORION_SHELL_UNSET ORION_SHELL_REAL CLAUDE_CODE_SHELL 2>/dev/null
set +f
exec "$real" "$@"
