"""Runs one conformance case on the bare bundled CLI (it runs the hooks) or through `python -m sidecar` (we run them), and observes both the same way.

An observation is what a user or the model could notice: every hook call (its
stdin, documented environment variables, working directory), every main-loop
model request (the messages, normalised for ids and paths), how the turn
ended, and which files the tools left behind. `normalise` removes only what
must differ between two runs (temporary paths, generated ids, timing).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import yaml

from sidecar.permissions import USER_REJECTED
from tests.conformance.cases import Case
from tests.conformance.http_probe import HttpProbe

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).resolve().with_name("probe.py")
MCP_PROBE = Path(__file__).resolve().with_name("mcp_probe.py")
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}
RUN_TIMEOUT_S = 120


@dataclass(slots=True)
class Observation:
    hook_calls: list[dict[str, Any]] = field(default_factory=list)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def offline_cli_env(server: ScriptedServer, home: Path) -> dict[str, str]:
    """The bare CLI's environment against the scripted model: offline, with its own home and config dir."""
    return dict(OFFLINE, ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="scripted-model-offline", HOME=str(home),
                CLAUDE_CONFIG_DIR=str(home / ".claude"))


async def prompt_once(options: Any, prompt: str, server: ScriptedServer, timeout_s: float) -> None:
    """One prompt to the bare CLI through the SDK, read to its end; the scripted model closes after."""
    from claude_agent_sdk import ClaudeSDKClient

    try:
        with anyio.fail_after(timeout_s):
            async with ClaudeSDKClient(options) as client:
                await client.query(prompt)
                async for _message in client.receive_response():
                    pass
    finally:
        server.close()


def cli_path() -> str:
    import claude_agent_sdk

    return str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")


def managed_cli(case: Case, root: Path) -> str:
    """The CLI the reference run starts: the bundled one, or for a case with managed settings a script that starts it
    with the case's /etc/claude-code (tests/managed_settings.py), which the sidecar's run gets the same way."""
    if not case.managed:
        return cli_path()
    from tests.managed_settings import managed_launcher

    script = root / "managed-cli"
    script.write_text("#!/bin/sh\nexec " + shlex.join([*managed_launcher(root / "etc-claude-code"), cli_path()])
                      + ' "$@"\n')
    script.chmod(0o755)
    return str(script)


def sidecar_launcher(case: Case, root: Path) -> list[str] | None:
    """`python -m sidecar`, for a case with managed settings inside its mount namespace; None: as it is."""
    if not case.managed:
        return None
    from frontend_stub.client import default_sidecar_argv
    from tests.managed_settings import managed_launcher

    return [*managed_launcher(root / "etc-claude-code"), *default_sidecar_argv()]


# --------------------------------------------------------------------------- set-up


# The user's own CLAUDE_CODE_SHELL_PREFIX of a `shell_prefix` case: marks what it runs, then runs the line.
WRAPPER = '#!/bin/sh\nexport CONFORMANCE_WRAPPED=yes\nexec /bin/sh -c "$1"\n'


def user_prefix_env(case: Case, root: Path) -> dict[str, str]:
    """The environment both runs of a `shell_prefix` case start with (the user's prefix, as a user exports it)."""
    return {"CLAUDE_CODE_SHELL_PREFIX": str(root / "user-shell-prefix")} if case.shell_prefix else {}


def prepare(case: Case, root: Path, http_url: str = "") -> tuple[Path, Path]:
    """A fresh project with the probe and the case's settings, and the scenario file; returns (project, scenario)."""
    if root.exists():
        shutil.rmtree(root)
    project = root / "project"
    hooks = _probe_dir(project)
    hooks.mkdir(parents=True)
    shutil.copy(PROBE, hooks / "probe.py")
    (hooks / "behaviours.json").write_text(json.dumps(case.behaviours))
    command = f"{sys.executable} {hooks / 'probe.py'}"
    (project / ".claude" / "settings.json").write_text(json.dumps(case.settings(command, http_url), indent=2))
    if case.mcp:
        shutil.copy(MCP_PROBE, hooks / "mcp_probe.py")
        servers = {"probe": {"command": sys.executable, "args": [str(hooks / "mcp_probe.py")]}}
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
    if case.register_root:
        (project / case.register_root).mkdir(parents=True, exist_ok=True)
    for relative, text in case.files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    if case.managed:
        managed = root / "etc-claude-code"
        managed.mkdir()
        (managed / "managed-settings.json").write_text(json.dumps(case.managed_settings(command, http_url), indent=2))
    if case.shell_prefix:
        wrapper = root / "user-shell-prefix"
        wrapper.write_text(WRAPPER)
        wrapper.chmod(0o755)
    scenario = root / f"{case.name}.yaml"
    scenario.write_text(yaml.safe_dump(case.scenario()))
    return project, scenario


