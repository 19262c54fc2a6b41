"""A stdio MCP server (the `mcp` package the SDK depends on) an ACP client brings to a session: one tool, `shout`, that upper-cases its text and records the call."""

import os
import sys
from pathlib import Path

try:  # mcp 1.x (what the sidecar pins: its import is ~0.45 s faster) ...
    from mcp.server.fastmcp import FastMCP as MCPServer
except ImportError:  # ... and 2.x, where FastMCP became MCPServer
    from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals."""
    marker = os.environ.get("PROBE_MARKER")
    if marker:
        with Path(marker).open("a", encoding="utf-8") as out:
            out.write(text + "\n")
    return f"PROBE-SAYS: {text.upper()}"


if __name__ == "__main__":
    print("probe MCP server starting", file=sys.stderr)
    server.run()
