"""What an ACP client shows for a Claude Code tool call: a title, a kind, the files it touches and, for edits, the diff."""

from __future__ import annotations

import os

from typing import Any

TITLE_MAX = 200

# Claude Code tool → ACP tool kind (the client picks an icon and may treat reads and edits specially).
KINDS = {
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute", "KillBash": "execute",
    "Read": "read", "NotebookRead": "read",
    "Write": "edit", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
    "Glob": "search", "Grep": "search", "LS": "search",
    "WebFetch": "fetch", "WebSearch": "fetch",
    "TodoWrite": "think", "Task": "think", "Agent": "think",
    "ExitPlanMode": "switch_mode", "EnterPlanMode": "switch_mode",
}


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1] + "…"


def tool_kind(name: str) -> str:
    if name.startswith("mcp__"):
        return "other"
    return KINDS.get(name, "other")


def tool_title(name: str, tool_input: dict[str, Any]) -> str:
    """A one-line title: the command, the file or the pattern, as a person would name the call."""
    from sidecar.acp.client_tools import builtin_name

    name = builtin_name(name)
    get = tool_input.get
    path = get("file_path") or get("notebook_path") or get("path")
    if name == "Bash":
        from hooks.builtin.env_isolation import display_command

        # The title shows what the agent asked for; rawInput keeps the exact command that will run.
        return _short(display_command(str(get("command") or "")) or "Bash")
    if name in ("Read", "NotebookRead") and path:
        return _short(f"Read {path}")
    if name in ("Write", "Edit", "MultiEdit", "NotebookEdit") and path:
        return _short(f"{name} {path}")
    if name == "Glob" and get("pattern"):
        return _short(f"Find {get('pattern')}" + (f" in {path}" if path else ""))
    if name == "Grep" and get("pattern"):
        return _short(f"Search {get('pattern')!r}" + (f" in {path}" if path else ""))
    if name == "LS" and path:
        return _short(f"List {path}")
    if name == "WebFetch" and get("url"):
        return _short(f"Fetch {get('url')}")
    if name == "WebSearch" and get("query"):
        return _short(f"Search the web: {get('query')}")
    if name == "TodoWrite":
        return "Update the plan"
    if name == "ExitPlanMode":
        return "Ready to code?"
    if name in ("Task", "Agent") and get("description"):
        return _short(str(get("description")))
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        return _short(f"{parts[2]} ({parts[1]})") if len(parts) == 3 else name
    return name


def absolute(path: str, cwd: str | None) -> str:
    """A path as ACP asks for it, absolute: a relative one (as the model may write it) taken from the session's
    directory, as the CLI's own file tools take it."""
    if cwd is None or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(cwd, path))


def tool_locations(name: str, tool_input: dict[str, Any], cwd: str | None = None) -> list[dict[str, Any]]:
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return []
    location: dict[str, Any] = {"path": absolute(path, cwd)}
    offset = tool_input.get("offset")
    if name == "Read" and isinstance(offset, int) and offset > 0:
        location["line"] = offset
    return [location]


def tool_content(name: str, tool_input: dict[str, Any], cwd: str | None = None) -> list[dict[str, Any]]:
    """Edits as ACP diffs (the client can show and review them); nothing for other tools."""
    path = tool_input.get("file_path")
    if not isinstance(path, str):
        return []
    path = absolute(path, cwd)
    if name == "Write" and isinstance(tool_input.get("content"), str):
        return [{"type": "diff", "path": path, "newText": tool_input["content"]}]
    if name == "Edit" and isinstance(tool_input.get("new_string"), str):
        return [{"type": "diff", "path": path, "oldText": str(tool_input.get("old_string") or ""),
                 "newText": tool_input["new_string"]}]
    if name == "MultiEdit" and isinstance(tool_input.get("edits"), list):
        return [{"type": "diff", "path": path, "oldText": str(edit.get("old_string") or ""),
                 "newText": str(edit.get("new_string") or "")}
                for edit in tool_input["edits"] if isinstance(edit, dict)]
    return []


def tool_call_fields(tool_use_id: str, name: str, tool_input: dict[str, Any], cwd: str | None = None) -> dict[str, Any]:
    """The ToolCall fields ACP shows for a call: id, title, kind, locations, diff content (paths absolute, relative
    ones taken from the session's directory `cwd`) and the raw input as the model wrote it."""
    from sidecar.acp.client_tools import builtin_name

    name = builtin_name(name)  # the client's own file and terminal tools show as Claude Code's
    fields: dict[str, Any] = {
        "toolCallId": tool_use_id,
        "title": tool_title(name, tool_input),
        "kind": tool_kind(name),
        "rawInput": tool_input,
    }
    locations = tool_locations(name, tool_input, cwd)
    if locations:
        fields["locations"] = locations
    content = tool_content(name, tool_input, cwd)
    if content:
        fields["content"] = content
    return fields
