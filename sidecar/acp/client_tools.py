"""The agent's file and shell tools served by the ACP client: when the client offers `fs.readTextFile` and
`fs.writeTextFile` (and `terminal`), the agent reads and writes through the editor — its unsaved buffers, its undo —
and runs commands in the editor's terminals.

The tools are an in-process MCP server (`acp`) standing in for Claude Code's own `Read`, `Write`, `Edit` (and
`Bash`), which the session's CLI then does not offer. Hooks see each call under the built-in tool's name and input
(`hook_bridge` maps `mcp__acp__Write` to `Write`), so matchers, guards and project hooks fire exactly as on the
CLI's own tools, and a hook's rewrite reaches the client. The CLI asks permission for each such call like for any
MCP tool (the user answers in the client); no rule of ours allows them.

Both are used only in a session without an OS boundary (`sandbox: "off"`, or a platform without one): the editor
reads and writes, and its terminals run, outside the session's box, and a client capability must never weaken a
confinement the app chose. A file check could not stand in for the box: the agent inside can swap a project entry
for a symlink to `~/.ssh` or Orion's settings between any check of the path and the editor's own open of it. A
boxed session keeps the CLI's own Read, Write, Edit and Bash, which the OS confines, as the current Claude ACP
adapter does for every session; the editor still sees every edit as the tool call's diff.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

SERVER = "acp"
PREFIX = f"mcp__{SERVER}__"
FS_TOOLS = ("Read", "Write", "Edit")
TERMINAL_TOOLS = ("Bash",)
# What a tool result may carry back to the model from a terminal, as the CLI caps its own Bash output.
OUTPUT_LIMIT = 30_000
READ_LINE_LIMIT = 2000

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


def builtin_name(tool_name: str) -> str:
    """`mcp__acp__Write` → `Write`: the name hooks, titles and guards know the call by. Others unchanged."""
    if tool_name.startswith(PREFIX):
        plain = tool_name[len(PREFIX):]
        if plain in FS_TOOLS or plain in TERMINAL_TOOLS:
            return plain
    return tool_name


def offered(client_capabilities: dict[str, Any]) -> tuple[bool, bool]:
    """(the client offers its files: reading and writing, the client offers its terminals)."""
    given = client_capabilities.get("fs")
    fs: dict[str, Any] = given if isinstance(given, dict) else {}
    return bool(fs.get("readTextFile")) and bool(fs.get("writeTextFile")), bool(client_capabilities.get("terminal"))


def wanted(client_capabilities: dict[str, Any], *, sandboxed: bool) -> tuple[bool, bool]:
    """(use the client's files, use the client's terminals) for what the client advertised: neither in a session
    with an OS boundary (`sandboxed`)."""
    files, terminal = offered(client_capabilities)
    return files and not sandboxed, terminal and not sandboxed


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        out["is_error"] = True
    return out


def numbered(content: str, offset: int = 1) -> str:
    """Lines as Claude Code's Read shows them: right-aligned line number, a tab, the line."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{offset + i:>6}\t{line}" for i, line in enumerate(lines))


