"""The self-contained build's entry point: the sidecar, or one of its helper processes (hooks/launcher/frozen.py)."""

from __future__ import annotations

import sys
from pathlib import Path


def run_role(argv: list[str]) -> int | None:
    """When `argv` asks for a helper role, run it and return its exit code; None for a normal sidecar start."""
    from hooks.launcher.frozen import ROLE_FLAG, ROLES

    if len(argv) < 2 or argv[1] != ROLE_FLAG:
        return None
    role, rest = (argv[2] if len(argv) > 2 else ""), argv[3:]
    if role == "watchdog":
        from sidecar import reaper

        if len(rest) == 2 and rest[0] == "watch":
            return reaper.watch(Path(rest[1]))
        sys.stderr.write("usage: --orion-run watchdog watch <record>\n")
        return 2
    if role == "hook-launcher":
        from hooks.launcher import child  # sets its descriptors up on import; replies go straight to a descriptor

        child.main()
        return 0
    if role == "box-spawner":
        from sidecar import box_spawner

        if len(rest) == 1 and rest[0].isdigit():
            return box_spawner.main(int(rest[0]))
        sys.stderr.write("usage: --orion-run box-spawner FD\n")
        return 2
    if role == "memory-backfill":
        from hooks.memory.__main__ import main as memory_main

        return memory_main(["backfill", *rest])
    sys.stderr.write(f"unknown role {role!r}; one of: {', '.join(ROLES)}\n")
    return 2


def main() -> None:
    code = run_role(sys.argv)
    if code is not None:
        sys.exit(code)
    from sidecar.__main__ import exit_now, main as sidecar_main

    exit_now(sidecar_main())


if __name__ == "__main__":
    main()
