"""The per-app services method handlers share (the session manager), created on first use so start-up stays light."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sidecar.app import SidecarApp

if TYPE_CHECKING:
    from sidecar.sessions import SessionManager


def session_manager(app: SidecarApp) -> SessionManager:
    manager = getattr(app, "_orion_sessions", None)
    if manager is None:
        from hooks.paths import data_dir
        from sidecar.sessions import SessionManager, SessionSettings

        settings = SessionSettings(
            data_dir=data_dir(),
            permission_timeout_s=float(os.environ.get("ORION_PERMISSION_TIMEOUT", "120")),
            session_end_budget_s=float(os.environ.get("ORION_SESSION_END_BUDGET", "1.5")),
        )

        async def request(method: str, params: dict, timeout: float):
            return await app.request_frontend(method, params, timeout=timeout)

        manager = SessionManager(settings, app.notify, request)
        app._orion_sessions = manager  # type: ignore[attr-defined]
    return manager


def has_session_manager(app: SidecarApp) -> bool:
    return getattr(app, "_orion_sessions", None) is not None
