"""`./dev build` refuses a target the host cannot build instead of naming this machine's binary after it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def target_triple() -> str:
    spec = importlib.util.spec_from_file_location("orion_bundle_build", REPO_ROOT / "bundle" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.target_triple()


def test_a_target_this_machine_cannot_build_is_refused_before_any_build(tmp_path: Path) -> None:
    other = "aarch64-apple-darwin" if target_triple() != "aarch64-apple-darwin" else "x86_64-unknown-linux-gnu"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bundle" / "build.py"), "--target", other,
                           "--dist", str(tmp_path / "dist")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"cannot build for {other} on this machine ({target_triple()})" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "dist").exists()
