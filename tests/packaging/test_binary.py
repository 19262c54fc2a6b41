"""The self-contained build (`./dev build`) runs a real session: the built executable, outside the repository and
without its venv, drives the CLI it carries through a scripted turn in which a `type: python` hook (run by the
executable itself in its hook-launcher role) and a command hook fire on the agent's Bash call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from frontend_stub.client import SidecarClient

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.cli, pytest.mark.timeout(1800)]

PYTHON_HOOK = '''
import json, os, sys

def run(payload):
    with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "python-hook.json"), "w") as out:
        json.dump({"executable": sys.executable, "frozen": bool(getattr(sys, "frozen", False)),
                   "tool": payload["tool_name"], "command": payload["tool_input"]["command"]}, out)
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "checked by the python hook"}}
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The executable: ORION_BUILT_SIDECAR when given (a build to test), else a fresh build into a temp dir."""
    given = os.environ.get("ORION_BUILT_SIDECAR")
    if given:
        return Path(given)
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bundle" / "build.py"), "--dist", str(dist)],
                          capture_output=True, text=True, timeout=1500, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    return Path(done.stdout.strip().splitlines()[-1])


def outside_env(tmp: Path) -> dict[str, str]:
    """The test's isolated HOME and ORION_* dirs, nothing of the checkout: no PYTHONPATH, no venv on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ANTHROPIC_API_KEY")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return env


def test_the_build_carries_one_cli_and_stays_a_directory(built: Path) -> None:
    out = built.parent
    assert built.name.startswith("orion-sidecar-") and built.name.endswith("-linux-gnu" if sys.platform == "linux" else "")
    clis = [p for p in out.rglob("claude") if p.is_file() and p.parent.name == "_bundled"]
    assert len(clis) == 1, clis
    assert os.access(clis[0], os.X_OK)


@pytest.mark.asyncio
async def test_the_built_sidecar_runs_a_session_with_a_python_hook_and_a_command_hook(built: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    hooks_dir = project / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    (hooks_dir / "check.py").write_text(PYTHON_HOOK)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "python", "script": "check.py", "name": "py-check"},
        {"type": "command", "command": "echo \"$HOOK_EVENT\" > \"$CLAUDE_PROJECT_DIR\"/command-hook.txt", "name": "cmd-note"},
    ]}]}}))
    scenario = tmp_path / "turn.json"
    scenario.write_text(json.dumps({"turns": [[{"tool_use": {"name": "Bash", "input": {"command": "echo built > built.txt"}}}],
                                              "Done."]}))
    events: list[tuple[str, Any]] = []

    with anyio.fail_after(300):
        async with SidecarClient.launch(argv=[str(built)], env=outside_env(tmp_path), cwd=tmp_path) as client:
            async def collect() -> None:
                async for event in client.events():
                    events.append((event.name, event.params))

            async with anyio.create_task_group() as tg:
                tg.start_soon(collect)
                await client.request("hooks/trust", {"projectDir": str(project)})
                session = await client.request("session/new", {"projectDir": str(project), "model": f"scripted:{scenario}",
                                                                "allowedTools": ["Bash"]})
                result = await client.request("session/prompt", {"sessionId": session["sessionId"], "prompt": "Go."})
                await client.request("session/end", {"sessionId": session["sessionId"]})
                tg.cancel_scope.cancel()

    assert result["stopReason"] == "end_turn", result
    responses = {p["hookName"]: p for name, p in events if name == "hook_response"}
    assert responses["py-check"]["outcome"] == "success", (responses["py-check"].get("error"), responses["py-check"].get("stderr"))
    assert responses["cmd-note"]["outcome"] == "success", responses["cmd-note"]
    ran = json.loads((project / "python-hook.json").read_text())
    # Inside the build: the hook ran in the executable itself, not in some Python found on the machine.
    assert ran["frozen"] is True and Path(ran["executable"]).resolve() == built.resolve(), ran
    assert ran["tool"] == "Bash" and ran["command"].endswith("echo built > built.txt"), ran
    assert (project / "command-hook.txt").read_text().strip() == "PreToolUse"
    assert (project / "built.txt").read_text().strip() == "built"
