"""Broken hooks under every executor that applies, through the real HookRunner: the agent goes on (or, fail-closed, is stopped), the result says what happened, nothing is left running.

Each case runs twice at once: a fail-open copy followed by a healthy witness
hook (which must still run and decide), and a `failClosed` copy (which must
deny when the hook failed). Afterwards the same runner must still run a
healthy hook of that type: a fault may cost one execution, never the executor.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from hooks.executors.command import CommandExecutor
from hooks.executors.http import HttpExecutor
from hooks.executors.python import PythonExecutor
from hooks.hookset import load_hookset
from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.trust import TrustStore
from hooks.types import AggregateResult, SessionContext
from tests.hooks.support import settings, write_json
from tests.waiting import GONE_S, pids_alive, until

FAULTS = Path(__file__).resolve().parent / "faulty_hooks" / "faults.py"
GRACE_S = 0.3  # kill grace for the tests' executors: the escalation is exercised, not waited out
HANG_TIMEOUT_S = 1.0
PRE_BASH = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
FAILED = ("error", "timeout")
# A command hook's daemon (its own session) is a helper started on purpose: the session's until it ends.
HELPERS = {"daemon", "daemon_keeps_pipes"}


@dataclass(frozen=True)
class Fault:
    kind: str  # hook type: command | python | callable | http
    mode: str
    outcome: str  # expected outcome of the faulty execution
    error: str | None = None  # a piece of the error the result must carry
    timeout: float = 5.0
    again: tuple[str, str] | None = None  # (outcome, error or stderr piece) when the same hook fires a second time
    outcome_open: str | None = None  # the outcome when the hook is fail-open, where it differs

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.mode}"


CASES = [
    # /bin/sh command hooks
    Fault("command", "hang", "timeout", "timed out after 1 s; process group killed", HANG_TIMEOUT_S),
    Fault("command", "hang_with_stubborn_child", "timeout", "process group killed", HANG_TIMEOUT_S),
    Fault("command", "crash", "error", "RuntimeError: hook crashed on purpose"),
    Fault("command", "signal", "error", "hook killed by signal 9"),
    # Claude Code reads `{` that does not parse as plain output; a fail-closed gate that does it has failed
    Fault("command", "invalid_json", "error", "hook printed invalid JSON on stdout", outcome_open="success"),
    Fault("command", "huge_json", "error", "bytes dropped"),
    Fault("command", "binary", "success"),
    Fault("command", "close_stdin", "success"),
    # a script gone since trust is a change: the hook is not run again (trust binds content), and says why
    Fault("command", "delete_self", "success", again=("error", "changed since the project was trusted")),
    Fault("command", "daemon", "success"),
    Fault("command", "daemon_keeps_pipes", "success"),
    Fault("command", "eat_memory", "timeout", "timed out after 1.5 s", 1.5),
    # python hooks in the warm launcher
    Fault("python", "hang", "timeout", "python launcher killed", HANG_TIMEOUT_S),
    Fault("python", "hang_with_stubborn_child", "timeout", "python launcher killed", HANG_TIMEOUT_S),
    Fault("python", "crash", "error", "RuntimeError: hook crashed on purpose"),
    Fault("python", "hard_exit", "error", "python launcher exited (code 3)"),
    Fault("python", "signal", "error", "python launcher exited (code -9)"),
    Fault("python", "invalid_json", "error", "hook printed invalid JSON on stdout"),
    Fault("python", "huge_json", "error", "reply"),
    Fault("python", "binary", "success"),
    Fault("python", "close_stdin", "success"),
    Fault("python", "delete_self", "success", again=("error", "changed since the project was trusted")),
    Fault("python", "daemon", "success"),
    Fault("python", "eat_memory", "timeout", "python launcher killed", 1.5),
    # programmatic (in-process) hooks
    Fault("callable", "raise", "error", "ValueError: programmatic hook raised"),
    Fault("callable", "never_return", "timeout", "timed out after 1 s", HANG_TIMEOUT_S),
    Fault("callable", "block_loop", "timeout", "blocked the event loop for", 0.3),
    # http hooks against a local server
    Fault("http", "hang", "timeout", "no complete reply", HANG_TIMEOUT_S),
    Fault("http", "crash", "error", "POST http://127.0.0.1"),
    Fault("http", "invalid_json", "error", "hook printed invalid JSON"),
    Fault("http", "huge_json", "error", "larger than the 1048576-byte cap"),
    # Claude Code takes only JSON from an http hook: bytes that are not are a hook error (conformance case
    # http_hook_plain_body)
    Fault("http", "binary", "error", "HTTP hook must return JSON"),
]


# --------------------------------------------------------------------------- the broken hooks


def _python_module(path: Path, mode: str) -> Path:
    if mode == "delete_self":
        body = "def run(payload):\n    os.unlink(__file__)\n    return {}\n"
    else:
        body = f"def run(payload):\n    return faults.act({mode!r}, os.environ['CLAUDE_CODE_SESSION_ID'], python_hook=True)\n"
    path.write_text(f"import os, sys\nsys.path.insert(0, {str(FAULTS.parent)!r})\nimport faults\n\n" + body)
    return path


def _callable(mode: str):
    async def broken(payload: dict[str, Any], ctx: Any) -> Any:
        if mode == "raise":
            raise ValueError("programmatic hook raised")
        if mode == "never_return":
            await asyncio.Event().wait()
        if mode == "block_loop":
            await asyncio.sleep(0)
            import time

            time.sleep(0.6)  # the bug under test: synchronous sleep on the event loop
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
        raise AssertionError(mode)

    return broken


class FaultServer:
    """An HTTP hook endpoint on 127.0.0.1 that misbehaves per path."""

    def __init__(self) -> None:
        self.server: asyncio.AbstractServer | None = None
        self.release = asyncio.Event()
        self.port = 0

    async def __aenter__(self) -> FaultServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            mode = head.split(b" ")[1].decode().strip("/")
            if mode == "hang":
                await self.release.wait()
            elif mode == "crash":
                writer.transport.abort()
                return
            elif mode == "invalid_json":
                await self._reply(writer, b'{"hookSpecificOutput": ')
            elif mode == "huge_json":
                await self._reply(writer, b'{"systemMessage": "' + b"x" * (50 * 1024 * 1024) + b'"}')
            elif mode == "binary":
                await self._reply(writer, b"\x00\xff\xfe" + bytes(range(256)) * 64)
            else:
                await self._reply(writer, b"{}")
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the executor hung up on us: that is what several cases test
        finally:
            writer.close()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, body: bytes) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        writer.write(body)
        await writer.drain()


# --------------------------------------------------------------------------- one setup per (case, fail-closed?)


@dataclass
class Setup:
    project: Path
    session: SessionContext
    runner: HookRunner
    launchers: set[int]

    @property
    def marker(self) -> str:
        return self.session.session_id


def _entry(case: Fault, project: Path, server: FaultServer | None, fail_closed: bool) -> dict[str, Any]:
    common = {"name": "faulty", "timeout": case.timeout, "failClosed": fail_closed}
    if case.kind == "command":
        copy = project / ".claude" / "hooks" / "faults.py"
        shutil.copy(FAULTS, copy)
        command = f'exec {sys.executable} {copy} {case.mode} "$CLAUDE_CODE_SESSION_ID"'
        if case.mode == "eat_memory":
            command = f"ulimit -v 700000; {command}"  # the hook caps itself (the fault script lowers it further)
        return {"type": "command", "command": command, **common}
    if case.kind == "python":
        return {"type": "python", "script": str(_python_module(project / ".claude" / "hooks" / "faulty.py", case.mode)), **common}
    assert server is not None
    return {"type": "http", "url": server.url(case.mode), **common}


def _healthy_entry(case: Fault, project: Path, server: FaultServer | None) -> dict[str, Any]:
    if case.kind == "command":
        return {"type": "command", "command": "echo '{}'", "name": "healthy"}
    if case.kind == "python":
        path = project / ".claude" / "hooks" / "healthy.py"
        path.write_text("def run(payload):\n    return {'systemMessage': 'fine'}\n")
        return {"type": "python", "script": str(path), "name": "healthy"}
    if case.kind == "http":
        assert server is not None
        return {"type": "http", "url": server.url("ok"), "name": "healthy"}
    raise AssertionError(case.kind)


def _registry(case: Fault, fail_closed: bool, witnessed: list[str]) -> HookRegistry:
    reg = HookRegistry()
    if case.kind == "callable":
        reg.register("PreToolUse", _callable(case.mode), name="faulty", timeout=case.timeout, fail_closed=fail_closed)

        async def healthy(payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
            return {"systemMessage": "fine"}

        reg.register("PostToolUse", healthy, name="healthy")

    async def witness(payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
        witnessed.append(ctx.session_id)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    reg.register("PreToolUse", witness, name="witness")
    return reg


@asynccontextmanager
async def setup(case: Fault, root: Path, server: FaultServer | None, fail_closed: bool, witnessed: list[str]):
    project = (root / ("closed" if fail_closed else "open")).resolve()
    (project / ".claude" / "hooks").mkdir(parents=True)
    data = root / "data"
    hooks: dict[str, Any] = {}
    if case.kind != "callable":
        hooks = settings("PreToolUse", _entry(case, project, server, fail_closed))["hooks"]
        hooks["PostToolUse"] = settings("PostToolUse", _healthy_entry(case, project, server))["hooks"]["PostToolUse"]
    write_json(project / ".claude" / "settings.json", {"hooks": hooks})
    TrustStore().trust(project)
    hookset = load_hookset(project, registry=_registry(case, fail_closed, witnessed))
    runner = HookRunner(hookset, data_dir=data)
    runner.executors["command"] = CommandExecutor(kill_grace_s=GRACE_S)
    runner.executors["python"] = PythonExecutor(kill_grace_s=GRACE_S)
    runner.executors["http"] = HttpExecutor()
    launchers: set[int] = set()
    if case.kind == "python":
        await runner.executors["python"].warm()  # type: ignore[attr-defined]
        launchers = {l.proc.pid for l in runner.executors["python"]._all}  # type: ignore[attr-defined]
    sid = f"fault-{case.id.replace('_', '-')}-{'closed' if fail_closed else 'open'}-{uuid.uuid4().hex[:8]}"
    try:
        yield Setup(project, SessionContext(session_id=sid, project_dir=project, data_dir=data), runner, launchers)
    finally:
        with anyio.fail_after(15):
            await runner.aclose()


# --------------------------------------------------------------------------- checks


def left_behind(marker: str) -> list[str]:
    """Live processes whose command line carries the marker (zombies are dead enough)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in proc.info["cmdline"] or []):
                found.append(f"{proc.info['pid']} {' '.join(proc.info['cmdline'])}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


async def settle_leftovers(marker: str) -> list[str]:
    """What still runs once the sweep's follow-up (for processes caught mid-exec, at most ~0.8 s) has had its turn,
    and the kernel has ended what was killed (GONE_S: a loaded machine stretches both)."""
    deadline = asyncio.get_running_loop().time() + GONE_S
    while (found := left_behind(marker)) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)  # the follow-up kills from loop timers: give them their turns
    return found


