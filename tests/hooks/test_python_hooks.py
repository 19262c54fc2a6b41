"""Python hooks in the warm launcher: results, exit codes, a crash, a hang, an edit between calls, and the launcher staying warm."""

from __future__ import annotations

import anyio
import pytest

from tests.hooks.support import PRE_BASH, Recorder, pids_alive, running, session, settings


def py(script: str, **extra):
    return {"type": "python", "script": script, **extra}


def launcher_pids(runner) -> set[int]:
    return {l.proc.pid for l in runner.executors["python"]._all}


@pytest.fixture
def trusted(project):
    def setup(event, *entries, matcher=None):
        project.settings(settings(event, *entries, matcher=matcher))
        project.trust()
        return project.load()
    return setup


@pytest.mark.asyncio
async def test_run_returns_a_decision_and_sees_env_and_payload(project, trusted):
    (project.hooks_dir / "gate.py").write_text(
        "import os\n"
        "def run(payload):\n"
        "    print('checking', payload['tool_input']['command'])\n"
        "    return {'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'deny',\n"
        "            'permissionDecisionReason': os.environ['HOOK_EVENT'] + ' ' + os.environ['SESSION_ID'] + ' ' + os.getcwd()}}\n"
    )
    rec = Recorder()
    with anyio.fail_after(30):
        async with running(trusted("PreToolUse", py("gate.py", name="gate")), rec) as runner:
            agg = await runner.fire("PreToolUse", PRE_BASH, session(project, "py-1"))
    assert agg.decision == "deny" and agg.reason == f"PreToolUse py-1 {project.root}"
    assert agg.results[0].hook_type == "python" and agg.results[0].stdout == "checking ls\n"
    assert rec.progress_lines("gate") == ["checking ls"]


@pytest.mark.asyncio
async def test_async_run_printed_json_and_sys_exit_2(project, trusted):
    (project.hooks_dir / "a.py").write_text(
        "import asyncio\nasync def run(p):\n    await asyncio.sleep(0)\n    return 'plain context'\n")
    (project.hooks_dir / "b.py").write_text(
        "import json\ndef run(p):\n    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit', 'additionalContext': 'from print'}}))\n")
    (project.hooks_dir / "c.py").write_text(
        "import sys\ndef run(p):\n    print('no secrets in prompts', file=sys.stderr)\n    sys.exit(2)\n")
    with anyio.fail_after(30):
        async with running(trusted("UserPromptSubmit", py("a.py"), py("b.py"), py("c.py"))) as runner:
            agg = await runner.fire("UserPromptSubmit", {"prompt": "x"}, session(project))
    assert [r.outcome for r in agg.results] == ["success", "success", "blocked"]
    assert agg.additional_context == "plain context\nfrom print"
    assert agg.decision == "block" and agg.reason == "no secrets in prompts\n"


@pytest.mark.asyncio
async def test_a_crashing_hook_fails_alone_with_its_traceback_and_the_launcher_lives(project, trusted):
    (project.hooks_dir / "boom.py").write_text("def helper():\n    raise RuntimeError('kaboom')\n\ndef run(p):\n    helper()\n")
    (project.hooks_dir / "ok.py").write_text("def run(p):\n    return None\n")
    with anyio.fail_after(30):
        async with running(trusted("PostToolUse", py("boom.py"))) as runner:
            agg = await runner.fire("PostToolUse", {}, session(project))
            pids = launcher_pids(runner)
            r = agg.results[0]
            assert (r.outcome, r.error) == ("error", "RuntimeError: kaboom")
            assert "in helper" in r.traceback and "boom.py" in r.traceback
            assert agg.decision is None
            agg = await runner.fire("PostToolUse", {}, session(project))
            assert launcher_pids(runner) == pids and pids_alive(list(pids)) == list(pids)


