"""Loads jsonrpcserver's async dispatcher without paying for its package __init__ (jsonschema, http.server) at start-up.

jsonrpcserver/__init__.py imports its sync `main` module, which builds a jsonschema validator at import
time (~60 ms with http.server, measured with -X importtime); we replace that validation with our pydantic
models and never use it. If nobody imported jsonrpcserver yet, we register the package module ourselves,
import only the submodules the async dispatcher needs, and let the package finish its real __init__ the
first time anyone touches an attribute of it (ipc/lazy_package.py), so `from jsonrpcserver import X`
elsewhere still works.
"""

from __future__ import annotations

import importlib
import types

from ipc import lazy_package

lazy_package.install("jsonrpcserver")

async_dispatcher: types.ModuleType = importlib.import_module("jsonrpcserver.async_dispatcher")
dispatcher: types.ModuleType = importlib.import_module("jsonrpcserver.dispatcher")
response: types.ModuleType = importlib.import_module("jsonrpcserver.response")
result: types.ModuleType = importlib.import_module("jsonrpcserver.result")
sentinels: types.ModuleType = importlib.import_module("jsonrpcserver.sentinels")
