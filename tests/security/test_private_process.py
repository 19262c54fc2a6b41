"""No other process of the user reads the sidecar's environment, memory, descriptors or working directory
(sidecar/private_process.py). Sidecar and reader run as a user without privileges would: the same uid (here root's)
with every capability dropped (`setpriv --bounding-set=-all`; the kernel's checks are the same for any uid). The
control is the same reader against a sidecar launched with ORION_DEBUGGABLE=1, which must read everything."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("setpriv") is None,
                                reason="Linux with setpriv (util-linux)")

SECRET = "orion-private-process-test-0451"


def _reads(pid: int) -> dict[str, bool]:
    """What an unprivileged process of the same user gets from /proc/<pid>: each item True when readable."""
    def run(*argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["setpriv", "--bounding-set=-all", *argv], capture_output=True, timeout=30)

    environ = run("cat", f"/proc/{pid}/environ")
    return {"environ": environ.returncode == 0 and SECRET.encode() in environ.stdout,
            "mem-maps": run("cat", f"/proc/{pid}/maps").returncode == 0 and run("cat", f"/proc/{pid}/maps").stdout != b"",
            # what a descriptor is, and so opening it (the listing itself is refused by ownership to any uid but
            # root's, which this test runs as)
            "fd": run("readlink", f"/proc/{pid}/fd/1").returncode == 0,
            "cwd": run("readlink", f"/proc/{pid}/cwd").returncode == 0,
            "stat": run("cat", f"/proc/{pid}/stat").returncode == 0}


@pytest.mark.parametrize("debuggable", [False, True])
def test_an_unprivileged_process_of_the_user_reads_nothing_private_of_the_sidecar(tmp_path: Path,
                                                                                 debuggable: bool) -> None:
    env = dict(os.environ, ORION_TEAM_TOKEN=SECRET, ANTHROPIC_API_KEY=SECRET, HOME=str(tmp_path),
               PYTHONPATH=str(REPO_ROOT))
    env.pop("ORION_DEBUGGABLE", None)
    if debuggable:
        env["ORION_DEBUGGABLE"] = "1"
    proc = subprocess.Popen(["setpriv", "--bounding-set=-all", sys.executable, "-P", "-m", "sidecar"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": 1}}).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # up and serving: past start-up
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}).encode()
                         + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 2  # the whole server is imported and answering
        seen = _reads(proc.pid)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    if debuggable:  # the attack lands on an ordinary process: the reader is able to read
        assert seen == {"environ": True, "mem-maps": True, "fd": True, "cwd": True, "stat": True}
    else:  # only what every process shows of every other (its state line) stays readable
        assert seen == {"environ": False, "mem-maps": False, "fd": False, "cwd": False, "stat": True}


def test_what_the_sidecar_starts_is_an_ordinary_process_again(tmp_path: Path) -> None:
    """exec makes a program dumpable again: the CLI, hooks and helpers the sidecar starts are inspected as before
    (the leftover sweep reads their /proc entries); shown on a child of a private process."""
    code = ("from sidecar.private_process import make_private, is_private; import subprocess, sys; "
            "assert make_private({}) and is_private(); "
            "sys.exit(subprocess.run([sys.executable, '-c', "
            "'from sidecar.private_process import is_private; import sys; sys.exit(3 if is_private() else 0)'"
            "]).returncode)")
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
