"""A package whose `__init__` runs on first use of one of its own attributes, while its submodules import at once.

Two of our dependencies do expensive work in their package `__init__` that the sidecar does not need for what it
imports first: jsonrpcserver builds a jsonschema validator (~60 ms) we never use, and claude-agent-sdk pulls in its
whole `mcp` stack (~400 ms) where starting the CLI needs only its types and its subprocess transport (~75 ms).
`install(name)` registers the package module without running its `__init__`; `import name.sub` works as usual
(the package's `__path__` is set), and the first access to an attribute the package itself defines (PEP 562
`__getattr__`, e.g. `from name import X`) runs the real `__init__` once.

Thread-safe: a second thread touching the package while the first runs its `__init__` waits for it instead of
seeing half a module. Inside the `__init__` (same thread), a name not defined yet behaves as in a normal import:
AttributeError, so `from . import sub` falls back to importing the submodule.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any


def install(name: str) -> bool:
    """Register `name` lazily; False (nothing done) when it is already imported or cannot be found."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    package = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    state = {"done": False, "running": False}

    def complete(attribute: str) -> Any:
        with lock:
            if not state["done"]:
                if state["running"]:
                    # The package's own __init__, in this thread, asking for a name it has not defined yet.
                    raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
                state["running"] = True
                try:
                    spec.loader.exec_module(package)  # type: ignore[union-attr]
                    state["done"] = True
                finally:
                    state["running"] = False
        try:
            return package.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    complete._orion_lazy = True  # type: ignore[attr-defined]
    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:  # as an import would: `import a.b` then `a.b.x` looks the package up on its parent
        setattr(sys.modules[parent], child, package)
    return True


def complete(name: str) -> types.ModuleType:
    """The package `name` with its `__init__` run (imported normally when it was not installed lazily)."""
    module = importlib.import_module(name)
    hook = module.__dict__.get("__getattr__")
    if getattr(hook, "_orion_lazy", False):
        try:
            hook("__name__")  # any attribute: the first access runs the real __init__
        except AttributeError:
            pass
    return module

