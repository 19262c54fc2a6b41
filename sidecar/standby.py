"""Prepared sessions: a CLI started ahead of `session/new`, for a client that says where its user will work next.

The CLI's own start (~0.5 s, ~0.8 s with the OS sandbox) is most of a session start. A desktop app knows the project
before its user types: `session/prepare` (`_orion/session/prepare` in ACP) builds the session exactly as
`session/new` would with the same parameters and starts its CLI, but runs no hook. The next `session/new` with the
same parameters takes it over and only runs its SessionStart hooks.

Safety: a prepared session is what `session/new` would have started, nothing more: only the client asks for one, and
it grants nothing. It is taken over only while what it was built from is unchanged: the hook set (hooks, their state,
the project's trust) and the files the CLI read at its start (settings, `.mcp.json`, CLAUDE.md, agents, commands,
skills). Otherwise it is closed and `session/new` starts afresh. At most `MAX_STANDBYS` wait, each at most
`TTL_S`; all are closed at shutdown.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

log = logging.getLogger(__name__)

MAX_STANDBYS = 2
TTL_S = 600.0
# Files under these project directories are read by the CLI at its start; past this many, a change is assumed.
MAX_WATCHED_FILES = 2000

# What the CLI reads at its start, relative to the project (its user-level files are added by the caller).
PROJECT_FILES = (".claude/settings.json", ".claude/settings.local.json", ".mcp.json", "CLAUDE.md", "CLAUDE.local.md",
                 ".claude/CLAUDE.md", "AGENTS.md")
PROJECT_DIRS = (".claude/agents", ".claude/commands", ".claude/skills", ".claude/output-styles")


def _stat(path: Path) -> tuple[int, int, int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    # The change time too: no one but root can set it back, so a file swapped while the CLI read it and then
    # restored (content, size, mtime and inode as before) still changes the fingerprint.
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def files_fingerprint(project: Path, user_files: list[Path]) -> str:
    """A digest of the (mtime, ctime, size, inode, device) of every file the CLI reads at its start: any edit,
    addition or removal changes it, an edit undone afterwards too."""
    seen: list[Any] = []
    for rel in PROJECT_FILES:
        seen.append((rel, _stat(project / rel)))
    for path in user_files:
        seen.append((str(path), _stat(path)))
    count = 0
    for rel in PROJECT_DIRS:
        base = project / rel
        seen.append((rel, _stat(base)))
        if not base.is_dir():
            continue
        for root, dirs, files in os.walk(base):
            dirs.sort()
            for name in sorted(files):
                count += 1
                if count > MAX_WATCHED_FILES:
                    return "too-many-files:" + str(time.monotonic_ns())  # never equal: no take-over
                path = Path(root, name)
                seen.append((str(path.relative_to(project)), _stat(path)))
    return hashlib.sha256(json.dumps(seen, default=str).encode()).hexdigest()


def hookset_fingerprint(hookset: Any) -> str:
    """The hooks a session would run and how: any hook added, removed, edited, trusted or disabled changes it."""
    entries = [(spec.id, spec.event, spec.state, spec.matcher, spec.type, spec.command, str(spec.script),
                spec.timeout_s, spec.fail_closed, spec.source, str(spec.source_file)) for spec in hookset.entries]
    canonical = {"manifest": hookset.manifest.hash, "trusted": hookset.trust.trusted, "entries": entries,
                 "builtin": hookset.builtin_options, "warnings": hookset.warnings}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(slots=True)
class Standby:
    key: str
    built: Any  # sidecar.sessions.Built
    fingerprint: Callable[[], str]  # what it was built from, as of now (run in a thread)
    built_from: str
    created: float = field(default_factory=time.monotonic)
    ready: anyio.Event = field(default_factory=anyio.Event)
    failed: BaseException | None = None


Closer = Callable[[Any], Awaitable[None]]


class StandbyPool:
    """The prepared sessions of one sidecar, by the key of the parameters they were prepared with."""

    def __init__(self, close: Closer, *, max_standbys: int = MAX_STANDBYS, ttl_s: float = TTL_S) -> None:
        self._close = close
        self._max = max_standbys
        self._ttl = ttl_s
        self._by_key: dict[str, Standby] = {}
        self._expiry_tasks: set[Any] = set()

    @property
    def ttl_s(self) -> float:
        return self._ttl

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    async def add(self, standby: Standby, start: Callable[[], Awaitable[None]]) -> None:
        """Start the standby's CLI; the oldest standby (or the one with the same key) makes room."""
        await self._expire()
        old = self._by_key.pop(standby.key, None)
        if old is not None:
            await self._discard(old, "prepared again")
        while len(self._by_key) >= self._max:
            oldest = min(self._by_key.values(), key=lambda s: s.created)
            del self._by_key[oldest.key]
            await self._discard(oldest, "room for a newer one")
        self._by_key[standby.key] = standby
        self._schedule_expiry()
        try:
            await start()
        except BaseException as exc:
            standby.failed = exc
            if self._by_key.get(standby.key) is standby:
                del self._by_key[standby.key]
            with anyio.CancelScope(shield=True):
                await self._close(standby.built)
            raise
        finally:
            standby.ready.set()

    async def take(self, key: str) -> Any | None:
        """The prepared session for `key` if it is ready (or becomes ready) and still what a fresh start would
        build; else None (and a stale one is closed)."""
        await self._expire()
        standby = self._by_key.pop(key, None)
        if standby is None:
            return None
        await standby.ready.wait()
        if standby.failed is not None:
            return None
        now = await anyio.to_thread.run_sync(standby.fingerprint)
        if now != standby.built_from:
            await self._discard(standby, "its project or settings changed since it was prepared")
            return None
        if not standby.built.agent.alive():
            await self._discard(standby, "its CLI has exited")
            return None
        return standby.built

    def _schedule_expiry(self) -> None:
        """Close what waited too long even if no other call comes (the pool checks lazily otherwise)."""
        import asyncio

        loop = asyncio.get_running_loop()
        tasks = self._expiry_tasks

        def fire() -> None:
            task = loop.create_task(self._expire())
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.call_later(self._ttl + 1.0, fire)

    async def close_all(self) -> None:
        standbys, self._by_key = list(self._by_key.values()), {}
        for standby in standbys:
            await self._discard(standby, "shutdown")

    async def _expire(self) -> None:
        now = time.monotonic()
        for key, standby in list(self._by_key.items()):
            if standby.ready.is_set() and now - standby.created > self._ttl:
                del self._by_key[key]
                await self._discard(standby, f"unused for {self._ttl:.0f} s")

    async def _discard(self, standby: Standby, why: str) -> None:
        log.info("prepared session %s closed: %s", standby.built.sid, why)
        with anyio.CancelScope(shield=True):
            await standby.ready.wait()
            if standby.failed is None:
                await self._close(standby.built)
