"""PermissionBroker: what is remembered for a session, what a hook's ask overrides, and how silence is read."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ipc.errors import RequestTimeout
from sidecar.permissions import PermissionBroker

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
