"""The TypeScript client (clients/typescript): its types are what the models say, it compiles under `tsc --strict`
(misspelled options must not), and its Node tests drive the real `python -m sidecar` with every received message
checked by ajv in strict mode against the generated schema."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
GENERATED = CLIENT / "src" / "generated"



@pytest.fixture
def node_ready() -> None:
    """Not a skip: CI must run these (scripts/bootstrap.sh installs Node's side)."""
    assert shutil.which("node") is not None, "node is not on PATH"
    assert (CLIENT / "node_modules" / ".bin" / "tsc").exists(), "run scripts/bootstrap.sh: clients/typescript/node_modules"


def test_the_committed_types_are_what_the_models_generate(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(CLIENT / "generate.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for fresh in sorted(tmp_path.iterdir()):
        committed = GENERATED / fresh.name
        assert committed.exists(), f"{fresh.name} is generated but not committed: run clients/typescript/generate.py"
        assert committed.read_text() == fresh.read_text(), (
            f"clients/typescript/src/generated/{fresh.name} differs from the models: run clients/typescript/generate.py")
    assert sorted(p.name for p in GENERATED.iterdir()) == sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.cli
@pytest.mark.timeout(600)
def test_tsc_strict_then_the_node_tests_against_the_real_sidecar(node_ready: None) -> None:
    shutil.rmtree(CLIENT / "dist", ignore_errors=True)
    compiled = subprocess.run([str(CLIENT / "node_modules" / ".bin" / "tsc"), "-p", str(CLIENT / "tsconfig.json")],
                              capture_output=True, text=True, timeout=300, cwd=CLIENT)
    assert compiled.returncode == 0, compiled.stdout[-4000:] + compiled.stderr[-2000:]
    env = dict(os.environ, ORION_PYTHON=sys.executable, ORION_REPO=str(ROOT))  # HOME and ORION_* isolated by conftest
    ran = subprocess.run(["node", "--test", "--test-reporter=tap", str(CLIENT / "dist" / "test")],
                         capture_output=True, text=True, timeout=400, cwd=CLIENT, env=env)
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-2000:]
    assert "# fail 0" in ran.stdout and "# pass 4" in ran.stdout, ran.stdout[-3000:]


def test_a_type_error_fails_the_strict_build(node_ready: None) -> None:
    """The compile-time checks can fail: a wrongly typed call is an error under the same tsconfig."""
    probe = CLIENT / "test" / "_probe_wrong.ts"
    probe.write_text('import type { AcpMethods } from "../src/index.js";\n'
                     'export const p: AcpMethods["session/new"]["params"] = { cwd: 1, mcpServers: [] };\n')
    try:
        compiled = subprocess.run([str(CLIENT / "node_modules" / ".bin" / "tsc"), "-p", str(CLIENT / "tsconfig.json"),
                                   "--noEmit"], capture_output=True, text=True, timeout=300, cwd=CLIENT)
    finally:
        probe.unlink()
    assert compiled.returncode != 0 and "_probe_wrong.ts" in compiled.stdout, compiled.stdout[-2000:]
