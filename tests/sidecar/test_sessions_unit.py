"""SessionManager without a CLI: prompts racing session/end or a cancel, ending when the interrupt fails, a cancelled
session/new."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from hooks.types import AggregateResult, SessionContext
from ipc.errors import SessionBusy, SessionNotFound
from sidecar.sessions import (AFTER_TURN_EVENTS, Session, SessionManager, SessionSettings, cli_trusts_workspace,
                              project_rules_for_flags)



class FakeRunner:
    def __init__(self) -> None:
        self.fired: list[str] = []
        self.closed = False
        self.entered_end = anyio.Event()
        self.release_end = anyio.Event()
        self.release_end.set()

    async def fire(self, event: str, payload: dict[str, Any], session: Any, **_: Any) -> AggregateResult:
        self.fired.append(event)
        if event == "SessionEnd":
            self.entered_end.set()
            await self.release_end.wait()
        return AggregateResult(event=event)

    async def aclose(self) -> None:
        self.closed = True


class FakeAgent:
    def __init__(self, cancel_error: Exception | None = None) -> None:
        self.prompts: list[str] = []
        self.cancel_error = cancel_error
        self.closed = False

    async def prompt(self, text: str) -> Any:
        self.prompts.append(text)
        raise AssertionError("a prompt reached the agent of an ending session")

    async def cancel(self) -> bool:
        if self.cancel_error is not None:
            raise self.cancel_error
        return True

    async def close(self) -> None:
        self.closed = True


def make_manager(tmp_path: Path) -> SessionManager:
    async def notify(event: str, params: dict[str, Any]) -> None:
        pass

    async def request(method: str, params: dict[str, Any], timeout: float) -> Any:
        raise AssertionError("no frontend requests expected")

    return SessionManager(SessionSettings(data_dir=tmp_path), notify, request)


def add_session(manager: SessionManager, tmp_path: Path, agent: FakeAgent, runner: FakeRunner, sid: str = "s1") -> Session:
    session = Session(
        session_id=sid, project_dir=tmp_path, vault_dir=None, model="m",
        context=SessionContext(session_id=sid, project_dir=tmp_path, data_dir=tmp_path),
        runner=runner, agent=agent, created_at="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
    )
    manager._sessions[sid] = session
    return session


@pytest.mark.asyncio
async def test_a_prompt_while_session_end_runs_is_refused_and_the_session_stays_ended(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    runner, agent = FakeRunner(), FakeAgent()
    runner.release_end = anyio.Event()
    add_session(manager, tmp_path, agent, runner)

    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.end, "s1")
        await runner.entered_end.wait()  # SessionEnd hooks are running; the session is not closed yet
        with pytest.raises(SessionNotFound) as caught:
            await manager.prompt("s1", "one more thing")
        assert caught.value.data["state"] == "ended"
        runner.release_end.set()

    assert agent.prompts == []
    assert [s["state"] for s in manager.list()] == ["ended"]
    assert runner.fired == ["SessionEnd"]


@pytest.mark.asyncio
async def test_end_goes_on_when_interrupting_the_running_turn_fails(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    runner, agent = FakeRunner(), FakeAgent(cancel_error=RuntimeError("CLI gone"))
    session = add_session(manager, tmp_path, agent, runner)
    session.state = "running"

    assert await manager.end("s1") == 0

    assert agent.closed and runner.closed
    assert runner.fired == ["SessionEnd"]
    assert manager.live_sessions() == []
    assert [s["state"] for s in manager.list()] == ["ended"]


@pytest.mark.asyncio
async def test_a_cancelled_session_new_closes_its_hook_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sidecar.agent
    import sidecar.sdk_env
    from hooks.runner import HookRunner

    starting = anyio.Event()
    closed: list[HookRunner] = []
    real_aclose = HookRunner.aclose

    async def start_forever(self: Any, on_spawn: Any = None) -> None:
        starting.set()
        await anyio.sleep_forever()

    async def recording_aclose(self: HookRunner) -> None:
        closed.append(self)
        await real_aclose(self)

    monkeypatch.setattr(sidecar.sdk_env, "build_model_env", lambda model, data_dir, sid, **_: ({}, None, None))
    monkeypatch.setattr(sidecar.agent.AgentSession, "start", start_forever)
    monkeypatch.setattr(HookRunner, "aclose", recording_aclose)
    project = tmp_path / "project"
    project.mkdir()
    manager = make_manager(tmp_path)

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(manager.new, project_dir=str(project), session_id="s2"))
        with anyio.fail_after(30):
            await starting.wait()
        tg.cancel_scope.cancel()  # as $/cancelRequest or the shutdown's cancel of in-flight calls does

    assert len(closed) == 1
    assert manager.list() == [] and manager._starting == set()


@pytest.mark.asyncio
async def test_a_session_whose_agent_cannot_start_still_gets_session_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sidecar.agent
    import sidecar.sdk_env
    from hooks.runner import HookRunner
    from ipc.errors import ModelUnavailable

    fired: list[str] = []
    real_fire = HookRunner.fire

    async def recording_fire(self: HookRunner, event: str, payload: dict[str, Any], session: Any, **kw: Any) -> Any:
        fired.append(event)
        return await real_fire(self, event, payload, session, **kw)

    async def start_fails(self: Any, on_spawn: Any = None) -> None:
        raise RuntimeError("the CLI binary is missing")

    monkeypatch.setattr(sidecar.sdk_env, "build_model_env", lambda model, data_dir, sid, **_: ({}, None, None))
    monkeypatch.setattr(sidecar.agent.AgentSession, "start", start_fails)
    monkeypatch.setattr(HookRunner, "fire", recording_fire)
    project = tmp_path / "project"
    project.mkdir()
    manager = make_manager(tmp_path)

    with anyio.fail_after(30), pytest.raises(ModelUnavailable) as refused:
        await manager.new(project_dir=str(project), session_id="s3")

    assert "the CLI binary is missing" in refused.value.message
    assert fired == ["SessionStart", "SessionEnd"]
    assert manager.list() == []


def test_the_session_end_budget_honours_claude_codes_variable_below_orions_own() -> None:
    from sidecar.methods._services import session_end_budget_s

    assert session_end_budget_s({}) == 1.5
    assert session_end_budget_s({"CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "15000"}) == 15.0
    assert session_end_budget_s({"CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "15000", "ORION_SESSION_END_BUDGET": "3"}) == 3.0
    assert session_end_budget_s({"ORION_SESSION_END_BUDGET": "soon", "CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "-1"}) == 1.5


@pytest.mark.asyncio
async def test_an_ended_session_is_let_go_and_still_listed(tmp_path: Path) -> None:
    """What the manager remembers of an ended session is what session/list shows: the session itself (its hook set,
    runner, agent and context) can be collected (before, the last 256 were kept whole: ~60 KB each)."""
    import gc
    import weakref

    manager = make_manager(tmp_path)
    runner = FakeRunner()
    add_session(manager, tmp_path, FakeAgent(), runner)
    gone = weakref.ref(runner)  # (a Session has slots and no weak references: its runner stands for it)
    await manager.end("s1")
    assert runner.closed
    del runner
    gc.collect()
    assert gone() is None
    assert [(i["sessionId"], i["state"]) for i in manager.list()] == [("s1", "ended")]
    with pytest.raises(SessionNotFound):
        manager.get("s1")


class TurnResult:
    def __init__(self, stop_reason: str) -> None:
        self.stop_reason, self.is_error, self.result_text = stop_reason, False, ""

    def to_dict(self) -> dict[str, Any]:
        return {"stopReason": self.stop_reason}


class CancellableAgent:
    """An agent whose first turn runs until it is interrupted and then winds down until the test lets it end."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.started = anyio.Event()
        self.interrupted = anyio.Event()
        self.wound_down = anyio.Event()
        self.config = type("Config", (), {"hook_events": AFTER_TURN_EVENTS})()  # nothing left for the sidecar to fire

    async def prompt(self, text: str, blocks: Any = None) -> TurnResult:
        self.prompts.append(text)
        if len(self.prompts) > 1:
            return TurnResult("end_turn")
        self.started.set()
        await self.interrupted.wait()
        await self.wound_down.wait()
        return TurnResult("cancelled")

    async def cancel(self) -> bool:
        self.interrupted.set()
        return True


