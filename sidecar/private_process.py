"""The sidecar's own process is out of reach of the user's other programs (Linux).

The sidecar holds what nothing else may read: the model credential the boundary keeps out of the CLI
(sidecar/model_credential.py), a team database's password, tokens http hooks send. Every process of the same user
could read its `/proc/<pid>/environ`, `mem`, `fd/*` and `cwd`, or ptrace it: an agent in a session without the OS
boundary (`sandbox: "off"`, no bubblewrap, a hook outside the box), an editor serving the agent's `Read` of
`/proc/<pid>/environ`. Marking the process non-dumpable makes the kernel refuse all of those to every process
without CAP_SYS_PTRACE, and no core file is written if it crashes. Processes the sidecar starts are not affected
(exec makes a program dumpable again), so the CLI, hooks and the leftover sweep's reads of them work as before.

Who may turn it off: only whoever launches the sidecar, with ORION_DEBUGGABLE=1 in its environment (to attach
py-spy or a debugger as the same user); a project or a client cannot.
"""

from __future__ import annotations

import os
import sys

SWITCH = "ORION_DEBUGGABLE"
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4


def make_private(env: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Make this process non-dumpable unless the launcher asked otherwise; True when it now is. Never raises."""
    from sidecar.credentials import cli_truthy

    env = os.environ if env is None else env
    return not cli_truthy(env.get(SWITCH)) and _prctl(_PR_SET_DUMPABLE, 0) == 0


def is_private() -> bool:
    return _prctl(_PR_GET_DUMPABLE, 0) == 0


def _prctl(option: int, value: int) -> int | None:
    """prctl(2) on Linux; None elsewhere or without it (nothing else to do: the boundary still holds where it is)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return None
