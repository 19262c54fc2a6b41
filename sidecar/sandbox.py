"""Decides whether a session runs inside an OS boundary, and builds it (sidecar/boundary.py) or, failing that, says why not.

A session gets one boundary, set up once by the OS around the whole CLI process (bubblewrap on Linux, Seatbelt on
macOS; Windows has none): its Bash, its file tools, its MCP servers, everything they start. With the boundary on,
the CLI's own per-command sandbox is switched off (`sandbox.enabled: false` in its flag settings): the boundary
already holds every command, and the per-command one costs ~87 ms per Bash call and ~220 ms per CLI start.

Facts this relies on (Claude Code 2.1.330, checked on the bundled binary; docs/SECURITY.md "Sandbox"):

- Flag settings (`--settings`) outrank project and local settings: a project's `sandbox.enabled: true` cannot
  switch the per-command sandbox back on behind our report, nor `false` matter where it was on.
- bubblewrap needs user namespaces (or setuid) and a PID and network namespace; containers often forbid them,
  so the sidecar probes once per process with the boundary's own namespaces.
- Without a boundary (none available, or the app's `sandbox: "off"`), the CLI's own sandbox is off as well: the
  session says so, with the reason, and `required` refuses to start.
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
    """The app required a sandbox and this machine cannot give one (or the user's sandbox settings are bad); the
    message says why."""


@dataclass(slots=True, frozen=True)
class SandboxStatus:
    """What a session got: on or off, on which platform, why not, what it may never write, and the boundary."""

    enabled: bool
    platform: str
    reason: str | None = None
    denied_write_paths: tuple[str, ...] = field(default_factory=tuple)
    boundary: Any = None  # sidecar.boundary.Boundary when enabled: what AgentSession starts the CLI inside
    # Without a Linux box: the relay that keeps the model credential out of the CLI (sidecar/model_credential.py).
    model_relay: Any = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "platform": self.platform,
            "reason": self.reason,
            "deniedWritePaths": list(self.denied_write_paths),
            "cliShielded": bool(self.boundary is not None and self.boundary.shield),
        }


def platform_name() -> str:
    return {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform)


def backend_problem(path_env: str | None, platform: str | None = None) -> str | None:
    """None when a boundary can be built here with this PATH, else a sentence saying what is missing."""
    platform = platform or platform_name()
    if platform == "macos":
        return None if os.access(MACOS_SANDBOX_EXEC, os.X_OK) else f"{MACOS_SANDBOX_EXEC} is missing"
    if platform != "linux":
        return f"no OS boundary on {platform}: Orion has none there and the Claude Code CLI's sandbox does not run there"
    bwrap = shutil.which("bwrap", path=path_env)
    missing = [name for name, found in (("bubblewrap (bwrap)", bwrap), ("socat", shutil.which("socat", path=path_env)))
               if found is None]
    if missing:
        return f"{' and '.join(missing)} not found on PATH (scripts/bootstrap.sh installs them)"
    return _probe_bwrap(bwrap)  # type: ignore[arg-type]


def _probe_bwrap(bwrap: str) -> str | None:
    """Can bwrap make the boundary's namespaces here (containers often forbid it)? Cached per binary."""
    with _probe_lock:
        if bwrap in _probe_cache:
            return _probe_cache[bwrap]
        try:
            done = subprocess.run(
                [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--cap-drop", "ALL",
                 "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                timeout=_PROBE_TIMEOUT_S, check=False,
            )
            first = (done.stderr or b"").decode(errors="replace").strip().splitlines()
            problem = None if done.returncode == 0 else f"bubblewrap cannot create a sandbox here: {first[0][:200] if first else done.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"bubblewrap cannot create a sandbox here: {exc}"
        _probe_cache[bwrap] = problem
        return problem


def managed_sandbox_conflict(platform: str, files: list[Path] | None = None) -> str | None:
    """Why no boundary can be built when an organization's managed settings turn on Claude Code's own sandbox for a
    sidecar running as root: those settings outrank the flag settings that switch it off inside the boundary, so
    the CLI starts its bubblewrap inside Orion's, and a root sidecar's inner box cannot map uid 0 (measured on
    2.1.330: every Bash command failed with "bwrap: setting up uid map: Operation not permitted"). The CLI's own
    sandbox then confines the commands, with the organization's rules, as in Claude Code. None otherwise (an
    ordinary user's nested box works: docs/SECURITY.md)."""
    if platform != "linux" or os.geteuid() != 0:
        return None
    from sidecar.credentials import managed_value

    if managed_value("sandbox", "enabled", files=files) is not True:
        return None
    return ("the organization's managed Claude Code settings turn on Claude Code's own sandbox (sandbox.enabled), "
            "which outranks Orion's settings and cannot start inside Orion's boundary for a sidecar running as root; "
            "the CLI's own sandbox confines the session's commands, with the organization's rules, as in Claude Code")


def denied_write_paths(project_dir: Path, data_dirs: list[Path], user_settings: Path, cli_config_dir: Path | None) -> tuple[str, ...]:
    """Orion's own files and the project's hook machinery: what a turned agent would rewrite to outlive the session.

    The whole project `.claude/` is denied, not only its settings files: hook scripts live there and a
    rewritten script runs outside the box the next time a hook fires (the trust store would notice,
    but only after the user is asked again).
    """
    candidates = [*data_dirs, user_settings.parent, project_dir / ".claude"]
    if cli_config_dir is not None:
        candidates.append(cli_config_dir)
    seen: dict[str, None] = {}
    for path in candidates:
        seen.setdefault(str(Path(path).expanduser().resolve()), None)
    return tuple(seen)


def decide(
    mode: SandboxMode | None,
    path_env: str | None,
    deny_write: tuple[str, ...],
    *,
    project: Path | None = None,
    cli_env: dict[str, str] | None = None,
    orion_dirs: list[Path] | None = None,
    user_settings: Path | None = None,
    roots: tuple[Path, ...] = (),
) -> SandboxStatus:
    """The session's boundary: on where the platform has one (mode auto), off only when the app says so.

    Without `project` (a caller that builds no boundary), an available platform gets the CLI's own per-command
    sandbox instead, as before the boundary existed.
    """
    from sidecar import boundary as box

    platform = platform_name()
    if mode == "off":
        return SandboxStatus(False, platform, "turned off by the app (session/new sandbox: \"off\")")
    problem = backend_problem(path_env, platform) or managed_sandbox_conflict(platform)
    if problem is not None:
        if mode == "required":
            raise SandboxUnavailable(f"a sandbox is required but unavailable: {problem}")
        return SandboxStatus(False, platform, problem)
    if project is None:
        return SandboxStatus(True, platform, None, deny_write)
    env = cli_env or {}
    try:
        settings = box.load_settings(user_settings) if user_settings is not None else box.BoxSettings()
        plan = box.plan(project, env, orion_dirs=orion_dirs or [], settings=settings, roots=roots)
    except box.BoundaryError as exc:
        raise SandboxUnavailable(str(exc)) from None
    shield = ""
    if platform == "linux":
        from sidecar import cli_shield

        launcher = shutil.which("bwrap", path=path_env) or "bwrap"
        helper = shutil.which("socat", path=path_env) or "socat"
        shield = cli_shield.library(path_env) or ""
    else:
        launcher, helper = MACOS_SANDBOX_EXEC, ""
    # Reported: the places the old per-command sandbox named (less what the box lets the CLI write: its own
    # config dir), then the boundary's read-only and hidden places.
    writable = set(plan.writable)
    denied = tuple(dict.fromkeys([*(p for p in deny_write if p not in writable), *plan.denied_write_paths()]))
    return SandboxStatus(True, platform, None, denied, box.Boundary(plan, platform, launcher, helper, shield))


def cli_settings(status: SandboxStatus) -> dict[str, Any]:
    """The `sandbox` object for the CLI's flag settings."""
    if not status.enabled or status.boundary is not None:
        # Off when there is no sandbox (a user's own settings file must not switch on a half-working one behind
        # our report), and off inside the boundary: it already holds every command, at no cost per command.
        return {"enabled": False}
    return {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        "autoAllowBashIfSandboxed": False,
        # "//" is absolute in every version of the CLI's path syntax ("/x" is relative to the settings file in some).
        "filesystem": {"denyWrite": ["/" + path if path.startswith("/") else path for path in status.denied_write_paths]},
    }
