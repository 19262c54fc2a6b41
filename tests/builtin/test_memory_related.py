"""memory-related (opt-in): at a session's first prompt, the past observations related to it, by meaning too,
inside memory-context's one budget; never the session's own, never what memory-context already showed."""

from __future__ import annotations

import pytest

from hooks.builtin.memory_hooks import CONTEXT_CHARS
from tests.builtin.harness import sandbox
from tests.memory.paraphrases import OBSERVATIONS, QUESTIONS

pytestmark = pytest.mark.asyncio


async def remember(sb, session: str = "s-old") -> None:
    await sb.fire("UserPromptSubmit", {"prompt": "fix what is broken"}, session_id=session)
    for tool, text in OBSERVATIONS:
        command, _, result = text.partition("\n-> ")
        await sb.tool("PostToolUse", tool, {"note": command}, {"result": result}, session_id=session)


async def test_off_unless_the_user_turns_it_on(tmp_path) -> None:
    async with sandbox(tmp_path) as sb:
        await remember(sb)
        await sb.fire("SessionStart", {"source": "startup"}, session_id="s-new")
        agg = await sb.fire("UserPromptSubmit", {"prompt": QUESTIONS[0][0]}, session_id="s-new")
    assert "memory-related" not in sb.hook_names(agg)


async def test_the_first_prompt_gets_the_related_past_work_within_the_budget(tmp_path) -> None:
    question, answer = QUESTIONS[1]  # "people could not send big pictures, server rejected them as oversized"
    async with sandbox(tmp_path, {"memory-related": {"enabled": True}}) as sb:
        await remember(sb)
        start = await sb.fire("SessionStart", {"source": "startup"}, session_id="s-new")
        first = await sb.fire("UserPromptSubmit", {"prompt": question}, session_id="s-new")
        second = await sb.fire("UserPromptSubmit", {"prompt": QUESTIONS[3][0]}, session_id="s-new")
        own = await sb.fire("UserPromptSubmit", {"prompt": question}, session_id="s-old")  # not its first prompt
        # an item memory-context already gave (the newest eight) is not given twice
        again = await sb.fire("SessionStart", {"source": "startup"}, session_id="s-third")
        cors = await sb.fire("UserPromptSubmit", {"prompt": QUESTIONS[12][0]}, session_id="s-third")
    assert sb.errors(first) == []
    related = first.additional_context
    assert "related to this request" in related
    wanted = OBSERVATIONS[answer][1].split("\n-> ")[1]
    assert wanted[:60] in related  # found by meaning: the question shares no word with it
    recent = start.additional_context
    assert wanted[:60] not in recent  # memory-context's recent items did not include it
    total = len(recent) + len(related)
    assert total < CONTEXT_CHARS + 400  # one budget (plus the tags and the runner's labels)
    assert second.additional_context is None or "related to this request" not in second.additional_context
    assert own.additional_context is None or "related to this request" not in own.additional_context
    shown_first = OBSERVATIONS[QUESTIONS[12][1]][1].split("\n-> ")[1][:60]
    assert shown_first in again.additional_context and shown_first not in (cors.additional_context or "")


async def test_a_private_prompt_is_not_searched_and_bad_options_are_refused(tmp_path) -> None:
    async with sandbox(tmp_path, {"memory-related": {"enabled": True}}) as sb:
        await remember(sb)
        agg = await sb.fire("UserPromptSubmit", {"prompt": "<private>cross origin calls refused</private>"},
                            session_id="s-new")
    assert agg.additional_context is None or "related to this request" not in agg.additional_context
    from hooks.builtin import BuiltinOptionError, builtin_registry

    with pytest.raises(BuiltinOptionError, match="memory-related"):
        builtin_registry({"memory-related": {"enabled": True, "max_chars": 50}}, data_dir=tmp_path)
