"""The CLI's shield inside a session's boundary (Linux): a tiny library, preloaded into the Claude Code CLI alone,
that makes the CLI process non-dumpable (native/cli_shield.c says how).

Why: the CLI is the box's init, and the agent's commands run beside it as the same user. Without the shield any of
them can open `/proc/1/fd/0` and `/proc/1/fd/1` and write lines into the CLI's control channel as if it were the
sidecar (or into its output as if it were the CLI), read its environment, or ptrace it. With it, the kernel refuses
all of these to every process in the box (none has a capability to override it): the check is the OS's, not a
reading of what a command says.

The library is built once per machine from its source with the system's C compiler and cached under the user's
cache directory (`$XDG_CACHE_HOME/orion/native`, 0700), keyed by the source's hash; `scripts/bootstrap.sh` builds it
ahead (`python -m sidecar.cli_shield`). Without a compiler the box still holds, but without the shield: the session
says so (`sandbox.cliShielded: false`) and the log tells why, once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

log = logging.getLogger("sidecar.cli_shield")

SOURCE = Path(__file__).resolve().parent / "native" / "cli_shield.c"
_BUILD_TIMEOUT_S = 60.0
_lock = threading.Lock()
_built: dict[str, str | None] = {}
_warned = threading.Event()


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/orion/native`, else `~/.cache/orion/native`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "orion" / "native"


def _compiler(path_env: str | None) -> str | None:
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name, path=path_env)
        if found is not None:
            return found
    return None


def library(path_env: str | None = None) -> str | None:
    """The built library's path, building it on first use (blocking: run it off the event loop), or None where
    there is none to be had (not Linux, no C compiler, the build failed: logged once with the reason)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        return _unavailable(f"its source is missing ({exc.strerror})")
    digest = hashlib.sha256(source + os.uname().machine.encode()).hexdigest()[:16]
    with _lock:
        if digest in _built:
            return _built[digest]
        path = _build(source, digest, path_env)
        _built[digest] = path
        return path


def _build(source: bytes, digest: str, path_env: str | None) -> str | None:
    target = cache_dir() / f"cli-shield-{digest}.so"
    if _usable(target):
        return str(target)
    compiler = _compiler(path_env)
    if compiler is None:
        return _unavailable("no C compiler (cc, gcc or clang) on PATH to build it (scripts/bootstrap.sh installs gcc)")
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(target.parent, 0o700)
        with tempfile.TemporaryDirectory(prefix="cli-shield-", dir=target.parent) as work:
            src = os.path.join(work, "cli_shield.c")
            out = os.path.join(work, "cli_shield.so")
            with open(src, "wb") as fh:
                fh.write(source)
            done = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", out, src], capture_output=True,
                                  text=True, timeout=_BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no message"])[0]
                return _unavailable(f"{os.path.basename(compiler)} failed to build it: {first}")
            os.chmod(out, 0o600)
            os.replace(out, target)  # atomic: a sidecar starting beside this one sees the old file or the new one
    except (OSError, subprocess.SubprocessError) as exc:
        return _unavailable(f"building it failed: {exc}")
    log.info("built the CLI's shield: %s", target)
    return str(target)


def _usable(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    # Ours, a plain file, and nobody else may write it (a library loaded into the CLI).
    return info.st_uid == os.getuid() and (info.st_mode & 0o170000) == 0o100000 and not info.st_mode & 0o022


def _unavailable(why: str) -> None:
    if not _warned.is_set():
        _warned.set()
        log.warning("sessions' CLIs run without their shield (commands inside the box can reach the CLI's pipes): %s",
                    why)
    return None


if __name__ == "__main__":
    built = library(os.environ.get("PATH"))
    if built is None:
        print("the CLI's shield could not be built (see the warning above)", file=sys.stderr)
        sys.exit(1)
    print(built)