class ScriptedServer:
    """`python -m sidecar.scripted_model` in a child process, logging every request."""

    def __init__(self, scenario: Path, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sidecar.scripted_model", str(scenario), "--log", str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        self.url = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        if not self.url.startswith("http"):
            self.proc.kill()
            raise RuntimeError(f"scripted model did not start: {self.url!r}")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


# --------------------------------------------------------------------------- the two runs


async def run_cli(case: Case, root: Path) -> Observation:
    """The reference: the bundled CLI, started through the SDK as the sidecar starts it (streaming input, Claude
    Code's own system prompt, the same tool allow-list), reads the project's settings and runs the hooks itself."""
    with _http_probe(case, root) as http:
        return await _run_cli(case, root, http)


async def _run_cli(case: Case, root: Path, http: HttpProbe | None) -> Observation:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, PermissionResultDeny, ResultMessage

    async def refuse(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        # The user of both runs answers every permission prompt "reject once", as the sidecar's harness does.
        # Claude Code's own words for a rejection in its dialog, as the sidecar gives them (sidecar/permissions.py).
        if case.permission_delay_s:
            await anyio.sleep(case.permission_delay_s)
        return PermissionResultDeny(message=USER_REJECTED)

    project, scenario = prepare(case, root, http.url if http else "")
    home = root / "home"
    (home / ".claude").mkdir(parents=True)
    server = ScriptedServer(scenario, root / "requests.jsonl")
    env = {**offline_cli_env(server, home), **user_prefix_env(case, root)}
    if case.teammate:
        env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"] = "1"  # a team member's process runs with agent teams on
    options = ClaudeAgentOptions(
        cwd=str(project), env=env, allowed_tools=list(case.allowed_tools), setting_sources=["project"],
        system_prompt={"type": "preset", "preset": "claude_code"}, session_id=str(uuid.uuid4()), cli_path=managed_cli(case, root),
        can_use_tool=refuse, extra_args=_cli_args(case),
        permission_mode=case.permission_mode,  # type: ignore[arg-type]
    )
    result: dict[str, Any] = {"stop_reason": None, "subtype": "no-result-record"}
    try:
        with anyio.fail_after(RUN_TIMEOUT_S):
            async with ClaudeSDKClient(options) as client:
                await _mcp_ready(case, project)
                if case.register_root:
                    await client._query._send_control_request(  # noqa: SLF001 - no SDK method for it
                        {"subtype": "register_repo_root", "directory": str(project / case.register_root)})
                for number, prompt in enumerate((case.prompt, *case.then)):
                    if number and case.pause_s:
                        await _pause(case, project)
                    await client.query(prompt)
                    async for message in client.receive_response():
                        if isinstance(message, ResultMessage):
                            result = {"stop_reason": message.stop_reason, "subtype": message.subtype,
                                      "is_error": message.is_error, "result": message.result}
                    _release(case, project, number)
                if case.settle_s:
                    await anyio.sleep(case.settle_s)
    finally:
        server.close()
    return _observe(project, root / "requests.jsonl", result)


SETTLE_BOUND_S = 30.0  # how long a run waits for hooks the golden saw, or that say they answered, before going on


async def _awhile(done: Callable[[], object]) -> None:
    """Poll `done` for up to SETTLE_BOUND_S; then go on either way (what is missing, the comparison names)."""
    with anyio.move_on_after(SETTLE_BOUND_S):
        while not done():
            await anyio.sleep(0.1)


async def _pause(case: Case, project: Path) -> None:
    """Before a further prompt: the case's pause, once every probe that says when it has answered (`answered`) has
    (a background hook that answers after the turn does so later on a loaded machine)."""
    marks = [_probe_dir(project) / how["answered"] for how in case.behaviours.values() if how.get("answered")]
    await _awhile(lambda: all(mark.exists() for mark in marks))
    await anyio.sleep(case.pause_s)


def _release(case: Case, project: Path, number: int) -> None:
    """After the first prompt's answer: the case's release file, which a `wait_for` probe waits on."""
    if number == 0 and case.release:
        (project / case.release).write_text("released\n")


@contextlib.contextmanager
def _http_probe(case: Case, root: Path) -> Iterator[HttpProbe | None]:
    """The case's HTTP probe, serving for the run and closed after it, however the run ends; None without one."""
    if not case.http:
        yield None
        return
    with HttpProbe(root / "project" / ".claude" / "hooks") as probe:
        yield probe


def _cli_args(case: Case) -> dict[str, str | None]:
    args: dict[str, str | None] = {case.setup: None} if case.setup else {}
    if case.teammate:
        name, team = case.teammate
        args.update({"agent-id": f"{name}@{team}", "agent-name": name, "team-name": team})
    return args


async def _mcp_ready(case: Case, project: Path) -> None:
    """With the MCP probe: wait until the session's CLI has listed its tools (tests/conformance/mcp_probe.py)."""
    if case.mcp:
        from tests.waiting import until

        await until((_probe_dir(project) / "mcp-ready").exists, 60, "the MCP probe connected")


def _cli_result(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") == "result":
            return {"stop_reason": record.get("stop_reason"), "subtype": record.get("subtype"),
                    "is_error": record.get("is_error"), "result": record.get("result"),
                    "terminal_reason": record.get("terminal_reason")}
    return {"stop_reason": None, "subtype": "no-result-record"}


async def run_sidecar(case: Case, root: Path, golden: dict[str, Any] | None = None) -> Observation:
    """Ours: the same project through `python -m sidecar` (built-in hooks off, so both run the same hooks).

    `golden`: the case's recording. A case that settles (hooks the CLI starts after the answer) first waits until
    as many hook calls as the golden's have been made, then settles as the reference did: a loaded machine starts
    those hooks later, not otherwise."""
    expected_calls = len((golden or {}).get("hook_calls") or ())
    with _http_probe(case, root) as http:
        return await _run_sidecar(case, root, http, expected_calls)


async def _run_sidecar(case: Case, root: Path, http: HttpProbe | None, expected_calls: int) -> Observation:
    from frontend_stub.client import SidecarClient
    from hooks.builtin import builtin_registry
    from ipc.errors import RpcError

    project, scenario = prepare(case, root, http.url if http else "")
    data = root / "orion-data"
    user_settings = root / "orion-user.json"
    builtin_names = sorted({h.name for h in builtin_registry(data_dir=data)})
    user_settings.write_text(json.dumps({"disabledHooks": builtin_names}))
    log_dir = root / "sidecar-requests"
    # The reference CLI reads the project's settings only (setting_sources=["project"]): the sidecar must not add the
    # machine's own Claude Code user hooks (the claude-user source) to what it runs.
    env = {**os.environ, "ORION_DATA_DIR": str(data), "ORION_USER_SETTINGS": str(user_settings),
           "ORION_CLAUDE_USER_SETTINGS": str(root / "no-claude-user-settings.json"),
           "ORION_SCRIPTED_LOG_DIR": str(log_dir), "HOME": str(root / "home"), **user_prefix_env(case, root),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    (root / "home").mkdir(exist_ok=True)
    result: dict[str, Any]

    async def on_request(method: str, params: Any) -> dict[str, Any]:
        if case.permission_delay_s:
            await anyio.sleep(case.permission_delay_s)
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    # CONFORMANCE_ECHO=1 shows the sidecar's log (a case that fails inside the sidecar says why there)
    echo = bool(os.environ.get("CONFORMANCE_ECHO"))
    async with SidecarClient.launch(sidecar_launcher(case, root), env=env, cwd=str(REPO), on_request=on_request,
                                    echo_stderr=echo) as client:
        with anyio.fail_after(RUN_TIMEOUT_S):
            await client.request("hooks/trust", {"projectDir": str(project)})
            created = await client.request("session/new", {
                "projectDir": str(project), "model": f"scripted:{scenario}", "allowedTools": list(case.allowed_tools),
                # the reference CLI runs unsandboxed: compare hooks, not the sandbox's own prompt text
                "sandbox": "off", **({"setup": case.setup} if case.setup else {}),
                **({"teammate": dict(zip(("name", "team"), case.teammate))} if case.teammate else {}),
                **({"permissionMode": case.permission_mode} if case.permission_mode else {})})
            sid = created["sessionId"]
            await _mcp_ready(case, project)
            if case.register_root:
                await client.request("session/registerRoot", {"sessionId": sid,
                                                              "directory": str(project / case.register_root)})
            for number, prompt in enumerate((case.prompt, *case.then)):
                if number and case.pause_s:
                    await _pause(case, project)
                try:
                    answer = await client.request("session/prompt", {"sessionId": sid, "prompt": prompt},
                                                  timeout=RUN_TIMEOUT_S)
                    result = {"stop_reason": answer.get("stopReason"), "result": answer.get("resultText")}
                except RpcError as exc:
                    result = {"stop_reason": None, "error": exc.message}
                _release(case, project, number)
            if case.settle_s:
                await _awhile(lambda: len(_probe_calls(project)) >= expected_calls)
                await anyio.sleep(case.settle_s)
            await client.request("session/end", {"sessionId": sid})
    return _observe(project, log_dir / f"{scenario.stem}.jsonl", result)


# --------------------------------------------------------------------------- observing


def _judge_request(body: dict[str, Any]) -> bool:
    from tests.conformance.cases import JUDGE_MARK

    first = next((m for m in body.get("messages") or [] if m.get("role") == "user"), None)
    return first is not None and JUDGE_MARK in json.dumps(first.get("content"))


def _probe_dir(project: Path) -> Path:
    """Where the probe, its log and its marks live in a case's project."""
    return project / ".claude" / "hooks"


def _probe_calls(project: Path) -> list[dict[str, Any]]:
    """The probe's record of every hook call so far (tests/conformance/probe.py)."""
    log = _probe_dir(project) / "probe.log.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def _observe(project: Path, request_log: Path, result: dict[str, Any]) -> Observation:
    calls = _probe_calls(project)
    requests = []
    if request_log.exists():
        for line in request_log.read_text().splitlines():
            record = json.loads(line)
            body = record.get("body") or {}
            # main-loop requests only: side requests (titles) and an agent hook's own conversation (its first
            # question carries the judge's mark) are the implementation's business; what the model reads after is not
            if body.get("tools") and not _judge_request(body):
                requests.append(body.get("messages") or [])
    files = sorted(str(p.relative_to(project)) for p in project.rglob("*")
                   if p.is_file() and ".claude" not in p.relative_to(project).parts)
    return Observation(hook_calls=calls, requests=requests, result=result, files=files)


# --------------------------------------------------------------------------- normalising


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TOOLU = re.compile(r"toolu_[A-Za-z0-9_]+")
_SUBAGENT_DURATION = re.compile(r"duration_ms: \d+")  # in a subagent's hand-back to the model
_AGENT_ID = re.compile(r"\ba[0-9a-f]{16}\b")  # a subagent's id (agent_id, agentId: in its tool result)
_TRANSCRIPTS = re.compile(r"<ROOT>/[^\"\\ ]*?/\.claude/projects/[^/\"\\ ]+/")
# An agent team's files, under the CLI's config dir (the same two places): named in a teammate's system prompt.
_TEAMS = re.compile(r"<ROOT>/(?:home|orion-data/cli-home/<UUID>)/\.claude/teams/")
_HTTP_PROBE = re.compile(r"http://127\.0\.0\.1:\d+/")  # the HTTP probe's address, a free port per run
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b")
# Claude Code's system prompt names the day: goldens recorded yesterday must still compare today.
TODAY = re.compile(r"Today's date is \d{4}-\d{2}-\d{2}\.")
TODAY_TOKEN = "Today's date is <DATE>."
# ...and the kernel it runs on ("OS Version: Linux 6.18.44-fc-v782"): goldens recorded on another machine must compare.
OS_VERSION = re.compile(r"OS Version: [^\\\"]*")
OS_TOKEN = "OS Version: <OS>"


def machine_neutral(text: str) -> str:
    """A JSON text with the day and the machine's kernel version replaced, as in the goldens' comparison."""
    return OS_VERSION.sub(OS_TOKEN, TODAY.sub(TODAY_TOKEN, text))


def normalise(obs: dict[str, Any], root: Path) -> dict[str, Any]:
    """Replace what must differ between two runs: paths under the case's root, ids, durations, timestamps, the date."""
    text = json.dumps(obs, sort_keys=True)
    project = root / "project"
    for path, token in ((str(project.resolve()), "<PROJECT>"), (str(project), "<PROJECT>"),
                         (str(root.resolve()), "<ROOT>"), (str(root), "<ROOT>"), (sys.executable, "<PYTHON>")):
        text = text.replace(path, token)
    ids: dict[str, str] = {}
    text = _TOOLU.sub(lambda m: ids.setdefault(m.group(0), f"toolu_{len(ids)}"), text)
    text = _UUID.sub("<UUID>", text)
    text = _AGENT_ID.sub("<AGENT_ID>", text)
    text = _SUBAGENT_DURATION.sub("duration_ms: <N>", text)
    # The CLI's transcripts live under its config dir: the test's home for the bare CLI, Orion's per-session one.
    text = _TRANSCRIPTS.sub("<TRANSCRIPTS>/", text)
    text = _TEAMS.sub("<CLAUDE_CONFIG_DIR>/teams/", text)
    text = _HTTP_PROBE.sub("http://127.0.0.1:<PORT>/", text)
    text = machine_neutral(text)
    data = json.loads(text)
    for call in data["hook_calls"]:
        stdin = call.get("stdin") or {}
        for key in ("duration_ms", "session_id", "transcript_path", "prompt_id"):
            if key in stdin:
                stdin[key] = f"<{key}>" if stdin[key] else stdin[key]
        env = call.get("env") or {}
        for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_ENV_FILE"):
            if key in env:
                env[key] = f"<{key}>"
    data["hook_calls"].sort(key=lambda c: (c.get("stdin", {}).get("hook_event_name", ""), c.get("tag", "")))
    return data