def check_faulty(case: Fault, agg: AggregateResult, fail_closed: bool, witnessed: list[str], sid: str) -> None:
    faulty = agg.results[0]
    assert faulty.hook_name == "faulty"
    expected = case.outcome_open if case.outcome_open is not None and not fail_closed else case.outcome
    assert faulty.outcome == expected, (faulty.outcome, faulty.error, faulty.stderr[-500:])
    if case.error is not None and expected in FAILED:
        assert faulty.error and case.error in faulty.error, faulty.error
    if fail_closed and expected in FAILED:
        assert agg.decision == "deny" and "fail-closed" in (agg.reason or ""), (agg.decision, agg.reason)
        assert [r.hook_name for r in agg.results] == ["faulty"] and sid not in witnessed
    else:
        # fail-open: the faulty hook decides nothing and the chain goes on to the witness
        assert [r.hook_name for r in agg.results] == ["faulty", "witness"]
        assert agg.decision == "allow" and sid in witnessed


async def exercise(case: Fault, root: Path, server: FaultServer | None, fail_closed: bool, witnessed: list[str]) -> None:
    async with setup(case, root, server, fail_closed, witnessed) as s:
        agg = await s.runner.fire("PreToolUse", PRE_BASH, s.session)
        check_faulty(case, agg, fail_closed, witnessed, s.marker)
        if case.kind == "command" and case.mode in HELPERS:
            assert len(left_behind(s.marker)) == 1  # the daemon lives on, until the session ends (below)
        else:
            # nothing the hook started is still running once its result is in
            assert await settle_leftovers(s.marker) == []
        if case.outcome in FAILED and case.kind == "python" and "launcher" in (agg.results[0].error or ""):
            # the launcher that ran it was killed, not left hanging
            await until(lambda: not pids_alive(s.launchers), GONE_S, "the launcher that ran it gone")
        if case.again is not None:
            again = (await s.runner.fire("PreToolUse", PRE_BASH, s.session)).results[0]
            assert again.outcome == case.again[0] and case.again[1] in (again.error or again.stderr), (again.outcome, again.error)
        # the executor is still usable: a healthy hook of the same type runs normally
        follow = await s.runner.fire("PostToolUse", {**PRE_BASH, "tool_response": {}}, s.session)
        assert [(r.hook_name, r.outcome) for r in follow.results] == [("healthy", "success")], [
            (r.hook_name, r.outcome, r.error) for r in follow.results]
        launchers = s.launchers | {l.proc.pid for l in getattr(s.runner.executors["python"], "_all", ())}
    assert await settle_leftovers(s.marker) == []
    await until(lambda: not pids_alive(launchers), GONE_S, "every launcher gone with the session")


