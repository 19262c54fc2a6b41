"""`orion inspect` without --scenario and without a credential: the sidecar's refusal in a line or two, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.frontend_stub.test_chat_credentials import CREDENTIAL_VARS, OFFLINE, ROOT


def test_without_any_credential_inspect_says_what_to_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARS}
    env.update(OFFLINE, PYTHONPATH=str(ROOT), ORION_DATA_DIR=str(tmp_path / "data"))
    result = subprocess.run([sys.executable, "-m", "frontend_stub", "inspect", "--prompt", "Say something.",
                             "--project", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "orion: the sidecar refused the session: no credentials for a real model" in result.stderr
    for what in ("ANTHROPIC_API_KEY", "claude /login", "--scenario NAME"):
        assert what in result.stderr, what
