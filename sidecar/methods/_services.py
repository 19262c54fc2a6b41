"""The per-app services method handlers share (the session manager), created on first use so start-up stays light."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sidecar.app import SidecarApp

if TYPE_CHECKING:
    from sidecar.sessions import SessionManager


async def reload_hooks(app: SidecarApp, project: Any = None) -> None:
    """Live sessions pick up a change to what their hooks are at once: those of `project`, or every one (None: the
    user's own settings or plugins, which every project's sessions have)."""
    import anyio.to_thread

    for session in session_manager(app).live_sessions():
        if project is None or session.project_dir == project:
            await anyio.to_thread.run_sync(session.runner.reload)


def session_manager(app: SidecarApp) -> SessionManager:
    manager = getattr(app, "_orion_sessions", None)
    if manager is None:
        from hooks.paths import data_dir
        from sidecar.sessions import SessionManager, SessionSettings

        settings = SessionSettings(
            data_dir=data_dir(),
            permission_timeout_s=float(os.environ.get("ORION_PERMISSION_TIMEOUT", "120")),
            session_end_budget_s=session_end_budget_s(os.environ),
        )

        async def request(method: str, params: dict, timeout: float):
            return await app.request_frontend(method, params, timeout=timeout)

        manager = SessionManager(settings, app.notify, request)
        app._orion_sessions = manager  # type: ignore[attr-defined]
    return manager


def session_end_budget_s(environ: dict[str, str] | os._Environ[str]) -> float:
    """How long SessionEnd hooks may take: ORION_SESSION_END_BUDGET (seconds), else Claude Code's own
    CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS, as a user who raised it for their hooks set it, else 1.5 s (the CLI's
    default). A value that is not a positive number is ignored."""
    for name, scale in (("ORION_SESSION_END_BUDGET", 1.0), ("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", 1000.0)):
        try:
            value = float(environ.get(name, "")) / scale
        except ValueError:
            continue
        if value > 0:
            return value
    return 1.5


def has_session_manager(app: SidecarApp) -> bool:
    return getattr(app, "_orion_sessions", None) is not None
