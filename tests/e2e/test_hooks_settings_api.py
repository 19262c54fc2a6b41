"""The hooks API of an app's settings page, through `python -m sidecar`: read a settings file's hooks, add, change,
move and remove one, turn one off and on; each edit checked by `hooks validate`'s own analysis before anything is
written, refused when the file changed since it was read, never written through a project's link; a project file
edited from the app waits for the user's review like any other change, and live sessions pick edits up at once."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipc.errors import RpcError
from tests.e2e.conftest import REPO_ROOT, open_sidecar

pytestmark = [pytest.mark.asyncio]

SAY = {"type": "command", "name": "say-hello", "command": "printf added-by-the-app"}
SETTLED = {"env": {"KEEP_ME": "1"}, "permissions": {"allow": ["Bash(ls:*)"]}, "model": "sonnet"}


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def project_settings(run: Any) -> Path:
    return run.project / ".claude" / "settings.json"


async def read(run: Any, target: str = "project") -> dict[str, Any]:
    params = {"target": target, **({"projectDir": str(run.project)} if target in ("project", "local") else {})}
    return await run.request("hooks/settings", params)


async def context_of_a_prompt(run: Any, **scope: Any) -> str | None:
    """What the UserPromptSubmit hooks give the model for one prompt, through the real runner (no agent)."""
    got = await run.request("hooks/test", {**(scope or {"projectDir": str(run.project)}),
                                           "event": "UserPromptSubmit", "payload": {"prompt": "hello"}})
    return got["aggregate"]["additionalContext"]


def validate_cli(settings: Path) -> list[str]:
    """What `python -m hooks validate` prints as errors for a file on disk."""
    done = subprocess.run([sys.executable, "-m", "hooks", "validate", str(settings)], capture_output=True, text=True,
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    return [line.removeprefix("error: ") for line in done.stderr.splitlines() if line.startswith("error: ")]


async def test_a_project_hook_added_from_the_app_waits_for_review_then_runs(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        settings = project_settings(run)
        settings.parent.mkdir()
        settings.write_text(json.dumps(SETTLED, indent=4))
        await run.trust()
        before = await read(run)
        assert before["exists"] and before["digest"] == digest(settings) and before["hooks"] == {}

        added = await run.request("hooks/add", {"target": "project", "projectDir": str(run.project),
                                                "digest": before["digest"], "event": "UserPromptSubmit", "hook": SAY})
        assert added["at"] == {"event": "UserPromptSubmit", "group": 0, "index": 0}
        assert added["digest"] == digest(settings) and added["path"] == str(settings)
        written = json.loads(settings.read_text())
        assert list(written) == [*SETTLED, "hooks"] and {k: written[k] for k in SETTLED} == SETTLED  # kept, in order
        assert written["hooks"] == {"UserPromptSubmit": [{"hooks": [SAY]}]}

        # A change to the project like any other: its hooks wait for the user's review.
        assert added["trusted"] is False
        [row] = [h for h in (await run.request("hooks/list", {"projectDir": str(run.project)}))["hooks"]
                 if h["name"] == "say-hello"]
        assert row["state"] == "untrusted", row
        assert row["at"] == added["at"] and row["sourceFile"] == str(settings)
        assert not await context_of_a_prompt(run)

        trusted = await run.request("hooks/trust", {"projectDir": str(run.project), "hash": added["trustHash"]})
        assert trusted["trusted"] is True
        assert await context_of_a_prompt(run) == "added-by-the-app"


async def test_an_edit_validate_refuses_writes_nothing_and_says_what_validate_says(sidecar, tmp_path: Path) -> None:
    async with sidecar(project="notes") as run:
        read_first = await read(run)
        assert {k: v for k, v in read_first.items() if v is not None} == {
            "target": "project", "path": str(project_settings(run)), "exists": False, "hooks": {}, "disabled": []}
        script = run.project / "gate.sh"
        script.write_text("#!/bin/sh\nexit 0\n")  # not executable: the hook would fail every time it runs
        bad_hook = {"type": "command", "name": "gate", "command": str(script)}
        for event, matcher, hook in (("PreToolUse", "Bash(", SAY), ("PreToolUse", "Bash", bad_hook),
                                     ("PreToolUse", None, {"type": "command"})):
            with pytest.raises(RpcError) as refused:
                await run.request("hooks/add", {"target": "project", "projectDir": str(run.project), "digest": None,
                                                "event": event, "matcher": matcher, "hook": hook})
            assert refused.value.code == -32602
            assert not project_settings(run).exists()  # nothing written, not even an empty file
            # The same content written by hand: `python -m hooks validate` reports the same errors.
            by_hand = tmp_path / "by-hand" / run.project.name
            by_hand.mkdir(parents=True, exist_ok=True)
            (by_hand / "gate.sh").write_text(script.read_text())
            (by_hand / ".claude").mkdir(exist_ok=True)
            group: dict[str, Any] = {"hooks": [hook]} if matcher is None else {"matcher": matcher, "hooks": [hook]}
            (by_hand / ".claude" / "settings.json").write_text(json.dumps({"hooks": {event: [group]}}))
            expected = [e.replace(str(by_hand), str(run.project)) for e in validate_cli(by_hand / ".claude" / "settings.json")]
            assert expected and refused.value.data["errors"] == expected, (refused.value.data, expected)
        with pytest.raises(RpcError) as unknown:
            await run.request("hooks/add", {"target": "project", "projectDir": str(run.project), "digest": None,
                                            "event": "PreTooluse", "hook": SAY})
        assert unknown.value.code == -32602 and "unknown hook event 'PreTooluse'" in unknown.value.message


async def test_a_file_changed_since_it_was_read_is_not_written(sidecar) -> None:
    async with sidecar(project="notes") as run:
        settings = project_settings(run)
        settings.parent.mkdir()
        settings.write_text(json.dumps({"hooks": {}}))
        seen = await read(run)
        settings.write_text(json.dumps({"hooks": {}, "env": {"TYPED_IN_AN_EDITOR": "1"}}))  # another window's edit
        with pytest.raises(RpcError) as stale:
            await run.request("hooks/add", {"target": "project", "projectDir": str(run.project),
                                            "digest": seen["digest"], "event": "Stop", "hook": SAY})
        assert stale.value.code == -31008
        assert stale.value.data["currentDigest"] == digest(settings) != seen["digest"]
        assert json.loads(settings.read_text())["env"] == {"TYPED_IN_AN_EDITOR": "1"}  # the other edit is kept


async def test_a_projects_link_is_never_written_through(sidecar, tmp_path: Path) -> None:
    """A cloned project's `.claude/settings.local.json` pointing at the user's own settings: an edit "to the project"
    from the app would otherwise change the user's file."""
    mine = tmp_path / "users-own-settings.json"
    mine.write_text(json.dumps({"hooks": {}}))
    async with sidecar(project="notes") as run:
        (run.project / ".claude").mkdir()
        (run.project / ".claude" / "settings.local.json").symlink_to(mine)
        shown = await read(run, "local")
        assert "symbolic link" in shown["error"] and shown["digest"] is None
        with pytest.raises(RpcError) as refused:
            await run.request("hooks/add", {"target": "local", "projectDir": str(run.project),
                                            "digest": digest(mine), "event": "Stop", "hook": SAY})
        assert refused.value.code == -32602 and refused.value.data["reason"] == "link"
        assert json.loads(mine.read_text()) == {"hooks": {}}
        # The project's overrides file as a link, then as broken JSON: the settings page still gets the file's hooks,
        # with an error naming the overrides file (an answer, not a refused request).
        (run.project / ".claude" / "settings.local.json").unlink()
        (run.project / ".claude" / "settings.local.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [SAY]}]}}))
        overrides = run.project / ".claude" / "hook-overrides.json"
        overrides.symlink_to(mine)
        shown = await read(run, "local")
        assert "hook-overrides.json" in shown["error"] and shown["hooks"]["Stop"][0]["hooks"] == [SAY]
        assert shown["disabled"] == [] and shown["digest"] is not None
        overrides.unlink()
        overrides.write_text("{\"disabled\": [")
        shown = await read(run, "local")
        assert "hook-overrides.json" in shown["error"] and "not valid JSON" in shown["error"]
        assert shown["hooks"]["Stop"][0]["hooks"] == [SAY]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (tmp_path / "second").mkdir()
    async with open_sidecar(tmp_path / "second", "notes") as run:  # a second copy: `.claude` itself a link
        (run.project / ".claude").symlink_to(other, target_is_directory=True)
        with pytest.raises(RpcError) as refused:
            await run.request("hooks/add", {"target": "project", "projectDir": str(run.project), "digest": None,
                                            "event": "Stop", "hook": SAY})
        assert refused.value.data["reason"] == "link" and not any(other.iterdir())


async def test_change_move_and_remove_keep_the_file_tidy(sidecar) -> None:
    async with sidecar(project="notes") as run:
        params = {"target": "project", "projectDir": str(run.project)}
        first = await run.request("hooks/add", {**params, "digest": None, "event": "PreToolUse", "matcher": "Bash",
                                                "hook": {**SAY, "name": "one"}})
        second = await run.request("hooks/add", {**params, "digest": first["digest"], "event": "PreToolUse",
                                                 "matcher": "Bash", "hook": {**SAY, "name": "two"}})
        assert second["at"] == {"event": "PreToolUse", "group": 0, "index": 1}
        changed = await run.request("hooks/update", {**params, "digest": second["digest"], "at": first["at"],
                                                     "hook": {**SAY, "name": "one", "timeout": 5}})
        assert changed["at"] == first["at"]
        moved = await run.request("hooks/update", {**params, "digest": changed["digest"], "at": second["at"],
                                                   "matcher": "Write|Edit", "hook": {**SAY, "name": "two"}})
        assert moved["at"] == {"event": "PreToolUse", "group": 1, "index": 0}
        assert json.loads(project_settings(run).read_text())["hooks"] == {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{**SAY, "name": "one", "timeout": 5}]},
            {"matcher": "Write|Edit", "hooks": [{**SAY, "name": "two"}]}]}
        with pytest.raises(RpcError) as nowhere:
            await run.request("hooks/remove", {**params, "digest": moved["digest"],
                                               "at": {"event": "PreToolUse", "group": 5, "index": 0}})
        assert nowhere.value.code == -32602 and "no hook at $.hooks.PreToolUse[5].hooks[0]" in nowhere.value.message
        gone = await run.request("hooks/remove", {**params, "digest": moved["digest"], "at": first["at"]})
        removed = await run.request("hooks/remove", {**params, "digest": gone["digest"],
                                                     "at": {"event": "PreToolUse", "group": 0, "index": 0}})
        assert json.loads(project_settings(run).read_text()) == {"hooks": {}}
        assert removed["digest"] == digest(project_settings(run))


