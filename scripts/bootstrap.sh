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
    npm_install "$root/tests/acp/third_party" "acpx, a third-party ACP client, and the Node 22 it runs on (tests/acp/third_party)"
else
    echo "[setup] warning: npm not found; the ACP TypeScript SDK test (tests/acp/test_node_sdk_client.py), acpx's (tests/acp/test_third_party_clients.py) and the TypeScript client's and the Tauri config's tests will fail" >&2
fi
# acpc, a third-party ACP client (tests/acp/test_third_party_clients.py), needs Python >= 3.12, which the project's
# venv need not be: its own venv, .venv-acpc, pinned by acpc-requirements.txt and made again only when that changes.
acpc_venv="$root/.venv-acpc"
acpc_sum="$(sha256sum "$root/tests/acp/third_party/acpc-requirements.txt" | cut -c1-16)"
if [ ! -f "$acpc_venv/.orion-installed" ] || [ "$(cat "$acpc_venv/.orion-installed")" != "$acpc_sum" ]; then
    acpc_py=""
    for candidate in "${ACPC_PYTHON:-}" python3.14 python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python; do
        if [ -n "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
            acpc_py="$candidate"
            break
        fi
    done
    if [ -z "$acpc_py" ]; then
        echo "[setup] warning: no Python >= 3.12 found (set ACPC_PYTHON); the acpc client's test will fail" >&2
    else
        echo "[setup] installing acpc, a third-party ACP client, in $acpc_venv (Python >= 3.12)" >&2
        rm -rf "$acpc_venv"
        if "$acpc_py" -m venv "$acpc_venv" >&2 \
            && "$acpc_venv/bin/python" -m pip install --disable-pip-version-check -q \
                -r "$root/tests/acp/third_party/acpc-requirements.txt" >&2; then
            echo "$acpc_sum" > "$acpc_venv/.orion-installed"
        else
            echo "[setup] warning: could not install acpc; the acpc client's test will fail" >&2
        fi
    fi
fi
# Build the CLI's shield ahead of the first session (cached per machine; a session builds it itself otherwise).
if [ "$(uname -s)" = Linux ]; then
    "$venv/bin/python" -m sidecar.cli_shield >/dev/null || echo "[setup] warning: sessions' CLIs will run without their shield (see above)" >&2
fi
