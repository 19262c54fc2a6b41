"""Loads an older copy of one of our modules from a file, so a bench can measure before and after in one run."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def load_module_file(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while a class is built
    spec.loader.exec_module(module)
    return module
