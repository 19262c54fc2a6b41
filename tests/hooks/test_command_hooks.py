"""Command hooks through the real runner and real /bin/sh: Claude Code's exit-code and JSON semantics, env, stdin, caps, timeouts."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.hooks.support import PRE_BASH, Recorder, cmd, pids_alive, running, script, session, settings
from tests.waiting import GONE_S, until


async def fire(project, event, payload, *entries, matcher=None, observer=None, sid="sess-1"):
    project.settings(settings(event, *entries, matcher=matcher))
    project.trust()
    with anyio.fail_after(30):
        async with running(project.load(), observer) as runner:
            return await runner.fire(event, payload, session(project, sid))


def json_cmd(obj, **kw):
    return cmd("cat <<'EOF'\n" + json.dumps(obj) + "\nEOF", **kw)


# ----------------------------------------------------------------------------- exit 0


@pytest.mark.asyncio
async def test_exit0_json_permission_decision_reason_updated_input_and_context(project):
    agg = await fire(project, "PreToolUse", PRE_BASH, json_cmd({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "safe",
        "updatedInput": {"command": "ls -la"}, "additionalContext": "listing is fine"}}, name="h"))
    assert agg.decision == "allow" and agg.reason == "safe"
    assert agg.updated_input == {"command": "ls -la"}
    assert agg.additional_context == "listing is fine"
    assert agg.to_hook_json() == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "safe",
        "updatedInput": {"command": "ls -la"}, "additionalContext": "listing is fine"}}


@pytest.mark.asyncio
@pytest.mark.parametrize("decision", ["deny", "ask", "defer"])
async def test_exit0_json_other_permission_decisions(project, decision):
    agg = await fire(project, "PreToolUse", PRE_BASH, json_cmd({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": "because"}}))
    assert agg.decision == decision and agg.reason == "because"
    assert agg.results[0].outcome == ("blocked" if decision == "deny" else "success")
    assert agg.to_hook_json()["hookSpecificOutput"]["permissionDecision"] == decision


@pytest.mark.asyncio
async def test_exit0_plain_stdout_is_context_on_user_prompt_submit_and_session_start(project):
    agg = await fire(project, "UserPromptSubmit", {"prompt": "hi"}, cmd("echo 'Project rule: be brief.'", name="banner"))
    assert agg.additional_context == "Project rule: be brief."
    assert agg.to_hook_json()["hookSpecificOutput"]["additionalContext"] == "Project rule: be brief."
    agg = await fire(project, "SessionStart", {"source": "startup"}, cmd("echo welcome", name="w"))
    assert agg.additional_context == "welcome"


@pytest.mark.asyncio
async def test_exit0_plain_stdout_on_pre_tool_use_is_not_context(project):
    agg = await fire(project, "PreToolUse", PRE_BASH, cmd("echo just some log output"))
    assert agg.additional_context is None and agg.decision is None
    assert agg.results[0].text == "just some log output" and agg.to_hook_json() == {}


@pytest.mark.asyncio
async def test_continue_false_stop_reason_system_message_suppress_output(project):
    agg = await fire(project, "PostToolUse", {**PRE_BASH, "tool_response": {}},
                     json_cmd({"continue": False, "stopReason": "budget exhausted", "systemMessage": "heads up", "suppressOutput": True}))
    assert agg.continue_ is False and agg.stop_reason == "budget exhausted"
    assert agg.to_hook_json() == {"continue": False, "stopReason": "budget exhausted", "suppressOutput": True, "systemMessage": "heads up"}


@pytest.mark.asyncio
@pytest.mark.parametrize("event,payload", [
    ("UserPromptSubmit", {"prompt": "x"}),
    ("Stop", {"stop_hook_active": False}),
    ("SubagentStop", {"stop_hook_active": False}),
    ("PreCompact", {"trigger": "auto"}),
    ("PostToolUse", {**PRE_BASH, "tool_response": {}}),
])
async def test_decision_block_with_reason(project, event, payload):
    agg = await fire(project, event, payload, json_cmd({"decision": "block", "reason": "not yet"}))
    assert agg.decision == "block" and agg.reason == "not yet" and agg.blocked
    assert agg.to_hook_json() == {"decision": "block", "reason": "not yet"}


@pytest.mark.asyncio
async def test_exit0_brace_that_is_not_json_is_plain_output_as_in_claude_code(project):
    agg = await fire(project, "UserPromptSubmit", {"prompt": "x"}, cmd("echo '{not json'"))
    assert agg.results[0].outcome == "success" and agg.additional_context == "{not json"


@pytest.mark.asyncio
async def test_exit0_invalid_json_from_a_fail_closed_gate_is_an_error_that_denies(project):
    agg = await fire(project, "PreToolUse", PRE_BASH, cmd("echo '{not json'", failClosed=True))
    assert agg.results[0].outcome == "error" and "invalid JSON" in agg.results[0].error
    assert agg.decision == "deny"


# ----------------------------------------------------------------------------- exit 2 and others


@pytest.mark.asyncio
async def test_exit2_on_pre_tool_use_denies_with_stderr_and_json_allow_cannot_override(project):
    allow = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    command = f"echo '{allow}'; echo 'rm is forbidden' >&2; exit 2"
    agg = await fire(project, "PreToolUse", PRE_BASH, cmd(command))
    r = agg.results[0]
    assert (r.outcome, r.exit_code) == ("blocked", 2)
    # What the model reads, as Claude Code writes it: the command in brackets, then stderr.
    assert agg.decision == "deny" and agg.reason == f"[{command}]: rm is forbidden\n"  # stderr as written
    assert agg.to_hook_json()["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.asyncio
@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"])
async def test_exit2_blocks_other_blocking_events(project, event):
    agg = await fire(project, event, {}, cmd("echo 'keep going' >&2; exit 2"))
    assert agg.decision == "block" and agg.reason == "[echo 'keep going' >&2; exit 2]: keep going\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("event", ["PostToolUse", "PostToolUseFailure"])
async def test_exit2_after_a_tool_shows_stderr_to_the_model_as_claude_code_does(project, event):
    command = "echo 'lint failed' >&2; exit 2"
    agg = await fire(project, event, {}, cmd(command))
    assert agg.results[0].outcome == "blocked"
    assert agg.decision == "block" and agg.reason == f"[{command}]: lint failed\n"
    assert agg.to_hook_json()["reason"] == f"[{command}]: lint failed\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("event", ["Notification", "SessionStart", "SessionEnd"])
async def test_exit2_on_a_non_blocking_event_is_an_error_not_a_block(project, event):
    agg = await fire(project, event, {}, cmd("echo 'oops' >&2; exit 2"))
    assert agg.results[0].outcome == "error" and agg.results[0].error == "oops"
    assert agg.decision is None


@pytest.mark.asyncio
async def test_other_exit_codes_are_non_blocking_errors_with_stderr(project):
    agg = await fire(project, "PreToolUse", PRE_BASH, cmd("echo 'linter crashed' >&2; exit 1"))
    r = agg.results[0]
    assert (r.outcome, r.exit_code, r.error) == ("error", 1, "linter crashed")
    assert agg.decision is None and not agg.blocked


@pytest.mark.asyncio
async def test_fail_closed_turns_a_failure_into_a_deny_naming_the_hook(project):
    agg = await fire(project, "PreToolUse", PRE_BASH, cmd("exit 1", name="gate", failClosed=True))
    assert agg.decision == "deny" and "'gate'" in agg.reason and "fail-closed" in agg.reason


# ----------------------------------------------------------------------------- env, stdin, cwd


@pytest.mark.asyncio
async def test_env_stdin_and_cwd(project):
    out = project.root / "env.json"
    py = (
        "import json,os,sys; d=json.load(sys.stdin); "
        "k=['CLAUDE_PROJECT_DIR','CLAUDE_CODE_SESSION_ID','CLAUDECODE','HOOK_EVENT','SESSION_ID','HOOK_TIMEOUT','HOOK_PAYLOAD']; "
        f"json.dump({{'stdin': d, 'env': {{x: os.environ.get(x) for x in k}}, 'cwd': os.getcwd()}}, open({str(out)!r}, 'w'))"
    )
    await fire(project, "PreToolUse", PRE_BASH, cmd(f"python3 -c \"{py}\"", timeout=7), sid="abc-123")
    got = json.loads(out.read_text())
    assert got["stdin"]["tool_input"] == {"command": "ls"} and got["stdin"]["hook_event_name"] == "PreToolUse"
    env = got["env"]
    assert env["CLAUDE_PROJECT_DIR"] == str(project.root) and got["cwd"] == str(project.root)
    assert env["CLAUDE_CODE_SESSION_ID"] == env["SESSION_ID"] == "abc-123" and env["CLAUDECODE"] == "1"
    assert env["HOOK_EVENT"] == "PreToolUse" and env["HOOK_TIMEOUT"] == "7000"
    assert json.loads(env["HOOK_PAYLOAD"]) == got["stdin"]


@pytest.mark.asyncio
async def test_big_payload_goes_to_a_file_and_huge_payload_is_trimmed(project):
    out = project.root / "seen.json"
    big = "x" * (300 * 1024)
    huge = "y" * (2 * 1024 * 1024)
    py = (
        "import json,os,sys; raw=sys.stdin.read(); "
        f"json.dump({{'len': len(raw.encode()), 'file': os.environ.get('HOOK_PAYLOAD_FILE'), 'has_env': 'HOOK_PAYLOAD' in os.environ, "
        f"'file_same': open(os.environ['HOOK_PAYLOAD_FILE']).read()==raw, 'trim': json.loads(raw).get('_orion_trimmed')}}, open({str(out)!r}, 'w'))"
    )
    payload = {"tool_name": "Write", "tool_input": {"content": big}, "tool_response": {"stdout": huge}}
    await fire(project, "PostToolUse", payload, cmd(f"python3 -c \"{py}\""))
    got = json.loads(out.read_text())
    assert got["file"] and got["file_same"] and not got["has_env"]
    assert not Path(got["file"]).exists()  # cleaned up
    assert got["len"] <= 512 * 1024
    assert got["trim"]["paths"][0] == "tool_response.stdout" and got["trim"]["originalBytes"] > 2 * 1024 * 1024


# ----------------------------------------------------------------------------- output


@pytest.mark.asyncio
async def test_output_streams_line_by_line_to_the_observer_with_the_session_id(project):
    rec = Recorder()
    agg = await fire(project, "Stop", {}, cmd("echo one; echo two; echo err >&2", name="talker"), observer=rec, sid="s-9")
    assert rec.progress_lines("talker") == ["one", "two"] and rec.progress_lines("talker", "stderr") == ["err"]
    kinds = rec.kinds()
    assert kinds[0] == ("started", "talker") and kinds[-1] == ("response", "talker")
    started = rec.log[0][1]
    result, sid = rec.log[-1][1]
    assert started.execution_id == result.execution_id and started.session_id == sid == "s-9"
    assert all(p.session_id == "s-9" and p.execution_id == started.execution_id for k, p in rec.log if k == "progress")
    assert result.stdout == "one\ntwo\n" and result.stderr == "err\n" and agg.results[0] is result


@pytest.mark.asyncio
async def test_fifty_megabytes_of_output_is_capped_and_counted(project):
    rec = Recorder()
    agg = await fire(project, "PostToolUse", {},
                     cmd("head -c 52428800 /dev/zero | tr '\\0' 'a' | fold -w 1000; echo done >&2", name="flood"), observer=rec)
    r = agg.results[0]
    assert r.outcome == "success" and r.stderr == "done\n"
    assert len(r.stdout.encode()) == 1024 * 1024
    lines = rec.progress_lines("flood")
    assert len(lines) == 1001 and lines[-1].startswith("[orion: further output not streamed")


# ----------------------------------------------------------------------------- timeouts and failures


@pytest.mark.asyncio
async def test_timeout_kills_the_whole_process_group(project):
    pidfile = project.root / "pids"
    agg = await fire(project, "PreToolUse", PRE_BASH,
                     cmd(f"sleep 100 & echo $! >> {pidfile}; sleep 100 & echo $! >> {pidfile}; echo $$ >> {pidfile}; wait", timeout=2))
    r = agg.results[0]
    assert r.outcome == "timeout" and "timed out after 2 s" in r.error
    assert agg.decision is None  # fail-open
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 3
    await until(lambda: pids_alive(pids) == [], GONE_S, "the hook's whole group gone")


@pytest.mark.asyncio
async def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(project):
    pidfile = project.root / "pids"
    agg = await fire(project, "Stop", {}, cmd(f"trap '' TERM; echo $$ > {pidfile}; while :; do sleep 0.05; done", timeout=2))
    assert agg.results[0].outcome == "timeout"
    pid = int(pidfile.read_text())
    await until(lambda: pids_alive([pid]) == [], GONE_S, "the shell that ignored SIGTERM gone")


@pytest.mark.asyncio
async def test_a_grandchild_holding_the_pipes_after_exit_does_not_hang_the_hook(project):
    pidfile = project.root / "pid"
    agg = await fire(project, "PostToolUse", {}, cmd(f"sleep 100 & echo $! > {pidfile}; echo done", timeout=20))
    assert agg.results[0].outcome == "success" and agg.results[0].text == "done"
    pid = int(pidfile.read_text())
    await until(lambda: pids_alive([pid]) == [], GONE_S, "the grandchild holding the pipes gone")


@pytest.mark.asyncio
async def test_missing_and_non_executable_scripts_fail_open_with_a_clear_error(project):
    script(project.hooks_dir / "noexec.sh", "#!/bin/sh\necho hi\n", executable=False)
    agg = await fire(project, "PreToolUse", PRE_BASH,
                     cmd(".claude/hooks/missing.sh", name="missing"), cmd(".claude/hooks/noexec.sh", name="noexec"))
    by = {r.hook_name: r for r in agg.results}
    assert by["missing"].outcome == "error" and by["missing"].exit_code == 127 and "not found" in by["missing"].error
    assert by["noexec"].outcome == "error" and by["noexec"].exit_code == 126 and "ermission denied" in by["noexec"].error
    assert agg.decision is None


@pytest.mark.asyncio
async def test_identical_commands_under_two_matchers_run_once(project):
    counter = project.root / "count"
    project.settings({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [cmd(f"echo x >> {counter}")]},
        {"matcher": "Ba.*", "hooks": [cmd(f"echo x >> {counter}")]},
    ]}})
    project.trust()
    with anyio.fail_after(20):
        async with running(project.load()) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
    assert len(agg.results) == 1 and counter.read_text() == "x\n"


class _ReadyRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.ready = anyio.Event()

    async def on_progress(self, progress) -> None:
        await super().on_progress(progress)
        if progress.line == "ready":
            self.ready.set()


@pytest.mark.asyncio
async def test_cancelling_fire_kills_the_hook_and_reports_cancelled(project):
    pidfile = project.root / "pid"
    project.settings(settings("PostToolUse", cmd(f"echo $$ > {pidfile}; echo ready; sleep 100", name="slow")))
    project.trust()
    rec = _ReadyRecorder()
    with anyio.fail_after(20):
        async with running(project.load(), rec) as runner:
            async with anyio.create_task_group() as tg:
                tg.start_soon(runner.fire, "PostToolUse", {}, session(project))
                await rec.ready.wait()
                tg.cancel_scope.cancel()
    assert pids_alive([int(pidfile.read_text())]) == []
    assert [r.outcome for r in rec.responses()] == ["cancelled"]
