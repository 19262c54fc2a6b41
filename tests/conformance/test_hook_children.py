"""What happens to the processes a command hook leaves behind, on the bare bundled CLI and through `python -m sidecar`, side by side.

The CLI (2.1.330) kills nothing a hook leaves when the hook exits on its own: every
kind below outlives the hook and even the CLI; it stops reading a held output after
half a second; on a timeout it kills the hook's whole tree. Orion agrees on all of it
but one point, deliberate (docs/FIDELITY.md): whatever survives lives only until the
session ends. (A project's hooks run in the session's hook box, which keeps everything
they leave, the attached stray too, until then; outside a box, a stray still attached to
the hook dies when its output is given up.)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from tests.conformance.harness import REPO, ScriptedServer, cli_path, offline_cli_env, prompt_once

pytestmark = [pytest.mark.cli, pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adoption of orphans is Linux's")]

SLEEP = f"{sys.executable} -S -c 'import time; time.sleep(120)'"
# How a hook leaves something running; each child carries its kind and the run's tag on its command line.
KINDS = {
    "stray": "{s} {t} &",  # holds the hook's output, nothing more: not meant to outlive the hook
    "quiet": "{s} {t} >/dev/null 2>&1 &",
    "nohup": "nohup {s} {t} &",
    "setsid": "setsid {s} {t} &",
    "daemon": "setsid {s} {t} </dev/null >/dev/null 2>&1 &",
}
# The UserPromptSubmit hook writes down which of them are alive while the session runs.
SNAPSHOT = """
import json, os, sys
tag, out = sys.argv[1], sys.argv[2]
alive = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        continue
    if state != "Z" and cmd[-2:-1] and cmd[-2].decode().endswith(tag) and cmd[-2].decode() != tag:
        alive.append(cmd[-2].decode().rsplit("-", 1)[0])
with open(out, "w") as fh:
    json.dump(sorted(alive), fh)
"""


def project(root: Path, tag: str, *, timeout: bool = False) -> Path:
    proj = root / "project"
    (proj / ".claude").mkdir(parents=True)
    # Inside the project: under Orion the project's hooks run in the session's hook box, which sees the project.
    root = proj / ".snap"
    root.mkdir()
    (root / "snapshot.py").write_text(SNAPSHOT)
    starts = "\n".join(KINDS[k].format(s=SLEEP, t=f"{k}-{tag}") for k in (("quiet", "setsid", "daemon") if timeout else KINDS))
    start = {"type": "command", "command": starts + ("\nsleep 30" if timeout else "\necho started")}
    if timeout:
        start["timeout"] = 3  # past the starts of all three, on a loaded machine too: the kill meets them running
    snap = {"type": "command", "command": f"{sys.executable} -S {root / 'snapshot.py'} -{tag} {root / 'during.json'}"}
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "SessionStart": [{"hooks": [start]}], "UserPromptSubmit": [{"hooks": [snap]}]}}))
    return proj


def alive(tag: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and len(cmd) > 1 and cmd[-2].decode().endswith(f"-{tag}"):
            found.append(cmd[-2].decode())
    return sorted(found)


def kill_tagged(tag: str) -> None:
    for name in alive(tag):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if name.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                continue


async def on_cli(root: Path, tag: str, timeout: bool) -> dict[str, Any]:
    """The bare CLI runs the project's hooks: one prompt, then the CLI exits."""
    from claude_agent_sdk import ClaudeAgentOptions

    proj = project(root, tag, timeout=timeout)
    scenario = root / "plain.yaml"
    scenario.write_text(yaml.safe_dump({"default": "Plain answer."}))
    server = ScriptedServer(scenario, root / "requests.jsonl")
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    options = ClaudeAgentOptions(cwd=str(proj), env=offline_cli_env(server, home), setting_sources=["project"],
                                 cli_path=cli_path(), session_id=str(uuid.uuid4()),
                                 system_prompt={"type": "preset", "preset": "claude_code"})
    await prompt_once(options, "hello", server, 120)
    await anyio.sleep(0.5)
    return {"during": json.loads((root / "project" / ".snap" / "during.json").read_text()),
            "after": [n.rsplit("-", 1)[0] for n in alive(tag)]}


async def on_sidecar(root: Path, tag: str, timeout: bool) -> dict[str, Any]:
    """The same project through `python -m sidecar`: one prompt, then session/end."""
    from frontend_stub.client import SidecarClient

    proj = project(root, tag, timeout=timeout)
    env = dict(os.environ, ORION_DATA_DIR=str(root / "data"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    plain = REPO / "tests" / "e2e" / "scenarios" / "plain.yaml"
    async with SidecarClient.launch([sys.executable, "-m", "sidecar"], env=env, cwd=str(REPO), close_timeout=5.0) as client:
        await client.request("hooks/trust", {"projectDir": str(proj)})
        sid = (await client.request("session/new", {"projectDir": str(proj), "model": f"scripted:{plain}"}, timeout=60))["sessionId"]
        await client.request("session/prompt", {"sessionId": sid, "prompt": "hello"}, timeout=60)
        await client.request("session/end", {"sessionId": sid})
        with anyio.fail_after(15):  # the tree is killed at the session's end; a loaded machine takes a moment more
            while alive(tag):
                await anyio.sleep(0.05)
    return {"during": json.loads((root / "project" / ".snap" / "during.json").read_text()),
            "after": [n.rsplit("-", 1)[0] for n in alive(tag)]}


@pytest.mark.asyncio
async def test_after_a_normal_exit_claude_code_keeps_everything_and_orion_everything_until_the_session_ends(tmp_path):
    tag = uuid.uuid4().hex[:8]
    try:
        cli = await on_cli(tmp_path / "cli", tag, timeout=False)
        kill_tagged(tag)
        ours = await on_sidecar(tmp_path / "ours", tag, timeout=False)
    finally:
        kill_tagged(tag)
    assert cli == {"during": sorted(KINDS), "after": sorted(KINDS)}  # Claude Code: all outlive the hook and the CLI
    # Orion: the project's hooks run in the session's hook box, which keeps all of it, the attached stray too, until
    # the session ends, and then nothing is left (the hook box ends with the session).
    assert ours == {"during": sorted(KINDS), "after": []}


@pytest.mark.asyncio
async def test_on_a_timeout_both_kill_the_hook_and_everything_it_started(tmp_path):
    tag = uuid.uuid4().hex[:8]
    try:
        cli = await on_cli(tmp_path / "cli", tag, timeout=True)
        kill_tagged(tag)
        ours = await on_sidecar(tmp_path / "ours", tag, timeout=True)
    finally:
        kill_tagged(tag)
    assert cli == ours == {"during": [], "after": []}
