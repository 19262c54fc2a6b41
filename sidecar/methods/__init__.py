"""JSON-RPC method handlers: every module in this package with a `register(app)` function is registered at start-up."""

from __future__ import annotations

import importlib
import pkgutil

from sidecar.app import SidecarApp


def register_all(app: SidecarApp) -> None:
    """Register core methods first, then every other module here, in name order.

    A module added to this package registers itself: define `register(app: SidecarApp) -> None`.
    Keep heavy imports (claude_agent_sdk, the hook engine) inside handlers: start-up time is budgeted.
    """
    from sidecar.methods import core

    core.register(app)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "core" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
