"""The wheel alone makes a working sidecar: built from this checkout, installed into a fresh virtual environment
(its dependencies from the package index, nothing from the repository), `orion demo` runs the offline demo — the
shipped scenario, the shipped demo project and its hook script, every runtime import declared."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.cli, pytest.mark.timeout(900)]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def test_a_plain_pip_install_runs_the_demo(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                 str(REPO_ROOT)], timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = wheels.glob("orion_sidecar-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sidecar/scenarios/demo.yaml" in names
    assert "frontend_stub/demo_project/.claude/hooks/audit-bash.sh" in names
    assert "sidecar/cli_exec.sh" in names and "hooks/builtin_settings.json" in names
    assert "frontend_stub/inspector/page.html" in names  # `orion inspect` serves it
    # env-isolation's shell prefix and shell wrapper (the latter under the names the CLI reads a shell's kind from),
    # executable: a session runs every command through them (sidecar/shell_isolation.py).
    modes = {i.filename: i.external_attr >> 16 for i in zipfile.ZipFile(wheel).infolist()}
    for script in ("shell_prefix.sh", "shell_wrapper.sh", "orion-bash.sh", "orion-zsh.sh"):
        assert modes.get(f"sidecar/{script}", 0) & 0o111, (script, oct(modes.get(f"sidecar/{script}", 0)))

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    installed = run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]

    # Away from the checkout, with nothing of the repository on the path: only what the wheel installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = run([str(python), "-c", "import sidecar, frontend_stub; print(sidecar.__file__)"], cwd=tmp_path, env=env)
    assert str(env_dir) in where.stdout, where
    demo = run([str(env_dir / "bin" / "orion"), "demo"], cwd=tmp_path, env=env, timeout=300)
    assert demo.returncode == 0, (demo.stdout[-3000:], demo.stderr[-3000:])
    assert "1 denied" in demo.stdout and "inputs rewritten" in demo.stdout and "audit-bash" in demo.stdout
    assert "0 failed" in demo.stdout  # the project hook script kept its executable bit through the wheel
