"""ipc/lazy_package.py: a package's __init__ runs once, on first use of its own names, never half-seen by another thread."""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ipc import lazy_package


@pytest.fixture
def slow_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"orion_lazy_probe_{id(tmp_path)}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text(textwrap.dedent(f"""
        import time
        RUNS = __import__("{name}_counter").bump()
        time.sleep(0.3)  # long enough for a second thread to arrive mid-__init__
        from . import late  # a submodule the __init__ asks its package for: must import, not recurse
        VALUE = 42
    """))
    (root / "light.py").write_text("WEIGHT = 1\n")
    (root / "late.py").write_text("LATE = True\n")
    (tmp_path / f"{name}_counter.py").write_text("runs = 0\ndef bump():\n    global runs\n    runs += 1\n    return runs\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def test_a_submodule_imports_without_the_package_init(slow_package: str) -> None:
    assert lazy_package.install(slow_package)
    light = __import__(f"{slow_package}.light", fromlist=["WEIGHT"])
    assert light.WEIGHT == 1
    assert f"{slow_package}_counter" not in sys.modules  # only the package's __init__ imports it
    assert "VALUE" not in sys.modules[slow_package].__dict__


def test_threads_arriving_mid_init_wait_and_the_init_runs_once(slow_package: str) -> None:
    assert lazy_package.install(slow_package)
    seen: list[object] = []
    errors: list[BaseException] = []

    def use() -> None:
        try:
            seen.append(getattr(__import__(slow_package), "VALUE"))
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors, errors
    assert seen == [42, 42, 42, 42]
    assert sys.modules[f"{slow_package}_counter"].runs == 1
    assert sys.modules[slow_package].late.LATE is True


def test_complete_runs_the_init_and_a_missing_name_is_an_attribute_error(slow_package: str) -> None:
    assert lazy_package.install(slow_package)
    module = lazy_package.complete(slow_package)
    assert module.VALUE == 42
    assert lazy_package.complete(slow_package) is module  # idempotent
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        getattr(module, "nothing_here")
    with pytest.raises(ImportError):
        exec(f"from {slow_package} import nothing_here", {})


def test_an_imported_package_is_left_alone() -> None:
    assert lazy_package.install("json") is False


def test_a_lazy_subpackage_is_its_parents_attribute_and_loads_on_first_use() -> None:
    # As sidecar/sdk_loader.py installs importlib.metadata: `import importlib.metadata` must not run it, and the
    # first real use must (through the parent's attribute, as `importlib.metadata.version(...)` reaches it).
    import subprocess

    probe = textwrap.dedent("""
        import sys
        from ipc import lazy_package
        assert lazy_package.install("importlib.metadata")
        import importlib.metadata
        untouched = "email" not in sys.modules and "zipfile" not in sys.modules
        version = importlib.metadata.version("pydantic")
        from importlib.metadata import packages_distributions
        print(untouched, bool(version), callable(packages_distributions), "email" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True"]
