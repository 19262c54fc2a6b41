"""A background hook's answer after the turn, through `python -m sidecar` and the bundled CLI (hooks/late_answers.py):
what an `async` hook says comes back to the model with the next prompt, and an `asyncRewake` hook's exit 2 wakes the
model in a turn of its own, which the frontend sees as it sees any turn. In both the model reads the text marked as
coming from no user. Each hook here waits for a file the test writes once the first prompt has answered, so the
answer comes after the turn on a loaded machine as on an idle one (the answer inside a running turn:
tests/conformance `command_async_context`, `command_async_rewake`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.waiting import until

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

NOT_THE_USER = "[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]"


def background_hook(project: Path, command: str, **fields: object) -> Path:
    """A PreToolUse Bash hook that runs `command` once `<project>/go` exists; returns that file."""
    go = project / "go"
    waiting = f"for i in $(seq 300); do [ -f '{go}' ] && break; sleep 0.1; done; {command}"
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": waiting, "timeout": 60, **fields}]}]}}))
    return go


def texts(request: dict) -> str:
    return json.dumps(request["body"]["messages"])


async def test_an_async_answer_after_the_turn_reaches_the_model_with_the_next_prompt(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        answer = {"systemMessage": "LATE-NOTE from the linter",
                  "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "LATE-CONTEXT: 3 warnings"}}
        go = background_hook(run.project, f"echo '{json.dumps(answer)}'", **{"async": True})
        await run.trust()
        sid = (await run.new_session("late_answers"))["sessionId"]
        first = await run.prompt(sid, "run the step")
        assert first["stopReason"] == "end_turn"
        assert all("LATE-CONTEXT" not in texts(r) for r in run.model_requests("late_answers"))
        go.touch()
        await run.wait_event(lambda e: e.name == "hook_response" and e.params.get("background") is True
                             and e.params.get("source") == "project", 30)
        [response] = [r for r in run.named("hook_response", sid) if r["background"] and r["source"] == "project"]
        assert (response["event"], response["source"], response["outcome"]) == ("PreToolUse", "project", "success")
        second = await run.prompt(sid, "and now?")
        assert second["stopReason"] == "end_turn"
        await run.end(sid)

    requests = run.model_requests("late_answers")
    assert len(requests) == 3  # the answer started no turn of its own: two for the first prompt, one for the second
    last = requests[-1]["body"]["messages"][-1]
    words = "\n".join(block["text"] for block in last["content"] if block.get("type") == "text")
    # Claude Code puts the hook's systemMessage and additionalContext before the model; here marked as no user's.
    assert f"{NOT_THE_USER}\nLATE-NOTE from the linter\nLATE-CONTEXT: 3 warnings" in words
    assert words.rstrip().endswith("and now?")
    # The user saw the note beside the conversation, as for any hook's systemMessage.
    notices = [u for u in run.updates(sid, "notice") if "LATE-NOTE" in u.get("text", "")]
    assert notices, run.updates(sid, "notice")


async def test_an_async_rewake_exit_2_after_the_turn_wakes_the_model(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        go = background_hook(run.project, "echo 'the tests fail after that change' >&2; exit 2", asyncRewake=True)
        await run.trust()
        sid = (await run.new_session("late_answers"))["sessionId"]
        first = await run.prompt(sid, "run the step")
        assert first["stopReason"] == "end_turn"
        go.touch()

        def said() -> str:
            return "".join(u.get("text", "") for u in run.updates(sid, "agent_message_chunk"))

        # No prompt runs: the woken turn's answer reaches the frontend as the CLI says it.
        await until(lambda: "Woken: looking at the failing tests." in said(), 60, "the woken turn's answer")
        [response] = [r for r in run.named("hook_response", sid) if r["background"] and r["source"] == "project"]
        assert (response["event"], response["source"], response["exitCode"]) == ("PreToolUse", "project", 2)
        # The next prompt gets its own answer, not the woken turn's.
        second = await run.prompt(sid, "and now?")
        assert second["stopReason"] == "end_turn" and second.get("resultText") == "Second answer."
        await run.end(sid)

    requests = run.model_requests("late_answers")
    woken = [r for r in requests if "Stop hook blocking error" in texts(r)]
    assert woken, [texts(r)[-400:] for r in requests]
    expected = f'{NOT_THE_USER}\\nStop hook blocking error from command \\"PreToolUse:Bash\\": the tests fail after that change'
    assert expected in texts(woken[0])
    assert len(requests) == 4  # two for the first prompt, the woken turn, the second prompt
