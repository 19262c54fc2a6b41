"""How the Claude Agent SDK is imported: the part that starts the CLI first, the client without `mcp` after.

`import claude_agent_sdk` costs ~0.4 s on a quiet machine (0.8 s loaded), ~3/4 of it the SDK's `mcp` dependency,
which a session needs only for in-process MCP servers (an ACP client's files and terminals). Starting the CLI needs
only the SDK's option types and its subprocess transport (~45 ms). So a session start imports those
(`load_transport`), spawns the CLI with them, then takes `ClaudeSDKClient` from `load_client`: without the `mcp`
stack (~3 ms; the query module's MCP bridge deferred until a server needs it) unless the session has an
in-process MCP server, in which case the whole SDK loads while the CLI boots.

`install()` registers the SDK package without running its `__init__` (ipc/lazy_package.py); anything that asks
the package itself for a name (`from claude_agent_sdk import X`) still gets the whole SDK, imported then: the
sidecar's own code imports what it uses from `claude_agent_sdk.types` and `claude_agent_sdk.client` instead.
"""

from __future__ import annotations

import importlib
import sys
import threading
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


BRIDGE = f"{PACKAGE}._internal.sdk_mcp_bridge"
_bridge_lock = threading.Lock()


class _DeferredBridge:
    """Stands in for the SDK's `SdkMcpBridge` module until a session really has an in-process MCP server.

    The SDK's query module imports its MCP bridge at load, and the bridge imports the `mcp` package (~360 ms
    quiet, ~15 MiB): all for in-process MCP servers, which a session has only when an ACP client lends it its files
    or terminals (sidecar/acp/client_tools.py). Constructing a bridge (the SDK does that once per in-process server)
    imports the real module and returns the real bridge."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real_bridge_module().SdkMcpBridge(*args, **kwargs)


def _real_bridge_module() -> types.ModuleType:
    with _bridge_lock:
        module = sys.modules.get(BRIDGE)
        if module is None or getattr(module, "_orion_deferred", False):
            sys.modules.pop(BRIDGE, None)
            module = importlib.import_module(BRIDGE)
        return module


def _defer_bridge() -> None:
    with _bridge_lock:
        if BRIDGE in sys.modules:
            return  # the real one is loaded already: nothing to save
        shim = types.ModuleType(BRIDGE, _DeferredBridge.__doc__)
        shim.SdkMcpBridge = _DeferredBridge  # type: ignore[attr-defined]
        shim._orion_deferred = True  # type: ignore[attr-defined]
        sys.modules[BRIDGE] = shim


def load_client(in_process_mcp: bool) -> type:
    """`ClaudeSDKClient`, without the SDK's `mcp` stack unless `in_process_mcp` (a session with an SDK MCP server).

    Without it: the client's module is imported with the package's `Transport` name set from its own module (the
    client imports that one name from the package, whose `__init__` imports `mcp`), and the query module's MCP
    bridge is deferred (`_DeferredBridge`). Anything that later asks the package itself for a name still gets the
    whole SDK. Blocking: call it in a worker thread from the event loop."""
    if in_process_mcp:
        client = load_full().ClaudeSDKClient
        _real_bridge_module()  # here, in the worker thread: not at the bridge's construction on the event loop
        return client  # type: ignore[no-any-return]
    install()
    package = sys.modules[PACKAGE]
    if "ClaudeSDKClient" in package.__dict__:  # the whole SDK is loaded already
        return package.__dict__["ClaudeSDKClient"]  # type: ignore[no-any-return]
    transport = importlib.import_module(f"{PACKAGE}._internal.transport")
    package.__dict__.setdefault("Transport", transport.Transport)
    _defer_bridge()
    client = importlib.import_module(f"{PACKAGE}.client")
    importlib.import_module(f"{PACKAGE}._internal.query")  # what connect() imports: here, off the event loop
    return client.ClaudeSDKClient  # type: ignore[no-any-return]


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
