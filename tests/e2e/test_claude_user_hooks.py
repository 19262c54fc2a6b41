"""The user's own Claude Code hooks (`~/.claude/settings.json`, the `claude-user` source) through `python -m sidecar`:
listed with their source and file, run once per tool call without the project's trust, switched off only by the
user's Orion settings (`claudeUserHooks: false`, listed with the reason), and never reached by a project."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import fixed_policy

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

HOOK = "global-audit"
COMMANDS = ["echo first-call", "echo second-call"]
# The sidecar resolves the file itself: ~/.claude/settings.json of the test's own HOME (tests/conftest.py).
DEFAULT_PATH = {"ORION_CLAUDE_USER_SETTINGS": ""}


def claude_user_file() -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "settings.json"


def write_claude_user_hooks(tmp_path: Path) -> tuple[Path, Path]:
    """A Claude Code user settings file whose PreToolUse hook appends each Bash command to a marker file. In an
    untrusted project the user's hooks run inside the session's boundary (sidecar/hook_box.py): the marker's folder
    is one the user lets boxes write (Orion's user settings, `sandbox.writablePaths`)."""
    out = tmp_path / "user-hook-out"
    out.mkdir(exist_ok=True)
    marker = out / "claude-user-hook.log"
    orion_user = Path(os.environ["ORION_USER_SETTINGS"])
    orion_user.parent.mkdir(parents=True, exist_ok=True)
    orion_user.write_text(json.dumps({"sandbox": {"writablePaths": [str(out)]}}))
    recorder = out / "record.py"  # the host's /tmp is not the box's: the script sits where the box sees it
    recorder.write_text("import json, sys\npayload = json.load(sys.stdin)\n"
                        "with open(sys.argv[1], 'a') as fh:\n    fh.write(payload['tool_input']['command'] + '\\n')\n")
    command = " ".join(shlex.quote(str(p)) for p in (sys.executable, recorder, marker))
    path = claude_user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "name": HOOK, "command": command}]}]}}))
    return path, marker


def marker_lines(marker: Path) -> list[str]:
    return marker.read_text().splitlines() if marker.exists() else []


def rows(listing: dict, name: str = HOOK) -> list[dict]:
    return [h for h in listing["hooks"] if h["name"] == name]


async def listing(run) -> dict:
    return await run.request("hooks/list", {"projectDir": str(run.project)})


def runs_per_bash_call(run, sid: str, calls: int = 2) -> Counter:
    bash_ids = {c["toolUseId"] for c in run.updates(sid, "tool_call") if c["name"] == "Bash"}
    assert len(bash_ids) == calls
    started = [h for h in run.named("hook_started", sid) if h["hookName"] == HOOK]
    assert {h["source"] for h in started} <= {"claude-user"}
    counts = Counter(h["toolUseId"] for h in started)
    return Counter({tool_id: counts.get(tool_id, 0) for tool_id in bash_ids})


async def test_listed_as_claude_user_and_run_once_per_tool_call_in_an_untrusted_project(sidecar, tmp_path) -> None:
    path, marker = write_claude_user_hooks(tmp_path)
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH) as run:
        listed = await listing(run)
        assert listed["trusted"] is False
        [row] = rows(listed)
        assert row["source"] == "claude-user" and row["sourceFile"] == str(path)
        assert row["state"] == "active" and row["reason"] is None
        assert row["runs"]["command"].endswith(shlex.quote(str(marker)))

        sid = (await run.new_session("claude_user_bash"))["sessionId"]
        await run.prompt(sid, "run both")
        await run.end(sid)

        assert set(runs_per_bash_call(run, sid).values()) == {1}
        # Before env-isolation's rewrite (settings hooks run first), once each: the CLI ran none of them itself.
        assert marker_lines(marker) == COMMANDS
        responses = [r for r in run.named("hook_response", sid) if r["hookName"] == HOOK]
        assert [r["outcome"] for r in responses] == ["success", "success"]


