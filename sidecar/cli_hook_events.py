"""The hooks the CLI runs itself, made observable: an organization's managed hooks (hooks/hookset.py `ManagedPolicy`).

Orion runs every other hook; these it cannot: the CLI runs a managed settings file's hooks whatever Orion's flag
settings say (measured on 2.1.330). With `include_hook_events` the CLI reports each of its own hook runs in its
message stream (`system` messages `hook_started` / `hook_response`, which the SDK parses as `HookEventMessage`); SDK
callbacks, i.e. every hook Orion runs, are not reported there (measured). This module hands those messages to the
session's hook runner as runs made elsewhere (`HookRunner.external_started` / `external_finished`), so the frontend
sees `hook_started` / `hook_response` with `source: "managed"` and the tracking files and stats count them. What
the CLI reports is all there is: its hook name (`PreToolUse:Bash`), exit code, outcome and output; no tool call id,
no handler type (the listing's when only one managed hook listens to the event).
"""

from __future__ import annotations

import time
from typing import Any

from hooks.hookset import MANAGED
from hooks.types import HookResult, HookStarted

# The CLI's outcome words as Orion's; anything else is a failure to be looked at.
_OUTCOMES = {"success": "success", "cancelled": "cancelled", "timeout": "timeout"}
# Runs that started and never reported an end (a CLI that died): forgotten past this many.
_MAX_OPEN = 256


class CliHookReporter:
    """One session's CLI-run hooks, from its message stream to its hook observer."""

    __slots__ = ("_runner", "_session", "_specs", "_open")

    def __init__(self, runner: Any, session: Any, managed_specs: list[Any]) -> None:
        self._runner = runner  # hooks.runner.HookRunner
        self._session = session  # its hooks.types.SessionContext
        self._specs = managed_specs  # the hook set's entries in state "managed"
        self._open: dict[str, float] = {}  # the CLI's hook_id -> when it started (monotonic)

    def _identity(self, event: str, cli_name: str) -> tuple[str, str, str]:
        """(hook id, hook name, handler type): the listed managed hook when it is the only one on the event, else
        the CLI's own words for the run."""
        mine = [s for s in self._specs if s.event == event]
        if len(mine) == 1:
            return mine[0].id, mine[0].name, mine[0].type
        types = {s.type for s in mine}
        return f"{MANAGED}:{event}", cli_name or event, types.pop() if len(types) == 1 else "command"

    async def report(self, data: dict[str, Any]) -> None:
        """A `hook_started` or `hook_response` message's data, as the CLI sent it."""
        subtype, run_id = data.get("subtype"), str(data.get("hook_id") or "")
        event = str(data.get("hook_event") or "")
        if not run_id or not event:
            return
        hook_id, name, htype = self._identity(event, str(data.get("hook_name") or ""))
        if subtype == "hook_started":
            if len(self._open) >= _MAX_OPEN:
                self._open.pop(next(iter(self._open)))
            self._open[run_id] = time.monotonic()
            await self._runner.external_started(HookStarted(
                execution_id=run_id, hook_id=hook_id, hook_name=name, hook_type=htype, source=MANAGED, event=event,
                session_id=self._session.session_id))
        elif subtype == "hook_response":
            started = self._open.pop(run_id, None)
            exit_code = data.get("exit_code") if isinstance(data.get("exit_code"), int) else None
            outcome = "blocked" if exit_code == 2 else _OUTCOMES.get(str(data.get("outcome")), "error")
            stdout, stderr = data.get("stdout"), data.get("stderr")
            await self._runner.external_finished(HookResult(
                execution_id=run_id, hook_id=hook_id, hook_name=name, hook_type=htype, source=MANAGED, event=event,
                outcome=outcome,  # type: ignore[arg-type]
                duration_ms=(time.monotonic() - started) * 1000 if started is not None else 0.0,
                exit_code=exit_code, stdout=stdout if isinstance(stdout, str) else "",
                stderr=stderr if isinstance(stderr, str) else ""), self._session)