@pytest.mark.asyncio
async def test_prompts_sent_while_a_turn_runs_wait_in_order_and_a_cancel_takes_those_before_it(tmp_path: Path) -> None:
    """ACP's prompt queueing: a prompt sent while a turn runs waits for it instead of being refused; a cancel cancels
    the running turn and every prompt that arrived before the cancel (they never reach the agent); a prompt sent right
    after the cancel, before the cancelled turn has answered (acp-client does this), runs once it has."""
    manager = make_manager(tmp_path)
    runner, agent = FakeRunner(), CancellableAgent()
    runner.hookset = None  # type: ignore[attr-defined]
    add_session(manager, tmp_path, agent, runner)  # type: ignore[arg-type]
    answers: dict[str, Any] = {}

    async def ask(name: str, text: str) -> None:
        answers[name] = await manager.prompt("s1", text)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "cancelled", "wait a while")
            await agent.started.wait()
            tg.start_soon(ask, "queued", "too early")
            await anyio.wait_all_tasks_blocked()
            assert "queued" not in answers  # waiting, not refused
            assert await manager.cancel("s1")
            tg.start_soon(ask, "next", "and now?")
            await anyio.wait_all_tasks_blocked()
            assert agent.prompts == ["wait a while"] and "next" not in answers
            assert answers["queued"]["stopReason"] == "cancelled"  # cancelled while it waited
            agent.wound_down.set()
    assert answers["cancelled"] == {"stopReason": "cancelled"} and answers["next"] == {"stopReason": "end_turn"}
    assert agent.prompts == ["wait a while", "and now?"]


