"""Import what the first `session/new` needs while the app is idle: once `initialize` is answered, a daemon thread
imports the Claude Agent SDK (~1 s, most of it its `mcp` dependency) and the session modules.

A desktop app launches the sidecar long before its user's first prompt; the first session then starts at the
CLI's own pace instead of waiting for an import. `session/new` imports the same modules itself (a module is
imported once: a second importer waits for the first), so nothing depends on this having finished.
`ORION_PREIMPORT=0` turns it off (to measure the cold path).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading

log = logging.getLogger(__name__)

MODULES = ("claude_agent_sdk", "sidecar.agent", "sidecar.sessions", "sidecar.hook_bridge", "sidecar.permissions",
           "sidecar.sandbox", "hooks.hookset", "hooks.runner", "hooks.builtin", "hooks.executors.remote",
           "ipc.protocol_agent", "ipc.protocol_acp")

_started = False


def enabled() -> bool:
    return os.environ.get("ORION_PREIMPORT", "1").strip().lower() not in ("0", "false", "no", "off")


def _run() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - session/new imports it again and reports the failure where it matters
            log.debug("pre-import of %s failed", name, exc_info=True)


def start() -> None:
    """Begin the background import once per process (no-op when disabled or already begun)."""
    global _started
    if _started or not enabled():
        return
    _started = True
    threading.Thread(target=_run, name="orion-preimport", daemon=True).start()
