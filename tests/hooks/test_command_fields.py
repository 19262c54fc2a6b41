"""Claude Code's command-hook fields through the public surface: `args` (exec form), `shell`, `if`, `once`, `async`,
`asyncRewake`, `statusMessage`; `python -m hooks validate / list / test` and the runner as a session drives it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hooks.support import Project, running, script, session
from tests.hooks.test_cli import run_cli

GIT_PUSH = {"tool_name": "Bash", "tool_input": {"command": "git push --force origin main"}}
ECHO_ARGV = "import json, sys; print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'additionalContext': json.dumps(sys.argv[1:])}}))"
GATE = """import json, sys
payload = json.load(sys.stdin)
if "--force" in payload["tool_input"]["command"]:
    sys.stderr.write(f"{sys.argv[1]}: force pushes are not allowed\\n")
    sys.exit(2)
"""


def hooks_json(event: str, *entries: dict[str, Any], matcher: str | None = "Bash") -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": list(entries)}
    if matcher is not None:
        group["matcher"] = matcher
    return {"hooks": {event: [group]}}


def fire(project: Project, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    out = run_cli("test", event, "--payload", "-", "--project", str(project.root), "--no-builtin",
                  stdin=json.dumps(payload))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def listing(project: Project) -> dict[str, Any]:
    out = run_cli("list", "--project", str(project.root), "--no-builtin", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# --------------------------------------------------------------------------- validate


@pytest.mark.parametrize(("entry", "said"), [
    ({"type": "command", "args": ["hook.js"]},
     '"command" is required (it is missing): in the exec form (no shell) it is the program and "args" its arguments'),
    ({"type": "command", "command": "node", "args": "hook.js"},
     'args: expected a list of strings, one per argument (exec form, {"type": "command", "command": "node", '
     '"args": ["hook.js"]}), got a string ("hook.js"): write ["hook.js"]'),
    ({"type": "command", "command": "node", "args": ["hook.js", 3]}, 'args[1]: expected a string, got a number (3): quote it, "3"'),
    ({"type": "command", "command": "node", "args": None}, "args: expected a list of strings"),
    ({"type": "command", "command": "x.sh", "shell": "zsh"}, 'shell: expected "bash" or "powershell", got "zsh"'),
    ({"type": "command", "command": "x.sh", "if": ["Bash"]}, 'if: expected a permission rule such as "Bash(git *)"'),
])
def test_validate_names_a_bad_entry_and_the_fix(project: Project, entry: dict[str, Any], said: str) -> None:
    path = project.settings(hooks_json("PreToolUse", entry))
    out = run_cli("validate", str(path))
    assert out.returncode == 1
    assert f"error: {path}: $.hooks.PreToolUse[0].hooks[0]: {said}" in out.stderr


def test_validate_says_where_claude_code_would_quietly_do_something_else(project: Project) -> None:
    path = project.settings({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "node script.js", "args": []},
            {"type": "command", "command": sys.executable, "args": ["-c", "pass"], "shell": "bash"},
        ]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true", "if": "Bash(git *)", "once": True}]}],
    }})
    out = run_cli("validate", str(path))
    assert out.returncode == 1
    where = f"{path}: $.hooks"
    # Exec form starts "node script.js" as one program name: no such program, so it fails every time (an error).
    assert (f"error: {where}.PreToolUse[0].hooks[0]: exec form starts \"command\" as one program, and no program is "
            "called 'node script.js'") in out.stderr
    assert f"warning: {where}.PreToolUse[0].hooks[1]: shell: 'bash' has no effect: with \"args\"" in out.stderr
    assert f"warning: {where}.Stop[0].hooks[0]: if: hook 'true' never runs: a condition is tested only on tool events" in out.stderr
    assert f"warning: {where}.Stop[0].hooks[0]: once: has effect only on a skill's hooks" in out.stderr


# --------------------------------------------------------------------------- exec form


def test_exec_form_passes_args_verbatim_with_no_shell(project: Project) -> None:
    project.settings(hooks_json("PreToolUse", {"type": "command", "command": sys.executable, "args": [
        "-c", ECHO_ARGV, "$HOME", "${HOME}", "${CLAUDE_PROJECT_DIR}/x", "a b; touch pwned", "`touch pwned`", "*", ""]}))
    project.trust()
    got = fire(project, "PreToolUse", GIT_PUSH)
    [result] = got["results"]
    assert result["outcome"] == "success", result
    # Only ${CLAUDE_PROJECT_DIR} is replaced, as Claude Code does; nothing is split, expanded, globbed or run.
    assert json.loads(got["aggregate"]["additionalContext"]) == [
        "$HOME", "${HOME}", f"{project.root}/x", "a b; touch pwned", "`touch pwned`", "*", ""]
    assert not (project.root / "pwned").exists()


def test_exec_form_exit2_blocks_with_the_command_and_args_as_the_model_reads_them(project: Project) -> None:
    script(project.root / "tools" / "gate.py", GATE)
    project.settings(hooks_json("PreToolUse", {"type": "command", "command": sys.executable,
                                               "args": ["${CLAUDE_PROJECT_DIR}/tools/gate.py", "git-guard"]}))
    project.trust()
    got = fire(project, "PreToolUse", GIT_PUSH)
    assert got["aggregate"]["decision"] == "deny"
    assert got["aggregate"]["reason"] == (f"[{sys.executable} ${{CLAUDE_PROJECT_DIR}}/tools/gate.py git-guard]: "
                                          "git-guard: force pushes are not allowed\n")
    [result] = got["results"]
    assert result["hook"] == "gate.py git-guard" and result["exitCode"] == 2


def test_a_missing_program_fails_the_hook_without_a_shell(project: Project) -> None:
    project.settings(hooks_json("PreToolUse", {"type": "command", "command": "no-such-program-xyz", "args": ["a"]}))
    project.trust()
    [result] = fire(project, "PreToolUse", GIT_PUSH)["results"]
    assert result["outcome"] == "error" and "could not start hook program" in result["error"]


def test_identical_means_same_command_args_shell_and_if(project: Project) -> None:
    script(project.root / "tools" / "gate.py", GATE)
    base = {"type": "command", "command": sys.executable, "args": ["${CLAUDE_PROJECT_DIR}/tools/gate.py"]}
    project.settings(hooks_json("PreToolUse",
                                {**base, "args": [*base["args"], "a"], "name": "a"},
                                {**base, "args": [*base["args"], "b"], "name": "b"},
                                {**base, "args": [*base["args"], "a"], "name": "a-again"},
                                {**base, "args": [*base["args"], "a"], "name": "a-if", "if": "Bash(git *)"},
                                {"type": "command", "command": "true", "name": "sh"},
                                {"type": "command", "command": "true", "name": "sh-bash", "shell": "bash"},
                                {"type": "command", "command": "true", "name": "pwsh", "shell": "powershell"}))
    states = {h["name"]: h["state"] for h in listing(project)["hooks"]}
    # `shell` unset is bash, as in Claude Code: those two are the same hook.
    assert states == {"a": "untrusted", "b": "untrusted", "a-again": "disabled", "a-if": "untrusted",
                      "sh": "untrusted", "sh-bash": "disabled", "pwsh": "untrusted"}


# --------------------------------------------------------------------------- trust and the listing


def test_the_listing_shows_the_exact_argv_and_trust_pins_the_script_the_args_name(project: Project) -> None:
    gate = script(project.root / "tools" / "gate.py", GATE)
    project.settings(hooks_json("PreToolUse", {"type": "command", "command": sys.executable,
                                               "args": ["${CLAUDE_PROJECT_DIR}/tools/gate.py", "a b", "new\nline"]}))
    [hook] = listing(project)["hooks"]
    assert hook["runs"]["argv"] == [sys.executable, str(gate), "a b", "new\nline"]
    assert hook["runs"]["shell"] is None and hook["runs"]["unprintable"] is True
    assert [f["path"] for f in hook["runs"]["files"]] == [sys.executable, str(gate)]
    text = run_cli("list", "--project", str(project.root), "--no-builtin").stdout
    # A JSON list: each word and its bounds exact; the newline cannot be shown as it is, and the line says so.
    assert (f'exec, no shell: ["{sys.executable}", "{gate}", "a b", "new\\nline"]  (shown escaped: it holds '
            "characters a terminal would not show as they are; see --json)") in text

    project.trust()
    assert fire(project, "PreToolUse", GIT_PUSH)["aggregate"]["decision"] == "deny"
    gate.write_text("import sys\nsys.exit(0)\n")  # the guard, gutted after review
    data = listing(project)
    assert data["trust"]["trusted"] is False
    assert {"path": "tools/gate.py", "change": "modified"} in data["trust"]["changes"]
    assert fire(project, "PreToolUse", GIT_PUSH)["results"] == []  # untrusted again: it does not run


# --------------------------------------------------------------------------- shell


def test_shell_bash_runs_sh_as_claude_code_does_and_powershell_needs_pwsh(project: Project, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no pwsh here
    project.settings(hooks_json("PreToolUse",
                                {"type": "command", "name": "bash", "shell": "bash",
                                 "command": "echo \"{\\\"systemMessage\\\": \\\"${BASH_VERSION:-sh}\\\"}\""},
                                {"type": "command", "name": "pwsh", "shell": "powershell", "command": "Write-Output hi"}))
    project.trust()
    got = fire(project, "PreToolUse", GIT_PUSH)
    by_name = {r["hook"]: r for r in got["results"]}
    assert by_name["bash"]["output"]["systemMessage"] == "sh"  # /bin/sh -c, not bash (tests/conformance)
    assert by_name["pwsh"]["outcome"] == "error"
    assert 'no PowerShell (pwsh or powershell) is on PATH; the hook did not run' in by_name["pwsh"]["error"]


# --------------------------------------------------------------------------- if


def test_if_selects_the_tool_calls_its_rule_matches(project: Project) -> None:
    log = project.root / "ran.txt"
    project.settings({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "name": name, "command": f"echo {name} >> {log}", "if": rule}
            for name, rule in (("git", "Bash(git *)"), ("push", "Bash(git push:*)"), ("npm", "Bash(npm *)"),
                               ("bash", "Bash"), ("env-ts", "Edit(src/**/*.ts)"), ("any-edit", "Edit"))]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "name": "ups", "command": f"echo ups >> {log}",
                                         "if": "Bash"}]}],
    }})
    project.trust()

    def ran(event: str, payload: dict[str, Any]) -> list[str]:
        log.unlink(missing_ok=True)
        fire(project, event, payload)
        return log.read_text().split() if log.exists() else []

    assert ran("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "cd repo && LANG=C git push -f 2>&1"}}) == [
        "git", "push", "bash"]
    assert ran("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "npm test"}}) == ["npm", "bash"]
    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(project.root / "src/a/b.ts"), "old_string": "x",
                                                "new_string": "y"}, "cwd": str(project.root)}
    assert ran("PreToolUse", edit) == ["env-ts", "any-edit"]
    assert ran("UserPromptSubmit", {"prompt": "hi"}) == []  # a condition on a non-tool event: never runs


# --------------------------------------------------------------------------- once, async, asyncRewake, statusMessage


@pytest.mark.asyncio
async def test_once_drops_a_skills_hook_after_its_first_success(project: Project) -> None:
    log = project.root / "once.txt"
    skill = project.claude / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"""---
name: deploy
description: Deploy.
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - {{type: command, command: "echo once >> {log}", name: first-check, once: true}}
        - {{type: command, command: "echo every >> {log}", name: every-check}}
---
Deploy.
""")
    project.trust()
    hookset = project.load()
    async with running(hookset) as runner:
        ctx = session(project, skill="deploy")
        for _ in range(3):
            await runner.fire("PreToolUse", dict(GIT_PUSH), ctx)
    assert log.read_text().split() == ["once", "every", "every", "every"]


def test_async_and_async_rewake_run_in_the_background_and_status_message_is_listed(project: Project) -> None:
    project.settings(hooks_json("PostToolUse",
                                {"type": "command", "command": "true", "name": "bg", "async": True},
                                {"type": "command", "command": "true", "name": "rewake", "asyncRewake": True,
                                 "statusMessage": "Running the tests\u2026"}))
    hooks = {h["name"]: h for h in listing(project)["hooks"]}
    assert hooks["bg"]["async"] is True and "asyncRewake" not in hooks["bg"]
    assert hooks["rewake"]["async"] is True and hooks["rewake"]["asyncRewake"] is True  # implies async
    assert hooks["rewake"]["statusMessage"] == "Running the tests\u2026"
