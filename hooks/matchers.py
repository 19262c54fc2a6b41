"""Matchers exactly as Claude Code reads them, compiled once, and what each event's matcher is tested against."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hooks.types import TOOL_EVENTS

Matcher = Callable[[str], bool]

_EXACT = re.compile(r"^[A-Za-z0-9_|, -]+$")


class MatcherError(ValueError):
    """A matcher that is neither a name list nor a valid regular expression."""


def _match_all(_: str) -> bool:
    return True


def compile_matcher(matcher: str | None) -> Matcher:
    """Absent, "" or "*" match everything; a plain name or `A|B` list matches exactly; anything else is an unanchored regex."""
    if matcher is None or matcher.strip() in ("", "*"):
        return _match_all
    if _EXACT.match(matcher):
        names = frozenset(n.strip() for n in re.split(r"[|,]", matcher) if n.strip())
        return names.__contains__
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise MatcherError(f"matcher {matcher!r} is not a valid regular expression: {exc}") from None
    return lambda value: pattern.search(value) is not None


# The payload key a non-tool event's matcher is compared with (Claude Code's sub-types, CLI 2.1.330). Events absent
# here (UserPromptSubmit, Stop, PostToolBatch, TeammateIdle, TaskCreated, TaskCompleted, WorktreeCreate,
# WorktreeRemove, CwdChanged, MessageDisplay) fire their hooks whatever the matcher says.
_TARGET_KEY = {
    "SessionStart": "source",
    "SessionEnd": "reason",
    "Setup": "trigger",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "Notification": "notification_type",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "UserPromptExpansion": "command_name",
    "StopFailure": "error",
    "Elicitation": "mcp_server_name",
    "ElicitationResult": "mcp_server_name",
    "ConfigChange": "source",
    "DirectoryAdded": "source",
    "InstructionsLoaded": "load_reason",
    "PreModelSwitch": "to_model",
    "PostModelSwitch": "to_model",
    "FileChanged": "file_path",  # by its file name: the matcher lists the files to watch (".envrc|.env")
}


def match_target(event: str, payload: dict[str, Any]) -> str | None:
    """The string this event's matchers are tested against; None for events whose matchers Claude Code ignores (UserPromptSubmit, Stop)."""
    if event in TOOL_EVENTS:
        return str(payload.get("tool_name") or "")
    key = _TARGET_KEY.get(event)
    if key is None:
        return None
    value = str(payload.get(key) or "")
    return value.replace("\\", "/").rsplit("/", 1)[-1] if event == "FileChanged" else value


# Claude Code's built-in tool names (CLI 2.1.330); MCP tools are `mcp__<server>__<tool>`.
KNOWN_TOOLS = frozenset({
    "Agent", "AskUserQuestion", "Bash", "BashOutput", "Config", "CronCreate", "Edit", "EnterPlanMode", "EnterWorktree",
    "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "KillShell", "LS", "LSP", "ListMcpResourcesTool", "Monitor",
    "MultiEdit", "NotebookEdit", "NotebookRead", "Read", "ReadMcpResourceTool", "SendMessage", "Skill", "SlashCommand",
    "StructuredOutput", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
    "TeamCreate", "TeamDelete", "TodoRead", "TodoWrite", "ToolSearch", "WebFetch", "WebSearch", "Write",
})
# The values a non-tool event's matcher is compared with, where Claude Code's set is closed.
_KNOWN_TARGETS = {
    "SessionStart": frozenset({"startup", "resume", "clear", "compact", "fork"}),
    "Setup": frozenset({"init", "maintenance"}),
    "PreCompact": frozenset({"manual", "auto"}),
    "PostCompact": frozenset({"manual", "auto"}),
    "ConfigChange": frozenset({"user_settings", "project_settings", "local_settings", "policy_settings", "skills"}),
    "DirectoryAdded": frozenset({"slash_command", "register_repo_root"}),
    "InstructionsLoaded": frozenset({"session_start", "nested_traversal", "path_glob_match", "include", "compact"}),
    "StopFailure": frozenset({
        "rate_limit", "overloaded", "authentication_failed", "oauth_org_not_allowed", "account_on_hold",
        "verification_required", "billing_error", "invalid_request", "model_not_found", "server_error",
        "max_output_tokens", "cloud_credential_error", "unknown"}),
}


def exact_names(matcher: str | None) -> frozenset[str] | None:
    """The names an exact matcher (`Bash`, `Edit|Write`) accepts; None for match-all and regular expressions."""
    if matcher is None or matcher.strip() in ("", "*") or not _EXACT.match(matcher):
        return None
    return frozenset(n.strip() for n in re.split(r"[|,]", matcher) if n.strip())


def matches_all(matcher: str | None) -> bool:
    return matcher is None or matcher.strip() in ("", "*")


def matcher_problem(event: str, matcher: str | None) -> str | None:
    """Why a (valid) matcher can never select anything on `event`, or is ignored there; None when it can."""
    from difflib import get_close_matches

    if matches_all(matcher):
        return None
    assert matcher is not None
    if event not in TOOL_EVENTS and event not in _TARGET_KEY:
        return (f"matcher {matcher!r} is ignored on {event} (Claude Code fires {event} hooks whatever the matcher); "
                "remove it")
    known = KNOWN_TOOLS if event in TOOL_EVENTS else _KNOWN_TARGETS.get(event)
    if known is None:
        return None  # agent types, notification types: open sets
    what = "tool" if event in TOOL_EVENTS else f"{_TARGET_KEY[event]} of {event}"
    names = exact_names(matcher)
    if names is not None:
        unknown = sorted(n for n in names if n not in known and not n.startswith("mcp__"))
        if not unknown:
            return None
        hints = []
        for name in unknown:
            close = get_close_matches(name, known, n=1)
            hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
        if len(unknown) == len(names):
            return f"matcher {matcher!r} names no {what}: {', '.join(hints)}; the hook never fires"
        return f"matcher {matcher!r}: {', '.join(hints)} names no {what}; that part of it matches nothing"
    if "mcp__" in matcher:
        return None
    pattern = re.compile(matcher)
    if any(pattern.search(name) for name in known):
        return None
    hint = " (a permission rule like `Bash(git *)` is not a hook matcher: use `Bash` and test the command in the hook)" \
        if "(" in matcher else ""
    return f"matcher {matcher!r} matches no {what} name, so the hook never fires{hint}"
