"""The real claude-mem plugin (npm `claude-mem`), installed as its README tells a Claude Code user (`npx claude-mem
install`), in a throwaway HOME / CLAUDE_CONFIG_DIR, run for two sessions through `python -m sidecar` on the scripted
model: its hooks run as the user's plugin, its worker starts, what it observes in session 1 is stored and reaches the
model in session 2. Skipped, with the reason, when npm, the npm registry, bun or uv cannot be had.

Two things stand in for the network, both said where they are done: the marketplace catalogue the CLI would have
cloned from GitHub (the npm package does not carry `.claude-plugin/marketplace.json`; without it Claude Code itself
does not load the plugin offline: "Marketplace thedotmack failed to load: cache-miss"), and claude-mem's memory agent,
pointed (its own `~/.claude-mem/.env`) at a scripted model that answers in the XML it expects.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conformance.harness import ScriptedServer, cli_path
from tests.e2e.conftest import SCENARIOS, fixed_policy

pytestmark = [pytest.mark.cli, pytest.mark.slow, pytest.mark.asyncio]

PLUGIN_ID = "claude-mem@thedotmack"
CATALOGUE = {"name": "thedotmack", "owner": {"name": "Alex Newman"},
             "plugins": [{"name": "claude-mem", "source": "./plugin"}]}  # as in github.com/thedotmack/claude-mem
STEP_TIMEOUT_S = 600
MEMORY_WAIT_S = 60


def _run(args: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, **kw)


def _tools(root: Path) -> Path:
    """A bin folder with node, bun, uv and the bundled claude, or pytest.skip naming what is missing."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm and node are needed to install claude-mem (npm pack, npx claude-mem install)")
    bun = shutil.which("bun")
    if bun is None:
        done = _run(["npm", "install", "--prefix", str(root / "bun"), "bun"])
        bun = str(root / "bun" / "node_modules" / ".bin" / "bun")
        if done.returncode != 0 or not Path(bun).exists():
            pytest.skip(f"bun is not installed and `npm install bun` failed: {done.stderr.strip()[-300:]}")
    uv = shutil.which("uv")
    if uv is None:
        venv = root / "uv-venv"
        done = _run([sys.executable, "-m", "venv", str(venv)])
        done = done if done.returncode else _run([str(venv / "bin" / "pip"), "install", "-q", "uv"])
        uv = str(venv / "bin" / "uv")
        if done.returncode != 0 or not Path(uv).exists():
            pytest.skip(f"uv is not installed and `pip install uv` failed: {done.stderr.strip()[-300:]}")
    for name, target in (("bun", bun), ("uv", uv), ("claude", cli_path())):
        (bin_dir / name).symlink_to(target)
    return bin_dir


