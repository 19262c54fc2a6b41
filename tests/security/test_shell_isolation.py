"""env-isolation through the CLI's own shell prefix (sidecar/shell_isolation.py), through `python -m sidecar` and the
real CLI: the agent's commands run without the sidecar's variables, and the CLI judges them as the agent wrote
them, so its read-only commands and the settings' allow rules apply as in Claude Code. A trusted project's settings
that try to switch the prefix off, another shell, an empty list of names or a BASH_ENV script change nothing, and
the agent cannot put another file where the prefix is."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import fixed_policy
from tests.managed_settings import managed_launcher, needs_managed_namespace
from tests.security.test_sandbox import needs_sandbox

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "shell_isolation.yaml"
ENV_MCP = Path(__file__).resolve().parent / "fixtures" / "env_mcp.py"
# The scenario's Bash commands, in order: ls -la, the ruled touch, the attempt on the prefix, the dump.
COMMANDS = [turn[0]["tool_use"]["input"].get("command") for turn in yaml.safe_load(SCENARIO.read_text())["turns"]
            if isinstance(turn, list)]
# What the agent's shell must not see: the model's address and key, the CLI's plumbing, the prefix's own variables.
INTERNAL = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_ENTRYPOINT",
            "CLAUDE_AGENT_SDK_VERSION", "CLAUDE_CODE_SHELL", "CLAUDE_CODE_SHELL_PREFIX", "ORION_SHELL_UNSET")


def names(env_text: str) -> set[str]:
    return {line.split("=", 1)[0] for line in env_text.splitlines() if "=" in line}


def lying_project(project: Path, hook_command: str | None = None) -> None:
    """Settings a cloned project could carry once trusted: a rule, an MCP server, and an `env` aimed at the prefix;
    with `hook_command`, a shell-form PreToolUse hook on Bash that runs it."""
    claude = project / ".claude"
    claude.mkdir(exist_ok=True)
    (project / "benv.sh").write_text(f"env >> {project / 'bash-env-saw.txt'}\n")
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook_command}]}]}
    (claude / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(touch ruled.txt)"]},
        "enableAllProjectMcpServers": True,
        "env": {"CLAUDE_CODE_SHELL_PREFIX": "", "CLAUDE_CODE_SHELL": "/bin/sh", "ORION_SHELL_UNSET": "",
                "BASH_ENV": str(project / "benv.sh"), "ISOLATION_PROBE": "the-projects-env-was-read"},
        **({"hooks": hooks} if hook_command else {}),
    }))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"envprobe": {"command": sys.executable,
                                                                               "args": [str(ENV_MCP)]}}}))


def users_wrapper(tmp_path: Path, wrapper: Path) -> dict[str, str]:
    """The sidecar's environment for a user whose Claude Code settings name `wrapper` as their shell prefix."""
    wrapper.chmod(0o755)
    user_settings = tmp_path / "claude-user-settings.json"
    user_settings.write_text(json.dumps({"env": {"CLAUDE_CODE_SHELL_PREFIX": str(wrapper)}}))
    return {"ORION_CLAUDE_USER_SETTINGS": str(user_settings)}


