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
# The CLI's shield inside the box (sidecar/cli_shield.py) is built from C source once per machine.
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1 && ! command -v clang >/dev/null 2>&1; then
    apt_install "the CLI's shield inside the sandbox" "sessions' CLIs will run without their shield" gcc libc6-dev
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
# Node packages the tests use, each pinned by its package-lock.json; installed again only when the lock changes.
npm_install() {
    local dir="$1" what="$2" sum
    sum="$(sha256sum "$dir/package-lock.json" | cut -c1-16)"
    if [ ! -f "$dir/node_modules/.orion-installed" ] || [ "$(cat "$dir/node_modules/.orion-installed")" != "$sum" ]; then
        echo "[setup] installing $what" >&2
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) && echo "$sum" > "$dir/node_modules/.orion-installed"
    fi
}
if command -v npm >/dev/null 2>&1; then
    npm_install "$root/tests/acp/node" "the ACP TypeScript SDK for the protocol tests (tests/acp/node)"
    npm_install "$root/clients/typescript" "the TypeScript client's dependencies (clients/typescript)"
    npm_install "$root/bundle/tauri" "Tauri's CLI package for its config schema (bundle/tauri)"
else
    echo "[setup] warning: npm not found; the ACP TypeScript SDK test (tests/acp/test_node_sdk_client.py) and the TypeScript client's and the Tauri config's tests will fail" >&2
fi
# Build the CLI's shield ahead of the first session (cached per machine; a session builds it itself otherwise).
if [ "$(uname -s)" = Linux ]; then
    "$venv/bin/python" -m sidecar.cli_shield >/dev/null || echo "[setup] warning: sessions' CLIs will run without their shield (see above)" >&2
fi
