"""Fixtures for the hook engine tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hooks.support import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "proj"
    (root / ".claude" / "hooks").mkdir(parents=True)
    return Project(root.resolve())
