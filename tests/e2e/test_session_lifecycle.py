"""A session's life as the frontend drives it: SessionEnd on session/end and on EOF, cancel mid-turn, no process left behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from ipc.errors import ConnectionClosed, RemoteError
from tests.e2e.conftest import fixed_policy
from tests.waiting import running

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

EXIT_WAIT_S = 20.0
CANCEL_BOUND_S = 10.0


async def test_session_end_runs_session_end_hooks(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("plain"))["sessionId"]
        await run.prompt(sid, "Hello.")
        assert not (run.project / ".e2e" / "session-end.txt").exists()
        cli_home = Path(os.environ["ORION_DATA_DIR"]) / "cli-home" / sid
        assert cli_home.is_dir()  # the scripted session's own CLI home, scratch space

        ended = await run.end(sid, reason="clear")

        assert ended["ended"] is True
        assert (run.project / ".e2e" / "session-end.txt").read_text() == "clear\n"
        [call] = run.hook_calls("SessionEnd")
        assert call["session_id"] == sid
        names = {r["hookName"] for r in run.named("hook_response", sid) if r["event"] == "SessionEnd"}
        assert "e2e-session-end" in names
        assert ended["hooksRan"] == len(names)
        listed = {s["sessionId"]: s["state"] for s in (await run.request("session/list"))["sessions"]}
        assert listed[sid] == "ended"
        assert not cli_home.exists()


async def test_frontend_eof_ends_sessions_and_runs_session_end_hooks(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("plain"))["sessionId"]
        await run.prompt(sid, "Hello.")
        process = run.client.process
        assert process.stdin is not None

        # The frontend goes away without shutdown/exit: only its end of the stdin pipe closes.
        await process.stdin.aclose()
        with anyio.fail_after(EXIT_WAIT_S):
            returncode = await process.wait()

        assert returncode == 0
        assert (run.project / ".e2e" / "session-end.txt").read_text() == "other\n"
        [call] = run.hook_calls("SessionEnd")
        assert call["session_id"] == sid


async def test_cancel_mid_turn_returns_cancelled_and_the_session_stays_usable(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("cancel"))["sessionId"]
        outcome: dict[str, Any] = {}

        async def prompt() -> None:
            outcome["result"] = await run.prompt(sid, "Wait for a while.")

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            # The sleep is about to run once the last PreToolUse hook has answered for it.
            call = await run.wait_event(lambda e: e.name == "session/update"
                                        and e.params["update"].get("sessionUpdate") == "tool_call")
            tool_use_id = call.params["update"]["toolUseId"]
            started = await run.wait_event(lambda e: e.name == "hook_started" and e.params.get("toolUseId") == tool_use_id
                                           and e.params["hookName"] == "protection")
            await run.wait_event(lambda e: e.name == "hook_response"
                                 and e.params["executionId"] == started.params["executionId"])
            with anyio.fail_after(CANCEL_BOUND_S):
                cancelled = await run.request("session/cancel", {"sessionId": sid})
                assert cancelled == {"cancelled": True}
                await run.wait_event(lambda e: e.name == "session/update"
                                     and e.params["update"].get("sessionUpdate") == "result")

        assert outcome["result"]["stopReason"] == "cancelled"
        again = await run.prompt(sid, "Are you there?")
        assert again["stopReason"] == "end_turn"
        assert again["resultText"] == "Ready again."


async def test_no_cli_or_hook_process_outlives_the_sidecar(sidecar) -> None:
    async with sidecar() as run:
        sid = (await run.new_session("hold"))["sessionId"]
        sidecar_pid = run.client.process.pid

        async def prompt() -> None:
            try:
                await run.prompt(sid, "Run the probe.")
            except (ConnectionClosed, RemoteError):
                pass  # the shutdown below ends this turn; how it answers is not this test's concern

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            # The hook prints "holding" and keeps running: it is alive now.
            await run.wait_event(lambda e: e.name == "hook_progress" and e.params["hookName"] == "e2e-bash-gate"
                                 and "holding" in e.params["line"])
            descendants = psutil.Process(sidecar_pid).children(recursive=True)
            [hook_call] = run.hook_calls("PreToolUse")
            # The project's hook runs in a box of its own (sidecar/hook_box.py): the pid it recorded is its box's.
            assert hook_call["pid"] > 0
            assert any("e2e_hook.py" in " ".join(_cmdline(p)) for p in descendants), [_cmdline(p) for p in descendants]
            assert any("claude" in " ".join(_cmdline(p)) for p in descendants), [_cmdline(p) for p in descendants]

            with anyio.fail_after(EXIT_WAIT_S):
                returncode = await run.client.close()
            tg.cancel_scope.cancel()

        assert returncode == 0
        with anyio.fail_after(EXIT_WAIT_S):
            _gone, alive = await anyio.to_thread.run_sync(lambda: psutil.wait_procs(descendants, timeout=5))
        assert [(p.pid, _cmdline(p)) for p in alive if running(p)] == []


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


@pytest.mark.asyncio
async def test_a_cycle_the_cli_runs_on_its_own_does_not_answer_the_next_prompt(sidecar) -> None:
    """A background command ends while the session is idle: the CLI tells the model on its own, in a cycle no
    prompt started. What the model says in it reaches the client as it happens; the next prompts get their own
    answers (the result of that cycle carries no prompt of theirs)."""
    async with sidecar(permission=fixed_policy("allow_once")) as run:
        sid = (await run.new_session("background", allowedTools=["Bash"]))["sessionId"]
        first = await run.prompt(sid, "start it in the background")
        assert first["resultText"] == "Started it."
        with anyio.fail_after(30):
            while not (run.project / "bg-done").exists():
                await anyio.sleep(0.1)
        # The CLI's own cycle is shown as it happens, with no prompt running.
        def said() -> str:
            return "".join(u.get("text", "") for u in run.updates(sid, "agent_message_chunk"))

        with anyio.fail_after(30):
            while "Noted the background task." not in said():
                await anyio.sleep(0.1)
        second = await run.prompt(sid, "second")
        third = await run.prompt(sid, "third")
        await run.end(sid)
    assert second["resultText"] == "Second prompt answer." and third["resultText"] == "Third prompt answer."
