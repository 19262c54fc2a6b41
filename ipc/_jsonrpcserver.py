"""Loads jsonrpcserver's async dispatcher without paying for its package __init__ (jsonschema, http.server) at start-up.

jsonrpcserver/__init__.py imports its sync `main` module, which builds a jsonschema validator at import
time (~60 ms with http.server, measured with -X importtime); we replace that validation with our pydantic
models and never use it. If nobody imported jsonrpcserver yet, we register the package module ourselves,
import only the submodules the async dispatcher needs, and let the package finish its real __init__ the
first time anyone touches an attribute of it (PEP 562 module __getattr__), so `from jsonrpcserver import X`
elsewhere still works.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any


def _install_lazy_package() -> None:
    if "jsonrpcserver" in sys.modules:
        return
    spec = importlib.util.find_spec("jsonrpcserver")
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)
    completed = False

    def complete(name: str) -> Any:
        nonlocal completed
        if not completed:
            completed = True
            del package.__dict__["__getattr__"]
            spec.loader.exec_module(package)  # type: ignore[union-attr]
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'jsonrpcserver' has no attribute {name!r}") from None

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules["jsonrpcserver"] = package


_install_lazy_package()

async_dispatcher: types.ModuleType = importlib.import_module("jsonrpcserver.async_dispatcher")
dispatcher: types.ModuleType = importlib.import_module("jsonrpcserver.dispatcher")
response: types.ModuleType = importlib.import_module("jsonrpcserver.response")
result: types.ModuleType = importlib.import_module("jsonrpcserver.result")
sentinels: types.ModuleType = importlib.import_module("jsonrpcserver.sentinels")
