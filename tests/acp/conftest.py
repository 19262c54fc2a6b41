"""Drive `python -m sidecar` with the official ACP Python SDK (PyPI `agent-client-protocol`) as the client.

The SDK validates everything the sidecar sends with its own models (generated from ACP's published schema): a
malformed update, request or answer fails the test. Its errors are collected, and a test can assert there were none.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
)

from tests.e2e.conftest import REPO_ROOT, copy_project, scenario_model

PermissionAnswer = Callable[[dict[str, Any]], str]


@dataclass
class RecordingClient:
    """An ACP client that keeps everything it receives: updates, extension notifications, permission requests."""

    answer: PermissionAnswer = lambda request: "reject_once"
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    extensions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    on_permission: Callable[[], Any] | None = None

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> RequestPermissionResponse:
        request = {"sessionId": session_id, "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                   "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options], **kwargs}
        self.permission_requests.append(request)
        if self.on_permission is not None:
            await self.on_permission()
        option = self.answer(request)
        if option == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(by_alias=True, exclude_none=True)))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.extensions.append((method, params))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(method)

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for sid, u in self.updates if session_id in (None, sid)]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [u for _, u in self.updates if u["sessionUpdate"] == kind]


class SdkErrors(logging.Handler):
    """Every warning or error the ACP SDK logs while a test runs (an update it could not parse, a failed handler)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def sdk_errors() -> Any:
    handler = SdkErrors()
    logger = logging.getLogger("acp")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def child_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ORION_SCRIPTED_LOG_DIR"] = str(tmp_path / "model-requests")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


@asynccontextmanager
async def acp_sidecar(client: RecordingClient, tmp_path: Path, *, events: bool | list[str] = True,
                      version: int = 1, pids: list[int] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the sidecar, `initialize` it through the SDK (opting in to Orion's events unless told not to); its pid
    goes into `pids` when given."""
    capabilities = ClientCapabilities(field_meta={"orion": {"events": events}}) if events else ClientCapabilities()
    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT)) as (conn, process):
        if pids is not None:
            pids.append(process.pid)
        init = await conn.initialize(protocol_version=version, client_capabilities=capabilities)
        yield conn, init


def project(tmp_path: Path, name: str = "hooked") -> Path:
    return copy_project(name, tmp_path)


def model(name: str) -> str:
    return scenario_model(name)
