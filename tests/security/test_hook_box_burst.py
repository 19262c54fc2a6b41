"""The session's hook box under a burst: many boxed hooks at once, each with a payload large enough that their
messages to the box's spawner overfill the socket between them (sidecar/hook_box.py waits for room, in order):
every hook starts, reads its whole payload and answers; a timed-out one dies with all it started."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from hooks.executors.command import CommandExecutor
from hooks.types import HookCall, HookContext, SessionContext, no_progress
from sidecar import sandbox
from sidecar.hook_box import HookBox
from tests.security.box_helpers import visible_outside
from tests.waiting import GONE_S

NO_BACKEND = sandbox.backend_problem(os.environ.get("PATH"))
pytestmark = [pytest.mark.asyncio, pytest.mark.skipif(NO_BACKEND is not None, reason=f"no OS boundary: {NO_BACKEND}")]


def call(spec: SimpleNamespace, session: SessionContext, payload: dict, timeout: float = 60.0) -> HookCall:
    ctx = HookContext(session=session, event="PreToolUse", hook_name=spec.name, execution_id="burst", tool_use_id="t",
                      deadline=0.0, log=logging.getLogger("test"))
    return HookCall(hook=spec, event="PreToolUse", payload=payload, context=ctx, timeout_s=timeout,
                    progress=no_progress)


def boxed_session(root: Path, name: str) -> SessionContext:
    """A session whose project (`root/project`) has a hook box, as the sidecar builds one for a boxed hook."""
    project = root / "project"
    project.mkdir()
    env = {"HOME": str(root), "PATH": os.environ["PATH"]}
    status = sandbox.decide("auto", os.environ["PATH"], (), project=project, cli_env=env, orion_dirs=[root / "d"])
    return SessionContext(session_id=name, project_dir=project, box=HookBox(status.boundary, lambda: True, {"project"}))


async def test_a_burst_of_boxed_hooks_with_large_payloads_all_run(tmp_path: Path) -> None:
    with visible_outside("orion-burst-") as root:
        session = boxed_session(root, "burst")
        project, box = session.project_dir, session.box
        spec = SimpleNamespace(name="count", source="project", argv=None, shell=None, config=SimpleNamespace(command=""),
                               command='wc -c | tr -d " "', cwd=None, env=None)
        executor = CommandExecutor()
        try:
            payloads = [{"hook_event_name": "PreToolUse", "n": i, "blob": "x" * (40_000 + i)} for i in range(48)]
            reports = await asyncio.gather(*(executor.run(call(spec, session, p)) for p in payloads))
            assert [r.status for r in reports] == ["ok"] * 48, [r.error for r in reports if r.status != "ok"][:3]
            sizes = [int((r.text or r.stdout).strip()) for r in reports]
            assert all(size > 40_000 for size in sizes) and len(set(sizes)) == 48  # each read its own, whole
            # A timed-out hook: its group and what it detached (setsid) die; the box goes on serving.
            slow = SimpleNamespace(**{**vars(spec), "name": "slow",
                                      "command": f"setsid sleep 300 & echo $! > {project}/detached; sleep 300"})
            report = await executor.run(call(slow, session, {"hook_event_name": "PreToolUse"}, timeout=1.0))
            assert report.status == "timeout"
            detached = int((project / "detached").read_text())
            # Asked from inside the same box (its PID namespace): the detached sleeper is gone too. The spawner has
            # sent its SIGKILL before it starts the probe; the kernel ends the process, and pid 1 reaps it, a moment
            # later, so the probe allows GONE_S for that and counts a zombie (killed, not yet reaped) as gone.
            probe = SimpleNamespace(**{**vars(spec), "name": "probe", "command": (
                f"cat >/dev/null; end=$(( $(date +%s) + {int(GONE_S)} )); while [ $(date +%s) -le $end ]; do "
                f"state=$(sed 's/.*) //' /proc/{detached}/stat 2>/dev/null | cut -c1); "
                f"case \"$state\" in ''|Z|X) echo gone; exit 0;; esac; sleep 0.05; done; echo alive")})
            seen = await executor.run(call(probe, session, payloads[0]))
            assert seen.status == "ok" and (seen.text or seen.stdout).strip() == "gone", seen
        finally:
            await executor.aclose()
            await box.aclose()


async def test_a_boxed_hook_holds_its_three_descriptors_and_nothing_of_the_spawners(tmp_path: Path) -> None:
    """The spawner starts hooks with posix_spawn (sidecar/box_spawner.py), which closes nothing by itself: what keeps
    its end of the socket pair to the sidecar (over which a hook could read other hooks' payloads or forge their
    exit) out of a hook is that everything it holds is close-on-exec. A hook's own open descriptors, listed by
    the hook's shell, are 0, 1 and 2; a second hook started while the first still runs holds no descriptor of the
    first's either; a program that cannot be found still ends as before: exit 127, the reason on its stderr."""
    with visible_outside("orion-fds-") as root:
        session = boxed_session(root, "fds")
        box = session.box
        # the shell's own descriptors, listed by another process (a glob in the shell would list its own reading)
        listing = "cat >/dev/null; ls /proc/$$/fd"
        spec = SimpleNamespace(name="fds", source="project", argv=None, shell=None, config=SimpleNamespace(command=""),
                               command=listing, cwd=None, env=None)
        slow = SimpleNamespace(**{**vars(spec), "name": "slow", "command": "cat >/dev/null; sleep 2"})
        missing = SimpleNamespace(**{**vars(spec), "name": "missing", "command": None,
                                     "argv": ["no-such-program-5e1d", "x"]})
        executor = CommandExecutor()
        try:
            running = asyncio.ensure_future(executor.run(call(slow, session, {"hook_event_name": "PreToolUse"})))
            await asyncio.sleep(0.3)
            report = await executor.run(call(spec, session, {"hook_event_name": "PreToolUse"}))
            assert report.status == "ok", report
            assert (report.text or report.stdout).split() == ["0", "1", "2"], report
            assert (await running).status == "ok"
            gone = await executor.run(call(missing, session, {"hook_event_name": "PreToolUse"}))
            assert gone.exit_code == 127 and "could not start no-such-program-5e1d" in (gone.stderr or ""), gone
        finally:
            await executor.aclose()
            await box.aclose()


