"""A hook's long-lived helper through a real `python -m sidecar`: a SessionStart command hook starts a worker as claude-mem does (detached, stdio let go, not waited for) and an ordinary stray; the worker serves the session's prompts, dies at `session/end`, and dies with the sidecar when it is killed with SIGKILL; the stray dies with its hook."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest

from frontend_stub.client import SidecarClient
from tests.waiting import pids_alive, until

pytestmark = [pytest.mark.cli, pytest.mark.slow, pytest.mark.asyncio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adoption of orphans is Linux's")]

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAIN = REPO_ROOT / "tests" / "e2e" / "scenarios" / "plain.yaml"
HOLD_S = 120  # what the worker and the stray sleep: bounded if everything fails
UP_S = 60.0
GONE_S = 15.0  # a killed worker is gone within seconds; a loaded machine gets room

# The SessionStart hook: a worker manager in the manner of claude-mem's (`spawn(node, [worker], {detached: true,
# stdio: "ignore"}).unref()`), and, beside it, a background child that keeps the hook's output (a stray).
START_WORKER = f"""
import json, os, subprocess, sys
state = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".helpers")
os.makedirs(state, exist_ok=True)
worker = subprocess.Popen([sys.executable, "-S", os.path.join(os.path.dirname(__file__), "worker.py"), state],
                          start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
stray = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep({HOLD_S})", "stray"])
found = {{"worker": worker.pid, "stray": stray.pid}}
ignored = {{who: open(f"/proc/{{pid}}/status").read().split("SigIgn:")[1].split()[0]
           for who, pid in (("hook", os.getpid()), ("stray", stray.pid))}}
with open(os.path.join(state, "ignored.json"), "w") as fh:
    json.dump(ignored, fh)
if os.environ.get("HIDDEN_TOO"):  # one that owns up to nothing: no environment (no marker, no token), its own session
    hidden = subprocess.Popen(["env", "-i", sys.executable, "-S", "-c", "import time; time.sleep({HOLD_S})", "hidden"],
                              start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    found["hidden"] = hidden.pid
with open(os.path.join(state, "pids.json"), "w") as fh:
    json.dump(found, fh)
print("worker starting")
"""

# The worker: answers (here: appends a line for every prompt the UserPromptSubmit hook hands it) until it is killed.
WORKER = f"""
import os, sys, time
state = sys.argv[1]
with open(os.path.join(state, "worker.pid"), "w") as fh:
    fh.write(str(os.getpid()))
time.sleep({HOLD_S})
"""

# The UserPromptSubmit hook asks whether the worker is there, as a hook of claude-mem's asks its worker over HTTP.
ASK_WORKER = """
import json, os
state = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".helpers")
pid = int(open(os.path.join(state, "worker.pid")).read())
try:
    os.kill(pid, 0)
    alive = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
except (ProcessLookupError, FileNotFoundError):
    alive = False
with open(os.path.join(state, "asked.jsonl"), "a") as fh:
    fh.write(json.dumps({"worker": pid, "alive": alive}) + "\\n")
"""


def make_project(root: Path, hidden: bool = False) -> Path:
    project = root / "helpers"
    hooks = project / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "start_worker.py").write_text(START_WORKER)
    (hooks / "worker.py").write_text(WORKER)
    (hooks / "ask_worker.py").write_text(ASK_WORKER)
    run = f'{sys.executable} -S "$CLAUDE_PROJECT_DIR/.claude/hooks/{{}}"'
    start = ("HIDDEN_TOO=1 " if hidden else "") + run.format("start_worker.py")
    settings = {"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "name": "start-worker", "command": start}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "name": "ask-worker", "command": run.format("ask_worker.py")},
                                        {"type": "command", "name": "forks", "command": "echo prompt | cat >/dev/null"}]}],
    }}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return project


def pids(project: Path) -> dict[str, int]:
    try:
        found = json.loads((project / ".helpers" / "pids.json").read_text())
        found["worker_self"] = int((project / ".helpers" / "worker.pid").read_text())
        return found
    except (OSError, ValueError, KeyError):
        return {}


def asked(project: Path) -> list[dict[str, object]]:
    path = project / ".helpers" / "asked.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def running(pid: int) -> bool:
    return bool(pids_alive([pid]))


# `python -m sidecar` as `nohup` starts it (SIGHUP ignored), and a script's `&` (SIGINT, SIGQUIT); SIGTERM too.
UNDER_NOHUP = ("import os, signal, sys\n"
               "for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):\n"
               "    signal.signal(sig, signal.SIG_IGN)\n"
               "os.execv(sys.executable, [sys.executable, '-m', 'sidecar'])\n")
HANG_UP_AND_TERMINATION = sum(1 << (sig - 1) for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM))


@asynccontextmanager
async def sidecar(tmp_path: Path, *, under_nohup: bool = False) -> AsyncIterator[SidecarClient]:
    env = dict(os.environ)
    env["ORION_DATA_DIR"] = str(tmp_path / "data")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-c", UNDER_NOHUP] if under_nohup else [sys.executable, "-m", "sidecar"]
    async with SidecarClient.launch(argv, env=env, cwd=str(REPO_ROOT), close_timeout=5.0) as client:
        try:
            yield client
        except BaseException:
            sys.stderr.write("---- sidecar stderr (tail) ----\n" + client.stderr_text()[-6000:] + "\n")
            raise


async def start_session(client: SidecarClient, project: Path) -> str:
    await client.request("hooks/trust", {"projectDir": str(project)})
    # Unconfined: these are the sidecar's own helper rules (a user's plugin, as claude-mem is, runs outside any box);
    # a project's hooks in the session's hook box keep what they start until the session ends, box and all
    # (tests/conformance/test_hook_children.py, tests/security/test_process_hygiene.py).
    session = await client.request("session/new", {"projectDir": str(project), "model": f"scripted:{PLAIN}",
                                                   "sandbox": "off"}, timeout=UP_S)
    await until(lambda: pids(project).get("worker_self"), UP_S, "the worker up")
    return session["sessionId"]


def kill_all(found: dict[str, int]) -> None:
    for pid in found.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


async def test_a_session_start_worker_serves_every_prompt_and_ends_with_the_session(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    found: dict[str, int] = {}
    try:
        async with sidecar(tmp_path) as client:
            sid = await start_session(client, project)
            found = pids(project)
            assert found["worker"] == found["worker_self"]
            # the stray kept the hook's output: it died half a second after the hook, the worker did not
            await until(lambda: not running(found["stray"]), GONE_S, "the stray gone")
            for n in (1, 2, 3):
                await client.request("session/prompt", {"sessionId": sid, "prompt": f"prompt {n}"}, timeout=UP_S)
                assert running(found["worker"]), f"the worker died before prompt {n} ended"
            assert [a["alive"] for a in asked(project)] == [True, True, True]
            assert (await client.request("session/end", {"sessionId": sid}))["ended"] is True
            await until(lambda: not running(found["worker"]), GONE_S, "the worker gone after session/end")
            await client.ping(timeout=10)  # the sidecar itself goes on
    finally:
        kill_all(found)


async def test_a_sidecar_started_with_sighup_ignored_starts_hooks_with_it_at_default_and_still_kills_a_stray(
        tmp_path: Path) -> None:
    """An ignored signal survives exec: unless the sidecar resets it, every hook under `nohup` ignores SIGHUP, and
    every stray it leaves passes for a helper started with `nohup` (hooks/dispositions.py)."""
    project = make_project(tmp_path)
    found: dict[str, int] = {}
    try:
        async with sidecar(tmp_path, under_nohup=True) as client:
            sid = await start_session(client, project)
            found = pids(project)
            ignored = json.loads((project / ".helpers" / "ignored.json").read_text())
            assert {who: int(mask, 16) & HANG_UP_AND_TERMINATION for who, mask in ignored.items()} == \
                   {"hook": 0, "stray": 0}, ignored
            await until(lambda: not running(found["stray"]), GONE_S, "the stray gone")
            assert running(found["worker"])
            # the sidecar itself still shrugs a hang-up off, as nohup asked
            os.kill(client.process.pid, signal.SIGHUP)
            await client.ping(timeout=10)
            assert (await client.request("session/end", {"sessionId": sid}))["ended"] is True
            await until(lambda: not running(found["worker"]), GONE_S, "the worker gone after session/end")
    finally:
        kill_all(found)


async def test_a_session_start_worker_dies_with_the_sidecar_killed_with_sigkill(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    found: dict[str, int] = {}
    try:
        async with sidecar(tmp_path) as client:
            sid = await start_session(client, project)
            found = pids(project)
            await client.request("session/prompt", {"sessionId": sid, "prompt": "one prompt"}, timeout=UP_S)
            assert running(found["worker"])
            worker = psutil.Process(found["worker"])
            assert worker.ppid() == client.process.pid, "an orphan of a hook is the sidecar's child (its subreaper)"

            os.kill(client.process.pid, signal.SIGKILL)
            await until(lambda: not running(found["worker"]), GONE_S, "the worker gone after kill -9 of the sidecar")
    finally:
        kill_all(found)


def recorded(tmp_path: Path, pid: int) -> bool:
    """Whether the sidecar's runtime record names `pid` (sidecar/supervisor.py)."""
    for record in (tmp_path / "data" / "run").glob("*.jsonl"):
        if f'"pid":{pid},' in record.read_text():
            return True
    return False


async def test_an_orphan_without_any_environment_is_the_sidecars_and_dies_with_it_by_the_record(tmp_path: Path) -> None:
    """`env -i` leaves neither the hook's marker nor the sidecar's token: no session owns the process, but it is the
    sidecar's child while the sidecar lives, recorded, and killed by the watchdog from the record after kill -9."""
    project = make_project(tmp_path, hidden=True)
    found: dict[str, int] = {}
    try:
        async with sidecar(tmp_path) as client:
            sid = await start_session(client, project)
            found = pids(project)
            hidden = found["hidden"]
            assert b"ORION_SIDECAR_RUN" not in open(f"/proc/{hidden}/environ", "rb").read()
            assert psutil.Process(hidden).ppid() == client.process.pid
            n = 0
            while not recorded(tmp_path, hidden):  # examined as each prompt's hooks end; adopted a second after
                n += 1
                assert n <= 20, "the orphan never made it into the record"
                await client.request("session/prompt", {"sessionId": sid, "prompt": f"prompt {n}"}, timeout=UP_S)
                await anyio.sleep(0.2)
            assert (await client.request("session/end", {"sessionId": sid}))["ended"] is True
            await until(lambda: not running(found["worker"]), GONE_S, "the worker gone after session/end")
            assert running(hidden), "no session owns it: it lives until the sidecar ends"
            os.kill(client.process.pid, signal.SIGKILL)
            await until(lambda: not running(hidden), GONE_S, "the hidden orphan gone after kill -9 of the sidecar")
    finally:
        kill_all(found)
