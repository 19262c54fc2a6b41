"""How the Claude Agent SDK is imported: the part that starts the CLI first, the rest while the CLI boots.

`import claude_agent_sdk` costs ~0.4 s on a quiet machine (0.8 s loaded), ~3/4 of it the SDK's `mcp` dependency,
which a session needs only for in-process MCP servers. Starting the CLI needs only the SDK's option types and its
subprocess transport (~75 ms). So a session start imports those (`load_transport`), spawns the CLI with them,
and imports the rest (`load_full`) while the CLI boots in its own process: the two overlap instead of adding up.

`install()` registers the SDK package without running its `__init__` (ipc/lazy_package.py); anything that asks
the package itself for a name (`from claude_agent_sdk import X`) still gets the whole SDK, imported then.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from ipc import lazy_package

PACKAGE = "claude_agent_sdk"
TRANSPORT = "claude_agent_sdk._internal.transport.subprocess_cli"


def install() -> None:
    """Make the SDK's package lazy, if nothing imported it yet (idempotent, ~0.3 ms).

    Also `importlib.metadata` (~11 ms with email, zipfile and csv behind it): the SDK's transport imports it at
    load for an app label it derives only when the SDK starts its bundled CLI directly; ours starts through
    sidecar/cli_exec.sh, so the module is loaded only if something really uses it."""
    lazy_package.install(PACKAGE)
    lazy_package.install("importlib.metadata")


def load_transport() -> tuple[types.ModuleType, types.ModuleType]:
    """The SDK's option types and its subprocess transport, without the rest of the SDK when it was installed lazily."""
    install()
    return importlib.import_module(f"{PACKAGE}.types"), importlib.import_module(TRANSPORT)


def load_full() -> types.ModuleType:
    """The whole SDK (its package `__init__` run). Blocking: call it in a worker thread from the event loop."""
    install()
    return lazy_package.complete(PACKAGE)


async def _no_prompt() -> Any:
    # The transport's prompt stream in streaming mode: never yields (prompts go through the client's query()).
    return
    yield {}  # pragma: no cover - makes this an async generator


def spawn_transport(options: Any) -> Any:
    """A subprocess transport for `options`, configured as `ClaudeSDKClient.connect()` configures its own
    (`can_use_tool` routes permission prompts over stdio). `await transport.connect()` spawns the CLI; hand the
    transport to `ClaudeSDKClient(options, transport=...)`, whose `connect()` then finds it running."""
    sdk_types, transport_module = load_transport()
    configured = sdk_types._configure_can_use_tool(options)
    return transport_module.SubprocessCLITransport(prompt=_no_prompt(), options=configured)
