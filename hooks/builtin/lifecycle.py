"""Lifecycle continuity hooks: session-continuity, precompact-continuity, turn-activity, stale-cache-cleanup."""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import anyio.to_thread

from hooks.builtin.common import (
    BuiltinEnv,
    Options,
    clip,
    context,
    conversation_key,
    read_json,
    write_json_atomic,
)
from hooks.builtin.transcript import last_messages
from hooks.memory.tags import strip_tags
from hooks.private_files import private_data_dir, touch_private
from hooks.redaction import redact
from hooks.types import HookContext, HookFunction, HookOutput

CONTINUITY_DIR = "continuity"
ACTIVITY_DIR = "session-activity"
ENRICHMENT_DIR = "memory-enrichment"
CLEANUP_MARKER = ".stale-cache-cleanup"

DAY = 86400.0
FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
MAX_TRACKED_FILES = 200


def _age_text(seconds: float) -> str:
    if seconds < 90:
        return "moments ago"
    if seconds < 5400:
        return f"{round(seconds / 60)} min ago"
    return f"{round(seconds / 3600)} h ago"


# ----------------------------------------------------------------------------- session-continuity


def _find_continuity(directory: Path, conversation: str, project: str, now: float, ttl: float) -> dict[str, Any] | None:
    """This conversation's record if fresh, else the newest fresh record of the same project."""
    own = read_json(directory / f"{conversation}.json")
    if isinstance(own, dict) and now - float(own.get("ts", 0)) < ttl:
        return own
    best: dict[str, Any] | None = None
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        try:
            if now - entry.stat().st_mtime >= ttl:
                continue
        except OSError:
            continue
        record = read_json(Path(entry.path))
        if not isinstance(record, dict) or record.get("project") != project:
            continue
        if now - float(record.get("ts", 0)) >= ttl:
            continue
        if best is None or float(record.get("ts", 0)) > float(best.get("ts", 0)):
            best = record
    return best


def _continuity_block(record: dict[str, Any], now: float, max_chars: int) -> str:
    age = _age_text(now - float(record.get("ts", now)))
    turns = record.get("turnCount")
    lines = [f"Continuing from an earlier session (saved {age}" + (f", {turns} turns in" if turns else "") + ")."]
    project = record.get("activeProject")
    if isinstance(project, dict) and project.get("name"):
        lines.append(f"Active project: {project['name']}")
    elif isinstance(project, str) and project:
        lines.append(f"Active project: {project}")
    if record.get("sessionType"):
        lines.append(f"Session type: {record['sessionType']}")
    if record.get("summary"):
        lines.append(f"Summary: {record['summary']}")
    files = record.get("files") or []
    if files:
        shown = ", ".join(str(f) for f in files[:15])
        more = f" (+{len(files) - 15} more)" if len(files) > 15 else ""
        lines.append(f"Files touched: {shown}{more}")
    body = clip("\n".join(lines), max_chars)
    return f"<session-continuity>\n{body}\n</session-continuity>"


