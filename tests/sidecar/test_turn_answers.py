"""Which result answers a prompt (sidecar/agent.py `_answers`): the one that names the prompt's uuid; a steered
message's when one is owed; a cycle the CLI started itself is nobody's. The path through the real CLI:
tests/e2e/test_session_lifecycle.py::test_a_cycle_the_cli_runs_on_its_own_does_not_answer_the_next_prompt and
tests/acp/test_python_sdk_client.py::test_steering_gives_the_running_turn_a_message_it_answers_before_the_prompt_does."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sidecar.agent import _answers


def result(**fields: Any) -> Any:
    return SimpleNamespace(**{"user_message_uuids": None, "user_message_uuid": None, "origin": None, **fields})


def test_the_result_that_names_the_prompt_answers_it() -> None:
    assert _answers(result(user_message_uuids=["p"], user_message_uuid="p"), "p", None) == "prompt"
    assert _answers(result(user_message_uuid="p"), "p", None) == "prompt"


def test_a_cycle_the_cli_started_is_nobodys() -> None:
    notification = result(user_message_uuids=["n"], origin={"kind": "task-notification"})
    assert _answers(notification, "p", None) == "other"
    assert _answers(result(origin={"kind": "task-notification"}), "p", None) == "other"
    assert _answers(result(user_message_uuids=["earlier-prompt"]), "p", None) == "other"


def test_a_steered_message_is_answered_by_the_result_that_took_it_in() -> None:
    assert _answers(result(user_message_uuids=["p"]), "p", "s") == "prompt"  # the cycle the steer cut short
    assert _answers(result(user_message_uuids=["p", "s"]), "p", "s") == "steer"
    assert _answers(result(user_message_uuids=["s"]), "p", "s") == "steer"


def test_a_result_naming_nothing_is_the_prompts_as_before() -> None:
    # an older CLI, a local command (/compact), an interrupted turn
    assert _answers(result(), "p", None) == "prompt"
    assert _answers(result(user_message_uuids=[], origin={"kind": "human"}), "p", None) == "prompt"
