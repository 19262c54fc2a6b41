"""`session/registerRoot` through `python -m sidecar`: a folder inside the project becomes a working-directory root
of its own (Claude Code's `register_repo_root`), the project's DirectoryAdded hooks run with the CLI's input, and
everything else is refused with a reason: a relative path, a folder outside the project, the project itself, one
registered twice, a CLAUDE.md reload in a session that does not read the project's files. The session keeps its
OS boundary (the folder is already inside it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ipc.errors import RpcError
from tests.waiting import until

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]


def hooked(project: Path) -> Path:
    log = project / "added.jsonl"
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"DirectoryAdded": [
        {"matcher": "register_repo_root", "hooks": [{"type": "command", "command": f"cat >> '{log}'; echo >> '{log}'"}]},
        {"matcher": "slash_command", "hooks": [{"type": "command", "command": f"echo slash >> '{log}.slash'"}]}]}}))
    for folder in ("packages/api", "packages/web"):
        (project / folder).mkdir(parents=True)
    (project / "packages" / "web" / "CLAUDE.md").write_text("The web package: WEB-PACKAGE-RULES apply here.\n")
    return log


async def refused(run, sid: str, directory: str, **more) -> str:
    with pytest.raises(RpcError) as caught:
        await run.request("session/registerRoot", {"sessionId": sid, "directory": directory, **more}, timeout=60)
    assert caught.value.code == -32602, caught.value
    return caught.value.message


async def test_a_folder_of_the_project_becomes_a_root_and_its_directory_added_hooks_run(sidecar, tmp_path) -> None:
    async with sidecar(project="notes", trust=False) as run:
        log = hooked(run.project)
        await run.trust()
        created = await run.new_session("plain")
        sid = created["sessionId"]

        assert "absolute" in await refused(run, sid, "packages/api")
        assert "strictly inside" in await refused(run, sid, str(tmp_path))
        assert "strictly inside" in await refused(run, sid, str(run.project))
        assert "not a directory" in await refused(run, sid, str(run.project / "packages" / "nowhere"))
        assert not log.exists()  # nothing refused reached the CLI

        api = run.project / "packages" / "api"
        answer = await run.request("session/registerRoot", {"sessionId": sid, "directory": str(api)}, timeout=60)
        assert answer == {"directory": str(api.resolve())}
        await until(log.exists, 30, "the DirectoryAdded hook ran")
        assert "already a registered working directory" in await refused(run, sid, str(api))

        web = run.project / "packages" / "web"
        await run.request("session/registerRoot", {"sessionId": sid, "directory": str(web), "reloadClaudeMd": True},
                          timeout=60)
        await until(lambda: len(log.read_text().strip().splitlines()) >= 2, 30, "the second DirectoryAdded hook ran")
        assert (await run.prompt(sid, "hello"))["stopReason"] == "end_turn"
        await run.end(sid)

    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(c["hook_event_name"], c["source"], c["directory"]) for c in calls] == [
        ("DirectoryAdded", "register_repo_root", str(api.resolve())),
        ("DirectoryAdded", "register_repo_root", str(web.resolve()))]
    assert {c["session_id"] for c in calls} == {sid}
    assert not Path(f"{log}.slash").exists()  # the other source's group stays silent
    responses = [r for r in run.named("hook_response", sid) if r["event"] == "DirectoryAdded"]
    assert [r["outcome"] for r in responses] == ["success", "success"]
    # The CLAUDE.md of the folder registered with reloadClaudeMd reaches the model with the next prompt.
    [request] = run.model_requests("plain")
    assert "WEB-PACKAGE-RULES" in json.dumps(request["body"])
    # The session kept its boundary: the folder was inside it all along.
    assert created["sandbox"]["enabled"] is True


async def test_an_untrusted_projects_session_may_not_reload_claude_md(sidecar) -> None:
    async with sidecar(project="notes", trust=False) as run:
        (run.project / "packages" / "web").mkdir(parents=True)
        sid = (await run.new_session("plain"))["sessionId"]
        message = await refused(run, sid, str(run.project / "packages" / "web"), reloadClaudeMd=True)
        assert "does not read the project's settings" in message
        # Without the reload the folder registers: nothing of the project is read for it.
        answer = await run.request("session/registerRoot",
                                   {"sessionId": sid, "directory": str(run.project / "packages" / "web")}, timeout=60)
        assert answer["directory"].endswith("/packages/web")
        await run.end(sid)
