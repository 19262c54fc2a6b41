"""Shared by `orion demo` and `orion chat`: launch a sidecar, speak ACP to it through the official Python SDK (PyPI
`agent-client-protocol`), run prompts in one session, render it with SessionView."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from frontend_stub.acp_client import OrionAcpClient
from frontend_stub.client import default_sidecar_argv
from frontend_stub.session_view import SessionView
from ipc.errors import RemoteError

REPO_ROOT = Path(__file__).resolve().parents[2]
# Shipped as package data (a plain `pip install` has them); the repository's examples/ links here.
DEMO_PROJECT = Path(__file__).resolve().parents[1] / "demo_project"


def scenario_model(scenario: str | None) -> str | None:
    """`scripted:<name>` for a scenario shipped with the sidecar (the sidecar looks the name up and says if it has
    none), `scripted:<abs path>` for a file; None means: the real model (the sidecar checks that the CLI has a
    credential for it: an API key, an auth token, an apiKeyHelper, a login, a cloud provider)."""
    if scenario is None:
        return None
    path = Path(scenario)
    if not path.suffix and len(path.parts) == 1:
        return f"scripted:{scenario}"
    if not path.is_file():
        raise SystemExit(f"orion: no scenario file {path}")
    return f"scripted:{path.resolve()}"


class StubClient(OrionAcpClient):
    """The ACP client side of `orion demo` / `orion chat` (the official SDK's `Client` protocol): permission requests
    answered with a fixed option, updates and Orion's `_orion/` events rendered on the view."""

    def __init__(self, view: SessionView, option: str = "allow_once") -> None:
        self.view = view
        self.option = option

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        call = tool_call.model_dump(by_alias=True, exclude_none=True)
        reason = self.permission_reason(kwargs) or ""
        self.view.line(f"permit  ? {call.get('title')} {reason} → answering {self.option}".replace("  ", " "))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.option))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.view.show_acp_update(update.model_dump(by_alias=True, exclude_none=True))

    def on_orion_event(self, name: str, params: dict[str, Any]) -> None:
        self.view.show(name, params)


def _sidecar_argv(sidecar: str | None) -> list[str]:
    return shlex.split(sidecar) if sidecar else default_sidecar_argv()


async def run_session(
    *,
    project: Path,
    prompts: list[str],
    model: str | None,
    view: SessionView,
    env: dict[str, str] | None = None,
    sidecar: str | None = None,
    trust: bool = False,
    vault: Path | None = None,
    permission_option: str = "allow_once",
    allowed_tools: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Start one session over ACP (the official Python SDK), run `prompts` in order, end it; returns the prompt
    results as Orion reports them (`_meta.orion`: stopReason, terminalReason, numTurns, ...).

    A refused `session/new` raises its RemoteError after the sidecar has shut down.
    """
    from acp import RequestError, spawn_agent_process, text_block
    from acp.schema import ClientCapabilities

    argv = _sidecar_argv(sidecar)
    refused: RemoteError | None = None
    results: list[dict[str, Any]] = []
    client = StubClient(view, permission_option)
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env or dict(os.environ)) as (conn, _):
        await conn.initialize(protocol_version=1,
                              client_capabilities=ClientCapabilities(field_meta={"orion": {"events": True}}))
        scope = {"projectDir": str(project), **({"vaultDir": str(vault)} if vault else {})}
        listing = await conn.ext_method("orion/hooks/list", scope)
        untrusted = [h for h in listing["hooks"] if h["state"] == "untrusted"]
        if untrusted and trust:
            view.line(f"trust   ▸ {len(untrusted)} project hook(s) need trust: {', '.join(h['name'] for h in untrusted)}")
            # Trust exactly what was listed: if the hooks change in between, the sidecar refuses.
            trusted = await conn.ext_method("orion/hooks/trust", {**scope, "hash": listing["trustHash"]})
            view.line(f"trust   ▸ trusted this project's hooks (hash {trusted['hash'][:12]})")
        elif untrusted:
            view.line(f"trust   ▸ {len(untrusted)} project hook(s) are untrusted and will not run (use --trust)")
        options: dict[str, Any] = {}
        if model:
            options["model"] = model
        if vault:
            options["vaultDir"] = str(vault)
        if allowed_tools:
            options["allowedTools"] = allowed_tools
        try:
            new = await conn.new_session(cwd=str(project), mcp_servers=[], orion=options)
        except RequestError as exc:
            # Refused (no credential for the real model, a bad scenario, ...): the sidecar's message says why;
            # it is raised once the sidecar has shut down cleanly.
            refused = RemoteError(str(exc), exc.data, code=exc.code)
        else:
            info = (new.field_meta or {}).get("orion", {})
            counts = info.get("hooks", {})
            view.line(
                f"session ▸ {new.session_id} on {info.get('model')}: {counts.get('active')} active hooks, "
                f"{counts.get('untrusted')} untrusted, {counts.get('dropped')} dropped by policy"
            )
            for prompt in prompts:
                answer = await conn.prompt(session_id=new.session_id, prompt=[text_block(prompt)])
                result = {"stopReason": answer.stop_reason, **((answer.field_meta or {}).get("orion") or {})}
                view.show_result(result)
                results.append(result)
            ended = await conn.ext_method("orion/session/end", {"sessionId": new.session_id, "reason": "other"})
            view.line(f"session ▸ ended; {ended['hooksRan']} SessionEnd hook(s) ran")
        view.close()
    if refused is not None:
        raise refused
    return results
