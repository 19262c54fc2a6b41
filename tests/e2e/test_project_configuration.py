"""The project's own Claude Code configuration reaches the CLI once the project is trusted, and not before; settings
hooks still run once, in the sidecar; `settingSources` and `builtinHooks` let the frontend choose."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hooks.builtin import BUILTIN_HOOK_NAMES
from sidecar.sandbox import backend_problem
from tests.e2e.conftest import fixed_policy

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

CODEWORD = "PROJECT-MEMO-ultramarine-otter"
BUILTIN_SOURCE = "builtin"
# Every built-in hook, env-isolation included, where the session has an OS boundary: env-isolation then works through
# the CLI's shell prefix and leaves the command as the agent wrote it, so the settings' allow rules apply. Without
# a boundary (and with this suite's own files writable) it rewrites the command, and the CLI (2.1.330) asks about a
# rewritten command whatever the rules say (docs/FIDELITY.md): there, every built-in but env-isolation.
BUILTINS = (BUILTIN_HOOK_NAMES if backend_problem(os.environ.get("PATH")) is None
            else [name for name in BUILTIN_HOOK_NAMES if name != "env-isolation"])


def configure(project: Path, allow: list[str], hook_log: Path | None = None) -> None:
    claude = project / ".claude"
    claude.mkdir(exist_ok=True)
    settings: dict = {"permissions": {"allow": allow}}
    if hook_log is not None:
        settings["hooks"] = {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "name": "count-bash", "command": f"echo ran >> {hook_log}"}]}]}
    (claude / "settings.json").write_text(json.dumps(settings))
    (project / "CLAUDE.md").write_text(f"# Project memo\n\nThe codeword is {CODEWORD}.\n")


def request_texts(run, scenario: str = "config_bash") -> str:
    return json.dumps([r["body"] for r in run.model_requests(scenario)])


async def test_a_trusted_projects_rules_and_claude_md_reach_the_cli_and_its_hooks_run_once(sidecar, tmp_path) -> None:
    hook_log = tmp_path / "notes" / "hook.log"  # in the project: its hooks run in the session's hook box
    async with sidecar(project="notes", trust=False) as run:
        configure(run.project, ["Bash"], hook_log)
        await run.trust()
        created = await run.new_session("config_bash", builtinHooks=list(BUILTINS))
        assert created["settings"] == {"sources": ["user", "project", "local"], "withheld": [], "reason": None}
        sid = created["sessionId"]
        await run.prompt(sid, "run it")

        assert CODEWORD in request_texts(run)  # CLAUDE.md reached the model
        assert run.permission_requests == []  # the project's allow rule reached the CLI and was honoured
        output = "".join(str(u.get("output")) for u in run.updates(sid, "tool_call_update"))
        assert "from-bash" in output and (run.project / "from-bash.txt").exists()
        # The settings hook ran once per Bash call, in the sidecar: the CLI read the file but ran none of its hooks.
        started = [h for h in run.named("hook_started", sid) if h["hookName"] == "count-bash"]
        assert len(started) == 1 and hook_log.read_text().splitlines() == ["ran"]


async def test_an_untrusted_project_that_allows_every_tool_still_gets_the_prompt(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        configure(run.project, ["Bash(*)", "Bash"])
        created = await run.new_session("config_bash", builtinHooks=list(BUILTINS))
        assert created["settings"]["sources"] == ["user"]
        assert created["settings"]["withheld"] == ["project", "local"]
        assert "not trusted" in created["settings"]["reason"]
        await run.prompt(created["sessionId"], "run it")

        assert [r["toolName"] for r in run.permission_requests] == ["Bash"]
        assert CODEWORD not in request_texts(run)


async def test_no_setting_sources_reads_nothing_even_when_trusted(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        configure(run.project, ["Bash"])
        await run.trust()
        created = await run.new_session("config_bash", settingSources=[], builtinHooks=list(BUILTINS))
        assert created["settings"] == {"sources": [], "withheld": [], "reason": None}
        await run.prompt(created["sessionId"], "run it")
        assert [r["toolName"] for r in run.permission_requests] == ["Bash"]
        assert CODEWORD not in request_texts(run)


async def test_builtin_hooks_off_or_chosen_by_name(sidecar) -> None:
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once")) as run:
        off = await run.new_session("config_bash", builtinHooks=False)
        await run.prompt(off["sessionId"], "run it")
        assert [h for h in run.named("hook_started", off["sessionId"]) if h["source"] == BUILTIN_SOURCE] == []

        only = await run.new_session("config_bash", builtinHooks=["protection"])
        await run.prompt(only["sessionId"], "run it")
        names = {h["hookName"] for h in run.named("hook_started", only["sessionId"]) if h["source"] == BUILTIN_SOURCE}
        assert names == {"protection"}

        with pytest.raises(Exception) as info:
            await run.new_session("config_bash", builtinHooks=["protectoin"])
        assert "protectoin" in str(getattr(info.value, "message", info.value))


@pytest.mark.parametrize("trusted", [True, False])
async def test_a_real_model_session_honours_a_trusted_projects_rules_the_users_own_cli_never_trusted(
        sidecar, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted: bool) -> None:
    """A real-model session's CLI reads the user's own config, which Orion never writes; the user never opened this
    project in `claude`, so the CLI would ignore its allow rules (measured). Orion's trust carries them in the flag
    settings; an untrusted project's rules reach nothing."""
    from sidecar.sessions import cli_trusts_workspace
    from tests.e2e.test_real_model_credentials import OFFLINE, scripted_gateway

    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    config = tmp_path / "users-claude"  # the user's Claude Code config: no trust recorded for the project
    config.mkdir()
    with scripted_gateway(tmp_path, probe="touch ruled.txt") as (url, _log):
        env = {**OFFLINE, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "gateway-key-not-a-real-one",
               "CLAUDE_CONFIG_DIR": str(config)}
        async with sidecar(project="notes", trust=False, env=env) as run:  # a question is refused
            configure(run.project, ["Bash(touch ruled.txt)"])
            if trusted:
                await run.trust()
            new = await run.request("session/new", {"projectDir": str(run.project)}, timeout=90.0)
            await run.prompt(new["sessionId"], "run it", timeout=90.0)
            await run.end(new["sessionId"])
            asked = [r["toolName"] for r in run.permission_requests]
    # Orion wrote no trust into the user's own config: the bare `claude` still asks the user about this project.
    assert not cli_trusts_workspace(config, {"CLAUDE_CONFIG_DIR": str(config)}, run.project)
    if trusted:
        assert asked == [] and (run.project / "ruled.txt").exists()
    else:
        assert asked == ["Bash"] and not (run.project / "ruled.txt").exists()
