"""Nothing outlives the sidecar: after `kill -9` of a real `python -m sidecar` mid-turn, every process it started (the CLI and its command, a holding command hook with a grandchild in its own session and a double-forked daemon, the python launcher, a prompt hook's evaluator CLI) is gone within seconds, its CLI home and runtime record are swept, and a second sidecar running beside it keeps all of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import psutil
import pytest

from frontend_stub.client import SidecarClient
from sidecar import reaper
from tests.security import lingering_project as lp
from tests.waiting import running, until

pytestmark = [pytest.mark.cli, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAIN = REPO_ROOT / "tests" / "e2e" / "scenarios" / "plain.yaml"
READY_S = 90.0  # a real session, its hooks and an evaluator CLI starting on a shared 2-core machine
GONE_S = 15.0  # "within seconds of the sidecar's death", on a loaded machine too
SWEEP_S = 30.0


def label(proc: psutil.Process) -> str:
    try:
        cmd = " ".join(proc.cmdline())
        env = proc.environ()
        name = proc.name()
    except psutil.Error:
        return "gone"
    if "reaper.py" in cmd:
        return "watchdog"
    if "claude" in name or "claude" in cmd.split(" ")[0]:
        return "evaluator CLI" if "ORION_EVALUATOR_RUN" in env else "session CLI"
    if "launcher/child.py" in cmd:
        return "python launcher"
    if "linger.py" in cmd:
        return "command hook"
    if "sleep 120" in cmd:
        return "CLI's command"
    return name


@dataclass
class Sidecar:
    client: SidecarClient
    data: Path
    pid: int
    sessions: list[str] = field(default_factory=list)

    @property
    def tree(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []

    def labels(self) -> set[str]:
        return {label(p) for p in self.tree}

    def records(self) -> list[Path]:
        return sorted((self.data / reaper.RUN_DIR).glob(f"{self.pid}-*.jsonl"))

    def home(self, session_id: str) -> Path:
        return self.data / reaper.HOMES_DIR / session_id


@asynccontextmanager
async def sidecar(data: Path, log_dir: Path) -> AsyncIterator[Sidecar]:
    env = lp.env_for(data, log_dir, REPO_ROOT)
    async with SidecarClient.launch([sys.executable, "-m", "sidecar"], env=env, cwd=str(REPO_ROOT), close_timeout=3.0) as client:
        client.default_permission = "allow_always"
        yield Sidecar(client, data, client.process.pid)


async def start_lingering_turn(run: Sidecar, root: Path, tg) -> Path:
    """A session on the lingering project with its turn running; returns the project once every kind of child is up."""
    project = lp.make_project(root)
    await run.client.request("hooks/trust", {"projectDir": str(project)})
    session = await run.client.request("session/new", lp.session_params(project), timeout=60)
    run.sessions.append(session["sessionId"])

    async def prompt() -> None:
        try:
            await run.client.request("session/prompt", {"sessionId": session["sessionId"], "prompt": lp.PROMPT}, timeout=None)
        except Exception:  # the sidecar is killed under it: that is the point
            pass

    tg.start_soon(prompt)
    wanted = {"session CLI", "CLI's command", "command hook", "python launcher", "evaluator CLI", "watchdog"}
    await until(lambda: wanted <= run.labels() and lp.recorded_pids(project).get("daemon"), READY_S,
                f"every kind of child up (have {sorted(run.labels())})")
    return project


async def start_plain_session(run: Sidecar, root: Path) -> str:
    project = root / "plain-project"
    project.mkdir(exist_ok=True)
    session = await run.client.request("session/new", {"projectDir": str(project), "model": f"scripted:{PLAIN}"}, timeout=60)
    run.sessions.append(session["sessionId"])
    await until(lambda: "session CLI" in run.labels(), READY_S, "the second sidecar's CLI")
    return session["sessionId"]


def started_by(run: Sidecar, project: Path) -> dict[int, tuple[psutil.Process, str]]:
    """Everything the sidecar started, its daemon included (double-forked away from its tree)."""
    procs = {p.pid: (p, label(p)) for p in run.tree}
    pids = lp.recorded_pids(project)
    for key in ("grandchild", "daemon"):
        try:
            procs[pids[key]] = (psutil.Process(pids[key]), key)
        except (KeyError, psutil.Error):
            pass
    return procs


def kill_leftovers(procs: dict[int, tuple[psutil.Process, str]]) -> None:
    for proc, _ in procs.values():
        try:
            proc.kill()
        except psutil.Error:
            pass


def alive_of(procs: dict[int, tuple[psutil.Process, str]]) -> list[str]:
    return sorted(f"{pid} {name}" for pid, (proc, name) in procs.items() if running(proc))


# --------------------------------------------------------------------------- kill -9 mid-turn


@pytest.mark.asyncio
async def test_kill_9_mid_turn_leaves_nothing_running_and_nothing_on_disk_while_a_second_sidecar_keeps_its_own(tmp_path):
    data, logs = tmp_path / "data", tmp_path / "logs"
    procs: dict[int, tuple[psutil.Process, str]] = {}
    async with sidecar(data, logs) as second:
        other_sid = await start_plain_session(second, tmp_path)
        other_cli = [p for p in second.tree if label(p) == "session CLI"]
        try:
            async with sidecar(data, logs) as first, anyio.create_task_group() as tg:
                project = await start_lingering_turn(first, tmp_path, tg)
                procs = started_by(first, project)
                home = first.home(first.sessions[0])
                assert home.is_dir() and first.records(), "the home and the record exist while the sidecar lives"
                cli = next(p for p, name in procs.values() if name == "session CLI")
                assert f"{reaper.TOKEN_VAR}=".encode() in open(f"/proc/{cli.pid}/environ", "rb").read()

                os.kill(first.pid, signal.SIGKILL)
                await until(lambda: not alive_of(procs), GONE_S, f"every child of the killed sidecar gone ({alive_of(procs)})")
                await until(lambda: not home.exists() and not first.records(), GONE_S, "its CLI home and runtime record removed")
                tg.cancel_scope.cancel()
        finally:
            kill_leftovers(procs)
        # The sidecar beside it: its CLI, its home and its record untouched, and it still answers.
        assert other_cli and all(running(p) for p in other_cli)
        assert second.home(other_sid).is_dir() and len(second.records()) == 1
        await second.client.ping(timeout=10)


# --------------------------------------------------------------------------- both the sidecar and its watchdog killed


@pytest.mark.asyncio
async def test_when_the_watchdog_dies_with_the_sidecar_the_next_start_sweeps_the_dead_ones_leftovers_only(tmp_path):
    data, logs = tmp_path / "data", tmp_path / "logs"
    procs: dict[int, tuple[psutil.Process, str]] = {}
    async with sidecar(data, logs) as second:
        other_sid = await start_plain_session(second, tmp_path)
        other_cli = [p for p in second.tree if label(p) == "session CLI"]
        try:
            async with sidecar(data, logs) as first, anyio.create_task_group() as tg:
                project = await start_lingering_turn(first, tmp_path, tg)
                procs = started_by(first, project)
                home, records = first.home(first.sessions[0]), first.records()
                watchdog = next(p for p, name in procs.values() if name == "watchdog")
                process = psutil.Process(first.pid)
                # Frozen first, so it cannot sweep when its pipe closes; then both die the hard way.
                watchdog.suspend()
                os.kill(first.pid, signal.SIGKILL)
                watchdog.kill()
                await until(lambda: not running(watchdog) and not running(process), GONE_S, "the sidecar and its watchdog dead")
                tg.cancel_scope.cancel()
            def survivors() -> list[str]:
                return [name for pid, (p, name) in procs.items() if running(p) and name != "watchdog"]

            # The session's CLI is not among them once its OS boundary dies with the sidecar (bwrap
            # --die-with-parent), nor the project's command hook and what it started (the session's hook box dies
            # with it too; the kernel tears a box down as its launcher dies, which on a loaded machine takes a
            # moment after the sidecar is gone): the prompt hook's evaluator CLI is, and the CLI home and the record.
            boxed = {k: v for k, v in procs.items() if v[1] in ("grandchild", "daemon")}
            await until(lambda: "command hook" not in survivors() and not alive_of(boxed), GONE_S,
                        "the project's command hook and what it started gone with the sidecar (its hook box)")
            assert "evaluator CLI" in survivors() and home.is_dir() and records[0].exists(), \
                "leftovers exist before the next start"

            async with sidecar(data, logs) as third:
                await until(lambda: not alive_of(procs), SWEEP_S, f"the dead sidecar's children swept at the next start ({alive_of(procs)})")
                await until(lambda: not home.exists() and not records[0].exists(), SWEEP_S, "its CLI home and record swept")
                assert len(third.records()) == 1
        finally:
            kill_leftovers(procs)
        assert other_cli and all(running(p) for p in other_cli)
        assert second.home(other_sid).is_dir() and len(second.records()) == 1
        await second.client.ping(timeout=10)


# --------------------------------------------------------------------------- a record is data, not orders


def _write_record(run_dir: Path, pid: int, start: str, lines: list[dict]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = run_dir / reaper.record_name(pid, start)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.asyncio
async def test_the_start_up_sweep_kills_no_recycled_pid_deletes_nothing_outside_cli_homes_and_reaches_no_live_token(tmp_path):
    data, logs = tmp_path / "data", tmp_path / "logs"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    (data / "cli-home" / "real-leftover").mkdir(parents=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        async with sidecar(data, logs) as live:
            live_record = live.records()[0]
            live_token = reaper.read_record(live_record).token
            # A process carrying the live sidecar's token (as its children do), started outside it.
            carrier = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                       env={**os.environ, reaper.TOKEN_VAR: live_token})
            try:
                dead_pid = _dead_pid()
                forged = _write_record(data / "run", dead_pid, "12345", [
                    {"sidecar": dead_pid, "start": "12345", "token": live_token},
                    {"pid": bystander.pid, "start": "1", "group": True},  # the pid now names someone else
                    {"home": str(precious)},
                    {"home": str(data / "cli-home" / ".." / "run")},
                    {"home": str(data / "cli-home" / "real-leftover")},
                ])
                async with sidecar(data, logs):
                    await until(lambda: not forged.exists(), SWEEP_S, "the dead record swept")
                assert bystander.poll() is None and carrier.poll() is None
                assert (precious / "keep.txt").read_text() == "mine"
                assert live_record.exists() and (data / "run").is_dir()
                assert not (data / "cli-home" / "real-leftover").exists()
            finally:
                carrier.kill()
                carrier.wait()
    finally:
        bystander.kill()
        bystander.wait()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --------------------------------------------------------------------------- orderly life


@pytest.mark.asyncio
async def test_the_record_is_private_the_watchdog_comes_back_and_an_orderly_exit_leaves_nothing(tmp_path):
    data, logs = tmp_path / "data", tmp_path / "logs"
    async with sidecar(data, logs) as run:
        record = run.records()[0]
        assert record.stat().st_mode & 0o777 == 0o600
        assert (data / "run").stat().st_mode & 0o777 == 0o700
        watchdog = next(p for p in run.tree if label(p) == "watchdog")
        watchdog.kill()
        await until(lambda: any(label(p) == "watchdog" and p.pid != watchdog.pid for p in run.tree), SWEEP_S,
                    "a new watchdog started")
        new_watchdog = next(p for p in run.tree if label(p) == "watchdog" and p.pid != watchdog.pid)
    # shutdown/exit: the sidecar is gone, the watchdog finishes its sweep and leaves, the record with it.
    await until(lambda: not running(new_watchdog), SWEEP_S, "the watchdog exits after an orderly stop")
    assert not record.exists()
