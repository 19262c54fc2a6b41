"""What command hooks leave running, through the real runner and real processes: strays die with the hook, helpers it detached (however spelled) live until the session ends, a timeout kills everything, and finding them costs the same few /proc reads per hook at 10 or 200 hooks in flight."""

from __future__ import annotations

import builtins
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from hooks import dispositions
from hooks.executors import leftovers
from tests.hooks.support import PRE_BASH, Recorder, cmd, running, session, settings
from tests.waiting import GONE_S, until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adoption of orphans is Linux's")

POST_BASH = {**PRE_BASH, "tool_response": {"stdout": "", "stderr": ""}}
FAULTS = Path(__file__).resolve().parents[1] / "reliability" / "faulty_hooks" / "faults.py"
SLEEPER = f"{sys.executable} -S {FAULTS} sleep"  # sleeps a minute; the tag after it names it on its command line


def tagged(tag: str) -> list[psutil.Process]:
    """Live processes whose command line carries `tag` (zombies are dead enough)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and any(tag in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


UP_S = 15.0  # a helper a hook started is up within this, on a loaded machine too


def kinds(tag: str) -> list[str]:
    """The kinds (KEPT's keys) of the live processes carrying `tag`, sorted; anything else carrying it as itself."""
    found = []
    for proc in tagged(tag):
        try:
            last = proc.cmdline()[-1]
        except (psutil.Error, IndexError):
            continue
        found.append(last.rsplit("-", 1)[0] if last.endswith(tag) else last)
    return sorted(found)


def kill_tagged(tag: str) -> None:
    for proc in tagged(tag):
        try:
            proc.kill()
        except psutil.Error:
            pass


# The ways a hook starts something in the background, each child tagged with its kind.
KEPT = {
    "quiet": "{s} {t} >/dev/null 2>&1 &",  # let go of the hook's output
    "nohup": "nohup {s} {t} &",  # holds the pipes, ignores SIGHUP
    "setsid": "setsid {s} {t} &",  # holds the pipes, its own session
    "double_fork": "( setsid sh -c '{s} {t} </dev/null >/dev/null 2>&1 &' & )",  # a daemon: double fork and setsid
    # node's spawn({detached: true, stdio: "ignore"}).unref(), as a worker manager does it
    "node_style": "{py} -c \"import subprocess, sys; subprocess.Popen(sys.argv[1:], start_new_session=True, "
                  "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\" {s} {t}",
}


@contextlib.asynccontextmanager
async def session_started(project: Any, hooks: dict[str, Any]) -> AsyncIterator[tuple[Any, Recorder, Any]]:
    """The project with these hooks, trusted, its runner up and SessionStart fired: (runner, recorder, answer).
    Leaving the block is the session's end (the runner closes)."""
    project.settings({"hooks": hooks})
    project.trust()
    rec = Recorder()
    async with running(project.load(), rec) as runner:
        yield runner, rec, await runner.fire("SessionStart", {"source": "startup"}, session(project))


def background(kind: str, tag: str) -> str:
    return KEPT[kind].format(s=SLEEPER, t=f"{kind}-{tag}", py=sys.executable)


@pytest.mark.asyncio
async def test_helpers_a_hook_detached_live_until_the_session_ends_and_a_stray_holding_its_output_dies(project):
    tag = uuid.uuid4().hex[:8]
    starts = "\n".join(background(kind, tag) for kind in KEPT)
    command = f"{starts}\n{SLEEPER} stray-{tag} &\necho started"
    hooks = settings("SessionStart", cmd(command, name="starter"))["hooks"]
    hooks |= settings("PostToolUse", cmd("echo busy | cat; sleep 0.05 & wait", name="busy"))["hooks"]
    try:
        with anyio.fail_after(60):
            async with session_started(project, hooks) as (runner, rec, agg):
                [result] = agg.results
                assert result.outcome == "success" and result.stdout == "started\n"
                # the stray held the hook's output: it was killed half a second after the exit (and is gone a
                # moment later), and the observers were told
                assert any("[orion] killed 1 process(es)" in line for line in rec.progress_lines("starter", "stderr"))
                await until(lambda: not tagged(f"stray-{tag}"), GONE_S, "the stray gone")
                # each helper once (a double fork's intermediate shell, which names the tag too, has left)
                await until(lambda: kinds(tag) == sorted(KEPT), UP_S, "every helper up, once")
                # the session goes on: other hooks fork, run and end; the helpers stay
                helpers = {p.pid for p in tagged(tag)}
                for _ in range(3):
                    assert (await runner.fire("PostToolUse", POST_BASH, session(project))).results[0].outcome == "success"
                assert {p.pid for p in tagged(tag)} == helpers
            # runner.aclose() is the session's end
            await until(lambda: not tagged(tag), GONE_S, "the helpers gone with the session")
    finally:
        kill_tagged(tag)


def bits(*sigs: int) -> int:
    return sum(1 << (sig - 1) for sig in sigs)


# What a hook must not inherit ignored: the hang-up and termination signals, and the two Python ignores itself.
DEFAULTS = bits(signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ)
# The shell's own SigIgn mask, printed by the hook: $$ is the hook's process itself.
SIGIGN = "sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status"


@pytest.fixture
def started_under_nohup():
    """This process as `nohup` (SIGHUP) and a script's background job (SIGINT, SIGQUIT) start it, SIGTERM too."""
    saved = {sig: signal.getsignal(sig) for sig in dispositions.SIGNALS}
    for sig in saved:
        signal.signal(sig, signal.SIG_IGN)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@pytest.mark.asyncio
async def test_started_with_sighup_ignored_hooks_still_start_with_it_at_default_and_a_stray_still_dies(
        project, started_under_nohup):
    """Ignored signals survive exec: unless reset, every hook under `nohup` would ignore SIGHUP, and every stray it
    leaves would pass for a helper started with `nohup`."""
    tag = uuid.uuid4().hex[:8]
    command = f"{SIGIGN}\n{background('nohup', tag)}\n{SLEEPER} stray-{tag} &"
    (project.hooks_dir / "report.py").write_text(
        "import os, subprocess\n"
        "def run(payload):\n"
        "    own = open('/proc/self/status').read().split('SigIgn:')[1].split()[0]\n"
        f"    child = subprocess.run(['sh', '-c', {SIGIGN!r}], capture_output=True, text=True).stdout.strip()\n"
        "    print(own, child)\n")
    hooks = settings("SessionStart", cmd(command, name="starter"), {"type": "python", "script": "report.py",
                                                                     "name": "py"})["hooks"]
    try:
        with anyio.fail_after(60):
            async with session_started(project, hooks) as (runner, rec, agg):
                shell, python = agg.results
                assert shell.outcome == "success" and python.outcome == "success", agg.results
                assert int(shell.stdout, 16) & DEFAULTS == 0, shell.stdout
                launcher, child = (int(mask, 16) for mask in python.stdout.split())
                # the launcher is Python, which ignores SIGPIPE and SIGXFSZ itself; what it starts gets them back
                assert launcher & bits(signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM) == 0, python.stdout
                assert child & DEFAULTS == 0, python.stdout
                # handled as without nohup: the stray died with its hook, the helper started with nohup lives on
                assert any("[orion] killed 1 process(es)" in line for line in rec.progress_lines("starter", "stderr"))
                await until(lambda: not tagged(f"stray-{tag}"), GONE_S, "the stray gone")
                await until(lambda: tagged(f"nohup-{tag}"), UP_S, "the nohup helper up")
                # and this process still shrugs a hang-up off, as its starter asked
                assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, signal.SIG_IGN)
                os.kill(os.getpid(), signal.SIGHUP)
            await until(lambda: not tagged(tag), GONE_S, "the helper gone with the session")
    finally:
        kill_tagged(tag)


