"""Where the inspector's events come from: a live session over ACP (the official Python SDK, as `orion chat`), or
an ended session's tracking file (`<data>/sessions/<id>/events.jsonl`, one redacted line per hook execution)."""

from __future__ import annotations

import asyncio
import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from frontend_stub.acp_client import OrionAcpClient
from frontend_stub.inspector.feed import Feed

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class InspectorClient(OrionAcpClient):
    """The ACP client side: every update and `_orion/` event goes to the feed; permission requests wait for the page."""

    def __init__(self, feed: Feed) -> None:
        self.feed = feed

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        reason = self.permission_reason(kwargs)
        request = {"sessionId": session_id, "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                   "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options], "reason": reason}
        try:
            option = await self.feed.ask(request)
        except asyncio.CancelledError:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.feed.add("update", update.model_dump(by_alias=True, exclude_none=True))

    def on_orion_event(self, name: str, params: dict[str, Any]) -> None:
        self.feed.add(name, params)


async def run_live(feed: Feed, *, argv: list[str], project: Path, model: str | None, prompts: list[str], trust: bool,
                   allowed_tools: list[str] | None, env: dict[str, str] | None = None) -> None:
    """One session: the given prompts, then whatever the page sends, until the page ends it (or we are cancelled)."""
    from acp import spawn_agent_process, text_block
    from acp.schema import ClientCapabilities

    client = InspectorClient(feed)
    async with spawn_agent_process(client, argv[0], *argv[1:], env=env or dict(os.environ)) as (conn, _):
        await conn.initialize(protocol_version=1,
                              client_capabilities=ClientCapabilities(field_meta={"orion": {"events": True}}))
        scope = {"projectDir": str(project)}
        listing = await conn.ext_method("orion/hooks/list", scope)
        if trust and any(h["state"] == "untrusted" for h in listing["hooks"]):
            await conn.ext_method("orion/hooks/trust", {**scope, "hash": listing["trustHash"]})
        options: dict[str, Any] = {"model": model} if model else {}
        if allowed_tools:
            options["allowedTools"] = allowed_tools
        new = await conn.new_session(cwd=str(project), mcp_servers=[], orion=options)
        info = (new.field_meta or {}).get("orion", {})
        feed.add("session", {"sessionId": new.session_id, "project": str(project), "model": info.get("model"),
                             "hooks": info.get("hooks")})
        for text in prompts:
            feed.prompts.put_nowait(text)
        try:
            while not feed.end_requested.is_set():
                text = await _next_prompt(feed)
                if text is None:
                    break
                feed.add("prompt", {"text": text})
                answer = await conn.prompt(session_id=new.session_id, prompt=[text_block(text)])
                feed.add("result", {"stopReason": answer.stop_reason, **((answer.field_meta or {}).get("orion") or {})})
        finally:
            feed.live = False
            ended = await conn.ext_method("orion/session/end", {"sessionId": new.session_id, "reason": "other"})
            feed.add("ended", {"sessionId": new.session_id, "hooksRan": ended.get("hooksRan")})


async def _next_prompt(feed: Feed) -> str | None:
    prompt = asyncio.ensure_future(feed.prompts.get())
    end = asyncio.ensure_future(feed.end_requested.wait())
    done, _ = await asyncio.wait({prompt, end}, return_when=asyncio.FIRST_COMPLETED)
    if prompt in done:
        end.cancel()
        return prompt.result()
    prompt.cancel()
    return None


def data_dir() -> Path:
    """The sidecar's data directory, by the sidecar's rule (hooks/paths.py; this package imports only ipc/)."""
    explicit = os.environ.get("ORION_DATA_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) / "orion" if xdg else Path.home() / ".local" / "share" / "orion"


def load_ended(feed: Feed, session_id: str, root: Path | None = None) -> int:
    """An ended session's hook executions from its tracking file, on the same time axis; returns how many."""
    if not SESSION_ID.match(session_id):
        raise SystemExit(f"orion: {session_id!r} is not a session id")
    path = (root or data_dir()) / "sessions" / session_id / "events.jsonl"
    if not path.is_file():
        raise SystemExit(f"orion: no tracking file for session {session_id} ({path})")
    records = []
    # A long session's older records are in its rotated generation (hooks/tracking.py), read first.
    for part in (path.with_name(path.name + ".1"), path):
        try:
            text = part.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash
            if isinstance(record, dict) and record.get("executionId"):
                records.append(record)
    if not records:
        return 0
    ends = [_epoch_ms(r.get("ts")) for r in records]
    first = min(e - float(r.get("durationMs") or 0) for e, r in zip(ends, records))
    feed.live = False
    feed.add("session", {"sessionId": session_id, "recorded": True, "source": str(path)}, at_ms=0.0)
    for end, record in sorted(zip(ends, records), key=lambda pair: pair[0]):
        duration = float(record.get("durationMs") or 0)
        start = end - duration - first
        common = {"sessionId": session_id, "executionId": record["executionId"], "hookId": record.get("hookId"),
                  "hookName": record.get("name"), "hookType": record.get("type"), "source": record.get("source"),
                  "event": record.get("event")}
        feed.add("hook_started", common, at_ms=round(start, 1))
        feed.add("hook_response", {**common, "outcome": record.get("outcome"), "durationMs": duration,
                                   "exitCode": record.get("exitCode"), "error": record.get("error"),
                                   "background": record.get("background"), "enforced": record.get("enforced")},
                 at_ms=round(start + duration, 1))
    return len(records)


def _epoch_ms(ts: Any) -> float:
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return 0.0
