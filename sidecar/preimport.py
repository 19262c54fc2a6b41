"""Import what the first `session/new` needs before its CLI starts, while the app is idle: once `initialize` is
answered, a daemon thread imports the SDK's transport and types and the session modules (sidecar/sdk_loader.py).
The rest of the Claude Agent SDK (~0.4-0.8 s, most of it its `mcp` dependency) is left to the session start,
which imports it while its CLI boots.

A desktop app launches the sidecar long before its user's first prompt; the first session then starts at the
CLI's own pace instead of waiting for an import, and the idle sidecar holds ~50 MiB, not ~65. `session/new` imports the same modules itself (a module is
imported once: a second importer waits for the first), so nothing depends on this having finished.
`ORION_PREIMPORT=0` turns it off (to measure the cold path).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading

log = logging.getLogger(__name__)

MODULES = ("sidecar.agent", "sidecar.sessions", "sidecar.hook_bridge", "sidecar.permissions",
           "sidecar.sandbox", "hooks.hookset", "hooks.runner", "hooks.builtin", "hooks.executors.remote",
           "ipc.protocol_agent", "ipc.protocol_acp")

_started = False


def enabled() -> bool:
    return os.environ.get("ORION_PREIMPORT", "1").strip().lower() not in ("0", "false", "no", "off")


def _run() -> None:
    from sidecar import sdk_loader

    # What a session start needs before it spawns the CLI: the SDK's transport, then the session's own modules.
    # Not the rest of the SDK (its mcp stack, ~15 MiB): a session start imports it while its CLI boots, where it
    # costs no time (bench/RESULTS.md, "The SDK imported while the CLI boots"), and the idle sidecar stays small.
    from hooks.builtin import BUILTIN_HOOK_MODULES

    # Then the built-in hooks' own modules: a cold session start imports them while its CLI boots (hooks/builtin/
    # __init__.py); an idle sidecar has the time to have them ready, so the CLI boots with less beside it.
    names = (*MODULES, *BUILTIN_HOOK_MODULES)
    steps = [sdk_loader.load_transport, *(lambda name=name: importlib.import_module(name) for name in names)]
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - session/new imports it again and reports the failure where it matters
            log.debug("pre-import step failed", exc_info=True)


def start() -> None:
    """Begin the background import once per process (no-op when disabled or already begun)."""
    global _started
    if _started or not enabled():
        return
    _started = True
    threading.Thread(target=_run, name="orion-preimport", daemon=True).start()