def _package(root: Path) -> Path:
    root.mkdir(parents=True)
    done = _run(["npm", "pack", "claude-mem", "--pack-destination", str(root)], cwd=root)
    tarballs = sorted(root.glob("claude-mem-*.tgz"))
    if done.returncode != 0 or not tarballs:
        pytest.skip(f"`npm pack claude-mem` failed (no npm registry?): {done.stderr.strip()[-300:]}")
    with tarfile.open(tarballs[-1]) as tar:
        tar.extractall(root / "pkg", filter="data")
    return root / "pkg" / "package"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _install(package: Path, home: Path, env: dict[str, str], observer_url: str) -> Path:
    """`npx claude-mem install` as a user runs it (non-interactive: the provider given), then the offline stand-ins."""
    done = _run(["node", str(package / "dist" / "npx-cli" / "index.js"), "install", "--provider", "claude",
                 "--no-auto-start", "--ide", "claude-code"], env=env, cwd=home, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    config = home / ".claude"
    assert json.loads((config / "settings.json").read_text())["enabledPlugins"] == {PLUGIN_ID: True}
    market = config / "plugins" / "marketplaces" / "thedotmack"
    (market / ".claude-plugin").mkdir(exist_ok=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps(CATALOGUE))
    mem = home / ".claude-mem"
    with (mem / ".env").open("a") as fh:
        fh.write(f"ANTHROPIC_API_KEY=scripted-offline\nANTHROPIC_BASE_URL={observer_url}\n")
    settings = json.loads((mem / "settings.json").read_text())
    settings.update({"CLAUDE_MEM_CLAUDE_AUTH_METHOD": "api-key", "CLAUDE_MEM_WORKER_PORT": str(_free_port())})
    (mem / "settings.json").write_text(json.dumps(settings, indent=2))
    return mem


def _counts(mem: Path) -> tuple[int, int]:
    try:
        with sqlite3.connect(f"file:{mem / 'claude-mem.db'}?mode=ro", uri=True, timeout=5) as db:
            return (db.execute("select count(*) from observations").fetchone()[0],
                    db.execute("select count(*) from session_summaries").fetchone()[0])
    except sqlite3.Error:
        return (0, 0)


async def _wait_for_memory(mem: Path, observations: int, summaries: int) -> tuple[int, int]:
    """claude-mem's worker writes in the background: poll its database until it holds this much, within a deadline."""
    with anyio.move_on_after(MEMORY_WAIT_S):
        while True:
            counts = _counts(mem)
            if counts[0] >= observations and counts[1] >= summaries:
                return counts
            await anyio.sleep(0.5)
    return _counts(mem)


async def _answered(run: Any) -> None:
    """Until every plugin hook started so far has answered (claude-mem's Stop hooks run on after the turn's answer;
    on a loaded machine they were still running when the session ended, and were cancelled)."""
    from tests.waiting import until

    def settled() -> bool:
        started = {e["executionId"] for e in run.named("hook_started") if e.get("source") == "plugin"}
        answered = {e["executionId"] for e in run.named("hook_response") if e.get("source") == "plugin"}
        return started <= answered

    await until(settled, 120, "claude-mem's hooks answered")


def _workers(marker: str) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "worker-service" in cmdline and marker in cmdline:
            out.append(int(pid))
    return out


async def test_claude_mem_stores_session_one_and_delivers_it_to_session_two(sidecar, tmp_path) -> None:
    tools = _tools(tmp_path / "tools")
    package = _package(tmp_path / "npm")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    install_env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "PATH": path,
                   "CI": "1", "CLAUDE_MEM_ONLINE_OPTIN": "false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    observer = ScriptedServer(SCENARIOS / "claude_mem_observer.yaml", tmp_path / "observer-requests.jsonl")
    try:
        mem = _install(package, home, install_env, observer.url)
        # claude-mem's SessionEnd hooks start bun: on a loaded 2-core machine that overran the 1.5 s default, and
        # its users raise the budget as for `claude`, with Claude Code's own variable (which Orion honours).
        env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "ORION_CLAUDE_USER_SETTINGS": "",
               "PATH": path, "CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "15000"}
        async with sidecar(project="notes", trust=False, permission=fixed_policy("allow_once"), env=env) as run:
            listed = await run.request("hooks/list", {"projectDir": str(run.project)}, timeout=120)
            [entry] = [p for p in listed["trust"]["plugins"] if p["id"] == PLUGIN_ID]
            assert entry["state"] == "trusted" and "MCP servers" in entry["components"]
            rows = [h for h in listed["hooks"] if (h.get("plugin") or {}).get("id") == PLUGIN_ID]
            assert {h["event"] for h in rows} >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"}
            assert all(h["state"] == "active" for h in rows), [(h["event"], h["reason"]) for h in rows]

            first = (await run.new_session("claude_mem_1"))["sessionId"]
            await run.prompt(first, "read the notes", timeout=180)
            during = _workers(str(home))
            stored = await _wait_for_memory(mem, observations=1, summaries=1)
            await _answered(run)
            await run.end(first)
            second = (await run.new_session("claude_mem_2"))["sessionId"]
            await run.prompt(second, "what happened last time?", timeout=180)
            await _answered(run)  # its Stop hooks (the summary) run on after the answer; ending cancels what still runs
            await run.end(second)

            failed = [(r["event"], r["outcome"], r.get("stderr"), r.get("error")) for r in run.named("hook_response")
                      if r["source"] == "plugin" and r["outcome"] != "success"]
            assert failed == []
            assert during, "claude-mem's worker was not running during session 1"
            assert stored[0] >= 1 and stored[1] >= 1, f"stored (observations, summaries) = {stored}"
            [request] = run.model_requests("claude_mem_2")[:1]
            assert "ORION-MEM-SUMMARY" in json.dumps(request["body"]["messages"])
        # Nothing a hook started outlives the sidecar.
        with anyio.fail_after(10):
            while _workers(str(home)):
                await anyio.sleep(0.2)
    finally:
        observer.close()
