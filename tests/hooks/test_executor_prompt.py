"""prompt hooks at the model seam: verdicts in each event's terms, lenient answers, errors, deadlines, prompt rendering."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from hooks.config import AgentHookConfig, PromptHookConfig
from hooks.executors.evaluation import EvaluationError, UnparseableAnswer, parse_evaluation, render_prompt
from hooks.executors.prompt import PromptExecutor
from hooks.executors.remote import default_llm_executors
from hooks.hookset import HookSpec
from hooks.types import HookCall, HookContext, SessionContext

PRE_TOOL_PAYLOAD = {
    "session_id": "s-1",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build"},
    "tool_use_id": "toolu_1",
}


@dataclass
class FakeModelClient:
    """A ModelClient that answers with fixed text, or never answers (`hang=True`), and records what it was asked."""

    answer: str = '{"ok": true, "reason": "fine"}'
    hang: bool = False
    error: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False

    async def _respond(self, **call: Any) -> str:
        self.calls.append(call)
        if self.error is not None:
            raise self.error
        if self.hang:
            try:
                await anyio.Event().wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled = True
                raise
        return self.answer

    async def complete(self, prompt: str, *, model: str | None, timeout_s: float, system: str | None = None) -> str:
        return await self._respond(kind="complete", prompt=prompt, model=model, timeout_s=timeout_s, system=system)

    async def run_agent(
        self, prompt: str, *, cwd: Path, tools: list[str], max_turns: int, model: str | None, timeout_s: float,
        system: str | None = None,
    ) -> str:
        return await self._respond(
            kind="agent", prompt=prompt, cwd=cwd, tools=tools, max_turns=max_turns, model=model,
            timeout_s=timeout_s, system=system,
        )


def make_call(
    config: PromptHookConfig | AgentHookConfig,
    *,
    event: str = "PreToolUse",
    payload: dict[str, Any] | None = None,
    timeout_s: float = 5.0,
    project_dir: Path | None = None,
) -> HookCall:
    spec = HookSpec(
        id=f"project:{event}:x", name="evaluator", event=event, matcher=None, type=config.type,
        source="project", source_file=None, timeout_s=timeout_s, fail_closed=config.failClosed, config=config,
    )
    session = SessionContext(session_id="s-1", project_dir=project_dir or Path.cwd())
    context = HookContext(
        session=session, event=event, hook_name=spec.name, execution_id="e-1", tool_use_id="toolu_1",
        deadline=0.0, log=logging.getLogger("test"),
    )

    async def progress(stream: str, line: str) -> None:
        return None

    return HookCall(
        hook=spec, event=event, payload=payload if payload is not None else {**PRE_TOOL_PAYLOAD, "hook_event_name": event},
        context=context, timeout_s=timeout_s, progress=progress,
    )


def prompt_hook(prompt: str = "Is this command safe? $ARGUMENTS", **extra: Any) -> PromptHookConfig:
    return PromptHookConfig(type="prompt", prompt=prompt, **extra)


async def run(client: FakeModelClient, call: HookCall, **kwargs: Any):
    with anyio.fail_after(10):
        return await PromptExecutor(client, **kwargs).run(call)


# --------------------------------------------------------------------------- verdicts


@pytest.mark.asyncio
async def test_ok_true_lets_the_action_proceed_without_granting_permission() -> None:
    report = await run(FakeModelClient('{"ok": true, "reason": "read-only"}'), make_call(prompt_hook()))
    assert report.status == "ok"
    assert not report.blocking_error
    # No explicit allow: an allow would skip the user's permission prompt, which ok:true must not do.
    assert report.output is None


@pytest.mark.asyncio
async def test_ok_false_on_pre_tool_use_denies_with_the_reason() -> None:
    answer = 'Looking at it...\n```json\n{"ok": false, "reason": "deletes the build tree"}\n```\nDone.'
    report = await run(FakeModelClient(answer), make_call(prompt_hook()))
    assert report.status == "ok"
    specific = report.output.hookSpecificOutput
    assert (specific.hookEventName, specific.permissionDecision) == ("PreToolUse", "deny")
    # Claude Code 2.1.330's words (conformance case prompt_hook_blocks): the hook's prompt as written, then the reason
    assert specific.permissionDecisionReason == "[Is this command safe? $ARGUMENTS]: deletes the build tree"
    # ...and the turn ends there, as in Claude Code (the answer carries it: not a blocking error, which drops it)
    assert (report.output.continue_, report.output.stopReason) == (False, "deletes the build tree")
    assert not report.blocking_error
    assert report.stdout == answer


@pytest.mark.asyncio
async def test_continue_on_block_denies_and_lets_the_turn_go_on() -> None:
    report = await run(FakeModelClient('{"ok": false, "reason": "deletes the build tree"}'),
                       make_call(prompt_hook(continueOnBlock=True)))
    assert report.output.hookSpecificOutput.permissionDecision == "deny"
    assert report.output.continue_ is None and report.blocking_error


@pytest.mark.asyncio
@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "SubagentStop", "PostToolUse", "PreCompact"])
async def test_ok_false_blocks_with_a_decision_on_decision_events(event: str) -> None:
    report = await run(FakeModelClient('{"ok": false, "reason": "tests still fail"}'), make_call(prompt_hook(), event=event))
    assert report.status == "ok"
    worded = "[Is this command safe? $ARGUMENTS]: tests still fail"
    if event in ("Stop", "SubagentStop"):
        # the agent goes on with the reason as feedback (conformance case prompt_hook_stop_continues)
        assert report.output.to_json_dict() == {"decision": "block", "reason": worded}
        assert report.blocking_error and report.stderr == worded
    else:
        # elsewhere Claude Code also ends the turn
        assert report.output.to_json_dict() == {"decision": "block", "reason": worded, "continue": False,
                                                "stopReason": "tests still fail"}
        assert not report.blocking_error


@pytest.mark.asyncio
@pytest.mark.parametrize("event", ["Stop", "SubagentStop", "PreToolUse"])
async def test_a_stop_condition_judged_impossible_lets_the_agent_stop(event: str) -> None:
    """Claude Code 2.1.330 (conformance case prompt_hook_stop_impossible): on Stop and SubagentStop `impossible: true`
    with `ok: false` is a success, not feedback; on any other event it blocks as `ok: false` does."""
    answer = '{"ok": false, "reason": "there is no test suite", "impossible": true}'
    report = await run(FakeModelClient(answer), make_call(prompt_hook(), event=event))
    assert report.status == "ok" and report.stdout == answer
    if event == "PreToolUse":
        assert report.output.hookSpecificOutput.permissionDecision == "deny"
    else:
        assert report.output is None and not report.blocking_error
    # a string "true" is no verdict of impossibility
    loose = await run(FakeModelClient('{"ok": false, "reason": "no", "impossible": "true"}'),
                      make_call(prompt_hook(), event="Stop"))
    assert loose.blocking_error


@pytest.mark.asyncio
async def test_ok_false_on_an_advisory_event_is_reported_not_enforced() -> None:
    report = await run(FakeModelClient('{"ok": false, "reason": "odd"}'), make_call(prompt_hook(), event="Notification"))
    assert report.status == "ok"
    assert not report.blocking_error
    assert report.output.to_json_dict() == {"systemMessage": "[Is this command safe? $ARGUMENTS]: odd",
                                            "continue": False, "stopReason": "odd"}


@pytest.mark.asyncio
async def test_malformed_answer_is_a_hook_error_carrying_the_raw_text() -> None:
    report = await run(FakeModelClient("Sure, that looks safe to me!"), make_call(prompt_hook()))
    assert report.status == "error"
    assert "Sure, that looks safe to me!" in report.error
    assert report.output is None and not report.blocking_error


@pytest.mark.asyncio
async def test_model_failure_is_a_hook_error() -> None:
    client = FakeModelClient(error=EvaluationError("model session failed: overloaded"))
    report = await run(client, make_call(prompt_hook()))
    assert report.status == "error"
    assert "overloaded" in report.error


@pytest.mark.asyncio
async def test_timeout_is_enforced_even_when_the_client_ignores_it() -> None:
    client = FakeModelClient(hang=True)
    report = await run(client, make_call(prompt_hook(), timeout_s=0.2))
    assert report.status == "timeout"
    assert "0.2 s" in report.error
    assert client.cancelled
    assert client.calls[0]["timeout_s"] == 0.2


@pytest.mark.asyncio
async def test_no_model_client_is_a_visible_hook_error() -> None:
    with anyio.fail_after(10):
        report = await PromptExecutor(None).run(make_call(prompt_hook()))
    assert report.status == "error" and "no" in report.error and "model" in report.error


# --------------------------------------------------------------------------- prompt and model


@pytest.mark.asyncio
async def test_arguments_placeholder_becomes_the_payload_json() -> None:
    client = FakeModelClient()
    await run(client, make_call(prompt_hook("Check $ARGUMENTS carefully")))
    [call] = client.calls
    prefix, suffix = "Check ", " carefully"
    assert call["prompt"].startswith(prefix) and call["prompt"].endswith(suffix)
    assert json.loads(call["prompt"][len(prefix) : -len(suffix)]) == PRE_TOOL_PAYLOAD
    assert '"ok"' in call["system"]  # the answer format is asked for explicitly


@pytest.mark.asyncio
async def test_payload_is_appended_when_the_prompt_has_no_placeholder() -> None:
    client = FakeModelClient()
    await run(client, make_call(prompt_hook("Refuse anything touching secrets.")))
    prompt = client.calls[0]["prompt"]
    assert prompt.startswith("Refuse anything touching secrets.")
    assert json.dumps(PRE_TOOL_PAYLOAD) in prompt


@pytest.mark.asyncio
async def test_model_is_haiku_by_default_then_global_then_per_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeModelClient()
    await run(client, make_call(prompt_hook()))
    monkeypatch.setenv("ORION_PROMPT_HOOK_MODEL", "claude-from-env")
    await run(client, make_call(prompt_hook()))
    await run(client, make_call(prompt_hook()), default_model="claude-from-ctor")
    await run(client, make_call(prompt_hook(model="claude-per-hook")), default_model="claude-from-ctor")
    assert [c["model"] for c in client.calls] == [
        "claude-haiku-4-5", "claude-from-env", "claude-from-ctor", "claude-per-hook",
    ]
    assert all(c["kind"] == "complete" for c in client.calls)


def test_factory_builds_all_three_remote_executors() -> None:
    executors = default_llm_executors(FakeModelClient())
    assert set(executors) == {"prompt", "agent", "http"}


# --------------------------------------------------------------------------- lenient parsing


@pytest.mark.parametrize(
    ("raw", "ok", "reason"),
    [
        ('{"ok": true, "reason": "fine"}', True, "fine"),
        ('  {"ok":false,"reason":"no"}  ', False, "no"),
        ('```json\n{"ok": false, "reason": "uses {braces} inside"}\n```', False, "uses {braces} inside"),
        ('```\n{"ok": true}\n```', True, ""),
        ('The input {"tool": "Bash"} is fine.\nAnswer: {"ok": true, "reason": "harmless"}', True, "harmless"),
        ('Format is {"ok": bool}. ```json\n{"ok": false, "reason": "x"}\n```', False, "x"),
    ],
)
def test_lenient_parse_accepts_common_answer_shapes(raw: str, ok: bool, reason: str) -> None:
    verdict = parse_evaluation(raw)
    assert (verdict.ok, verdict.reason) == (ok, reason)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "yes",
        '{"ok": "yes"}',
        '{"allowed": true}',
        '{"ok": true, "reason": "a"} but also {"ok": false, "reason": "b"}',
        "{ok: true}",
    ],
)
def test_answers_without_one_clear_verdict_are_refused(raw: str) -> None:
    with pytest.raises(UnparseableAnswer):
        parse_evaluation(raw)


def test_render_prompt_replaces_every_placeholder() -> None:
    rendered = render_prompt("$ARGUMENTS / $ARGUMENTS", {"a": 1})
    assert rendered == '{"a": 1} / {"a": 1}'


# --------------------------------------------------------------------------- vault carve-out


@pytest.mark.asyncio
async def test_vault_prompt_hook_runs_once_trusted_while_vault_http_and_agent_hooks_are_dropped(tmp_path: Path) -> None:
    from hooks.hookset import load_hookset
    from hooks.trust import TrustStore

    vault = tmp_path / "vault"
    settings = vault / ".orion" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "prompt", "name": "vault-prompt", "prompt": "Refuse deletions. $ARGUMENTS"},
        {"type": "http", "name": "vault-http", "url": "http://127.0.0.1:9/hook"},
        {"type": "agent", "name": "vault-agent", "prompt": "Check the repo"},
    ]}]}}))
    (tmp_path / "project").mkdir()
    hookset = load_hookset(tmp_path / "project", vault)
    by_name = {spec.name: spec for spec in hookset.entries if spec.source == "vault"}
    listing = {entry["name"]: entry for entry in hookset.to_listing()}
    for dropped in ("vault-http", "vault-agent"):
        assert listing[dropped]["state"] == "dropped"
        assert "only prompt hooks" in listing[dropped]["reason"]
    # A vault is someone's folder like a project: its prompt hooks spend the user's model budget, so they wait for trust.
    assert by_name["vault-prompt"].state == "untrusted"
    TrustStore().trust(tmp_path / "project", hookset.trust_hash, vault)
    prompt_spec = {s.name: s for s in hookset.reload().entries}["vault-prompt"]
    assert prompt_spec.state == "active"

    call = make_call(prompt_hook())
    call.hook = prompt_spec
    report = await run(FakeModelClient('{"ok": false, "reason": "deletion"}'), call)
    assert report.output.hookSpecificOutput.permissionDecision == "deny"


# --------------------------------------------------------------------------- through the runner


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("event", "payload", "decision"),
    [
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}, "deny"),
        ("Stop", {"stop_hook_active": False}, "block"),
        ("UserPromptSubmit", {"prompt": "delete everything"}, "block"),
    ],
)
async def test_runner_turns_ok_false_into_the_events_decision(
    tmp_path: Path, event: str, payload: dict[str, Any], decision: str
) -> None:
    from tests.hooks.support import Project, running, session, settings

    project = Project((tmp_path / "proj").resolve())
    project.settings(settings(event, {"type": "prompt", "name": "judge", "prompt": "Judge $ARGUMENTS"}))
    project.trust()
    client = FakeModelClient('```json\n{"ok": false, "reason": "too risky"}\n```')
    with anyio.fail_after(10):
        async with running(project.load(), executors=default_llm_executors(client)) as runner:
            result = await runner.fire(event, payload, session(project))
    assert (result.decision, result.reason) == (decision, "[Judge $ARGUMENTS]: too risky")
    assert [r.outcome for r in result.results] == ["blocked"]
    assert event in client.calls[0]["prompt"]  # the payload (with hook_event_name) reached the model


@pytest.mark.asyncio
async def test_runner_fails_open_on_a_malformed_answer_unless_fail_closed(tmp_path: Path) -> None:
    from tests.hooks.support import Project, running, session, settings

    project = Project((tmp_path / "proj").resolve())
    project.settings(settings(
        "PreToolUse",
        {"type": "prompt", "name": "lenient", "prompt": "Judge $ARGUMENTS"},
        {"type": "prompt", "name": "strict", "prompt": "Judge $ARGUMENTS", "failClosed": True},
    ))
    project.trust()
    client = FakeModelClient("I am not sure.")
    payload = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    with anyio.fail_after(10):
        async with running(project.load(), executors=default_llm_executors(client)) as runner:
            result = await runner.fire("PreToolUse", payload, session(project))
    assert [(r.hook_name, r.outcome) for r in result.results] == [("lenient", "error"), ("strict", "error")]
    assert result.decision == "deny" and "strict" in result.reason