async def test_turning_hooks_off_and_on_where_each_may_be_turned_off(sidecar) -> None:
    async with sidecar(project="hooked") as run:
        names = {h["name"]: h for h in (await run.request("hooks/list", {"projectDir": str(run.project)}))["hooks"]}
        project_hook = next(n for n, h in names.items() if h["source"] == "project")
        builtin = next(n for n, h in names.items() if h["source"] == "builtin")
        scope = {"projectDir": str(run.project)}

        off = await run.request("hooks/enable", {**scope, "scope": "project", "name": project_hook, "enabled": False})
        overrides = run.project / ".claude" / "hook-overrides.json"
        assert off["path"] == str(overrides) and json.loads(overrides.read_text())["disabled"] == [project_hook]
        listed = {h["name"]: h for h in (await run.request("hooks/list", scope))["hooks"]}
        assert listed[project_hook]["state"] == "disabled"

        with pytest.raises(RpcError) as not_its_own:  # a project's overrides never reach the user's hooks
            await run.request("hooks/enable", {**scope, "scope": "project", "name": builtin, "enabled": False})
        assert not_its_own.value.code == -32602 and "only the project's own hooks" in not_its_own.value.message

        await run.request("hooks/enable", {**scope, "scope": "user", "name": builtin, "enabled": False})
        user_file = Path(os.environ["ORION_USER_SETTINGS"])
        assert builtin in json.loads(user_file.read_text())["disabledHooks"]
        assert oct(user_file.stat().st_mode & 0o777) == "0o600"
        listed = {h["name"]: h for h in (await run.request("hooks/list", scope))["hooks"]}
        assert listed[builtin]["state"] == "disabled"

        await run.request("hooks/enable", {**scope, "scope": "user", "name": builtin, "enabled": True})
        on = await run.request("hooks/enable", {**scope, "scope": "project", "name": project_hook, "enabled": True})
        # The project's overrides file is the project's like its settings: changed, it waits for the user's review.
        listed = {h["name"]: h for h in (await run.request("hooks/list", scope))["hooks"]}
        assert on["trusted"] is False and listed[project_hook]["state"] == "untrusted"
        await run.request("hooks/trust", {**scope, "hash": on["trustHash"]})
        listed = {h["name"]: h for h in (await run.request("hooks/list", scope))["hooks"]}
        assert listed[builtin]["state"] == listed[project_hook]["state"] == "active"
        with pytest.raises(RpcError) as no_such:
            await run.request("hooks/enable", {**scope, "scope": "user", "name": "no-such-hook", "enabled": False})
        assert no_such.value.code == -32602


@pytest.mark.cli
async def test_a_live_session_picks_up_the_users_own_edit_at_once(sidecar) -> None:
    async with sidecar(project="notes", env={"ORION_CLAUDE_USER_SETTINGS": ""}) as run:
        session = await run.new_session("plain")
        sid = session["sessionId"]
        assert not await context_of_a_prompt(run, sessionId=sid)
        mine = await read(run, "claude-user")
        assert mine["path"] == str(Path(os.environ["HOME"]) / ".claude" / "settings.json")
        added = await run.request("hooks/add", {"target": "claude-user", "digest": mine["digest"],
                                                "event": "UserPromptSubmit", "hook": SAY})
        assert "trusted" not in added or added["trusted"] is None  # the user's own file needs no review
        assert await context_of_a_prompt(run, sessionId=sid) == "added-by-the-app"
        await run.end(sid)