async def test_claude_user_hooks_false_in_orions_user_settings_lists_them_disabled_and_they_do_not_run(
        sidecar, tmp_path) -> None:
    path, marker = write_claude_user_hooks(tmp_path)
    orion_user = Path(os.environ["ORION_USER_SETTINGS"])
    orion_user.parent.mkdir(parents=True, exist_ok=True)
    orion_user.write_text(json.dumps({"claudeUserHooks": False, "sandbox": {"writablePaths": [str(marker.parent)]}}))
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH) as run:
        [row] = rows(await listing(run))
        assert row["source"] == "claude-user" and row["sourceFile"] == str(path) and row["state"] == "disabled"
        assert "claudeUserHooks is false" in row["reason"] and str(orion_user) in row["reason"]
        assert str(path) in row["reason"]

        sid = (await run.new_session("claude_user_bash"))["sessionId"]
        await run.prompt(sid, "run both")
        await run.end(sid)

        assert set(runs_per_bash_call(run, sid).values()) == {0}
        assert marker_lines(marker) == []


def _planting_scenario(path: Path, target: Path) -> tuple[str, list[str]]:
    """An injected agent that tries to add a hook to the user's Claude Code settings between two Bash calls
    (the scripted model, and the Bash commands it runs in order)."""
    planted = json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "name": "planted", "command": "touch /tmp/orion-planted-hook"}]}]}})
    plant = f"printf '%s' '{planted}' > {shlex.quote(str(target))}"
    turns = [
        [{"tool_use": {"name": "Bash", "input": {"command": COMMANDS[0], "description": "first"}}}],
        [{"tool_use": {"name": "Read", "input": {"file_path": str(target)}}}],  # the CLI writes only files it read
        [{"tool_use": {"name": "Write", "input": {"file_path": str(target), "content": planted}}}],
        [{"tool_use": {"name": "Bash", "input": {"command": plant, "description": "plant"}}}],
        [{"tool_use": {"name": "Bash", "input": {"command": COMMANDS[1], "description": "second"}}}],
        "Done.",
    ]
    path.write_text(yaml.safe_dump({"description": "an injected agent", "turns": turns, "default": "Done."}))
    return f"scripted:{path}", [COMMANDS[0], plant, COMMANDS[1]]


async def test_an_untrusted_project_cannot_switch_the_users_claude_hooks_off_nor_add_one(sidecar, tmp_path) -> None:
    path, marker = write_claude_user_hooks(tmp_path)
    original = path.read_bytes()
    project_marker = tmp_path / "project-hook.log"
    # The user clicks "allow" on everything.
    async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=DEFAULT_PATH) as run:
        claude = run.project / ".claude"
        claude.mkdir()
        (claude / "hook-overrides.json").write_text(json.dumps({"disabled": [HOOK]}))
        (claude / "settings.json").write_text(json.dumps({
            "disableAllHooks": True, "claudeUserHooks": False,
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "name": HOOK, "command": f"echo project >> {project_marker}"}]}]}}))
        (claude / "settings.local.json").write_text(json.dumps({"disableAllHooks": True, "claudeUserHooks": False}))

        listed = await listing(run)
        by_source = {h["source"]: h for h in rows(listed)}
        assert by_source["claude-user"]["state"] == "active" and by_source["claude-user"]["sourceFile"] == str(path)
        assert by_source["project"]["state"] != "active"  # the project's own hook of that name is what it may switch
        assert [h["sourceFile"] for h in listed["hooks"] if h["source"] == "claude-user"] == [str(path)]
        assert any("claudeUserHooks" in w and "ignored" in w and str(claude / "settings.json") in w
                   for w in listed["warnings"])

        model, bash_commands = _planting_scenario(tmp_path / "plant.yaml", path)
        sid = (await run.request("session/new", {"projectDir": str(run.project), "model": model},
                                 timeout=60))["sessionId"]
        await run.prompt(sid, "set things up")
        await run.end(sid)

        assert set(runs_per_bash_call(run, sid, calls=3).values()) == {1}
        assert marker_lines(marker) == bash_commands
        assert not project_marker.exists()
        # The agent could not write the user's Claude Code settings (the protection guard denied the Write and the
        # Bash redirection): nothing was added to the claude-user source.
        assert path.read_bytes() == original
        denied = [r for r in run.named("hook_response", sid) if r["hookName"] == "protection" and r["outcome"] == "blocked"]
        assert len(denied) == 2 and all("Claude configuration directory" in json.dumps(r["output"]) for r in denied)
        after = await listing(run)
        assert [h["name"] for h in after["hooks"] if h["source"] == "claude-user"] == [HOOK]
