"""FileChanged for one session: the sidecar watches the files Claude Code would watch and fires the event itself.

The CLI watches for FileChanged only on behalf of its own settings hooks: an SDK callback's matcher is not watched,
and the SessionStart and CwdChanged answers that add `watchPaths` are the sidecar's (it fires those events), so
under Orion the CLI never fires FileChanged (measured on 2.1.330: tests/conformance `event_file_changed*`). What
is watched is what the CLI watches: every file a FileChanged hook's matcher names (`.envrc|.env`, relative to the
project), plus the `watchPaths` the last SessionStart, CwdChanged or FileChanged answer gave (a newer non-empty
list replaces the older one, as in the CLI). A change is reported once the file has been quiet for half a second
(the CLI's chokidar waits as long for a write to finish), as `event` "add", "change" or "unlink".

The watcher reads the host's files; inside the session's boundary the project is the same directory, so what the
agent writes there is seen. Nothing here runs anything but the session's own hooks, through its runner.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio

from hooks.runner import HookRunner
from hooks.types import SessionContext

log = logging.getLogger("sidecar.file_watch")

QUIET_MS = 500  # a write is finished when the file has been quiet this long (chokidar's awaitWriteFinish in the CLI)
STATE_KEY = "_file_watch"  # SessionContext.state: this session's FileWatch


class FileWatch:
    """Watches one session's files for its FileChanged hooks; `aclose` at the session's end."""

    def __init__(self, runner: HookRunner, context: SessionContext, named: Iterable[str]) -> None:
        self.runner = runner
        self.context = context
        base = context.project_dir
        self._named = {_absolute(name, base) for name in named}
        self._asked: set[str] = set()  # the latest non-empty watchPaths a hook gave
        self._restart = anyio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._named | self._asked)

    def start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"file-watch {self.context.session_id}")

    def watch_paths(self, answer: dict[str, Any] | None) -> None:
        """Take the `watchPaths` of a SessionStart, CwdChanged or FileChanged answer (absolute paths)."""
        paths = (answer or {}).get("watchPaths")
        if not isinstance(paths, list):
            return
        asked = {os.path.normpath(p) for p in paths if isinstance(p, str) and os.path.isabs(p)}
        if asked and asked != self._asked:
            self._asked = asked
            self._restart.set()
            self.start()

    async def aclose(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        from watchfiles import Change, awatch

        kinds = {Change.added: "add", Change.modified: "change", Change.deleted: "unlink"}
        while not self._closed:
            self._restart = anyio.Event()
            paths = self.paths
            # A file that does not exist yet is watched through its folder (its creation is an "add").
            folders = sorted({os.path.dirname(p) for p in paths if os.path.isdir(os.path.dirname(p))})
            if not folders:
                await self._restart.wait()
                continue
            try:
                async for changes in awatch(*folders, watch_filter=lambda _c, path: path in paths, recursive=False,
                                            debounce=QUIET_MS, step=50, stop_event=self._restart,
                                            ignore_permission_denied=True):
                    for change, path in sorted(changes, key=lambda c: c[1]):
                        await self._fire(path, kinds.get(change, "change"))
            except Exception:  # noqa: BLE001 - a watcher that broke (a folder removed) is set up again
                log.warning("session %s: watching %d file(s) failed; watching again", self.context.session_id,
                            len(paths), exc_info=True)
                await anyio.sleep(1.0)

    async def _fire(self, path: str, event: str) -> None:
        from sidecar.sessions import sidecar_payload

        payload = {**sidecar_payload("FileChanged", self.context, file_path=path), "event": event}
        try:
            agg = await self.runner.fire("FileChanged", payload, self.context)
        except Exception:  # noqa: BLE001 - one failed firing must not stop the watch
            log.exception("session %s: FileChanged for %s failed", self.context.session_id, path)
            return
        self.watch_paths(agg.specific)


def _absolute(name: str, base: Path) -> str:
    return os.path.normpath(name if os.path.isabs(name) else os.path.join(base, name))


def named_files(hookset: Any) -> list[str]:
    """The files this project's FileChanged hooks name in their matchers (`.envrc|.env`), as the CLI reads them."""
    names: list[str] = []
    for spec in hookset.entries:
        if spec.event == "FileChanged" and spec.active and spec.matcher not in (None, "", "*"):
            names += [n.strip() for n in spec.matcher.split("|") if n.strip() and n.strip() not in names]
    return names
