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

import logging
import os
import sys

log = logging.getLogger(__name__)

SWITCH = "ORION_DEBUGGABLE"
_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def make_private(env: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Make this process non-dumpable unless the launcher asked otherwise; True when it now is. Never raises."""
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux") or env.get(SWITCH, "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no prctl: nothing else to do, the boundary still holds where it exists
        return False


def is_private() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
