"""Protocol models: camelCase on the wire, the discriminated session/update union, and the constraints the issue fixes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ipc import protocol as p


def test_wire_names_are_camel_case_and_python_names_work_too():
    params = p.SessionNewParams.model_validate({"projectDir": "/x", "sessionId": "abc_1", "permissionMode": "plan"})
    assert params.project_dir == "/x"
    assert p.SessionNewParams(project_dir="/y").wire()["projectDir"] == "/y"


def test_session_id_pattern_and_limit_range():
    with pytest.raises(ValidationError):
        p.SessionNewParams.model_validate({"projectDir": "/x", "sessionId": "has space"})
    with pytest.raises(ValidationError):
        p.MemorySearchParams.model_validate({"query": "q", "limit": 0})
    assert p.MemorySearchParams.model_validate({"query": "q"}).limit == 10


def test_session_update_is_discriminated_on_session_update():
    event = p.SessionUpdateEvent.model_validate(
        {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolUseId": "t1", "name": "Bash", "input": {"command": "ls"}}})
    assert isinstance(event.update, p.ToolCallUpdate)
    with pytest.raises(ValidationError):
        p.SessionUpdateEvent.model_validate({"sessionId": "s", "update": {"sessionUpdate": "nope"}})


def test_hook_info_async_field_uses_the_keyword_name_on_the_wire():
    info = p.HookInfo.model_validate({"id": "1", "name": "n", "event": "PreToolUse", "type": "command", "source": "project",
                                      "state": "active", "async": True})
    assert info.async_ is True
    assert info.wire()["async"] is True


def test_hook_scope_needs_a_session_or_a_project():
    with pytest.raises(ValidationError):
        p.HookScope.model_validate({"vaultDir": "/v"})
    assert p.HookScope.model_validate({"projectDir": "/p"}).project_dir == "/p"


def test_permission_outcome_union():
    selected = p.RequestPermissionResult.model_validate({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    assert isinstance(selected.outcome, p.PermissionSelected)
    assert isinstance(p.RequestPermissionResult.model_validate({"outcome": {"outcome": "cancelled"}}).outcome, p.PermissionCancelled)


def test_context_summary_is_capped_at_4000_chars():
    with pytest.raises(ValidationError):
        p.ContextSummaryUpdatedEvent.model_validate({"sessionId": "s", "summary": "x" * 4001, "trigger": "auto"})
