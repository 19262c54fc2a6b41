"""A real Claude Code plugin's hooks on the bare bundled CLI and under `python -m sidecar`, session by session.

Measures what issue 23 measured first (OrchestKit: 339 hook invocations on the CLI, 0 the same under Orion): the
plugin is installed the way a Claude Code user installs it (`claude plugin marketplace add` / `install`, from a
local copy of its marketplace), five scripted sessions run on each side against the same scripted model, and every
run of the plugin's `node` hooks is recorded by a `node` shim first on PATH (argv, the event and tool it got, exit
code, output). Then, per session: how many invocations each side made and how many are the same (event, handler,
tool, exit code; and the same output, ids, paths and times normalised).

    .venv/bin/python bench/plugin_parity.py --plugin-dir /path/to/orchestkit/plugins/ork --name ork

Nothing here is a test: it needs the plugin's own files, which the suite does not carry (the suite's plugin tests
use fixtures of our own: tests/e2e/test_plugins.py, tests/e2e/test_exec_form_hooks.py).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conformance.harness import OFFLINE, ScriptedServer, cli_path  # noqa: E402
from tests.plugin_fixture import install_with_cli  # noqa: E402


def _bash(command: str, description: str = "run") -> dict[str, Any]:
    return {"tool_use": {"name": "Bash", "input": {"command": command, "description": description}}}


SESSIONS: list[tuple[str, str, list[Any]]] = [
    ("look-around", "look around this project", [
        [{"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}}],
        [_bash("ls -la", "List files")], "It is a small project."]),
    ("write-code", "add a greeting function", [
        [{"tool_use": {"name": "Write", "input": {"file_path": "src/app.py",
                                                  "content": "def greet(name):\n    return 'hi ' + name\n"}}}],
        [{"tool_use": {"name": "Edit", "input": {"file_path": "src/app.py", "old_string": "'hi '",
                                                 "new_string": "'hello '"}}}],
        [_bash("python3 -m py_compile src/app.py", "Compile")], "Added greet()."]),
    ("dangerous", "clean the repository up", [
        [_bash("git reset --hard", "Reset")], [_bash("git push --force origin main", "Push")],
        [_bash("rm -rf build", "Remove build")], "Tried to clean up."]),
    ("question", "what does this project do?", ["It greets people."]),
    ("search", "find the functions", [
        [{"tool_use": {"name": "Glob", "input": {"pattern": "**/*.py"}}}],
        [{"tool_use": {"name": "Grep", "input": {"pattern": "def ", "path": "."}}}], "One function: greet."]),
]

SHIM = """#!/bin/sh
# node, recorded (bench/plugin_parity.py): the hook's stdin, exit code and output go to the log as one line
tmp=$(mktemp -d)
cat > "$tmp/in"
{node} "$@" < "$tmp/in" > "$tmp/out" 2> "$tmp/err"
rc=$?
{python} {logger} "$tmp" "$rc" "$@"
cat "$tmp/out"; cat "$tmp/err" >&2
rm -rf "$tmp"
exit $rc
"""

LOGGER = """import json, os, sys
tmp, rc, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def read(name):
    with open(os.path.join(tmp, name), encoding="utf-8", errors="replace") as f:
        return f.read()
try:
    stdin = json.loads(read("in"))
except ValueError:
    stdin = {}
line = {"handler": argv[1] if len(argv) > 1 else argv[0] if argv else "", "event": stdin.get("hook_event_name"),
        "tool": stdin.get("tool_name"), "exit": rc, "stdout": read("out")[:4000], "stderr": read("err")[:1000],
        "stdin": stdin}