@pytest.mark.timeout(60)
@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_a_broken_hook_fails_open_or_closed_and_leaves_nothing_behind(case: Fault, tmp_path: Path) -> None:
    witnessed: list[str] = []
    with anyio.fail_after(45):
        server_cm = FaultServer() if case.kind == "http" else None
        if server_cm is not None:
            async with server_cm as server:
                await asyncio.gather(exercise(case, tmp_path, server, False, witnessed), exercise(case, tmp_path, server, True, witnessed))
        else:
            await asyncio.gather(exercise(case, tmp_path, None, False, witnessed), exercise(case, tmp_path, None, True, witnessed))


# --------------------------------------------------------------------------- the specific promises behind the table


@pytest.mark.asyncio
async def test_a_daemon_the_hook_started_lives_until_the_session_ends_and_is_not_reported_as_killed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    case = Fault("command", "daemon", "success")
    witnessed: list[str] = []
    caplog.set_level(logging.INFO)
    with anyio.fail_after(30):
        async with setup(case, tmp_path, None, False, witnessed) as s:
            agg = await s.runner.fire("PreToolUse", PRE_BASH, s.session)
            assert agg.results[0].outcome == "success"
            [daemon] = left_behind(s.marker)
            # other hooks of the session come and go; the helper stays
            follow = await s.runner.fire("PostToolUse", {**PRE_BASH, "tool_response": {}}, s.session)
            assert [r.outcome for r in follow.results] == ["success"]
            assert left_behind(s.marker) == [daemon]
        # the runner's close is the session's end
        assert await settle_leftovers(s.marker) == []
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "[orion] killed" in m], messages
    # kept as a helper; why is whatever the daemon had done when it was looked at: a loaded machine can catch it
    # between closing the hook's output and its setsid()
    assert [m for m in messages if "runs on as a helper until the session ends (it left the hook's session)" in m
            or "runs on as a helper until the session ends (it let go of the hook's output)" in m], messages
    assert [m for m in messages if "session ended: killed 1 process(es)" in m and "python" in m], messages


