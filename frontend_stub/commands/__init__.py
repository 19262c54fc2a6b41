"""The `orion` subcommand table: every module here that defines NAME, HELP, add_arguments(parser) and async run(args) is a subcommand."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass(slots=True, frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Awaitable[int]]


def discover() -> dict[str, Command]:
    """Add a subcommand by dropping a module in this package; no table to edit."""
    commands: dict[str, Command] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module: ModuleType = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            commands[module.NAME] = Command(module.NAME, getattr(module, "HELP", ""),
                                            getattr(module, "add_arguments", lambda parser: None), module.run)
    return commands