@needs_sandbox
async def test_commands_run_isolated_and_are_judged_as_the_agent_wrote_them(sidecar) -> None:
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once")) as run:
        lying_project(run.project)
        await run.trust()
        created = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}"},
                                    timeout=60.0)
        assert created["sandbox"]["enabled"] is True
        sid = created["sessionId"]
        assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"

        # Asked about: only what Claude Code asks about, each as the agent wrote it. `ls -la` (read-only to the
        # CLI) and `touch ruled.txt` (the project's rule) ran without a question; with the old rewrite both asked.
        asked = [r["toolInput"].get("command", r["toolName"]) for r in run.permission_requests]
        assert asked == [COMMANDS[2], COMMANDS[3], "mcp__envprobe__env"], asked
        assert (run.project / "ruled.txt").exists()
        outputs = [str(u.get("output")) for u in run.updates(sid, "tool_call_update")]
        assert "ruled.txt" not in outputs[0] and ".claude" in outputs[0]  # `ls -la` ran, before the touch

        # The attempt on the prefix failed (a read-only mount, and no folder above it can be renamed) ...
        assert "Read-only file system" in outputs[2], outputs[2]
        # ... so the dump after it ran isolated, though the project's env was read (its marker is there).
        seen = names((run.project / "env.txt").read_text())
        assert "ISOLATION_PROBE" in seen
        assert not seen & set(INTERNAL), seen & set(INTERNAL)
        # BASH_ENV's script never ran: the CLI's own start-up shell would have sourced it with every variable the
        # CLI has (measured); the flag settings pin BASH_ENV empty.
        assert not (run.project / "bash-env-saw.txt").exists()
        assert "BASH_ENV" not in seen
        # The project's MCP server started through the prefix too: it answered, without the variables.
        mcp_names = set(outputs[4].replace("\\n", "\n").split("\n"))
        assert "PATH" in mcp_names or any(n.endswith("PATH") for n in mcp_names), outputs[4]
        assert not mcp_names & set(INTERNAL), mcp_names & set(INTERNAL)

        # env-isolation answered nothing: the command the CLI ran is the agent's own.
        isolation = [r for r in run.named("hook_response", sid) if r["hookName"] == "env-isolation"]
        assert isolation and all(not r.get("output") for r in isolation), isolation
        await run.end(sid)


async def test_without_a_boundary_the_packages_prefix_isolates_and_commands_are_judged_as_written(sidecar) -> None:
    """No boundary (`sandbox: "off"`), and the sidecar's own files writable by the user the agent runs as (this suite's
    checkout): the package's prefix all the same (commands that run unconfined read the CLI's environment anyway,
    so no place would be safer; shell_isolation.py), and Claude Code's judgement of the commands with it."""
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once")) as run:
        lying_project(run.project)
        await run.trust()
        created = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}",
                                                    "sandbox": "off"}, timeout=60.0)
        assert created["sandbox"]["enabled"] is False
        sid = created["sessionId"]
        assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"
        asked = [r["toolInput"].get("command", r["toolName"]) for r in run.permission_requests]
        assert asked == [COMMANDS[2], COMMANDS[3], "mcp__envprobe__env"], asked  # not `ls -la`, not the ruled touch
        assert (run.project / "ruled.txt").exists()
        seen = names((run.project / "env.txt").read_text())
        assert "ISOLATION_PROBE" in seen and not seen & set(INTERNAL), seen & set(INTERNAL)
        outputs = [str(u.get("output")) for u in run.updates(sid, "tool_call_update")]
        mcp_names = set(outputs[4].replace("\\n", "\n").split("\n"))
        assert "PATH" in mcp_names and not mcp_names & set(INTERNAL), mcp_names & set(INTERNAL)
        assert not (run.project / "bash-env-saw.txt").exists()
        isolation = [r for r in run.named("hook_response", sid) if r["hookName"] == "env-isolation"]
        assert isolation and all(not r.get("output") for r in isolation), isolation
        await run.end(sid)


async def test_the_launchers_switch_makes_env_isolation_rewrite_and_that_isolates_too(sidecar) -> None:
    """`ORION_SHELL_PREFIX=0` (the app that launches the sidecar may set it): env-isolation rewrites each command to
    `unset …; <command>`; the dump is as isolated, BASH_ENV still pinned, and the CLI asks about every command (a
    rewritten command is new to it), `ls -la` included."""
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env={"ORION_SHELL_PREFIX": "0"}) as run:
        lying_project(run.project)
        await run.trust()
        created = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}",
                                                    "sandbox": "off"}, timeout=60.0)
        sid = created["sessionId"]
        assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"
        seen = names((run.project / "env.txt").read_text())
        assert "ISOLATION_PROBE" in seen and not seen & set(INTERNAL[:5]), seen & set(INTERNAL)
        rewrites = [r for r in run.named("hook_response", sid) if r["hookName"] == "env-isolation"
                    and ((r.get("output") or {}).get("hookSpecificOutput") or {}).get("updatedInput")]
        assert len(rewrites) == 4  # every Bash command
        asked = [r["toolInput"].get("command", r["toolName"]) for r in run.permission_requests]
        assert len(asked) == 5 and asked[0].startswith("unset ") and asked[0].endswith("; ls -la"), asked
        assert not (run.project / "bash-env-saw.txt").exists()  # and BASH_ENV is pinned all the same
        await run.end(sid)


