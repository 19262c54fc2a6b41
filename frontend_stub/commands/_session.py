"""Shared by `orion demo` and `orion chat`: launch a sidecar, run prompts in one session, render it with SessionView."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from frontend_stub.client import SidecarClient
from frontend_stub.session_view import SessionView
from ipc.errors import RemoteError

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"


def scenario_model(scenario: str | None) -> str | None:
    """`scripted:<abs path>` for a scenario name or file; None means: the real model (the sidecar checks that the
    CLI has a credential for it: an API key, an auth token, an apiKeyHelper, a login, a cloud provider)."""
    if scenario is None:
        return None
    path = Path(scenario)
    if not path.suffix:
        path = EXAMPLES / "scenarios" / f"{scenario}.yaml"
    if not path.is_file():
        raise SystemExit(f"orion: no scenario file {path}")
    return f"scripted:{path.resolve()}"


@dataclass(slots=True)
class PermissionPolicy:
    """How this command-line frontend answers `session/request_permission`: a fixed option, shown on the view."""

    view: SessionView
    option: str = "allow_once"

    async def __call__(self, method: str, params: Any) -> dict[str, Any]:
        p = params if isinstance(params, dict) else params.model_dump(by_alias=True)
        self.view.line(
            f"permit  ? {p.get('toolName')} {p.get('reason') or ''} → answering {self.option}".replace("  ", " ")
        )
        return {"outcome": {"outcome": "selected", "optionId": self.option}}


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
    """Start one session, run `prompts` in order, end it; returns the prompt results.

    A refused `session/new` raises its RemoteError after the sidecar has shut down.
    """
    argv = shlex.split(sidecar) if sidecar else None
    refused: RemoteError | None = None
    policy = PermissionPolicy(view, permission_option)
    results: list[dict[str, Any]] = []
    async with SidecarClient.launch(argv, env=env or dict(os.environ), on_request=policy) as client:
        events = client.events()
        async with anyio.create_task_group() as tg:

            async def show() -> None:
                async for event in events:
                    params = event.params if isinstance(event.params, dict) else {}
                    view.show(event.name, params)

            tg.start_soon(show)
            scope = {"projectDir": str(project), **({"vaultDir": str(vault)} if vault else {})}
            listing = await client.request("hooks/list", scope)
            untrusted = [h for h in listing["hooks"] if h["state"] == "untrusted"]
            if untrusted and trust:
                view.line(f"trust   ▸ {len(untrusted)} project hook(s) need trust: {', '.join(h['name'] for h in untrusted)}")
                # Trust exactly what was listed: if the hooks change in between, the sidecar refuses.
                trusted = await client.request("hooks/trust", {"projectDir": str(project), "hash": listing["trustHash"]})
                view.line(f"trust   ▸ trusted this project's hooks (hash {trusted['hash'][:12]})")
            elif untrusted:
                view.line(f"trust   ▸ {len(untrusted)} project hook(s) are untrusted and will not run (use --trust)")
            params: dict[str, Any] = {"projectDir": str(project)}
            if model:
                params["model"] = model
            if vault:
                params["vaultDir"] = str(vault)
            if allowed_tools:
                params["allowedTools"] = allowed_tools
            try:
                new = await client.request("session/new", params, timeout=120)
            except RemoteError as exc:
                # Refused (no credential for the real model, a bad scenario, ...): the sidecar's message says why;
                # it is raised once the sidecar has shut down cleanly.
                refused = exc
            else:
                counts = new["hooks"]
                view.line(
                    f"session ▸ {new['sessionId']} on {new['model']}: {counts['active']} active hooks, "
                    f"{counts['untrusted']} untrusted, {counts['dropped']} dropped by policy"
                )
                for prompt in prompts:
                    results.append(await client.request(
                        "session/prompt", {"sessionId": new["sessionId"], "prompt": prompt}, timeout=600))
                ended = await client.request("session/end", {"sessionId": new["sessionId"], "reason": "other"})
                view.line(f"session ▸ ended; {ended['hooksRan']} SessionEnd hook(s) ran")
            tg.cancel_scope.cancel()
        view.close()
    if refused is not None:
        raise refused
    return results
