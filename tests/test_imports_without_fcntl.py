"""The package's modules import on a platform without fcntl (Windows): fcntl is imported where a lock is taken."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STILL_AT_THE_TOP: set[str] = set()  # every module now imports fcntl where it takes a lock

# The answer goes to a file: a module may take the process's descriptors over on import (hooks.launcher.child).
PROBE = """
import importlib, sys
sys.modules["fcntl"] = None  # what `import fcntl` finds on Windows: ImportError
failed = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        if "fcntl" in str(exc):
            failed.append(name)
open(sys.argv[1], "w").write("\\n".join(failed))
"""


def modules() -> list[str]:
    names = []
    for package in ("sidecar", "hooks", "ipc", "frontend_stub"):
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")]
    return names


def test_every_module_imports_without_fcntl(tmp_path: Path) -> None:
    answer = tmp_path / "failed.txt"
    done = subprocess.run([sys.executable, "-c", PROBE, str(answer), *modules()], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and answer.exists(), done.stderr[-3000:]
    failed = set(answer.read_text().split())
    assert failed <= STILL_AT_THE_TOP, sorted(failed - STILL_AT_THE_TOP)
    assert {"sidecar.hook_box", "sidecar.session_index", "hooks.trust", "hooks.tracking", "hooks.pruning",
            "sidecar.__main__", "hooks.__main__"}.isdisjoint(failed)
