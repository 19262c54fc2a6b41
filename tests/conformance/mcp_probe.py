"""The MCP server of the `mcp_tool` conformance cases: its one tool, `hook`, records the arguments it was called
with, then answers as the case says.

The project's `.mcp.json` starts it as `python <project>/.claude/hooks/mcp_probe.py`; an `mcp_tool` hook calls
`hook` with `{"tag": ..., ...}` (the hook's `input`, `${path}` placeholders filled in by whoever runs the hook).
It appends `{"tag", "stdin": {"hook_event_name", "mcp_arguments"}}` to `probe.log.jsonl` beside itself, the log
the command probe writes, and answers from `behaviours.json`'s entry for the tag: `answer` (a text block; a dict
is sent as its JSON), `blocks` (several content blocks as given), `structured` (structured content beside its
JSON as text, or beside `text`), `error` (an error result with that text), after `sleep` seconds if given. Its second tool, `ask`, asks the user one question through an MCP
elicitation and answers with what came back (the Elicitation hook cases). The low-level server is used so that the tool takes
any arguments and its answer is exactly the blocks asked for.
"""

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

HERE = Path(__file__).resolve().parent
server: Server = Server("probe")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    # The CLI lists a server's tools once it has connected: the harness sends its first prompt after this, so that
    # both runs' first model request sees the server connected (the CLI does not wait for MCP servers).
    (HERE / "mcp-ready").touch()
    return [types.Tool(name="hook", description="Answers an mcp_tool hook as its conformance case says.",
                       inputSchema={"type": "object", "properties": {"tag": {"type": "string"}},
                                    "additionalProperties": True}),
            types.Tool(name="ask", description="Asks the user one question (an MCP elicitation) and says the answer.",
                       inputSchema={"type": "object", "properties": {}})]


@server.call_tool(validate_input=False)
async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    if name == "ask":
        answer = await server.request_context.session.elicit_form(
            "Which colour should the report use?",
            {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]},
            related_request_id=server.request_context.request_id)
        return [types.TextContent(type="text", text=f"elicitation: {answer.action} {json.dumps(answer.content)}")]
    if name != "hook":
        raise ValueError(f"Unknown tool: {name}")
    tag = str(arguments.get("tag", "untagged"))
    record = {"tag": tag, "stdin": {"hook_event_name": arguments.get("event"), "mcp_arguments": arguments}}
    with open(HERE / "probe.log.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    how = json.loads((HERE / "behaviours.json").read_text()).get(tag, {})
    if how.get("sleep"):  # longer than the hook's timeout: the call that times out
        await anyio.sleep(float(how["sleep"]))
    if "error" in how:
        raise RuntimeError(how["error"])
    if "blocks" in how:
        return [types.TextContent(type="text", text=b) if isinstance(b, str) else types.ImageContent(**b)
                for b in how["blocks"]]
    if "structured" in how and "text" in how:  # structured content beside a text block that says something else
        return [types.TextContent(type="text", text=how["text"])], how["structured"]
    if "structured" in how:
        return how["structured"]  # a dict: the server sends it as structured content and as JSON text
    answer = how.get("answer", "")
    return [types.TextContent(type="text", text=answer if isinstance(answer, str) else json.dumps(answer))]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    print("conformance MCP probe starting", file=sys.stderr)
    anyio.run(main)
