"""A sidecar started in a cloned project's folder (`python -m sidecar` with the project as its working directory,
as an editor may launch it) imports none of the project's files: the working directory leaves sys.path before the
first import made after start-up, and the processes the sidecar starts itself use `-P`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from frontend_stub.client import SidecarClient
from hooks.memory.backfill import backfill_argv

REPO = Path(__file__).resolve().parents[2]


def hostile_project(root: Path, marker: Path) -> Path:
    """Modules named like what the sidecar imports lazily: each writes the marker when imported."""
    project = root / "cloned"
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (project / "hooks").mkdir(parents=True)
    (project / "hooks" / "__init__.py").write_text(plant)
    for name in ("numpy", "tokenizers", "psutil", "yaml", "httpx"):
        (project / f"{name}.py").write_text(plant)
    return project


@pytest.mark.asyncio
async def test_a_project_as_working_directory_gets_none_of_its_modules_imported(tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    project = hostile_project(tmp_path, marker)
    env = {**os.environ, "PYTHONPATH": str(REPO), "ORION_DATA_DIR": str(tmp_path / "data")}
    async with SidecarClient.launch(env=env, cwd=project) as client:
        await client.request("hooks/list", {"projectDir": str(project)})
        status = await client.request("memory/status", {})  # loads numpy and tokenizers (the embedding model)
        assert status["meaningAvailable"] is True
        await client.request("memory/search", {"query": "anything", "project": str(project)})
    assert not marker.exists(), marker.read_text()


def test_the_backfill_process_is_started_without_its_working_directory_on_the_path() -> None:
    argv = backfill_argv(Path("/nowhere"))
    assert argv[:3] == [sys.executable, "-P", "-m"] and argv[3] == "hooks.memory"
