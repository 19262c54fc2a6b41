"""The MCP Python SDK's own stdio server with no tools: the peer bench_wire.py compares the sidecar against (it answers `ping` itself)."""

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def main() -> None:
    server = Server("bench-mcp")
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