class HeldAgent:
    """Each turn runs until the test releases it; records the order turns ran in."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.release = anyio.Event()
        self.config = type("Config", (), {"hook_events": AFTER_TURN_EVENTS})()

    async def prompt(self, text: str, blocks: Any = None) -> TurnResult:
        self.prompts.append(text)
        await self.release.wait()
        return TurnResult("end_turn")

    async def cancel(self) -> bool:
        return True


@pytest.mark.asyncio
async def test_waiting_prompts_run_in_arrival_order_and_the_queue_is_bounded(tmp_path: Path) -> None:
    from sidecar.sessions import PROMPT_QUEUE_LIMIT

    manager = make_manager(tmp_path)
    runner, agent = FakeRunner(), HeldAgent()
    runner.hookset = None  # type: ignore[attr-defined]
    add_session(manager, tmp_path, agent, runner)  # type: ignore[arg-type]
    done: list[str] = []

    async def ask(text: str) -> None:
        await manager.prompt("s1", text)
        done.append(text)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "first")
            await anyio.wait_all_tasks_blocked()
            for i in range(PROMPT_QUEUE_LIMIT):
                tg.start_soon(ask, f"waiting-{i}")
                await anyio.wait_all_tasks_blocked()
            with pytest.raises(SessionBusy) as full:
                await manager.prompt("s1", "one too many")
            assert full.value.data["limit"] == PROMPT_QUEUE_LIMIT
            assert agent.prompts == ["first"]
            agent.release.set()
    assert agent.prompts == done == ["first", *(f"waiting-{i}" for i in range(PROMPT_QUEUE_LIMIT))]


def test_a_trusted_projects_rules_go_to_the_flag_settings_only_where_the_cli_has_not_trusted_it(tmp_path) -> None:
    project, config = tmp_path / "work" / "app", tmp_path / "config"
    (project / ".claude").mkdir(parents=True)
    config.mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(npm test)", 7], "deny": ["Read(./secrets/**)"], "defaultMode": "acceptEdits"}}))
    (project / ".claude" / "settings.local.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(npm test)", "Bash(make)"], "ask": ["Bash(git push:*)"]}}))
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    # Only rules, only strings, each once; the local file only when the session reads it; no defaultMode.
    assert project_rules_for_flags(config, env, project, ["user", "project", "local"]) == {
        "allow": ["Bash(npm test)", "Bash(make)"], "ask": ["Bash(git push:*)"], "deny": ["Read(./secrets/**)"]}
    assert project_rules_for_flags(config, env, project, ["user", "project"]) == {
        "allow": ["Bash(npm test)"], "deny": ["Read(./secrets/**)"]}
    # The user's CLI trusted the project, or a folder above it: the CLI applies the rules itself.
    (config / ".claude.json").write_text(json.dumps({"projects": {str(project.parent): {"hasTrustDialogAccepted": True}}}))
    assert cli_trusts_workspace(config, env, project)
    assert project_rules_for_flags(config, env, project, ["user", "project", "local"]) == {}
    # Without CLAUDE_CONFIG_DIR the CLI's state file is ~/.claude.json.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": False}}}))
    assert not cli_trusts_workspace(home / ".claude", {"HOME": str(home)}, project)
