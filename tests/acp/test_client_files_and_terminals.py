"""An ACP client that offers its files and terminals serves the agent's Read, Write, Edit and Bash: the agent reads
the editor's unsaved buffer, its edits land in the editor, its commands run in the editor's terminal, and every
hook (a project's, the built-in guards) fires on those calls exactly as on the CLI's own tools."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    ReadTextFileResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from tests.acp.conftest import RecordingClient, child_env, project
from tests.acp.test_python_sdk_client import hook_calls, model_requests, trust
from tests.e2e.conftest import REPO_ROOT

pytestmark = [pytest.mark.asyncio, pytest.mark.cli, pytest.mark.slow]


class EditorClient(RecordingClient):
    """An editor: files live in its buffers (what it was given, not what is on disk), commands run in its terminals."""

    def __init__(self, buffers: dict[str, str]) -> None:
        super().__init__(answer=lambda request: "allow_once")
        self.buffers = buffers
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, dict[str, Any]] = {}

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content
        return None

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: Any = None,
                              cwd: str | None = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> CreateTerminalResponse:
        terminal_id = f"term-{len(self.terminals) + 1}"
        process = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.STDOUT)
        self.terminals[terminal_id] = {"command": command, "args": args, "cwd": cwd, "process": process}
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        term = self.terminals[terminal_id]
        term["output"] = (await term["process"].stdout.read()).decode()
        return WaitForTerminalExitResponse(exit_code=await term["process"].wait())

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        term = self.terminals[terminal_id]
        return TerminalOutputResponse(output=term.get("output", ""), truncated=False,
                                      exit_status=TerminalExitStatus(exit_code=term["process"].returncode))

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> None:
        self.terminals[terminal_id]["released"] = True
        return None


def scenario(tmp_path: Path, project_dir: Path) -> str:
    notes, env_file = str(project_dir / "notes.txt"), str(project_dir / ".env")
    path = tmp_path / "editor_tools.json"
    path.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "mcp__acp__Read", "input": {"file_path": notes}}}],
        [{"tool_use": {"name": "mcp__acp__Edit", "input": {"file_path": notes, "old_string": "draft",
                                                            "new_string": "final"}}}],
        [{"tool_use": {"name": "mcp__acp__Bash", "input": {"command": "echo from-the-editor-terminal"}}}],
        [{"tool_use": {"name": "mcp__acp__Write", "input": {"file_path": env_file, "content": "TOKEN=x\n"}}}],
        "Done in the editor.",
    ], "default": "Done."}))
    return f"scripted:{path}"


async def test_files_and_terminals_of_the_client_serve_the_agent_with_hooks_on_every_call(tmp_path: Path) -> None:
    from acp import spawn_agent_process

    project_dir = project(tmp_path)
    notes = project_dir / "notes.txt"
    notes.write_text("on disk: old\n")
    client = EditorClient({str(notes): "unsaved draft in the editor\n"})
    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                                      terminal=True, field_meta={"orion": {"events": True}})
    import sys

    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT)) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=capabilities)
        await trust(conn, project_dir)
        # The client's files and terminals are outside the session's OS boundary: only a session the app runs
        # without one uses them.
        sandboxed = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                           orion={"model": scenario(tmp_path, project_dir), "sandbox": "auto"})
        if sandboxed.field_meta["orion"]["sandbox"]["enabled"]:
            assert sandboxed.field_meta["orion"]["clientTools"] == {
                "files": False, "terminal": False,
                "filesReason": "the session's file tools run inside its OS boundary",
                "terminalReason": "the session's commands run inside its OS boundary"}
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": scenario(tmp_path, project_dir), "sandbox": "off"})
        assert session.field_meta["orion"]["clientTools"] == {"files": True, "terminal": True}
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("tidy the notes")])
    assert result.stop_reason == "end_turn"

    # The agent read the editor's buffer and its edit landed in the editor, not on disk.
    assert client.reads[0] == str(notes)
    assert (str(notes), "unsaved final in the editor\n") in client.writes
    assert notes.read_text() == "on disk: old\n"
    first_result = json.dumps(model_requests(tmp_path, "editor_tools")[1])
    assert "unsaved draft in the editor" in first_result
    # The command ran in the editor's terminal (as env-isolation rewrote it), and the terminal was released.
    [terminal] = client.terminals.values()
    assert terminal["args"][0] == "-c" and terminal["args"][1].endswith("echo from-the-editor-terminal")
    assert terminal["released"] is True and terminal["cwd"] == str(project_dir)
    assert "from-the-editor-terminal" in json.dumps(model_requests(tmp_path, "editor_tools")[3])
    # The built-in protection guard saw a Write to .env and denied it: the client was never asked to write it.
    assert not any(path.endswith(".env") for path, _ in client.writes)
    # Hooks saw the calls under Claude Code's own tool names; the project's Bash hooks fired on the terminal command.
    bash_hooks = [c for c in hook_calls(project_dir) if c["event"] == "PreToolUse"]
    assert bash_hooks and bash_hooks[0]["command"].endswith("echo from-the-editor-terminal")
    titles = [r["toolCall"]["title"] for r in client.permission_requests]
    assert f"Read {notes}" in titles and f"Edit {notes}" in titles
    started = [p for m, p in client.extensions if m.endswith("hook_started") and p.get("event") == "PreToolUse"]
    assert started


async def test_relative_paths_reach_the_client_absolute(tmp_path: Path) -> None:
    """ACP asks for absolute paths: a relative one the model wrote reaches the client's fs methods, the tool call's
    locations and its diff taken from the session's directory (a client that refuses relative paths then works),
    and the guards still see the write to `.env` for what it is."""
    from acp import spawn_agent_process

    project_dir = project(tmp_path)
    (project_dir / "docs").mkdir()
    client = EditorClient({str(project_dir / "docs" / "notes.txt"): "a draft\n"})
    script = tmp_path / "relative.json"
    script.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "mcp__acp__Read", "input": {"file_path": "docs/notes.txt"}}}],
        [{"tool_use": {"name": "mcp__acp__Edit", "input": {"file_path": "./docs/../docs/notes.txt",
                                                            "old_string": "draft", "new_string": "plan"}}}],
        [{"tool_use": {"name": "mcp__acp__Write", "input": {"file_path": "summary.md", "content": "# Summary\n"}}}],
        [{"tool_use": {"name": "mcp__acp__Write", "input": {"file_path": "docs/../.env", "content": "TOKEN=x\n"}}}],
        "Done.",
    ], "default": "Done."}))
    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    import sys

    async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                   cwd=str(REPO_ROOT)) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=capabilities)
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": f"scripted:{script}", "sandbox": "off"})
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("tidy the docs")])
    assert result.stop_reason == "end_turn"
    notes, summary = str(project_dir / "docs" / "notes.txt"), str(project_dir / "summary.md")
    assert client.reads[0] == notes
    assert client.writes == [(notes, "a plan\n"), (summary, "# Summary\n")]  # .env: denied by the guard
    # every path ACP carries in the tool calls the client was shown is absolute
    calls = [u for u in client.of_kind("tool_call")] + [r["toolCall"] for r in client.permission_requests]
    paths = [loc["path"] for call in calls for loc in (call.get("locations") or [])]
    paths += [c["path"] for call in calls for c in (call.get("content") or []) if c.get("type") == "diff"]
    assert paths and all(Path(p).is_absolute() for p in paths), paths
    assert summary in paths and str(project_dir / ".env") in paths
    # the client's file tools are offered to the model at once, not deferred behind ToolSearch
    first = model_requests(tmp_path, "relative")[0]
    assert {"mcp__acp__Read", "mcp__acp__Write", "mcp__acp__Edit"} <= {t["name"] for t in first["body"]["tools"]}
    assert "mcp__acp__Read" not in json.dumps(first["body"].get("system", "")) + json.dumps(
        [m for m in first["body"]["messages"] if "deferred tools" in json.dumps(m)])


async def test_a_boxed_session_never_hands_the_agents_file_calls_to_the_client(tmp_path: Path) -> None:
    """The symlink class against the editor's files (issue 24): the project holds `up -> <outside>` and
    `linked.txt -> <a secret outside>`, links the agent could also make or swap at any moment. In a boxed session
    the client's files are not used, so the agent's Write through `up/` and Read of `linked.txt` meet the OS box:
    the client is never asked, nothing is written outside, the secret never reaches the model (here the links lead
    into the host's /tmp, which the box replaces with its own; what the box does with a link to a hidden or
    read-only place is tests/security/test_boundary.py's). The same calls with `sandbox: "off"` go to the editor,
    which follows the links (the attack lands there: the box is what stops it)."""
    from acp import spawn_agent_process

    from sidecar.sandbox import backend_problem
    from tests.acp.conftest import RecordingClient

    if backend_problem(os.environ.get("PATH")) is not None:
        pytest.skip("no OS boundary on this machine (bubblewrap missing)")
    project_dir = project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- box-test-secret\n")
    (project_dir / "up").symlink_to(outside)
    (project_dir / "linked.txt").symlink_to(secret)

    class FollowingEditor(RecordingClient):
        """An editor that reads and writes the disk, following links as editors do."""

        def __init__(self) -> None:
            super().__init__(answer=lambda request: "allow_once")
            self.asked: list[str] = []

        async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                                 **kwargs: Any) -> ReadTextFileResponse:
            self.asked.append(path)
            return ReadTextFileResponse(content=Path(path).read_text())

        async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
            self.asked.append(path)
            Path(path).write_text(content)
            return None

    def script(name: str, prefix: str) -> str:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"turns": [
            [{"tool_use": {"name": f"{prefix}Write", "input": {"file_path": str(project_dir / "up" / "planted.txt"),
                                                                "content": "planted\n"}}}],
            [{"tool_use": {"name": f"{prefix}Read", "input": {"file_path": str(project_dir / "linked.txt")}}}],
            "Done.",
        ], "default": "Done."}))
        return f"scripted:{path}"

    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    import sys

    boxed, unboxed = FollowingEditor(), FollowingEditor()
    for client, name, prefix, sandbox in ((boxed, "boxed_links", "", "auto"),
                                          (unboxed, "unboxed_links", "mcp__acp__", "off")):
        async with spawn_agent_process(client, sys.executable, "-m", "sidecar", env=child_env(tmp_path),
                                       cwd=str(REPO_ROOT)) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=capabilities)
            await trust(conn, project_dir)
            session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                             orion={"model": script(name, prefix), "sandbox": sandbox,
                                                    "builtinHooks": False})
            tools = session.field_meta["orion"]["clientTools"]
            assert tools["files"] is (sandbox == "off")
            await conn.prompt(session_id=session.session_id, prompt=[text_block("look around")])
        if client is boxed:
            assert session.field_meta["orion"]["sandbox"]["enabled"] is True
            assert boxed.asked == [] and not (outside / "planted.txt").exists()
            assert "box-test-secret" not in json.dumps(model_requests(tmp_path, name))
            (outside / "planted.txt").unlink(missing_ok=True)
    # without the box the editor followed both links: what the box stopped is a real attack
    assert unboxed.asked == [str(project_dir / "up" / "planted.txt"), str(project_dir / "linked.txt")]
    assert (outside / "planted.txt").read_text() == "planted\n"
    assert "box-test-secret" in json.dumps(model_requests(tmp_path, "unboxed_links"))
