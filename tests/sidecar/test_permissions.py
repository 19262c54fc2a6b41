"""PermissionBroker: what is remembered for a session, what a hook's ask overrides, and how silence is read."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ipc.errors import RequestTimeout
from sidecar.permissions import USER_REJECTED, PermissionBroker

pytestmark = pytest.mark.asyncio


def frontend(*answers: str) -> tuple[list[dict[str, Any]], Any]:
    asked: list[dict[str, Any]] = []
    queue = list(answers)

    async def request(method: str, params: dict[str, Any], timeout: float) -> Any:
        assert method == "session/request_permission"
        asked.append(params)
        option = queue.pop(0)
        if option == "timeout":
            raise RequestTimeout("no answer")
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return asked, request


async def test_allow_always_is_remembered_but_a_hook_asking_still_reaches_the_user() -> None:
    asked, request = frontend("allow_always", "reject_once")
    broker = PermissionBroker("s1", request, timeout_s=5)
    with anyio.fail_after(5):
        assert (await broker.ask("Write", {"file_path": "a"}, "t1", None)).allow
        assert (await broker.ask("Write", {"file_path": "b"}, "t2", None)).allow  # remembered: not asked
        hook_asked = await broker.ask("Write", {"file_path": "c"}, "t3", "the guard wants a look", from_hook=True)
    assert not hook_asked.allow
    assert [a["toolUseId"] for a in asked] == ["t1", "t3"]
    assert asked[1]["reason"] == "the guard wants a look"


async def test_reject_always_holds_even_when_a_hook_asks() -> None:
    asked, request = frontend("reject_always")
    broker = PermissionBroker("s1", request, timeout_s=5)
    with anyio.fail_after(5):
        assert not (await broker.ask("Bash", {"command": "ls"}, "t1", None)).allow
        again = await broker.ask("Bash", {"command": "pwd"}, "t2", "why", from_hook=True)
    assert not again.allow and "rejected every use of Bash" in again.message
    assert len(asked) == 1


async def test_no_answer_in_time_denies_with_a_sentence_for_the_model() -> None:
    _asked, request = frontend("timeout")
    broker = PermissionBroker("s1", request, timeout_s=3)
    with anyio.fail_after(5):
        answer = await broker.ask("Write", {"file_path": "x"}, "t1", None)
    assert not answer.allow
    assert "did not answer within 3 seconds" in answer.message


async def test_a_hook_ask_the_user_allowed_is_not_an_allow_and_the_clis_own_check_is_answered_once() -> None:
    from sidecar.hook_bridge import RunnerBridge

    asked, request = frontend("allow_once", "reject_once")
    broker = PermissionBroker("s1", request, timeout_s=5)
    bridge = partial_bridge(broker)
    payload = {"tool_name": "Bash", "tool_input": {"command": "make deploy"}, "tool_use_id": "t1"}
    asked_output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    with anyio.fail_after(5):
        out = await bridge._ask(payload, None, "the guard wants a look", asked_output)
        # No "allow" goes back to the CLI: its own rules (a user's deny rule) still decide first.
        assert "permissionDecision" not in out["hookSpecificOutput"]
        # The CLI's check for exactly this call is answered yes without asking again...
        assert (await broker.ask("Bash", {"command": "make deploy"}, "t1", None)).allow
        # ...once, and for that input only: another call, or the same id again, asks.
        assert not (await broker.ask("Bash", {"command": "make deploy"}, "t1", None)).allow
    assert [a["toolUseId"] for a in asked] == ["t1", "t1"]


def partial_bridge(broker: PermissionBroker) -> Any:
    """A RunnerBridge for `_ask` alone: its broker, and no PermissionRequest hooks (tests/e2e/test_what_people_read.py
    runs them on a hook's ask through the sidecar)."""
    from types import SimpleNamespace

    from sidecar.hook_bridge import RunnerBridge

    bridge = RunnerBridge.__new__(RunnerBridge)
    bridge.broker = broker
    bridge.runner = SimpleNamespace(hookset=SimpleNamespace(active_for=lambda event: False))
    bridge.session = SimpleNamespace(state={})
    return bridge


async def test_a_hook_ask_the_user_refused_stays_an_ask_and_the_clis_dialog_gets_the_refusal() -> None:
    """Where the CLI always opens its dialog for a hook's ask, the refusal answers that dialog (the model reads the
    user's words as in Claude Code, not a hook error); in any other mode it is a deny at once."""
    from sidecar.hook_bridge import HookedAsker

    asked, request = frontend("reject_once", "reject_once")
    broker = PermissionBroker("s1", request, timeout_s=5)
    bridge = partial_bridge(broker)
    asked_output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    with anyio.fail_after(5):
        payload = {"tool_name": "Bash", "tool_input": {"command": "make deploy"}, "tool_use_id": "t1",
                   "permission_mode": "default"}
        out = await bridge._ask(payload, None, "the guard wants a look", asked_output)
        assert out["hookSpecificOutput"]["permissionDecision"] == "ask"
        answer = await HookedAsker(bridge, broker).ask("Bash", {"command": "make deploy"}, "t1", None)
        assert not answer.allow and answer.message == USER_REJECTED
        assert len(asked) == 1  # the user was asked once: the CLI's dialog took the answer already given
        payload = {**payload, "tool_use_id": "t2", "permission_mode": "bypassPermissions"}
        out = await bridge._ask(payload, None, "the guard wants a look", asked_output)
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "t2" not in broker.refused_calls


async def test_an_approval_does_not_cover_a_different_input() -> None:
    asked, request = frontend("reject_once")
    broker = PermissionBroker("s1", request, timeout_s=5)
    broker.approve_call("t1", {"command": "ls"})
    with anyio.fail_after(5):
        assert not (await broker.ask("Bash", {"command": "rm -rf /"}, "t1", None)).allow
    assert len(asked) == 1
