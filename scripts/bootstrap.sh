#!/usr/bin/env bash
# Create or reuse .venv and install the project with its test extras; idempotent and quiet when up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
py="${PYTHON:-python3}"
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
