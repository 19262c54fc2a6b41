#!/bin/sh
# The first program inside a session's boundary (sidecar/boundary.py, Linux), then the CLI (exec: the CLI keeps
# this process id). The box has no network but its own loopback: this starts the relay that carries the box's
# proxy port (HTTP(S)_PROXY inside) to the sidecar's egress proxy, a unix socket bound into the box. The model
# needs no relay: the CLI reaches it over its own unix socket (ANTHROPIC_UNIX_SOCKET) or through this proxy.
#   box_init.sh SOCAT PORT=SOCKET SHIELD CLI [ARGS...]
# (arguments, not environment variables: every process in the box could read those). SHIELD is the CLI's shield
# library (sidecar/cli_shield.py), preloaded into the CLI alone, or "-" for none.
# The CLI is not kept waiting for the relay (~5 ms to listen): nothing it starts uses the proxy that early, and a
# request that came before the relay listens fails like any refused connection. The relay is the CLI's child and
# ends with the box's PID namespace, whose init the CLI is.
set -f
socat=$1
relay=$2
shield=$3
shift 3
exec 3<&-  # bwrap's argument file (cli_exec.sh opened it on 3); nothing inside needs it
port=${relay%%=*}
sock=${relay#*=}
# Any address of the box is loopback (it has no other interface). Dual-stack where the box has IPv6 (localhost
# may resolve to ::1), else IPv4 alone.
{ "$socat" TCP6-LISTEN:"$port",ipv6only=0,reuseaddr,fork UNIX-CONNECT:"$sock" 2>/dev/null ||
  exec "$socat" TCP4-LISTEN:"$port",bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:"$sock"; } </dev/null >/dev/null 2>&1 &
unset socat relay port sock
case $shield in
    -) unset shield; exec "$@" ;;
    # The library removes LD_PRELOAD from the CLI's environment as it loads: the CLI's own children start plain.
    *) LD_PRELOAD=$shield; export LD_PRELOAD; unset shield; exec "$@" ;;
esac
