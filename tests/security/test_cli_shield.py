"""The CLI's shield library (sidecar/cli_shield.py): built once from its source with the machine's C compiler, cached
only where nobody else may write, and its absence said rather than hidden. What it does to the CLI is proven through
the real sidecar in tests/security/test_boundary.py (`test_no_command_reaches_the_cli_process_it_runs_in`)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar import cli_shield

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shield is Linux's")


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cli_shield, "_built", {})
    monkeypatch.setattr(cli_shield, "_warned", type(cli_shield._warned)())
    return tmp_path / "cache" / "orion" / "native"


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_it_is_built_once_into_a_private_cache_and_makes_a_program_non_dumpable(fresh: Path) -> None:
    built = cli_shield.library(os.environ["PATH"])
    assert built is not None and Path(built).parent == fresh
    assert fresh.stat().st_mode & 0o777 == 0o700 and Path(built).stat().st_mode & 0o777 == 0o600
    assert cli_shield.library(os.environ["PATH"]) == built  # cached in the process
    cli_shield._built.clear()
    mtime = Path(built).stat().st_mtime_ns
    assert cli_shield.library(os.environ["PATH"]) == built and Path(built).stat().st_mtime_ns == mtime  # and on disk
    # Loaded into a program: that program reads non-dumpable, and what it starts does not inherit the library.
    probe = ("import ctypes, os, subprocess; libc = ctypes.CDLL(None); "
             "print(libc.prctl(3, 0, 0, 0, 0), repr(os.environ.get('LD_PRELOAD')), "
             "subprocess.run(['sh', '-c', 'echo \"[$LD_PRELOAD]\"'], capture_output=True, text=True).stdout.strip())")
    done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "LD_PRELOAD": built},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["0", "None", "[]"], (done.stdout, done.stderr)  # PR_GET_DUMPABLE = 3
    plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert plain.stdout.split()[0] == "1"


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_a_cached_library_others_could_write_is_rebuilt(fresh: Path) -> None:
    built = Path(cli_shield.library(os.environ["PATH"]) or "")
    built.chmod(0o666)
    cli_shield._built.clear()
    again = cli_shield.library(os.environ["PATH"])
    assert again == str(built) and built.stat().st_mode & 0o777 == 0o600


def test_without_a_compiler_there_is_no_shield_and_the_log_says_why_once(fresh: Path, tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    with caplog.at_level(logging.WARNING, logger="sidecar.cli_shield"):
        assert cli_shield.library(str(empty)) is None
        cli_shield._built.clear()
        assert cli_shield.library(str(empty)) is None
    warnings = [r.getMessage() for r in caplog.records if r.name == "sidecar.cli_shield"]
    assert len(warnings) == 1 and "no C compiler" in warnings[0] and "without their shield" in warnings[0]
    assert not fresh.exists() or not any(fresh.iterdir())


def test_a_session_without_the_shield_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sidecar import sandbox

    if sandbox.backend_problem(os.environ.get("PATH")) is not None:
        pytest.skip("no OS boundary here")
    real = cli_shield.library
    monkeypatch.setattr(cli_shield, "library", lambda path_env=None: None)
    project = tmp_path / "project"
    project.mkdir()
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    status = sandbox.decide("auto", os.environ["PATH"], (), project=project, cli_env=env, orion_dirs=[tmp_path / "d"])
    assert status.to_wire()["enabled"] is True and status.to_wire()["cliShielded"] is False
    monkeypatch.setattr(cli_shield, "library", real)
    if shutil.which("cc") or shutil.which("gcc"):
        status = sandbox.decide("auto", os.environ["PATH"], (), project=project, cli_env=env,
                                orion_dirs=[tmp_path / "d"])
        assert status.to_wire()["cliShielded"] is True