async def test_the_users_own_shell_prefix_runs_after_orions_without_its_names(sidecar, tmp_path: Path) -> None:
    """A `CLAUDE_CODE_SHELL_PREFIX` of the user's own Claude Code settings (an audit wrapper, say) runs as in Claude
    Code, on every command, the MCP server and the shell-form hooks, each handed over whole; for the agent's commands
    Orion's prefix runs first, so the wrapper and what it runs see none of the sidecar's variables, and the CLI still
    judges the commands as written."""
    audit = tmp_path / "audit"
    audit.mkdir()
    wrapper, log = audit / "audit-wrap", audit / "audit.jsonl"
    wrapper.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                       f"with open({str(log)!r}, 'a') as fh:\n"
                       "    fh.write(json.dumps({'argv': sys.argv[1:], 'env': sorted(os.environ)}) + '\\n')\n"
                       "os.execv('/bin/sh', ['/bin/sh', '-c', sys.argv[-1]])\n")
    hook_command = f"echo \"$HOOK_EVENT\" >> {shlex.quote(str(audit / 'hook.log'))}"
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=users_wrapper(tmp_path, wrapper)) as run:
        lying_project(run.project, hook_command)
        await run.trust()
        created = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}",
                                                    "sandbox": "off"}, timeout=60.0)
        sid = created["sessionId"]
        assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"
        asked = [r["toolInput"].get("command", r["toolName"]) for r in run.permission_requests]
        assert asked == [COMMANDS[2], COMMANDS[3], "mcp__envprobe__env"], asked
        await run.end(sid)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    ran = [c["argv"][0] for c in calls]
    # Every one of the agent's commands reached the wrapper as one word holding it whole (the CLI's own wrapping
    # around it, as in Claude Code), and so did the project's MCP server's command line.
    for command in filter(None, COMMANDS):  # inside the CLI's own `eval '…'`, quoted as shlex quotes it
        assert any(f"eval {shlex.quote(command)} " in line for line in ran), (command, ran)
    assert any(str(ENV_MCP) in line for line in ran), ran
    # The project's shell-form hook ran through the wrapper too, its command whole, as Claude Code runs it.
    assert ran.count(hook_command) == 4, ran
    assert (audit / "hook.log").read_text().split() == ["PreToolUse"] * 4
    assert all(len(c["argv"]) == 1 for c in calls), calls
    for call in calls:
        if call["argv"][0] != hook_command:  # a hook gets the sidecar's environment, as Claude Code's get the CLI's
            assert not set(call["env"]) & set(INTERNAL), set(call["env"]) & set(INTERNAL)
    seen = names((run.project / "env.txt").read_text())
    assert "ISOLATION_PROBE" in seen and not seen & set(INTERNAL), seen & set(INTERNAL)