with open(os.environ["PARITY_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps(line) + "\\n")
"""


def install(plugin_dir: Path, name: str, home: Path) -> dict[str, str]:
    """A HOME with the plugin installed from a local marketplace by the bundled CLI; returns the env to run with."""
    config = home / ".claude"
    config.mkdir(parents=True)
    market = home / "market"
    shutil.copytree(plugin_dir, market / "plugins" / name, symlinks=True)
    version = json.loads((plugin_dir / ".claude-plugin" / "plugin.json").read_text()).get("version", "0.0.0")
    env = {**os.environ, **OFFLINE, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config)}
    install_with_cli(cli_path(), env, market, name, version, home)
    shims = home / "shims"
    shims.mkdir()
    (home / "logger.py").write_text(LOGGER)
    node = shutil.which("node") or "node"
    (shims / "node").write_text(SHIM.format(node=node, python=sys.executable, logger=home / "logger.py"))
    (shims / "node").chmod(0o755)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    return env


def project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "README.md").write_text("# Greeter\nA tiny project.\n")
    (root / "src").mkdir()
    (root / "src" / "__init__.py").write_text("")
    subprocess.run(["git", "init", "-q"], cwd=root, check=False)
    return root


def scenario_file(where: Path, name: str, turns: list[Any]) -> Path:
    path = where / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "turns": turns, "default": "Done.", "side_reply": "Title"}))
    return path


async def run_cli(env: dict[str, str], where: Path, name: str, prompt: str, turns: list[Any]) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, PermissionResultAllow

    async def allow(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionResultAllow()

    proj = project(where / "project")
    server = ScriptedServer(scenario_file(where, name, turns), where / "requests.jsonl")
    try:
        options = ClaudeAgentOptions(
            cwd=str(proj), env={**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "scripted-offline",
                                "PARITY_LOG": str(where / "calls.jsonl")},
            setting_sources=["user", "project"], system_prompt={"type": "preset", "preset": "claude_code"},
            session_id=str(uuid.uuid4()), cli_path=cli_path(), can_use_tool=allow)
        async with ClaudeSDKClient(options) as client:
            await client.query(prompt)
            async for _message in client.receive_response():
                pass
            await asyncio.sleep(3)  # async hooks finish
    finally:
        server.close()


async def run_sidecar(env: dict[str, str], where: Path, name: str, prompt: str, turns: list[Any],
                      builtins: bool = False, sandbox: str = "off") -> None:
    from frontend_stub.client import SidecarClient
    from hooks.builtin import builtin_registry

    proj = project(where / "project")
    scenario = scenario_file(where, name, turns)
    data = where / "orion-data"
    user_settings = where / "orion-user.json"
    disabled = [] if builtins else sorted({h.name for h in builtin_registry(data_dir=data)})
    user_settings.write_text(json.dumps({"disabledHooks": disabled}))
    sidecar_env = {**env, "ORION_DATA_DIR": str(data), "ORION_USER_SETTINGS": str(user_settings),
                   "ORION_CLAUDE_USER_SETTINGS": "", "PARITY_LOG": str(where / "calls.jsonl"),
                   "PYTHONPATH": str(REPO)}

    async def on_request(method: str, params: Any) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    async with SidecarClient.launch(env=sidecar_env, cwd=str(REPO), on_request=on_request) as client:
        created = await client.request("session/new", {"projectDir": str(proj), "model": f"scripted:{scenario}",
                                                       "sandbox": sandbox}, timeout=120)
        sid = created["sessionId"]
        await client.request("session/prompt", {"sessionId": sid, "prompt": prompt}, timeout=300)
        await asyncio.sleep(3)
        await client.request("session/end", {"sessionId": sid}, timeout=60)


_NOISE = [(re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<id>"),
          (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z?"), "<time>"),
          (re.compile(r"/tmp/[^\s\"'\\]+"), "<path>"), (re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b"), "<dur>"),
          (re.compile(r"toolu_[A-Za-z0-9_]+"), "<tool-use>"),
          (re.compile(r"\b[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}\b"), "<mtime>"),  # `ls -l` times
          (re.compile(r"([d-][rwx-]{9}) +\d+ "), r"\1 <links> ")]  # `ls -l` link counts


# Keys of a hook's input whose values differ between any two runs (ids, the transcript's place, timings).
_RUN_KEYS = ("session_id", "transcript_path", "prompt_id", "tool_use_id", "agent_id", "duration_ms")


def _neutral(text: str) -> str:
    for pattern, repl in _NOISE:
        text = pattern.sub(repl, text)
    return text


def key(call: dict[str, Any], what: str = "run") -> tuple[Any, ...]:
    """What is compared: "run" (event, handler, tool, exit code), "output" (and the output), "input" (and the
    stdin, ids, paths and times normalised)."""
    handler = re.sub(r".*/market/plugins/[^/]+/", "<root>/", call["handler"])  # each run installs its own copy
    base = (call["event"], handler, call["tool"], call["exit"])
    if what == "output":
        return (*base, _neutral(call["stdout"]))
    if what == "input":
        stdin = {k: ("<run>" if k in _RUN_KEYS else v) for k, v in (call.get("stdin") or {}).items()}
        return (*base, _neutral(json.dumps(stdin, sort_keys=True)))
    return base


def calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def same(a: list[dict[str, Any]], b: list[dict[str, Any]], what: str) -> int:
    left = collections.Counter(key(c, what) for c in a)
    right = collections.Counter(key(c, what) for c in b)
    return sum((left & right).values())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugin-dir", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--keep", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--only", nargs="*", help="session names to run")
    parser.add_argument("--compare-only", action="store_true", help="compare the runs kept in --keep again")
    parser.add_argument("--sandbox", default="off", choices=["off", "auto", "required"],
                        help="the sidecar session's OS boundary (default off: the bare CLI runs without one)")
    parser.add_argument("--builtins", action="store_true", help="keep Orion's built-in hooks on (the default "
                        "session): their guards may decide before the plugin's hooks run")
    args = parser.parse_args()
    top = args.keep or Path(tempfile.mkdtemp(prefix="plugin-parity-"))
    totals: collections.Counter[str] = collections.Counter()
    for name, prompt, turns in SESSIONS:
        if args.only and name not in args.only:
            continue
        cli_dir, ours_dir = top / name / "cli", top / name / "sidecar"
        if not args.compare_only:
            await run_cli(install(args.plugin_dir, args.name, cli_dir / "home"), cli_dir, name, prompt, turns)
            await run_sidecar(install(args.plugin_dir, args.name, ours_dir / "home"), ours_dir, name, prompt, turns,
                              builtins=args.builtins, sandbox=args.sandbox)
        a, b = calls(cli_dir / "calls.jsonl"), calls(ours_dir / "calls.jsonl")
        row = {"cli": len(a), "orion": len(b), "same": same(a, b, "run"), "same_input": same(a, b, "input"),
               "same_output": same(a, b, "output")}
        totals.update(row)
        print(f"{name:12} CLI {row['cli']:4}  Orion {row['orion']:4}  same run {row['same']:4}  "
              f"same input {row['same_input']:4}  same output {row['same_output']:4}", flush=True)
        for what in ("run", "input", "output"):
            only_cli = collections.Counter(key(c, what) for c in a) - collections.Counter(key(c, what) for c in b)
            only_ours = collections.Counter(key(c, what) for c in b) - collections.Counter(key(c, what) for c in a)
            for side, diff in (("only on the CLI", only_cli), ("only under Orion", only_ours)):
                for k, n in sorted(diff.items(), key=str):
                    print(f"    {what}, {side}: {n} x {str(k)[:1500]}")
    print(f"\nall      CLI {totals['cli']:4}  Orion {totals['orion']:4}  same run {totals['same']:4}  "
          f"same input {totals['same_input']:4}  same output {totals['same_output']:4}   (runs kept in {top})")


if __name__ == "__main__":
    asyncio.run(main())