@pytest.mark.asyncio
async def test_a_timeout_kills_the_hook_and_everything_it_started_in_any_session(project):
    tag = uuid.uuid4().hex[:8]
    command = "\n".join([background("setsid", tag), background("double_fork", tag), background("quiet", tag), "sleep 30"])
    project.settings(settings("PreToolUse", cmd(command, timeout=1)))
    project.trust()
    try:
        with anyio.fail_after(60):
            async with running(project.load()) as runner:
                agg = await runner.fire("PreToolUse", PRE_BASH, session(project))
                assert agg.results[0].outcome == "timeout"
                await until(lambda: not tagged(tag), GONE_S, "everything the timed-out hook started gone")
    finally:
        kill_tagged(tag)


@pytest.mark.asyncio
async def test_one_session_ending_leaves_another_sessions_helpers_alone(tmp_path):
    from tests.hooks.support import Project

    tag = uuid.uuid4().hex[:8]
    projects = []
    for name in ("a", "b"):
        p = Project((tmp_path / name).resolve())
        p.settings(settings("SessionStart", cmd(background("double_fork", f"{name}-{tag}"))))
        p.trust()
        projects.append(p)
    try:
        with anyio.fail_after(60):
            async with running(projects[1].load()) as runner_b:
                await runner_b.fire("SessionStart", {"source": "startup"}, session(projects[1], "b"))
                async with running(projects[0].load()) as runner_a:
                    await runner_a.fire("SessionStart", {"source": "startup"}, session(projects[0], "a"))
                    await until(lambda: tagged(f"a-{tag}") and tagged(f"b-{tag}"), UP_S, "both helpers up")
                await until(lambda: not tagged(f"a-{tag}"), GONE_S, "a's helper gone with a's session")
                assert tagged(f"b-{tag}")
            await until(lambda: not tagged(f"b-{tag}"), GONE_S, "b's helper gone with b's session")
    finally:
        kill_tagged(tag)


