"""The CLI's own hook reports (an organization's managed hooks) as Orion's runs: identity, outcome, duration. The
real CLI's reports through `python -m sidecar`: tests/e2e/test_managed_settings.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sidecar.cli_hook_events import CliHookReporter

pytestmark = pytest.mark.asyncio


class Runner:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def external_started(self, started: Any) -> None:
        self.seen.append(("started", started))

    async def external_finished(self, result: Any, session: Any) -> None:
        self.seen.append(("finished", result))


def spec(event: str, name: str, hid: str, htype: str = "command") -> Any:
    return SimpleNamespace(event=event, name=name, id=hid, type=htype)


def report(subtype: str, run: str, event: str = "PreToolUse", **more: Any) -> dict[str, Any]:
    return {"subtype": subtype, "hook_id": run, "hook_event": event, "hook_name": f"{event}:Bash", **more}


async def test_a_lone_managed_hook_on_its_event_is_named_as_listed_and_exit_2_is_a_block() -> None:
    runner = Runner()
    reporter = CliHookReporter(runner, SimpleNamespace(session_id="s1"), [spec("PreToolUse", "org-guard", "managed:1")])
    await reporter.report(report("hook_started", "r1"))
    await reporter.report(report("hook_response", "r1", exit_code=2, outcome="error", stdout="", stderr="no\n"))
    (_, started), (_, result) = runner.seen
    assert (started.hook_id, started.hook_name, started.source, started.session_id) == \
        ("managed:1", "org-guard", "managed", "s1")
    assert (result.execution_id, result.outcome, result.exit_code, result.stderr) == ("r1", "blocked", 2, "no\n")
    assert result.duration_ms >= 0


async def test_several_on_one_event_are_named_by_the_cli_and_unknown_outcomes_are_errors() -> None:
    runner = Runner()
    reporter = CliHookReporter(runner, SimpleNamespace(session_id="s1"),
                               [spec("Stop", "a", "managed:a"), spec("Stop", "b", "managed:b", "http")])
    await reporter.report(report("hook_response", "r9", event="Stop", exit_code=None, outcome="something new"))
    await reporter.report(report("hook_started", "", event="Stop"))  # no run id: nothing to report
    [(_, result)] = runner.seen
    assert (result.hook_id, result.hook_name, result.hook_type) == ("managed:Stop", "Stop:Bash", "command")
    assert (result.outcome, result.exit_code, result.duration_ms) == ("error", None, 0.0)