async def test_the_spawner_keeps_every_reply_the_socket_has_no_room_for(tmp_path: Path) -> None:
    """sidecar/box_spawner.py as a real process on a socket pair, in a PID namespace of its own as in the box: 400
    hooks started while nothing reads its replies. A start and an exit for each is 800 replies, about three times
    what the socket holds (~280 small packets); every one must arrive once the sidecar reads again, in order per
    hook."""
    import array
    import json
    import socket
    import subprocess
    import sys

    from sidecar.hook_box import SPAWNER

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # pid 1 of its namespace, as in the hook box: what it kills when the socket closes is the namespace's
    spawner = subprocess.Popen(["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--as-pid-1", "--die-with-parent",
                                sys.executable, "-S", str(SPAWNER), str(theirs.fileno())], pass_fds=(theirs.fileno(),))
    theirs.close()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        ours.settimeout(30)
        for ident in range(1, 401):
            message = {"op": "run", "id": ident, "argv": ["true"], "env": {"PATH": os.environ["PATH"]},
                       "cwd": str(tmp_path)}
            ours.sendmsg([json.dumps(message).encode()],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null, null, null]))])
        time.sleep(1.0)  # the spawner starts them all and reaps them, with nobody reading
        replies: dict[int, list[str]] = {}
        ours.settimeout(10)
        while sum(len(kinds) for kinds in replies.values()) < 800:
            reply = json.loads(ours.recv(1 << 16))
            replies.setdefault(reply["id"], []).append("pid" if "pid" in reply else "status" if "status" in reply
                                                       else f"error {reply.get('error')}")
        assert sorted(replies) == list(range(1, 401))
        assert all(kinds == ["pid", "status"] for kinds in replies.values()), \
            {k: v for k, v in replies.items() if v != ["pid", "status"]}
    finally:
        os.close(null)
        ours.close()
        spawner.wait(timeout=10)
