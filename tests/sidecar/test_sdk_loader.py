"""sidecar/sdk_loader.py: a session's SDK client without the SDK's `mcp` stack, and the real MCP bridge the moment
an in-process MCP server needs it. Each case runs in a fresh interpreter (what is imported is the point)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def probe(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_session_client_loads_without_mcp_and_the_real_bridge_comes_when_a_server_needs_it() -> None:
    seen = probe("""
        import json, sys
        from sidecar import sdk_loader
        sdk_loader.load_transport()
        client = sdk_loader.load_client(False)
        from claude_agent_sdk._internal import query
        before = {"client": client.__module__ + "." + client.__name__, "mcp": "mcp" in sys.modules,
                  "metadata_loaded": "email" in sys.modules, "bridge": query.SdkMcpBridge.__module__}
        # What the SDK does for each in-process server: SdkMcpBridge(name, server), with the name query imported.
        from mcp.server import Server
        bridge = query.SdkMcpBridge("files", Server("files"))
        print(json.dumps({**before, "built": type(bridge).__module__ + "." + type(bridge).__name__,
                          "module_now": type(sys.modules[sdk_loader.BRIDGE]).__name__,
                          "real_module": getattr(sys.modules[sdk_loader.BRIDGE], "_orion_deferred", False)}))
    """)
    assert seen["client"] == "claude_agent_sdk.client.ClaudeSDKClient"
    assert seen["mcp"] is False and seen["metadata_loaded"] is False
    assert seen["bridge"] == "sidecar.sdk_loader"
    assert seen["built"] == "claude_agent_sdk._internal.sdk_mcp_bridge.SdkMcpBridge"
    assert seen["real_module"] is False  # the shim is gone: later imports of the module get the real one


def test_with_in_process_mcp_the_whole_sdk_is_loaded() -> None:
    seen = probe("""
        import json, sys
        from sidecar import sdk_loader
        client = sdk_loader.load_client(True)
        import claude_agent_sdk
        print(json.dumps({"same": client is claude_agent_sdk.ClaudeSDKClient, "mcp": "mcp" in sys.modules,
                          "bridge": sys.modules["claude_agent_sdk._internal.query"].SdkMcpBridge.__module__}))
    """)
    assert seen == {"same": True, "mcp": True, "bridge": "claude_agent_sdk._internal.sdk_mcp_bridge"}


def test_asking_the_package_for_a_name_later_still_gets_the_whole_sdk() -> None:
    seen = probe("""
        import json, sys
        from sidecar import sdk_loader
        first = sdk_loader.load_client(False)
        from claude_agent_sdk import ClaudeSDKClient, create_sdk_mcp_server
        print(json.dumps({"same": first is ClaudeSDKClient, "mcp": "mcp" in sys.modules}))
    """)
    assert seen == {"same": True, "mcp": True}


def test_a_later_session_with_an_in_process_server_gets_the_real_bridge_off_the_event_loop() -> None:
    seen = probe("""
        import json, sys
        from sidecar import sdk_loader
        sdk_loader.load_client(False)  # a first, plain session: the bridge deferred
        sdk_loader.load_client(True)   # then one with an ACP client's files: everything loaded in the worker thread
        module = sys.modules[sdk_loader.BRIDGE]
        print(json.dumps({"deferred": getattr(module, "_orion_deferred", False), "mcp": "mcp.shared.memory" in sys.modules}))
    """)
    assert seen == {"deferred": False, "mcp": True}