class ClientTools:
    """The `acp` MCP server of one session: each call becomes a request to the ACP client."""

    def __init__(self, session_id: str, request: Request, cwd: str, *, files: bool, terminal: bool) -> None:
        self.session_id = session_id
        self._request = request
        self.cwd = cwd
        self.files = files
        self.terminal = terminal

    @property
    def replaced(self) -> list[str]:
        """The CLI's own tools these stand in for (the session's CLI does not offer them)."""
        return [*(FS_TOOLS if self.files else ()), *(TERMINAL_TOOLS if self.terminal else ())]

    def _absolute(self, path: Any) -> str:
        """ACP's file methods take absolute paths: a relative one (as the model may write it) is the session's."""
        from sidecar.acp.tools import absolute

        return absolute(str(path), self.cwd)

    # ------------------------------------------------------------------ the tools

    async def read(self, args: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.session_id, "path": self._absolute(args["file_path"])}
        offset = args.get("offset")
        if isinstance(offset, int) and offset > 0:
            params["line"] = offset
        limit = args.get("limit")
        params["limit"] = limit if isinstance(limit, int) and limit > 0 else READ_LINE_LIMIT
        try:
            answer = await self._request("fs/read_text_file", params)
        except Exception as exc:  # noqa: BLE001 - the model reads why, as from the CLI's own Read
            return _text(f"Could not read {args['file_path']}: {exc}", error=True)
        content = str((answer or {}).get("content", ""))
        if not content:
            return _text("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
        return _text(numbered(content, params.get("line", 1)))

    async def write(self, args: dict[str, Any]) -> dict[str, Any]:
        path = self._absolute(args["file_path"])
        try:
            await self._request("fs/write_text_file",
                                {"sessionId": self.session_id, "path": path, "content": str(args.get("content", ""))})
        except Exception as exc:  # noqa: BLE001
            return _text(f"Could not write {path}: {exc}", error=True)
        return _text(f"File written successfully at: {path}")

    async def edit(self, args: dict[str, Any]) -> dict[str, Any]:
        path = self._absolute(args["file_path"])
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
        try:
            answer = await self._request("fs/read_text_file", {"sessionId": self.session_id, "path": path})
        except Exception as exc:  # noqa: BLE001
            return _text(f"Could not read {path}: {exc}", error=True)
        content = str((answer or {}).get("content", ""))
        if old == new:
            return _text("No changes to make: old_string and new_string are exactly the same.", error=True)
        count = content.count(old) if old else 0
        if count == 0:
            return _text(f"String to replace not found in file.\nString: {old}", error=True)
        if count > 1 and not args.get("replace_all"):
            return _text(f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
                         "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
                         f"context to uniquely identify the instance.\nString: {old}", error=True)
        updated = content.replace(old, new) if args.get("replace_all") else content.replace(old, new, 1)
        try:
            await self._request("fs/write_text_file", {"sessionId": self.session_id, "path": path, "content": updated})
        except Exception as exc:  # noqa: BLE001
            return _text(f"Could not write {path}: {exc}", error=True)
        return _text(f"The file {path} has been updated.")

    async def bash(self, args: dict[str, Any]) -> dict[str, Any]:
        command = str(args.get("command", ""))
        created = await self._request("terminal/create", {
            "sessionId": self.session_id, "command": "/bin/bash", "args": ["-c", command], "cwd": self.cwd,
            "outputByteLimit": OUTPUT_LIMIT,
        })
        terminal_id = str((created or {}).get("terminalId"))
        try:
            exited = await self._request("terminal/wait_for_exit", {"sessionId": self.session_id, "terminalId": terminal_id})
            output = await self._request("terminal/output", {"sessionId": self.session_id, "terminalId": terminal_id})
        finally:
            try:
                await self._request("terminal/release", {"sessionId": self.session_id, "terminalId": terminal_id})
            except Exception:  # noqa: BLE001 - the command's result stands; the client cleans up its own terminal
                log.debug("terminal/release failed", exc_info=True)
        text = str((output or {}).get("output", ""))
        code = (exited or {}).get("exitCode")
        signal = (exited or {}).get("signal")
        if (output or {}).get("truncated"):
            text += "\n[output truncated]"
        if signal:
            return _text(f"{text}\n[killed by signal {signal}]".strip(), error=True)
        if code not in (0, None):
            return _text(f"{text}\n[exit code {code}]".strip(), error=True)
        return _text(text or "(Bash completed with no output)")

    # ------------------------------------------------------------------ the MCP server

    def server_config(self) -> Any:
        from claude_agent_sdk import create_sdk_mcp_server, tool

        tools = []
        if self.files:
            tools.append(tool("Read", "Read a file (through the editor: unsaved changes included). Absolute path; "
                              "optional 1-based `offset` line and `limit` of lines.", {
                                  "type": "object", "required": ["file_path"],
                                  "properties": {"file_path": {"type": "string"}, "offset": {"type": "integer"},
                                                 "limit": {"type": "integer"}}})(self.read))
            tools.append(tool("Write", "Write a whole file (through the editor). Absolute path.", {
                "type": "object", "required": ["file_path", "content"],
                "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}})(self.write))
            tools.append(tool("Edit", "Replace old_string with new_string in a file (through the editor); the old "
                              "string must be unique unless replace_all.", {
                                  "type": "object", "required": ["file_path", "old_string", "new_string"],
                                  "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"},
                                                 "new_string": {"type": "string"},
                                                 "replace_all": {"type": "boolean"}}})(self.edit))
        if self.terminal:
            tools.append(tool("Bash", "Run a shell command in the editor's terminal, in the project directory.", {
                "type": "object", "required": ["command"],
                "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                               "timeout": {"type": "integer"}}})(self.bash))
        # alwaysLoad: the CLI offers these tools at once instead of deferring them behind ToolSearch (MCP tools
        # are deferred by default: a real model needed an extra round trip before its first file operation).
        return {**create_sdk_mcp_server(SERVER, tools=tools), "alwaysLoad": True}
