"""An organization's managed Claude Code settings for one test, seen by one process tree only.

The CLI reads managed settings from a fixed place (`/etc/claude-code` on Linux) and nothing moves it, so a test that
writes there changes every Claude Code CLI on the machine while it runs. Instead the process under test starts in a
mount namespace of its own, where an overlay over `/etc` holds `/etc/claude-code` bound to the test's folder: the
sidecar, its CLI and every hook see the test's managed settings; nothing else on the machine does, and nothing is
left behind. Needs root (CI runs as root); the tests that use it skip elsewhere.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Runs as `sh -c SCRIPT sh <managed dir> <work dir> <command...>` inside `unshare -m`: a private tmpfs on the work
# folder for the overlay's upper layer, the overlay over /etc, the test's folder bound at /etc/claude-code, then the
# command in its place.
_SCRIPT = r'''set -e
managed=$1; work=$2; shift 2
here=$PWD
mount -t tmpfs -o mode=0700 orion-managed "$work"
cd "$work"  # the overlay's options name its layers relative to here: a path with a comma would split them
mkdir upper work
mount -t overlay orion-etc -o lowerdir=/etc,upperdir=upper,workdir=work /etc
cd "$here"
mkdir -p /etc/claude-code
mount --bind "$managed" /etc/claude-code
exec "$@"
'''


def managed_launcher(managed_dir: Path) -> list[str]:
    """Words to put before a command so that it runs with `managed_dir` as its /etc/claude-code (a folder beside it
    holds the overlay's private layer while the command runs)."""
    work = managed_dir.parent / f"{managed_dir.name}.etc-overlay"
    work.mkdir(exist_ok=True)
    return ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", _SCRIPT, "sh", str(managed_dir), str(work)]


@functools.cache
def can_fake_managed_settings() -> bool:
    """Whether this machine lets a process tree have a /etc/claude-code of its own: tried once, for real."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        managed = Path(folder) / "etc-claude-code"
        managed.mkdir()
        (managed / "managed-settings.json").write_text("{}")
        try:
            done = subprocess.run([*managed_launcher(managed), "cat", "/etc/claude-code/managed-settings.json"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and done.stdout == "{}"


needs_managed_namespace = pytest.mark.skipif(not can_fake_managed_settings(),
                                             reason="a private /etc/claude-code needs root and unshare (Linux)")
