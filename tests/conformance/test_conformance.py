"""Each conformance case through `python -m sidecar` agrees with its golden recorded on the bundled CLI, field by field,
except the differences named (with their reason) in KNOWN_DIFFERENCES: those must still be the only ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.cases import CASES, KNOWN_DIFFERENCES
from tests.conformance.compare import differences, load_golden
from tests.conformance.harness import normalise, run_sidecar
from tests.managed_settings import needs_managed_namespace

pytestmark = [pytest.mark.cli]


def test_every_known_difference_names_a_case() -> None:
    assert set(KNOWN_DIFFERENCES) <= {case.name for case in CASES}


@pytest.mark.parametrize("case", [pytest.param(case, marks=[needs_managed_namespace] if case.managed else [])
                                  for case in CASES], ids=[case.name for case in CASES])
@pytest.mark.asyncio
async def test_the_sidecar_agrees_with_claude_code(case, tmp_path: Path) -> None:
    root = tmp_path / case.name
    golden = load_golden(case.name)
    ours = normalise((await run_sidecar(case, root, golden)).to_json(), root)
    diffs = differences(golden, ours)
    known = KNOWN_DIFFERENCES.get(case.name)
    if known is None:
        assert diffs == [], "\n".join(diffs)
    else:
        marker, why = known
        assert diffs, f"{case.name} now agrees with the CLI: remove it from KNOWN_DIFFERENCES ({why})"
        assert all(marker in d for d in diffs), "\n".join(diffs)
