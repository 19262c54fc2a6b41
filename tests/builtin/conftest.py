"""Built-in hook tests: every test starts and ends with no memory store held open."""

from __future__ import annotations

import pytest

from hooks.memory.store import close_all_stores


@pytest.fixture(autouse=True)
def _close_memory_stores():
    yield
    close_all_stores()