def make_session_continuity(opts: Options, env: BuiltinEnv) -> HookFunction:
    ttl = float(opts.get("max_age_hours", 24)) * 3600
    max_chars = int(opts.get("max_chars", 2000))

    async def session_continuity(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        directory = env.data(ctx) / CONTINUITY_DIR
        conversation = conversation_key(ctx, payload)
        project = str(ctx.project_dir)
        now = time.time()
        record = await anyio.to_thread.run_sync(_find_continuity, directory, conversation, project, now, ttl)
        if record is None:
            return None
        return context("SessionStart", _continuity_block(record, now, max_chars))

    return session_continuity


# ----------------------------------------------------------------------------- precompact-continuity


def make_precompact_continuity(opts: Options, env: BuiltinEnv) -> HookFunction:
    summary_chars = int(opts.get("summary_chars", 1200))

    async def precompact_continuity(payload: dict[str, Any], ctx: HookContext) -> None:
        state = ctx.state
        state["compact_trigger"] = payload.get("trigger")
        user, assistant = await anyio.to_thread.run_sync(last_messages, payload.get("transcript_path"))
        user = user or state.get("last_prompt")
        assistant = assistant or state.get("last_assistant_message")
        parts = []
        if user:
            parts.append(f"Last request: {clip(strip_tags(user).strip(), summary_chars // 2)}")
        if assistant:
            parts.append(f"Last reply: {clip(strip_tags(assistant).strip(), summary_chars // 2)}")
        if payload.get("custom_instructions"):
            parts.append(f"Compaction focus: {clip(str(payload['custom_instructions']), 200)}")
        record = {
            "version": 1,
            "sessionId": ctx.session_id,
            "project": str(ctx.project_dir),
            "summary": redact(" | ".join(parts)),
            "files": list(state.get("files_modified", [])),
            "activeProject": state.get("active_project"),
            "sessionType": state.get("session_type", "chat"),
            "turnCount": int(state.get("turn_count", 0)),
            "trigger": payload.get("trigger"),
            "ts": time.time(),
        }
        path = env.data(ctx) / CONTINUITY_DIR / f"{conversation_key(ctx, payload)}.json"
        await anyio.to_thread.run_sync(write_json_atomic, path, record)
        return None

    return precompact_continuity


# ----------------------------------------------------------------------------- turn-activity


def _prune_dir(directory: Path, keep: int) -> int:
    """Delete the oldest files (by mtime) until at most `keep` remain; returns how many went."""
    try:
        files = [(e.stat().st_mtime, e.path) for e in os.scandir(directory) if e.is_file() and e.name.endswith(".json")]
    except OSError:
        return 0
    if len(files) <= keep:
        return 0
    files.sort()
    removed = 0
    for _, path in files[: len(files) - keep]:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def _write_activity(path: Path, record: dict[str, Any], keep: int) -> None:
    write_json_atomic(path, record)
    _prune_dir(path.parent, keep)


def make_turn_activity(opts: Options, env: BuiltinEnv) -> HookFunction:
    every = max(1, int(opts.get("every_turns", 5)))
    max_conversations = max(1, int(opts.get("max_conversations", 100)))
    counters: OrderedDict[str, int] = env.caches.setdefault("turn_counters", OrderedDict())

    async def turn_activity(payload: dict[str, Any], ctx: HookContext) -> None:
        if payload.get("stop_hook_active"):
            return None  # the same turn continuing after a Stop hook blocked; not a new turn
        conversation = conversation_key(ctx, payload)
        turns = counters.pop(conversation, 0) + 1
        counters[conversation] = turns
        while len(counters) > max_conversations:
            counters.popitem(last=False)
        ctx.state["turn_count"] = turns
        if payload.get("last_assistant_message"):
            ctx.state["last_assistant_message"] = clip(str(payload["last_assistant_message"]), 4000)
        if turns % every:
            return None
        record = {"turns": turns, "filesModified": list(ctx.state.get("files_modified", [])), "ts": time.time()}
        path = env.data(ctx) / ACTIVITY_DIR / f"{conversation}.json"
        await anyio.to_thread.run_sync(_write_activity, path, record, max_conversations)
        return None

    return turn_activity


def make_file_tracker(opts: Options, env: BuiltinEnv) -> HookFunction:
    async def track_files(payload: dict[str, Any], ctx: HookContext) -> None:
        tool_input = payload.get("tool_input") or {}
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            return None
        files: list[str] = ctx.state.setdefault("files_modified", [])
        if path in files:
            files.remove(path)
        files.append(path)
        del files[:-MAX_TRACKED_FILES]
        return None

    return track_files


# ----------------------------------------------------------------------------- stale-cache-cleanup


def _cleanup(data_dir: Path, max_age: float, interval: float, now: float) -> int | None:
    """Delete cache files older than `max_age`; None when the marker says a cleanup ran within `interval`."""
    marker = data_dir / CLEANUP_MARKER
    try:
        if now - marker.stat().st_mtime < interval:
            return None
    except FileNotFoundError:
        pass
    private_data_dir(data_dir)
    touch_private(marker)
    os.utime(marker, (now, now))
    removed = 0
    for name in (CONTINUITY_DIR, ACTIVITY_DIR, ENRICHMENT_DIR):
        try:
            entries = list(os.scandir(data_dir / name))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > max_age:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
    return removed


def make_stale_cache_cleanup(opts: Options, env: BuiltinEnv) -> HookFunction:
    max_age = float(opts.get("max_age_days", 7)) * DAY
    interval = float(opts.get("interval_seconds", 3600))

    async def stale_cache_cleanup(payload: dict[str, Any], ctx: HookContext) -> None:
        data_dir = env.data(ctx)
        now = time.time()
        # The in-memory timestamp saves even the stat() when sessions end in a burst.
        last = env.caches.get("last_cleanup", {}).get(str(data_dir))
        if last is not None and now - last < interval:
            return None
        removed = await anyio.to_thread.run_sync(_cleanup, data_dir, max_age, interval, now)
        env.caches.setdefault("last_cleanup", {})[str(data_dir)] = now
        if removed:
            ctx.log.info("stale-cache-cleanup removed %d file(s) older than %.0f days", removed, max_age / DAY)
        return None

    return stale_cache_cleanup
