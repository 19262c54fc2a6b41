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
    try:
        with anyio.fail_after(60):
            watch.start()
            await anyio.sleep(0.3)  # the watcher is set up in a thread: nothing to be told about
            for i in range(3):  # a burst of writes is one change, reported once quiet
                (project / ".envrc").write_text(f"export A={i}\n")
            (project / ".env").write_text("B=2\n")  # named but absent at the start: an add
            (project / "other.txt").write_text("not watched\n")
            await until(lambda: len(calls(log)) >= 2, 20, "FileChanged for .envrc and .env")
            # a hook's watchPaths (absolute) are watched too, and a newer list replaces the older one
            watch.watch_paths({"watchPaths": [str(outside / "a.txt"), "relative/ignored.txt"]})
            # the watcher starts again for the new list, in its thread: write until it has seen the file
            for i in range(40):
                (outside / "a.txt").write_text(f"x{i}")
                if len(calls(log)) >= 3:
                    break
                await anyio.sleep(0.5)
            await until(lambda: len(calls(log)) >= 3, 20, "FileChanged for the asked path")
            await anyio.sleep(1.5)  # the last of those writes reported, if it came after the watcher saw one
            before = len(calls(log))
            (project / ".envrc").unlink()
            await until(lambda: len(calls(log)) > before, 20, "FileChanged for the removed file")
    finally:
        await watch.aclose()
        await runner.aclose()
    seen = [(c["file_path"], c["event"]) for c in calls(log)]
    # the first two come in one quiet period, in either order; one report per file however many writes it had
    assert sorted(seen[:2]) == [(str(project / ".env"), "add"), (str(project / ".envrc"), "change")], seen
    # the asked path: written until the restarted watcher saw it (one report per quiet period), then the removal
    asked = [event for path, event in seen[2:-1] if path == str(outside / "a.txt")]
    assert asked and len(asked) == len(seen) - 3 and set(asked) <= {"add", "change"}, seen
    assert seen[-1] == (str(project / ".envrc"), "unlink"), seen
    assert all(c["hook_event_name"] == "FileChanged" and c["session_id"] == "fw-1" for c in calls(log))
    assert watch.paths == frozenset({str(project / ".envrc"), str(project / ".env"), str(project / "a.txt"),
                                     str(outside / "a.txt")})