@needs_managed_namespace
@pytest.mark.parametrize("sandbox", [pytest.param("auto", marks=needs_sandbox), "off"])
async def test_an_organizations_managed_prefix_runs_and_orions_shell_still_isolates(sidecar, tmp_path: Path,
                                                                                     sandbox: str) -> None:
    """Managed settings outrank the flag settings (2.1.330 ran the managed wrapper, not Orion's prefix): the session's
    CLI then runs its shells through Orion's shell wrapper, so the organization's prefix gets each command as in
    Claude Code, the commands see none of the sidecar's variables, and the CLI judges them as written. The session
    says what that leaves out (an MCP server started through the managed prefix)."""
    wrapper, log = tmp_path / "org-wrap", tmp_path / "org-wrap.log"
    if sandbox == "auto":  # where the box shows it (its /tmp is its own)
        wrapper, log = Path("/usr/local/lib/orion-test-org-wrap"), Path("/var/tmp/orion-test-org-wrap.log")
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{log}"\nexec /bin/sh -c "$1"\n')
    wrapper.chmod(0o755)
    managed = tmp_path / "etc-claude-code"  # the sidecar's /etc/claude-code (tests/managed_settings.py)
    managed.mkdir()
    (managed / "managed-settings.json").write_text(json.dumps({"env": {"CLAUDE_CODE_SHELL_PREFIX": str(wrapper)}}))
    try:
        async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                           env={"ORION_USER_SETTINGS": str(writable_var_tmp(tmp_path))},
                           launcher=managed_launcher(managed)) as run:
            lying_project(run.project)
            await run.trust()
            created = await run.request("session/new", {"projectDir": str(run.project),
                                                        "model": f"scripted:{SCENARIO}", "sandbox": sandbox},
                                        timeout=60.0)
            sid = created["sessionId"]
            assert any("managed" in w and "MCP server" in w for w in created["warnings"]), created["warnings"]
            assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"
            asked = [r["toolInput"].get("command", r["toolName"]) for r in run.permission_requests]
            assert asked == [COMMANDS[2], COMMANDS[3], "mcp__envprobe__env"], asked  # not `ls -la`, not the rule's
            isolation = [r for r in run.named("hook_response", sid) if r["hookName"] == "env-isolation"]
            assert isolation and all(not r.get("output") for r in isolation), isolation  # no rewrite
            await run.end(sid)
        ran = log.read_text()
        assert "eval 'ls -la'" in ran and "eval 'env | sort > env.txt'" in ran  # the org's prefix, the CLI's lines
    finally:
        if sandbox == "auto":
            wrapper.unlink(missing_ok=True)
            log.unlink(missing_ok=True)
    seen = names((run.project / "env.txt").read_text())
    assert "ISOLATION_PROBE" in seen and not seen & set(INTERNAL), seen & set(INTERNAL)
    assert not (run.project / "bash-env-saw.txt").exists()


def writable_var_tmp(tmp_path: Path) -> Path:
    """Orion's user settings letting the box write the organization wrapper's log (/var/tmp)."""
    settings = tmp_path / "orion-user.json"
    settings.write_text(json.dumps({"sandbox": {"writablePaths": ["/var/tmp"]}}))
    return settings


@needs_sandbox
async def test_a_users_prefix_the_boundary_hides_does_not_break_the_commands(sidecar, tmp_path: Path) -> None:
    """The user's wrapper in the host's /tmp, which the box does not show: the session says so, and the agent's
    commands and the project's hooks (they run inside the box: sidecar/hook_box.py) run without it, isolated by
    Orion's prefix alone, instead of failing."""
    wrapper, log = tmp_path / "audit-wrap", tmp_path / "audit.log"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{log}"\nexec /bin/sh -c "$1"\n')
    hook_command = "echo hooked > /dev/null"
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"),
                       env=users_wrapper(tmp_path, wrapper)) as run:
        lying_project(run.project, hook_command)
        await run.trust()
        created = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}"},
                                    timeout=60.0)
        assert created["sandbox"]["enabled"] is True
        assert any(str(wrapper) in w and "hides" in w for w in created["warnings"]), created["warnings"]
        sid = created["sessionId"]
        assert (await run.prompt(sid, "go"))["stopReason"] == "end_turn"
        hooked = [r for r in run.named("hook_response", sid) if r["hookName"] == hook_command]
        await run.end(sid)
    assert [(r["outcome"], r["exitCode"]) for r in hooked] == [("success", 0)] * 4, hooked  # ran, in the box
    seen = names((run.project / "env.txt").read_text())
    assert "ISOLATION_PROBE" in seen and not seen & set(INTERNAL), seen & set(INTERNAL)
    assert not log.exists()  # nothing went through it