class ProcCounter:
    """Counts every file and directory this process opens or lists under /proc (whoever does it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        for owner, name in ((os, "open"), (builtins, "open"), (os, "listdir"), (os, "readlink"), (os, "scandir")):
            monkeypatch.setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, real: Any) -> Any:
        def counted(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith("/proc"):
                self.count += 1
            return real(path, *args, **kwargs)

        return counted


async def cost_per_hook(project, n: int, counter: ProcCounter) -> tuple[float, float]:
    """(/proc files read, processes examined) per hook when `n` PostToolUse hooks that each fork run at once."""
    # Each hook forks (a pipeline), so none takes the no-fork shortcut: every one reads what was left.
    hooks = [cmd(f"echo hook-{i} | cat >/dev/null; echo '{{}}'") for i in range(n)]
    project.settings(settings("PostToolUse", *hooks, matcher="Bash"))
    project.trust()
    async with running(project.load()) as runner:
        await runner.fire("PostToolUse", POST_BASH, session(project))  # warm: imports, the first adoption set-up
        reads, examined = counter.count, leftovers.stats.examined
        agg = await runner.fire("PostToolUse", POST_BASH, session(project))
        assert len(agg.results) == n and all(r.outcome == "success" for r in agg.results)
        return (counter.count - reads) / n, (leftovers.stats.examined - examined) / n


@pytest.mark.asyncio
async def test_what_hooks_leave_is_found_with_the_same_few_proc_reads_per_hook_at_10_and_200_hooks(project, monkeypatch):
    counter = ProcCounter(monkeypatch)
    with anyio.fail_after(120):
        small = await cost_per_hook(project, 10, counter)
        large = await cost_per_hook(project, 200, counter)
    # Before: every concurrent hook read /proc/<pid>/environ of every newer process, ~n/2 per hook (88,459 at 400).
    assert small[0] <= 3 and large[0] <= 3, (small, large)
    assert small[1] <= 1 and large[1] <= 1, (small, large)


@pytest.mark.asyncio
async def test_an_orphan_no_hook_owns_is_reaped_once_it_has_lingered_as_a_zombie(monkeypatch):
    """The hook engine's process adopts every orphan below it; one that is nobody's (a CLI's helper left when the CLI
    ended, here a grandchild of a plain subprocess) must not stay a zombie until the process exits."""
    import subprocess

    reg = leftovers._registry
    reg.enable()
    if not reg.enabled:
        pytest.skip("this kernel refused PR_SET_CHILD_SUBREAPER")
    monkeypatch.setattr(leftovers, "_LINGER_S", 0.2)
    # the grandchild outlives its parent by a moment, so it dies as our (adopted) child
    parent = subprocess.Popen(["sh", "-c", "sleep 0.3 & echo $!"], stdout=subprocess.PIPE, text=True)
    orphan = int(parent.communicate(timeout=10)[0])

    def zombie() -> bool:
        try:
            return psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE and psutil.Process(orphan).ppid() == os.getpid()
        except psutil.NoSuchProcess:
            return False

    await until(zombie, 10, "the orphan became our zombie")
    reg.next_linger_check = 0.0
    reg.refresh()  # first seen dead: left to whoever may still reap it
    assert zombie()
    await anyio.sleep(0.3)
    reg.refresh()  # a lingering zombie now, and the check is due again
    assert not psutil.pid_exists(orphan)
