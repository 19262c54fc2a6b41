"""Session benchmarks: scripted server start, AgentSession start/close, and text / one-tool turns through the real CLI.

Run: .venv/bin/python bench/sessions.py [N]   (from the repository root; offline, scripted model)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sidecar.agent import AgentConfig, AgentSession, PermissionAnswer  # noqa: E402
from sidecar.scripted_model import ScriptedModelServer, parse_scenario  # noqa: E402
from sidecar.sdk_env import offline_env  # noqa: E402

SCENARIO = parse_scenario(
    {"turns": ["A short text answer.", [{"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}], "Done."]}
)


class NullBridge:
    async def fire(self, event: str, payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        return {}

    def budget_s(self, event: str) -> float:
        return 10.0


class AllowAll:
    async def ask(self, *args: Any) -> PermissionAnswer:
        return PermissionAnswer(allow=True)


async def ignore(update: dict[str, Any]) -> None:
    return None


def ms(values: list[float]) -> str:
    values = sorted(v * 1000 for v in values)
    return f"median {statistics.median(values):.1f} ms (min {values[0]:.1f}, max {values[-1]:.1f}, n={len(values)})"


async def main(n: int) -> None:
    t0 = time.perf_counter()
    import claude_agent_sdk  # noqa: F401

    sdk_import = time.perf_counter() - t0
    server_starts, starts, text_turns, tool_turns, closes = [], [], [], [], []
    for _ in range(n):
        server = ScriptedModelServer(SCENARIO)
        t0 = time.perf_counter()
        url = await server.start()
        server_starts.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            cfg = AgentConfig(
                project_dir=Path(tmp), session_id=str(uuid.uuid4()), env=offline_env(url, Path(tmp) / "home"),
                allowed_tools=["Bash"],
            )
            session = AgentSession(cfg, NullBridge(), AllowAll(), ignore)
            t0 = time.perf_counter()
            await session.start()
            starts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await session.prompt("text please")
            text_turns.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await session.prompt("run a tool")
            tool_turns.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await session.close()
            closes.append(time.perf_counter() - t0)
        await server.stop()
    print(f"import claude_agent_sdk (first, in-process): {sdk_import * 1000:.0f} ms")
    print(f"ScriptedModelServer.start: {ms(server_starts)}")
    print(f"AgentSession.start (CLI spawn + initialize): {ms(starts)}")
    print(f"text turn (prompt -> result): {ms(text_turns)}")
    print(f"one-tool turn (Bash echo, 2 model requests, 4 bridge callbacks): {ms(tool_turns)}")
    print(f"AgentSession.close: {ms(closes)}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
