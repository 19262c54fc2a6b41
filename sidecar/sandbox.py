"""Decides whether a session's Bash runs inside the CLI's OS sandbox, and builds the CLI's `sandbox` settings for it.

Facts this relies on (Claude Code 2.1.330, checked on the bundled binary; docs/SECURITY.md "Sandbox"):

- Linux needs `bwrap` and `socat` on the CLI's PATH (it looks nowhere else unless managed settings say so);
  macOS uses Seatbelt (`/usr/bin/sandbox-exec`); other platforms have no sandbox.
- With `failIfUnavailable: false` (the CLI's default) a missing backend only prints a warning and Bash runs
  unconfined; with `true` the CLI refuses to start. We turn it on only where we found the backend, with
  `failIfUnavailable: true`, so "sandboxed" in session/new's result can never be a silent lie.
- `allowUnsandboxedCommands` defaults to true: the model may then retry any command with
  `dangerouslyDisableSandbox`. We set it false, which a project's settings cannot undo.
- `autoAllowBashIfSandboxed` defaults to false on this build; we pin false so the sandbox never approves a
  command: Bash keeps going through hooks and the user's permission flow.
- Flag settings (`--settings`) outrank project and local settings, and a `false` for `sandbox.enabled` from
  project settings is ignored when flag settings say true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SandboxMode = Literal["auto", "required", "off"]

MACOS_SANDBOX_EXEC = "/usr/bin/sandbox-exec"
_PROBE_TIMEOUT_S = 5.0

_probe_lock = threading.Lock()
_probe_cache: dict[str, str | None] = {}


class SandboxUnavailable(RuntimeError):
    """The app required a sandbox and this machine cannot give one; the message says why."""


@dataclass(slots=True, frozen=True)
class SandboxStatus:
    """What a session got: on or off, on which platform, why not, and what Bash may never write."""

    enabled: bool
    platform: str
    reason: str | None = None
    denied_write_paths: tuple[str, ...] = field(default_factory=tuple)

    def to_wire(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "platform": self.platform,
            "reason": self.reason,
            "deniedWritePaths": list(self.denied_write_paths),
        }


def platform_name() -> str:
    return {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform)


def backend_problem(path_env: str | None, platform: str | None = None) -> str | None:
    """None when the CLI can sandbox Bash here with this PATH, else a sentence saying what is missing."""
    platform = platform or platform_name()
    if platform == "macos":
        return None if os.access(MACOS_SANDBOX_EXEC, os.X_OK) else f"{MACOS_SANDBOX_EXEC} is missing"
    if platform != "linux":
        return f"the Claude Code CLI has no sandbox on {platform}"
    bwrap = shutil.which("bwrap", path=path_env)
    missing = [name for name, found in (("bubblewrap (bwrap)", bwrap), ("socat", shutil.which("socat", path=path_env)))
               if found is None]
    if missing:
        return f"{' and '.join(missing)} not found on PATH (scripts/bootstrap.sh installs them)"
    return _probe_bwrap(bwrap)  # type: ignore[arg-type]


def _probe_bwrap(bwrap: str) -> str | None:
    """Can bwrap make namespaces here (containers often forbid it)? Cached per binary: the answer does not change."""
    with _probe_lock:
        if bwrap in _probe_cache:
            return _probe_cache[bwrap]
        try:
            done = subprocess.run(
                [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--dev", "/dev", "true"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                timeout=_PROBE_TIMEOUT_S, check=False,
            )
            first = (done.stderr or b"").decode(errors="replace").strip().splitlines()
            problem = None if done.returncode == 0 else f"bubblewrap cannot create a sandbox here: {first[0][:200] if first else done.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"bubblewrap cannot create a sandbox here: {exc}"
        _probe_cache[bwrap] = problem
        return problem


def denied_write_paths(project_dir: Path, data_dirs: list[Path], user_settings: Path, cli_config_dir: Path | None) -> tuple[str, ...]:
    """Orion's own files and the project's hook machinery: what a turned agent would rewrite to outlive the session.

    The whole project `.claude/` is denied, not only its settings files: hook scripts live there and a
    rewritten script runs outside the sandbox the next time a hook fires (the trust store would notice,
    but only after the user is asked again).
    """
    candidates = [*data_dirs, user_settings.parent, project_dir / ".claude"]
    if cli_config_dir is not None:
        candidates.append(cli_config_dir)
    seen: dict[str, None] = {}
    for path in candidates:
        seen.setdefault(str(Path(path).expanduser().resolve()), None)
    return tuple(seen)


def decide(mode: SandboxMode | None, path_env: str | None, deny_write: tuple[str, ...]) -> SandboxStatus:
    """The session's sandbox: on where the platform has it (mode auto), off only when the app says so."""
    platform = platform_name()
    if mode == "off":
        return SandboxStatus(False, platform, "turned off by the app (session/new sandbox: \"off\")")
    problem = backend_problem(path_env, platform)
    if problem is not None:
        if mode == "required":
            raise SandboxUnavailable(f"a sandbox is required but unavailable: {problem}")
        return SandboxStatus(False, platform, problem)
    return SandboxStatus(True, platform, None, deny_write)


def cli_settings(status: SandboxStatus) -> dict[str, Any]:
    """The `sandbox` object for the CLI's flag settings."""
    if not status.enabled:
        # Explicit: a user's own settings file must not switch on a half-working sandbox behind our report.
        return {"enabled": False}
    return {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        "autoAllowBashIfSandboxed": False,
        # "//" is absolute in every version of the CLI's path syntax ("/x" is relative to the settings file in some).
        "filesystem": {"denyWrite": ["/" + path if path.startswith("/") else path for path in status.denied_write_paths]},
    }
