"""Remote hook benchmarks: what an http hook adds against a local server, a prompt hook through the real CLI, and how far past its deadline an agent hook can run.

Run: .venv/bin/python bench/bench_remote_hooks.py [N]   (from the repository root; offline: 127.0.0.1 and the scripted model only)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ALLOW = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}).encode()
PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "ls"}}


@asynccontextmanager
async def policy_server() -> AsyncIterator[str]:
    """A keep-alive HTTP/1.1 server answering every POST with an allow, as a real policy server would."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request_line := await reader.readline()):
                length = 0
                while (line := (await reader.readline()).strip()):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ALLOW) + ALLOW)
                await writer.drain()
                del request_line
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/policy"
    finally:
        server.close()


def stats(values: list[float]) -> tuple[float, float, float]:
    values = sorted(v * 1000 for v in values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return statistics.median(values), p95, values[-1]


async def time_fires(runner: Any, session: Any, n: int) -> list[float]:
    for _ in range(5):  # warm-up: connection set-up, first tracking-file open
        await runner.fire("PreToolUse", dict(PAYLOAD), session)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = await runner.fire("PreToolUse", dict(PAYLOAD), session)
        out.append(time.perf_counter() - t0)
        assert result.decision in (None, "allow"), result
    return out


async def runner_rows(root: Path, n: int) -> list[tuple[str, list[float]]]:
    from hooks.executors.remote import default_llm_executors
    from hooks.hookset import load_hookset
    from hooks.registry import HookRegistry
    from hooks.runner import HookRunner
    from hooks.trust import TrustStore
    from hooks.types import SessionContext

    rows = []
    async with policy_server() as url:
        variants = {
            "runner.fire, no hook matched (baseline)": [],
            "runner.fire, one http hook": [{"type": "http", "url": url}],
            "runner.fire, one command hook `true` (reference)": [{"type": "command", "command": "true"}],
        }
        for label, entries in variants.items():
            project = root / f"p{len(rows)}"
            settings = project / ".claude" / "settings.json"
            settings.parent.mkdir(parents=True)
            settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash" if entries else "Nothing", "hooks": entries or [{"type": "command", "command": "true"}]}]}}))
            TrustStore().trust(project)
            runner = HookRunner(load_hookset(project, registry=HookRegistry()), executors=default_llm_executors(None))
            try:
                rows.append((label, await time_fires(runner, SessionContext("bench", project), n)))
            finally:
                await runner.aclose()
    return rows


async def executor_row(n: int) -> tuple[str, list[float]]:
    import logging

    from hooks.executors.http import HttpExecutor
    from hooks.types import HookCall, HookContext, SessionContext
    from types import SimpleNamespace

    async with policy_server() as url:
        executor = HttpExecutor()
        hook = SimpleNamespace(config=SimpleNamespace(url=url, headers={}, allowedEnvVars=[]))
        ctx = HookContext(SessionContext("bench", Path.cwd()), "PreToolUse", "h", "e", None, 0.0, logging.getLogger("bench"))

        async def no_progress(stream: str, line: str) -> None:
            return None

        call = HookCall(hook, "PreToolUse", PAYLOAD, ctx, 10.0, no_progress)
        try:
            for _ in range(5):
                await executor.run(call)
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                report = await executor.run(call)
                out.append(time.perf_counter() - t0)
                assert report.status == "ok"
        finally:
            await executor.aclose()
    return "HttpExecutor.run alone (keep-alive, 127.0.0.1)", out


def marked_alive(mark: str) -> int:
    import psutil

    count = 0
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("ORION_BENCH_MARK") == mark and proc.status() != psutil.STATUS_ZOMBIE:
                count += 1
        except psutil.Error:
            continue
    return count


async def cli_rows(root: Path, runs: int) -> list[tuple[str, list[float]]]:
    from hooks.executors.evaluation import EVALUATION_SYSTEM_PROMPT
    from sidecar.evaluator import SdkModelClient
    from sidecar.scripted_model import ScriptedModelServer, parse_scenario
    from sidecar.sdk_env import offline_env

    fast = ScriptedModelServer(parse_scenario({"side_reply": '{"ok": true, "reason": "fine"}'}))
    # One character a second: the agent cannot finish before its deadline.
    slow = ScriptedModelServer(parse_scenario({"default": "x" * 50, "text_chunk": 1, "delta_delay_ms": 1000}))
    mark = os.urandom(6).hex()
    prompt_times, overruns = [], []
    async with fast.running() as fast_url, slow.running() as slow_url:
        client = SdkModelClient({**offline_env(fast_url, root / "cli-home"), "ORION_BENCH_MARK": mark}, None, root / "data")
        for _ in range(runs):
            t0 = time.perf_counter()
            text = await client.complete("Is `ls` safe?", model="claude-haiku-4-5", timeout_s=30, system=EVALUATION_SYSTEM_PROMPT)
            prompt_times.append(time.perf_counter() - t0)
            assert '"ok": true' in text, text
        client = SdkModelClient({**offline_env(slow_url, root / "cli-home"), "ORION_BENCH_MARK": mark}, None, root / "data")
        deadline = 2.0
        for _ in range(runs):
            t0 = time.perf_counter()
            try:
                await client.run_agent("Verify", cwd=root, tools=["Read", "Grep", "Glob"], max_turns=5, model=None, timeout_s=deadline)
                raise AssertionError("the slow agent answered before its deadline")
            except TimeoutError:
                overruns.append(time.perf_counter() - t0 - deadline)
            assert marked_alive(mark) == 0, "a CLI process outlived its deadline"
    return [
        ("prompt hook, one-shot through the real CLI", prompt_times),
        (f"agent hook past a {deadline:g} s deadline: return - deadline", overruns),
    ]


async def main(n: int, runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="orion-bench-remote-"))
    os.environ["HOME"] = str(root / "home")
    os.environ["ORION_DATA_DIR"] = str(root / "data")
    os.environ["ORION_USER_SETTINGS"] = str(root / "home" / "settings.json")
    os.environ["ORION_CLAUDE_USER_SETTINGS"] = str(root / "home" / "no-claude-user-settings.json")

    rows = [await executor_row(n), *await runner_rows(root, n), *await cli_rows(root, runs)]
    print(f"{'what':<62} {'median':>9} {'p95':>9} {'max':>9}")
    for label, values in rows:
        median, p95, worst = stats(values)
        print(f"{label:<62} {median:>7.2f}ms {p95:>7.2f}ms {worst:>7.2f}ms   n={len(values)}")
    baseline = statistics.median(rows[1][1])
    print(f"\nadded by one http hook on runner.fire: {(statistics.median(rows[2][1]) - baseline) * 1000:.2f} ms (median)")
    print(f"added by one command hook `true`:       {(statistics.median(rows[3][1]) - baseline) * 1000:.2f} ms (median)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, 3))
