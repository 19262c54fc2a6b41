"""The agent runs confined: real sessions through `python -m sidecar` and the real CLI, attacked with Bash calls.

With the sandbox on (bubblewrap + socat installed, as scripts/bootstrap.sh does), a turned agent's Bash
cannot write outside the project (through a symlink, a relative path, or asking to skip the sandbox),
cannot rewrite Orion's trust store, settings or the project's hook scripts even when they sit inside the
project, and cannot read the sidecar's environment. Without bubblewrap, or when the app turns it off, the
session says so, with the reason. The probes are in scenarios/sandbox_probe.yaml.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ipc.errors import RemoteError
from sidecar.sandbox import backend_problem
from tests.e2e.conftest import E2ESidecar, fixed_policy, open_sidecar
from tests.security.box_helpers import visible_outside

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

PROBES = Path(__file__).resolve().parent / "scenarios" / "sandbox_probe.yaml"
NO_BACKEND = backend_problem(os.environ.get("PATH"))
needs_sandbox = pytest.mark.skipif(NO_BACKEND is not None, reason=f"no sandbox here: {NO_BACKEND}")

CANARY = "orion-canary-5be1d0c2"


def orion_names(text: str) -> set[str]:
    """ORION_* variables in `env`-style output; the run token (sidecar/reaper.py) is the only one the CLI gets."""
    return {line.split("=", 1)[0] for line in text.splitlines() if line.startswith("ORION_") and "=" in line}


async def new_session(run: E2ESidecar, **params: Any) -> dict[str, Any]:
    body = {"projectDir": str(run.project), "model": f"scripted:{PROBES}", "allowedTools": ["Bash"], **params}
    return await run.request("session/new", body, timeout=60.0)


async def probe(run: E2ESidecar, session_id: str, prompt: str) -> str:
    """Run one probe prompt; the output of the Bash call it made."""
    before = len(run.updates(session_id, "tool_call_update"))
    await run.prompt(session_id, prompt)
    outputs = run.updates(session_id, "tool_call_update")[before:]
    assert len(outputs) == 1, outputs
    return str(outputs[0].get("output") or "")


def outside_link(run: E2ESidecar, outside: Path) -> Path:
    """A folder outside the project (visible, read-only, in the box), reachable from it as `outside-link`."""
    (run.project / "outside-link").symlink_to(outside)
    return outside


@needs_sandbox
async def test_a_session_says_it_is_sandboxed_and_what_bash_may_not_write(sidecar: Callable[..., Any]) -> None:
    async with sidecar(project="notes") as run:
        result = await new_session(run)
        box = result["sandbox"]
        assert box["enabled"] is True and box["reason"] is None and box["platform"] == "linux"
        data_dir = Path(os.environ["ORION_DATA_DIR"]).resolve()
        settings_dir = Path(os.environ["ORION_USER_SETTINGS"]).resolve().parent
        denied = set(box["deniedWritePaths"])
        assert {str(data_dir), str(settings_dir), str(run.project.resolve() / ".claude")} <= denied
        event = await run.wait_event(lambda e: e.name == "sandboxStatus")
        assert event.params["sessionId"] == result["sessionId"]
        assert event.params["enabled"] is True and set(event.params["deniedWritePaths"]) == denied
        await run.end(result["sessionId"])


@needs_sandbox
async def test_bash_writes_the_project_and_nothing_outside_it(tmp_path: Path) -> None:
    # The user approves whatever is asked: the sandbox alone must hold.
    with visible_outside() as folder:
        async with open_sidecar(tmp_path, "notes", permission=fixed_policy("allow_once")) as run:
            outside = outside_link(run, folder)
            sid = (await new_session(run))["sessionId"]
            assert "inside=written" in await probe(run, sid, "probe write inside")
            assert (run.project / "inside.txt").read_text() == "ok\n"
            written = await probe(run, sid, "probe write outside")
            assert "outside=refused" in written and "Read-only file system" in written
            # Asking the CLI to skip the sandbox (dangerouslyDisableSandbox) changes nothing.
            escaped = await probe(run, sid, "probe escape")
            assert "escape=refused" in escaped
            assert list(outside.iterdir()) == []
            await run.end(sid)


@needs_sandbox
async def test_orion_files_and_hook_scripts_stay_out_of_reach_even_inside_the_project(tmp_path: Path) -> None:
    # Orion's data and settings directories inside the project: only the sandbox's deny list stands in the way.
    project = tmp_path / "hooked"
    env = {"ORION_DATA_DIR": str(project / "orion-data"), "ORION_USER_SETTINGS": str(project / "orion-config" / "settings.json")}
    async with open_sidecar(tmp_path, "hooked", permission=fixed_policy("allow_once"), env=env) as run:
        (project / "orion-config").mkdir()
        (project / "orion-config" / "settings.json").write_text("{}\n")
        trust_files = sorted((project / "orion-data").rglob("trust*.json"))
        assert trust_files, "hooks/trust wrote no trust store"
        trust_before = {path: path.read_bytes() for path in trust_files}
        sid = (await new_session(run))["sessionId"]
        output = await probe(run, sid, "probe orion files")
        for name in ("orion-data/trust.json", "orion-config/settings.json", ".claude/hooks/planted.sh"):
            assert f"{name}=refused" in output, output
        assert {path: path.read_bytes() for path in trust_files} == trust_before
        assert (project / "orion-config" / "settings.json").read_text() == "{}\n"
        assert not (project / ".claude" / "hooks" / "planted.sh").exists()
        await run.end(sid)


@needs_sandbox
async def test_bash_cannot_read_the_sidecars_environment(tmp_path: Path) -> None:
    env = {"ORION_CANARY_SECRET": CANARY, "GITHUB_TOKEN": CANARY + "-gh"}
    async with open_sidecar(tmp_path, "notes", env=env) as run:
        sid = (await new_session(run))["sessionId"]
        output = await probe(run, sid, "probe environ")
        assert "probe-done" in output
        # The parent's environ and every /proc/*/environ Bash can see: no secret of the sidecar's.
        assert CANARY not in output
        assert orion_names(output) <= {"ORION_SIDECAR_RUN"}
        requests = run.model_requests("sandbox_probe")
        assert requests and all(CANARY not in json.dumps(r["body"]) for r in requests)
        await run.end(sid)


@needs_sandbox
async def test_project_settings_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    weaken = {"sandbox": {"enabled": False, "failIfUnavailable": False, "allowUnsandboxedCommands": True,
                          "autoAllowBashIfSandboxed": True, "filesystem": {"allowWrite": ["//"]}}}
    with visible_outside() as folder:
        async with open_sidecar(tmp_path, "notes", permission=fixed_policy("allow_once")) as run:
            (run.project / ".claude").mkdir()
            for name in ("settings.json", "settings.local.json"):
                (run.project / ".claude" / name).write_text(json.dumps(weaken))
            outside = outside_link(run, folder)
            result = await new_session(run)
            assert result["sandbox"]["enabled"] is True
            assert "outside=refused" in await probe(run, result["sessionId"], "probe write outside")
            assert list(outside.iterdir()) == []
            await run.end(result["sessionId"])


@needs_sandbox
async def test_the_sandbox_never_approves_bash_still_asks(tmp_path: Path) -> None:
    async with open_sidecar(tmp_path, "notes", permission=fixed_policy("reject_once")) as run:
        result = await new_session(run, allowedTools=[])
        assert result["sandbox"]["enabled"] is True
        await run.prompt(result["sessionId"], "probe write inside")
        assert [r["toolName"] for r in run.permission_requests] == ["Bash"]
        assert not (run.project / "inside.txt").exists()
        await run.end(result["sessionId"])


def path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every program of the real one but bwrap (links in one folder)."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name != "bwrap" and not target.exists() and not target.is_symlink():
                target.symlink_to(entry.path)
    return str(folder)


async def test_without_bubblewrap_the_session_runs_and_says_it_is_not_sandboxed(tmp_path: Path) -> None:
    async with open_sidecar(tmp_path, "notes", env={"PATH": path_without_bwrap(tmp_path)}) as run:
        result = await new_session(run)
        box = result["sandbox"]
        assert box["enabled"] is False and "bubblewrap" in box["reason"] and box["deniedWritePaths"] == []
        event = await run.wait_event(lambda e: e.name == "sandboxStatus")
        assert event.params["enabled"] is False and event.params["reason"] == box["reason"]
        assert "inside=written" in await probe(run, result["sessionId"], "probe write inside")
        await run.end(result["sessionId"])
        # An app that requires the sandbox gets no session at all.
        with pytest.raises(RemoteError) as refused:
            await new_session(run, sandbox="required")
        assert refused.value.code == -32603 and refused.value.data["reason"] == "sandboxUnavailable"
        assert "bubblewrap" in str(refused.value)


async def test_the_app_may_turn_it_off_and_the_environment_stays_clean(tmp_path: Path) -> None:
    async with open_sidecar(tmp_path, "notes", env={"ORION_CANARY_SECRET": CANARY}) as run:
        result = await new_session(run, sandbox="off")
        assert result["sandbox"]["enabled"] is False and "turned off by the app" in result["sandbox"]["reason"]
        own = await probe(run, result["sessionId"], "probe own env")
        # Unsandboxed, Bash can read other processes of the same user (the sidecar's /proc/<pid>/environ
        # included: docs/SECURITY.md); its own environment, inherited from the CLI, still holds no secret.
        assert "probe-done" in own and "PATH=" in own
        assert CANARY not in own and orion_names(own) <= {"ORION_SIDECAR_RUN"}
        await run.end(result["sessionId"])


class _NoHooks:
    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        return {}

    def budget_s(self, event: str) -> float:
        return 10.0


class _Approve:
    async def ask(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str | None, reason: str | None,
                  *, suggestions: list[Any] | None = None) -> Any:
        from sidecar.agent import PermissionAnswer

        return PermissionAnswer(allow=True)


@needs_sandbox
async def test_even_a_cli_reading_project_settings_keeps_the_sandbox(tmp_path: Path) -> None:
    """The sidecar reads no project file to decide, and a CLI told to read project and local settings (sandbox
    keys that would weaken its own per-command sandbox, an allow rule for Bash) still runs inside the boundary:
    the OS does not read the CLI's settings."""
    from sidecar.agent import AgentConfig, AgentSession
    from sidecar.sandbox import cli_settings, decide
    from sidecar.scripted_model.server import get_or_start
    from sidecar.sdk_env import cli_environment, offline_env

    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    weaken = {"sandbox": {"enabled": False, "allowUnsandboxedCommands": True, "autoAllowBashIfSandboxed": True,
                          "filesystem": {"allowWrite": ["/"]}}, "permissions": {"allow": ["Bash"]}}
    for name in ("settings.json", "settings.local.json"):
        (project / ".claude" / name).write_text(json.dumps(weaken))
    env = cli_environment(offline_env(get_or_start(PROBES), tmp_path / "data" / "cli-home" / "s1"))
    status = decide("auto", env.get("PATH"), (str(project / ".claude"),), project=project, cli_env=env,
                    orion_dirs=[tmp_path / "data"])
    assert status.boundary is not None and cli_settings(status) == {"enabled": False}
    outputs: list[str] = []

    async def on_update(update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") == "tool_call_update":
            outputs.append(str(update.get("output")))

    with visible_outside() as outside:
        (project / "outside-link").symlink_to(outside)
        config = AgentConfig(project_dir=project, session_id="5a0d3c1e-0000-4000-8000-000000000001", env=env,
                             clean_env=True, sandbox=cli_settings(status), boundary=status.boundary,
                             setting_sources=["user", "project", "local"], allowed_tools=["Bash"])
        agent = AgentSession(config, _NoHooks(), _Approve(), on_update)
        await agent.start()
        try:
            await agent.prompt("probe escape")
            await agent.prompt("probe write outside")
        finally:
            await agent.close()
        assert "escape=refused" in outputs[0] and "outside=refused" in outputs[1], outputs
        assert "Read-only file system" in outputs[1]
        assert list(outside.iterdir()) == []


@needs_sandbox
@pytest.mark.parametrize("where", ["project settings env", "the sidecar's own environment"])
async def test_the_clis_env_scrub_cannot_open_the_sandbox(tmp_path: Path, where: str) -> None:
    """CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 makes CLI 2.1.330 run Bash in a bubblewrap profile of its own with /tmp,
    /root and /home writable (measured: docs/FIDELITY.md). A cloned project's settings `env`, or a variable in the
    environment the sidecar was started with, must not get it to the CLI. Only env-isolation runs among the
    built-ins, so no guard stands between the command and the sandbox."""
    scenario = PROBES.with_name("scrub_escape.yaml")
    env = {"CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1"} if where != "project settings env" else {}
    with visible_outside() as outside:
        probe = outside / "orion-scrub-escape-probe"
        async with open_sidecar(tmp_path, "notes", trust=False, permission=fixed_policy("allow_once"), env=env) as run:
            outside_link(run, outside)
            if where == "project settings env":
                claude = run.project / ".claude"
                claude.mkdir()
                (claude / "settings.json").write_text(json.dumps({"env": {"CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1"}}))
                await run.trust()
            session = await run.request("session/new", {
                "projectDir": str(run.project), "model": f"scripted:{scenario}", "allowedTools": ["Bash"],
                "builtinHooks": ["env-isolation"]}, timeout=60.0)
            assert session["sandbox"]["enabled"] is True
            await run.prompt(session["sessionId"], "probe")
            outputs = [str(u.get("output")) for u in run.updates(session["sessionId"], "tool_call_update")]
        assert any("DENIED" in o for o in outputs), outputs
        assert not probe.exists()
