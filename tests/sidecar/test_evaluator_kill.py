"""The evaluator's deadline with real process trees: at the timeout every marked process, in any process group, is gone."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest

from sidecar.evaluator import RUN_MARKER_ENV, find_marked_processes, run_with_deadline
from tests.waiting import pids_alive

# A child in our process group that starts a grandchild in a process group of its own
# (what `setsid` does), then both sleep far past any deadline.
TREE_SCRIPT = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
print("ready", flush=True)
time.sleep(300)
"""


async def spawn_tree(marker: str) -> anyio.abc.Process:
    process = await anyio.open_process(
        [sys.executable, "-c", TREE_SCRIPT], env={**os.environ, RUN_MARKER_ENV: marker}, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    with anyio.fail_after(10):
        assert b"ready" in await process.stdout.receive()
    return process


@pytest.mark.asyncio
async def test_deadline_kills_the_child_and_its_grandchild_in_another_process_group() -> None:
    marker = "test-" + os.urandom(6).hex()
    seen: list[int] = []

    async def work() -> str:
        process = await spawn_tree(marker)
        async with process:
            seen.extend(p.pid for p in find_marked_processes(marker, since=0))
            await process.wait()  # never returns on its own: the tree sleeps for 300 s
        return "finished"

    with anyio.fail_after(20):
        with pytest.raises(TimeoutError):
            await run_with_deadline(marker, 5.0, work)  # room for two interpreters to start on a loaded machine
    assert len(seen) == 2, "the child and its setsid grandchild were both found by their marker"
    assert pids_alive(seen) == []
    assert find_marked_processes(marker, since=0) == []


@pytest.mark.asyncio
async def test_outside_cancellation_also_kills_the_tree() -> None:
    marker = "test-" + os.urandom(6).hex()
    seen: list[int] = []
    started = anyio.Event()

    async def work() -> str:
        process = await spawn_tree(marker)
        async with process:
            seen.extend(p.pid for p in find_marked_processes(marker, since=0))
            started.set()
            await process.wait()
        return "finished"

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(run_with_deadline, marker, 300.0, work)
            await started.wait()
            group.cancel_scope.cancel()
    assert len(seen) == 2
    assert pids_alive(seen) == []


@pytest.mark.asyncio
async def test_work_that_finishes_returns_its_result_and_leaves_nothing_behind() -> None:
    marker = "test-" + os.urandom(6).hex()
    seen: list[int] = []

    async def work() -> str:
        process = await spawn_tree(marker)
        seen.extend(p.pid for p in find_marked_processes(marker, since=0))
        # Walk away from the tree without stopping it, as a crashed CLI would.
        return "answer"

    with anyio.fail_after(20):
        assert await run_with_deadline(marker, 60.0, work) == "answer"
    assert len(seen) == 2
    assert pids_alive(seen) == []


@pytest.mark.asyncio
async def test_errors_from_the_work_propagate_unchanged() -> None:
    async def work() -> str:
        raise ValueError("cli crashed")

    with anyio.fail_after(10), pytest.raises(ValueError, match="cli crashed"):
        await run_with_deadline("unused", 60.0, work)