@pytest.mark.asyncio
async def test_a_service_started_without_the_marker_is_left_alone(tmp_path: Path) -> None:
    """The documented way out for a hook that really starts a long-lived service."""
    marker = f"service-{uuid.uuid4().hex[:8]}"
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    command = f"env -u ORION_HOOK_RUN setsid {sys.executable} {FAULTS} sleep {marker} >/dev/null 2>&1 </dev/null & echo '{{}}'"
    write_json(project / ".claude" / "settings.json", settings("PostToolUse", {"type": "command", "command": command}))
    TrustStore().trust(project)
    try:
        with anyio.fail_after(30):
            runner = HookRunner(load_hookset(project, registry=HookRegistry()), data_dir=tmp_path / "data")
            try:
                agg = await runner.fire("PostToolUse", {**PRE_BASH, "tool_response": {}}, SessionContext("svc-1", project))
            finally:
                await runner.aclose()
        assert agg.results[0].outcome == "success"
        with anyio.fail_after(10):
            while not left_behind(marker):  # the service may still be on its way to exec
                await asyncio.sleep(0.05)
        # and it stays: the sweep ran when the hook ended, so a second look finds it still there
        assert len(left_behind(marker)) == 1
    finally:
        for line in left_behind(marker):
            os.kill(int(line.split()[0]), 9)


@pytest.mark.asyncio
async def test_a_hook_blocking_the_loop_is_named_while_it_blocks_and_in_its_result(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    reg = HookRegistry()

    async def slow_but_in_time(payload: dict[str, Any], ctx: Any) -> None:
        import time

        time.sleep(0.5)  # blocks the loop, but finishes inside its 5 s timeout

    reg.register("PostToolUse", slow_but_in_time, name="slow-sync", timeout=5)
    caplog.set_level(logging.WARNING, logger="hooks")
    with anyio.fail_after(30):
        runner = HookRunner(load_hookset(tmp_path, registry=reg), data_dir=tmp_path / "data")
        try:
            agg = await runner.fire("PostToolUse", {**PRE_BASH, "tool_response": {}}, SessionContext("loop-1", tmp_path))
        finally:
            await runner.aclose()
    result = agg.results[0]
    # it answered in time, so its answer counts; the block is reported alongside it
    assert result.outcome == "success" and "blocked the event loop for" in result.stderr
    messages = [r.getMessage() for r in caplog.records]
    # logged by the watchdog thread while the loop was still held, then once more when it let go
    assert any("'slow-sync' is blocking the event loop" in m for m in messages), messages
    assert any("'slow-sync' blocked the event loop for" in m for m in messages), messages
