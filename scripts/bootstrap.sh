#!/usr/bin/env bash
# Create or reuse .venv and install the project with its test extras; idempotent and quiet when up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
py="${PYTHON:-python3}"
# Debian packages the sidecar or its tests use, installed only when missing, as root (CI) or through sudo.
# apt_install WHAT IF_MISSING PACKAGE...: WHAT names the need in the messages.
apt_install() {
    local what="$1" if_missing="$2"
    shift 2
    [ "$(uname -s)" = Linux ] && command -v apt-get >/dev/null 2>&1 || return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="$(command -v sudo || true)"
    if [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; then
        echo "[setup] warning: $* missing and not root: $if_missing" >&2
        return 0
    fi
    echo "[setup] installing $* ($what)" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 \
        || { $sudo apt-get update -q >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2; } \
        || echo "[setup] warning: could not install $*; $if_missing" >&2
}
# The CLI's Bash sandbox needs bubblewrap and socat on Linux (docs/SECURITY.md "Sandbox"); without them sessions
# run unsandboxed and say so.
if ! command -v bwrap >/dev/null 2>&1 || ! command -v socat >/dev/null 2>&1; then
    apt_install "the agent's sandbox" "sessions will run unsandboxed" bubblewrap socat
fi
# The memory tests run against a real PostgreSQL server (tests/pg_server.py starts one in a temp dir).
if ! command -v pg_ctl >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    apt_install "the team-memory tests start a real server" "the PostgreSQL memory tests will fail" postgresql
fi
# The inspector's browser tests (tests/inspector) drive the distribution's Chromium through Playwright; no browser
# is downloaded.
if ! command -v chromium >/dev/null 2>&1; then
    apt_install "the inspector's browser tests" "the inspector's browser tests will fail" chromium
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "[setup] creating virtual environment in $venv" >&2
    "$py" -m venv "$venv"
fi
stamp="$venv/.orion-installed"
want="$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "[setup] installing orion-sidecar and its dependencies (first run takes a minute: the SDK wheel bundles the Claude Code CLI)" >&2
    "$venv/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip >&2
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -e "$root[test]" >&2
    echo "$want" > "$stamp"
fi
# The official ACP TypeScript SDK, the Node client of tests/acp (pinned by tests/acp/node/package-lock.json).
acp_node="$root/tests/acp/node"
if command -v npm >/dev/null 2>&1; then
    lock_sum="$(sha256sum "$acp_node/package-lock.json" | cut -c1-16)"
    if [ ! -f "$acp_node/node_modules/.orion-installed" ] || [ "$(cat "$acp_node/node_modules/.orion-installed")" != "$lock_sum" ]; then
        echo "[setup] installing the ACP TypeScript SDK for the protocol tests (tests/acp/node)" >&2
        (cd "$acp_node" && npm ci --no-audit --no-fund --loglevel=error >&2) \
            && echo "$lock_sum" > "$acp_node/node_modules/.orion-installed"
    fi
    # The TypeScript client (clients/typescript): tsc, the ACP SDK and ajv, pinned by its package-lock.json.
    ts_client="$root/clients/typescript"
    ts_sum="$(sha256sum "$ts_client/package-lock.json" | cut -c1-16)"
    if [ ! -f "$ts_client/node_modules/.orion-installed" ] || [ "$(cat "$ts_client/node_modules/.orion-installed")" != "$ts_sum" ]; then
        echo "[setup] installing the TypeScript client's dependencies (clients/typescript)" >&2
        (cd "$ts_client" && npm ci --no-audit --no-fund --loglevel=error >&2) \
            && echo "$ts_sum" > "$ts_client/node_modules/.orion-installed"
    fi
else
    echo "[setup] warning: npm not found; the ACP TypeScript SDK test (tests/acp/test_node_sdk_client.py) and the TypeScript client's tests will fail" >&2
fi
