"""Layering: ipc/ imports nothing else from the project; frontend_stub/ only ipc/ (it must work against any sidecar build)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def project_imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
            found |= {n.split(".")[0] for n in names if n.split(".")[0] in {"ipc", "sidecar", "hooks", "frontend_stub"}}
    return found


@pytest.mark.parametrize("package,allowed", [("ipc", {"ipc"}), ("frontend_stub", {"ipc", "frontend_stub"})])
def test_layering(package, allowed):
    assert project_imports(package) <= allowed
