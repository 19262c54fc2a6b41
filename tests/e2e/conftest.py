"""End-to-end harness: a project fixture copied to tmp, the real `python -m sidecar` launched through frontend_stub, every event collected, permission requests answered by a policy, and the scripted model's request log."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from frontend_stub.client import Event, SidecarClient, default_sidecar_argv

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent.parent
PROJECTS = E2E_DIR / "projects"
SCENARIOS = E2E_DIR / "scenarios"

# A permission policy gets the request's params (camelCase, as on the wire) and returns an optionId,
# or "cancelled" to dismiss the request.
PermissionPolicy = Callable[[dict[str, Any]], Awaitable[str]]

EVENT_WAIT_S = 20.0
PROMPT_TIMEOUT_S = 60.0


def scenario_model(name: str) -> str:
    """The session model for one of tests/e2e/scenarios/<name>.yaml."""
    path = SCENARIOS / f"{name}.yaml"
    assert path.is_file(), path
    return f"scripted:{path}"


@contextmanager
def standalone_model(scenario: Path, log: Path) -> Iterator[str]:
    """`python -m sidecar.scripted_model` serving `scenario` on its own, as a Messages API gateway would (every
    request appended to `log`): its URL. Stopped on the way out."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "sidecar.scripted_model", str(scenario), "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
                            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)), start_new_session=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def copy_project(name: str, dest_root: Path) -> Path:
    """Copy tests/e2e/projects/<name> to dest_root/<name>; `@PYTHON@` in settings files becomes this interpreter."""
    dest = dest_root / name
    shutil.copytree(PROJECTS / name, dest)
    for settings in (dest / ".claude").glob("settings*.json"):
        settings.write_text(settings.read_text().replace("@PYTHON@", sys.executable))
    return dest


def fixed_policy(option_id: str) -> PermissionPolicy:
    async def answer(_params: dict[str, Any]) -> str:
        return option_id

    return answer


def queued_policy(*option_ids: str) -> PermissionPolicy:
    """Answers the requests in arrival order; a request beyond the queue is rejected (and still recorded)."""
    queue = list(option_ids)

    async def answer(_params: dict[str, Any]) -> str:
        return queue.pop(0) if queue else "reject_once"

    return answer


@dataclass(slots=True)
class E2ESidecar:
    """A running sidecar with everything a test observes: events, permission requests, the model's request log."""

    client: SidecarClient
    project: Path
    log_dir: Path
    events: list[Event] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    # ------------------------------------------------------------------ calls

    async def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        return await self.client.request(method, params or {}, timeout=timeout)

    async def trust(self, project: Path | None = None) -> None:
        result = await self.request("hooks/trust", {"projectDir": str(project or self.project)})
        assert result["trusted"] is True

    async def new_session(self, scenario: str, **params: Any) -> dict[str, Any]:
        body = {"projectDir": str(self.project), "model": scenario_model(scenario), **params}
        return await self.request("session/new", body, timeout=60.0)

    async def prompt(self, session_id: str, text: str, timeout: float = PROMPT_TIMEOUT_S) -> dict[str, Any]:
        return await self.request("session/prompt", {"sessionId": session_id, "prompt": text}, timeout=timeout)

    async def end(self, session_id: str, reason: str = "other") -> dict[str, Any]:
        return await self.request("session/end", {"sessionId": session_id, "reason": reason})

    # ------------------------------------------------------------------ events

    def _collect(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_event(self, predicate: Callable[[Event], bool], timeout: float = EVENT_WAIT_S) -> Event:
        """The first collected event (from the start of the run) that satisfies `predicate`, waiting for it if need be."""
        seen = 0
        with anyio.fail_after(timeout):
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                await self._changed.wait()

    def named(self, name: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [e.params for e in self.events
                if e.name == name and (session_id is None or e.params.get("sessionId") == session_id)]

    def updates(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        found = [p["update"] for p in self.named("session/update", session_id)]
        return [u for u in found if kind is None or u.get("sessionUpdate") == kind]

    # ------------------------------------------------------------------ what the model was sent

    def model_requests(self, scenario: str, *, main_only: bool = True) -> list[dict[str, Any]]:
        """Every request the scripted server for `scenario` answered, oldest first (RequestRecord as JSON)."""
        path = self.log_dir / f"{scenario}.jsonl"
        if not path.exists():
            return []
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in records if r["has_tools"] or not main_only]

    # ------------------------------------------------------------------ the project's hook script

    def hook_calls(self, event: str | None = None) -> list[dict[str, Any]]:
        """Lines e2e_hook.py appended to <project>/.e2e/calls.jsonl, one per hook process run."""
        path = self.project / ".e2e" / "calls.jsonl"
        if not path.exists():
            return []
        calls = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [c for c in calls if event is None or c["event"] == event]


def request_text(record: dict[str, Any]) -> str:
    """All the text of one logged model request: system prompt and every message, tool results included."""
    return json.dumps({"system": record["body"].get("system"), "messages": record["body"].get("messages")})


def tool_results(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a logged request's last user message."""
    messages = record["body"].get("messages") or []
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if last is None or isinstance(last.get("content"), str):
        return []
    return [b for b in last["content"] if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))


@asynccontextmanager
async def open_sidecar(
    tmp_path: Path,
    project: str = "hooked",
    *,
    trust: bool = True,
    permission: PermissionPolicy | None = None,
    env: dict[str, str] | None = None,
    launcher: list[str] | None = None,
) -> AsyncIterator[E2ESidecar]:
    """Copy `project` to tmp, launch the sidecar with the test's isolated environment, collect its events.

    Permission requests are recorded and answered by `permission` (default: reject once). `launcher`: words put
    before `python -m sidecar` (tests/managed_settings.py starts it in a mount namespace of its own).
    """
    project_dir = copy_project(project, tmp_path)
    log_dir = tmp_path / "model-requests"
    child_env = dict(os.environ)
    child_env["ORION_SCRIPTED_LOG_DIR"] = str(log_dir)
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), child_env.get("PYTHONPATH")]))
    child_env.update(env or {})
    policy = permission or fixed_policy("reject_once")
    box: list[E2ESidecar] = []

    async def on_request(method: str, params: BaseModel) -> dict[str, Any]:
        assert method == "session/request_permission", method
        data = params.model_dump(by_alias=True, exclude_none=True)
        box[0].permission_requests.append(data)
        option = await policy(data)
        if option == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option}}

    argv = [*launcher, *default_sidecar_argv()] if launcher else None
    async with SidecarClient.launch(argv, env=child_env, cwd=str(REPO_ROOT), on_request=on_request) as client:
        run = E2ESidecar(client=client, project=project_dir, log_dir=log_dir)
        box.append(run)
        # Collected as they are read: once a prompt's answer is back, every event sent before it is in run.events.
        unlisten = client.listen(run._collect)
        try:
            if trust:
                await run.trust()
            yield run
        except BaseException:
            sys.stderr.write("---- sidecar stderr (tail) ----\n" + client.stderr_text()[-6000:] + "\n")
            raise
        finally:
            unlisten()


@pytest.fixture
def sidecar(tmp_path: Path) -> Callable[..., Any]:
    """`async with sidecar(project="hooked", trust=True, permission=None, env=None) as run:` inside the test body.

    An async context manager entered by the test, not an async fixture: pytest-asyncio runs fixture setup and
    teardown in different tasks, which breaks the task group that collects events (STYLE.md).
    """
    return partial(open_sidecar, tmp_path)