@pytest.mark.asyncio
async def test_a_hard_crash_kills_only_that_hook_and_the_launcher_respawns(project, trusted):
    (project.hooks_dir / "die.py").write_text("import os\ndef run(p):\n    os._exit(9)\n")
    (project.hooks_dir / "ok.py").write_text("def run(p):\n    return 'fine'\n")
    project.settings({"hooks": {"Stop": [{"hooks": [py("die.py")]}], "SessionStart": [{"hooks": [py("ok.py")]}]}})
    project.trust()
    with anyio.fail_after(30):
        async with running(project.load()) as runner:
            agg = await runner.fire("Stop", {}, session(project))
            assert agg.results[0].outcome == "error" and "exited (code 9)" in agg.results[0].error
            agg = await runner.fire("SessionStart", {"source": "startup"}, session(project))
            assert agg.results[0].outcome == "success" and agg.additional_context == "fine"


@pytest.mark.asyncio
async def test_a_hang_times_out_kills_the_launcher_and_the_next_call_works(project):
    (project.hooks_dir / "hang.py").write_text("import time\ndef run(p):\n    time.sleep(100)\n")
    (project.hooks_dir / "ok.py").write_text("def run(p):\n    return 'after'\n")
    project.settings({"hooks": {"Stop": [{"hooks": [py("hang.py", timeout=0.5)]}], "SessionStart": [{"hooks": [py("ok.py")]}]}})
    project.trust()
    with anyio.fail_after(30):
        async with running(project.load()) as runner:
            await runner.executors["python"].warm()
            first = launcher_pids(runner)
            agg = await runner.fire("Stop", {}, session(project))
            assert agg.results[0].outcome == "timeout" and agg.decision is None
            assert pids_alive(list(first)) == []
            agg = await runner.fire("SessionStart", {"source": "startup"}, session(project))
            assert agg.additional_context == "after"
            assert launcher_pids(runner).isdisjoint(first)


@pytest.mark.asyncio
async def test_an_edited_hook_is_reloaded_between_calls_without_a_new_launcher(project, trusted):
    hook = project.hooks_dir / "ctx.py"
    hook.write_text("def run(p):\n    return 'version one'\n")
    with anyio.fail_after(30):
        async with running(trusted("SessionStart", py("ctx.py"))) as runner:
            agg = await runner.fire("SessionStart", {"source": "startup"}, session(project))
            assert agg.additional_context == "version one"
            pids = launcher_pids(runner)
            hook.write_text("def run(p):\n    return 'version two, longer'\n")
            # Edited after trust: the new code does not run on the old trust...
            agg = await runner.fire("SessionStart", {"source": "startup"}, session(project))
            assert agg.additional_context is None
            assert "changed since the project was trusted" in agg.results[0].error
            # ...until the user trusts it again; then the warm launcher reloads the module.
            project.trust()
            runner.reload()
            agg = await runner.fire("SessionStart", {"source": "startup"}, session(project))
            assert agg.additional_context == "version two, longer"
            assert launcher_pids(runner) == pids


@pytest.mark.asyncio
async def test_a_module_without_run_and_a_missing_script_are_errors(project, trusted):
    (project.hooks_dir / "norun.py").write_text("x = 1\n")
    with anyio.fail_after(30):
        async with running(trusted("Stop", py("norun.py"), py("ghost.py"))) as runner:
            agg = await runner.fire("Stop", {}, session(project))
    errors = [r.error for r in agg.results]
    assert "defines no run(payload) function" in errors[0]
    assert "does not exist" in errors[1]


@pytest.mark.asyncio
async def test_aclose_stops_the_launchers(project, trusted):
    (project.hooks_dir / "ok.py").write_text("def run(p):\n    return None\n")
    with anyio.fail_after(30):
        async with running(trusted("Stop", py("ok.py"))) as runner:
            await runner.fire("Stop", {}, session(project))
            pids = launcher_pids(runner)
        assert pids and pids_alive(list(pids)) == []
