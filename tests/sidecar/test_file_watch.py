"""FileChanged as the sidecar fires it (sidecar/file_watch.py), with real files, the real watcher and a real command
hook; through `python -m sidecar` against the bundled CLI it is compared in tests/conformance (`event_file_changed*`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from hooks.registry import HookRegistry
from hooks.runner import HookRunner
from hooks.hookset import load_hookset
from hooks.trust import TrustStore
from hooks.types import SessionContext
from sidecar.file_watch import FileWatch, named_files
from tests.waiting import until

RECORD = f"{sys.executable} -c \"import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(sys.stdin.read() + '\\n')\""


def pairs(log: Path) -> list[tuple[str, str]]:
    return [(c["file_path"], c["event"]) for c in calls(log)]


async def quiet(log: Path, still_s: float = 2.0, within_s: float = 30.0) -> None:
    """Until no FileChanged report has come for `still_s` (what was written has all been reported)."""
    with anyio.fail_after(within_s):
        count, since = len(calls(log)), anyio.current_time()
        while anyio.current_time() - since < still_s:
            await anyio.sleep(0.1)
            if len(calls(log)) != count:
                count, since = len(calls(log)), anyio.current_time()


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


@pytest.mark.asyncio
async def test_named_files_and_asked_paths_fire_filechanged_once_quiet(tmp_path: Path) -> None:
    project, log, outside = tmp_path / "p", tmp_path / "calls.jsonl", tmp_path / "elsewhere"
    (project / ".claude").mkdir(parents=True)
    outside.mkdir()
    (project / ".envrc").write_text("export A=1\n")
    hook = {"type": "command", "command": f"{RECORD} {log}"}
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"FileChanged": [{"matcher": ".envrc|.env", "hooks": [hook]},
                                   # the matcher is tested on the file's name: this one takes the asked path below
                                   {"matcher": "a.txt", "hooks": [hook]}]}}))
    TrustStore().trust(project)
    hookset = load_hookset(project, registry=HookRegistry())
    assert named_files(hookset) == [".envrc", ".env", "a.txt"]
    runner = HookRunner(hookset, data_dir=tmp_path / "data")
    watch = FileWatch(runner, SessionContext("fw-1", project), named_files(hookset))
    envrc, env, asked_path = str(project / ".envrc"), str(project / ".env"), str(outside / "a.txt")
    try:
        with anyio.fail_after(120):
            watch.start()
            # The watcher is set up in its own task, with nothing to tell when it is ready: write until it reports.
            for i in range(60):
                (project / ".envrc").write_text(f"export A=warm{i}\n")
                if calls(log):
                    break
                await anyio.sleep(0.5)
            await quiet(log)
            first = len(calls(log))
            for i in range(3):  # a burst of writes is one change, reported once quiet
                (project / ".envrc").write_text(f"export A={i}\n")
            (project / ".env").write_text("B=2\n")  # named but absent at the start: an add
            (project / "other.txt").write_text("not watched\n")
            await until(lambda: len(calls(log)) >= first + 2, 20, "FileChanged for .envrc and .env")
            await quiet(log)
            burst = len(calls(log))
            # a hook's watchPaths (absolute) are watched too, and a newer list replaces the older one
            watch.watch_paths({"watchPaths": [asked_path, "relative/ignored.txt"]})
            # the watcher starts again for the new list, in its task: write until it has seen the file
            for i in range(60):
                (outside / "a.txt").write_text(f"x{i}")
                if len(calls(log)) > burst:
                    break
                await anyio.sleep(0.5)
            await until(lambda: len(calls(log)) > burst, 20, "FileChanged for the asked path")
            (project / ".envrc").unlink()
            await until(lambda: (envrc, "unlink") in pairs(log), 20, "FileChanged for the removed file")
    finally:
        await watch.aclose()
        await runner.aclose()
    seen = pairs(log)
    assert set(seen[:first]) == {(envrc, "change")}, seen  # the warm-up
    # the burst and the add come in one quiet period, in either order; one report per file however many writes
    assert sorted(seen[first:burst]) == [(env, "add"), (envrc, "change")], seen
    # the asked path: written until the restarted watcher saw it (one report per quiet period); then the removal,
    # the only other report (the two files are watched apart: a late a.txt report may follow it)
    after = seen[burst:]
    assert after.count((envrc, "unlink")) == 1, seen
    asked = [event for path, event in after if path == asked_path]
    assert asked and len(asked) == len(after) - 1 and set(asked) <= {"add", "change"}, seen
    assert all(c["hook_event_name"] == "FileChanged" and c["session_id"] == "fw-1" for c in calls(log))
    assert watch.paths == frozenset({str(project / ".envrc"), str(project / ".env"), str(project / "a.txt"),
                                     str(outside / "a.txt")})
