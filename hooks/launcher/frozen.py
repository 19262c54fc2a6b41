"""Running inside the self-contained build (`./dev build`, PyInstaller one-dir): how the sidecar starts its own helpers.

A normal install starts three helper processes with its interpreter and a script path: the watchdog
(`python -I sidecar/reaper.py watch <record>`), the warm Python hook launcher (`python -u
hooks/launcher/child.py`) and the hook box's first process (`python -S -u sidecar/box_spawner.py FD`). In the built app `sys.executable` is the sidecar's own executable, which takes no
script: it is started again with `--orion-run <role>`, and the build's entry point (bundle/entry.py) becomes
that helper. `ORION_HOOK_PYTHON` still names another interpreter for Python hooks.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROLE_FLAG = "--orion-run"
ROLES = ("watchdog", "hook-launcher", "box-spawner", "memory-backfill")


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def helper_argv(role: str, script: Path, *args: str, isolated: bool = False, unbuffered: bool = False) -> list[str]:
    """The command line that starts helper `role` (normally `script` under this interpreter) with `args`."""
    if role not in ROLES:
        raise ValueError(f"unknown helper role {role!r}")
    if is_frozen():
        return [sys.executable, ROLE_FLAG, role, *args]
    flags = (["-I"] if isolated else []) + (["-u"] if unbuffered else [])
    return [sys.executable, *flags, str(script), *args]
