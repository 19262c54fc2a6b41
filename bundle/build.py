"""`./dev build`: the sidecar as a self-contained one-dir executable, `dist/orion-sidecar-<target triple>/`.

Run from the repository root: .venv/bin/python bundle/build.py [--target TRIPLE] [--dist DIR]

PyInstaller one-dir (docs/PACKAGING.md says why, with the measurements): the executable starts the interpreter
from its own directory with nothing to unpack. Inside it:
- every module of the sidecar, the hook engine and the protocol (some are imported by name at run time);
- their data: scenarios, built-in hook settings, the CLI exec wrapper, the hook launcher;
- the Claude Agent SDK with the Claude Code CLI from its wheel (`_bundled/claude`), once;
- the whole standard library, because `type: python` hooks run in the executable itself (its hook-launcher role,
  hooks/launcher/frozen.py) and may import any of it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import stat
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not shipped: GUI toolkits, the test suite, installers, and modules that only exist to be run by a developer.
STDLIB_LEFT_OUT = {"tkinter", "turtle", "turtledemo", "idlelib", "test", "lib2to3", "ensurepip", "venv", "pydoc_data",
                   "__phello__", "_tkinter", "antigravity", "this", "msilib", "_msi", "winreg", "winsound", "_winapi",
                   "nt", "_overlapped", "msvcrt", "_wmi"}


def target_triple() -> str:
    """Tauri's name for this platform (its `externalBin` files end in it)."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    if sys.platform == "darwin":
        return f"{machine}-apple-darwin"
    if sys.platform == "win32":
        return f"{machine}-pc-windows-msvc"
    libc = "musl" if "musl" in (platform.libc_ver()[0] or "").lower() else "gnu"
    return f"{machine}-unknown-linux-{libc}"


def stdlib_modules() -> list[str]:
    names = []
    for name in sorted(sys.stdlib_module_names):
        if name in STDLIB_LEFT_OUT or name.startswith("_test"):
            continue
        try:
            if importlib.util.find_spec(name) is None:  # only what this platform has
                continue
        except (ImportError, ValueError):
            continue
        names.append(name)
    return names


def pyinstaller_args(name: str, dist: Path, work: Path) -> list[str]:
    args = ["--noconfirm", "--onedir", "--name", name, "--distpath", str(dist), "--workpath", str(work),
            "--specpath", str(work), "--log-level", "WARN", "--paths", str(ROOT)]
    # Modules as plain .pyc files beside the executable, not in the zlib-compressed PYZ archive: imports skip the
    # decompression (measured: initialize ~40 ms sooner, +18 MiB; bench/RESULTS.md "The built sidecar").
    args += ["--debug", "noarchive"]
    for package in ("sidecar", "hooks", "ipc"):
        args += ["--collect-submodules", package, "--collect-data", package]
    # Imported by name at run time (ipc/lazy_package.py, anyio's backends, tracing only when on), so PyInstaller's
    # analysis cannot see them.
    for package in ("jsonrpcserver", "anyio", "opentelemetry"):
        args += ["--collect-submodules", package]
    args += ["--collect-all", "claude_agent_sdk", "--copy-metadata", "claude-agent-sdk"]
    # The embedding model's two files (hooks/memory/embedder.py reads them; the package itself is never imported).
    args += ["--collect-data", "wordllama", "--copy-metadata", "wordllama"]
    # Nothing at run time needs them, and their runtime hooks import pkg_resources at every launch (~150 ms).
    excluded = ["setuptools", "pkg_resources", "distutils", "pip"]
    # The build venv's test tools, reached through plugin modules (anyio's pytest plugin): never used by the sidecar.
    excluded += ["pytest", "_pytest", "hypothesis", "mypy", "pygments", "ast_serialize"]
    # OTLP over gRPC is the tracing-grpc extra, not part of the binary (grpcio alone is ~10 MB); OTLP/HTTP is.
    excluded += ["grpc", "opentelemetry.exporter.otlp.proto.grpc"]
    for module in excluded:
        args += ["--exclude-module", module]
    for module in stdlib_modules():
        args += ["--hidden-import", module]
    args.append(str(ROOT / "bundle" / "entry.py"))
    return args


def build(target: str, dist: Path) -> Path:
    import PyInstaller.__main__

    name = f"orion-sidecar-{target}"
    work = ROOT / "build" / "pyinstaller"
    started = time.monotonic()
    PyInstaller.__main__.run(pyinstaller_args(name, dist, work))
    out = dist / name
    exe = out / name
    bundled = next(out.rglob("claude_agent_sdk/_bundled/claude"), None)
    if bundled is None:
        raise SystemExit("build: the Claude Code CLI is missing from the bundle")
    # A data file keeps its bytes, not always its mode: the CLI, Orion's shell prefix the CLI runs every command
    # through and its shell wrapper (sidecar/shell_isolation.py), must stay executable.
    scripts = ("shell_prefix.sh", "shell_wrapper.sh", "orion-bash.sh", "orion-zsh.sh")
    for program in (bundled, *(p for name in scripts for p in out.rglob(f"sidecar/{name}"))):
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"built {exe} in {time.monotonic() - started:.0f} s: {size / 2**20:.0f} MiB, "
          f"of which the CLI {bundled.stat().st_size / 2**20:.0f} MiB", file=sys.stderr)
    return exe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=target_triple(), help="target triple in the name; only this machine's can be built (the default)")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the build goes (default: dist/)")
    args = parser.parse_args()
    host = target_triple()
    if args.target != host:
        # PyInstaller freezes the interpreter it runs in: a --target only renames the host's binary, which a desktop
        # app would then ship for a platform it cannot run on.
        parser.exit(2, f"build: cannot build for {args.target} on this machine ({host}): PyInstaller builds only "
                       f"for the platform it runs on; build on that platform\n")
    exe = build(args.target, args.dist.resolve())
    # The smallest proof it runs: the executable answers initialize.
    answer = subprocess.run([str(exe)], input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
                            capture_output=True, timeout=60, env={**os.environ, "ORION_PREIMPORT": "0"})
    if b'"result"' not in answer.stdout:
        raise SystemExit(f"build: the executable did not answer initialize: {answer.stderr.decode(errors='replace')[-2000:]}")
    print(exe)


if __name__ == "__main__":
    main()
