"""An exec-form command hook (`"command": <program>, "args": [...]`) in a real session through `python -m sidecar`: it runs
with its arguments and no shell, blocks a force push with the words the bare CLI gives the model, and lists exactly."""

from __future__ import annotations

import json
import sys

import pytest

from tests.e2e.conftest import result_text, tool_results

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

RUNNER = "${CLAUDE_PROJECT_DIR}/tools/run_hook.py"
REFUSAL = "Blocked: force pushes and hard resets rewrite history. Ask the user first.\n"


async def test_an_exec_form_guard_blocks_a_force_push_with_the_clis_words(sidecar) -> None:
    async with sidecar(project="exec_form") as run:
        sid = (await run.new_session("force_push", allowedTools=["Bash"]))["sessionId"]
        result = await run.prompt(sid, "Push my branch, forcefully.")

        assert result["stopReason"] == "end_turn"
        assert not (run.project / "pushed-marker").exists()
        requests = run.model_requests("force_push")
        [refused] = tool_results(requests[1])
        assert refused.get("is_error") is True
        # What Claude Code 2.1.330 writes for an exec-form hook's exit 2: the command and its args as written
        # (tests/conformance case command_exec_form_blocks_force_push agrees with the bare CLI).
        assert result_text(refused) == (f"PreToolUse:Bash hook error: [{sys.executable} {RUNNER} "
                                        f"pretool/bash/dangerous-command-blocker]: {REFUSAL}")
        # The next git command runs: the guard allows it, and the `if: Bash(git *)` audit hook runs beside it.
        assert (run.project / "version.txt").read_text().startswith("git version")
        starts = [json.loads(line) for line in (run.project / ".e2e" / "argv.jsonl").read_text().splitlines()]
        assert [s["argv"] for s in starts] == [
            ["pretool/bash/dangerous-command-blocker"],
            ["pretool/bash/dangerous-command-blocker"],
            # Verbatim: no shell expanded $HOME, split at the space, ran the `;` or the backquotes.
            ["pretool/bash/audit", "$HOME", "a b; touch injected", "`touch injected`"],
        ]
        assert not (run.project / "injected").exists()
        responses = [(r["hookName"], r["exitCode"]) for r in run.named("hook_response", sid)
                     if r["hookName"] in ("run_hook.py pretool/bash/dangerous-command-blocker", "git-audit")]
        assert responses == [("run_hook.py pretool/bash/dangerous-command-blocker", 2),
                             ("run_hook.py pretool/bash/dangerous-command-blocker", 0), ("git-audit", 0)]


async def test_the_listing_shows_the_exact_argv_and_pins_the_script_the_args_name(sidecar) -> None:
    async with sidecar(project="exec_form") as run:
        listing = await run.request("hooks/list", {"projectDir": str(run.project)})
        hooks = {h["name"]: h for h in listing["hooks"] if h["source"] == "project"}
        guard = hooks["run_hook.py pretool/bash/dangerous-command-blocker"]
        script = str(run.project / "tools" / "run_hook.py")
        assert guard["runs"]["argv"] == [sys.executable, script, "pretool/bash/dangerous-command-blocker"]
        assert guard["runs"]["shell"] is None
        assert [f["path"] for f in guard["runs"]["files"]] == [sys.executable, script]  # the program, its script
        audit = hooks["git-audit"]
        assert audit["if"] == "Bash(git *)" and audit["statusMessage"] == "Auditing the git command"
        assert audit["runs"]["argv"][2:] == ["pretool/bash/audit", "$HOME", "a b; touch injected", "`touch injected`"]

        # The script the args name (outside .claude/, which is pinned whole) is part of what was trusted: edited afterwards, the guard does not run on it.
        (run.project / "tools" / "run_hook.py").write_text("import sys\nsys.exit(0)\n")
        listing = await run.request("hooks/list", {"projectDir": str(run.project)})
        assert listing["trust"]["trusted"] is False
        assert {"path": "tools/run_hook.py", "change": "modified"} in listing["trust"]["changes"]
