"""A frontend that misbehaves, against the real sidecar and CLI: it stops reading, vanishes mid-turn, calls ended sessions, answers permission asks late or twice."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from frontend_stub.client import SidecarClient
from ipc.errors import RemoteError
from ipc.protocol import PROTOCOL_VERSION
from tests.waiting import running

ROOT = Path(__file__).resolve().parents[2]
F_GETPIPE_SZ = 1032  # fcntl.F_GETPIPE_SZ (Linux), absent from the fcntl module before Python 3.12
WAIT_S = 60.0


def sidecar_env(**overrides: str) -> dict[str, str]:
    """The test's isolated HOME/ORION_* (tests/conftest.py), the checkout importable, no API key."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **overrides)
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def write_scenario(path: Path, scenario: dict[str, Any]) -> str:
    path.write_text(json.dumps(scenario))
    return f"scripted:{path}"


def make_project(root: Path, hooks: dict[str, Any] | None = None) -> Path:
    project = root / "project"
    (project / ".claude").mkdir(parents=True)
    (project / "README.md").write_text("A project.\n")
    if hooks is not None:
        (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return project


class RawSidecar:
    """`python -m sidecar` on raw pipes: the test decides when (and whether) stdout is read."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sidecar"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True)
        self._buf = b""
        self._ids = 0
        self.events: list[dict[str, Any]] = []
        self.answers: dict[Any, dict[str, Any]] = {}
        self.stderr = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._ids

    def pump(self, timeout: float) -> bool:
        """Read what stdout has within `timeout` s into events/answers; False once stdout is closed."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        fd, efd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        ready, _, _ = select.select([fd, efd], [], [], timeout)
        if efd in ready:
            self.stderr = (self.stderr + os.read(efd, 1 << 16))[-200_000:]
        if fd not in ready:
            return True
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return False
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "method" in message and "id" not in message:
                self.events.append(message)
            elif "method" in message:
                self.on_request(message)
            else:
                self.answers[message["id"]] = message
        return True

    def on_request(self, message: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})

    def wait_answer(self, request_id: int, timeout: float = WAIT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while request_id not in self.answers:
            if time.monotonic() > deadline or not self.pump(0.2):
                raise AssertionError(f"no answer to request {request_id}; stderr:\n{self.stderr_text()}")
        return self.answers[request_id]

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = WAIT_S) -> Any:
        answer = self.wait_answer(self.request(method, params), timeout)
        assert "result" in answer, answer
        return answer["result"]

    def initialize(self) -> None:
        self.call("initialize", {"protocolVersion": PROTOCOL_VERSION, "clientInfo": {"name": "misbehaving", "version": "0"}})

    def pipe_backlog(self) -> tuple[int, int]:
        """(bytes waiting unread in the sidecar's stdout pipe, the pipe's capacity)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        waiting = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
        return int.from_bytes(waiting, sys.byteorder), fcntl.fcntl(fd, F_GETPIPE_SZ)

    def pipe_full(self) -> bool:
        """The sidecar can write no more: the unread backlog is large and has stopped growing.

        Not `waiting > capacity - PIPE_BUF`: a write that does not fit in the last page starts a new one, so how
        much of the capacity a full pipe holds depends on how the writer batches its lines (CI saw one that never
        crossed that line). A backlog that stays put for two seconds while the model keeps streaming is the
        writer blocked, whatever the batching (half a second was once a stall of a loaded machine's CLI).
        """
        waiting, capacity = self.pipe_backlog()
        if waiting < capacity // 2:
            return False
        for _ in range(20):
            time.sleep(0.1)
            if self.pipe_backlog()[0] != waiting:
                return False
        return True

    def stderr_text(self) -> str:
        return self.stderr.decode(errors="replace")[-6000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait(10)


@pytest.fixture
def raw_sidecars() -> Iterator[list[RawSidecar]]:
    started: list[RawSidecar] = []
    yield started
    for sidecar in started:
        sidecar.kill()


def wait_for(predicate: Any, timeout: float, what: str, sidecar: RawSidecar | None = None) -> None:
    """Poll a condition another process makes true (a file appearing, a pipe filling), within a deadline."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f"; stderr:\n{sidecar.stderr_text()}" if sidecar else ""))
        if sidecar is not None:
            sidecar.pump(0.05)
        else:
            time.sleep(0.05)


def command_line(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


# --------------------------------------------------------------------------- the frontend disappears mid-turn


def test_frontend_vanishing_mid_turn_ends_the_session_and_every_process(tmp_path: Path, raw_sidecars: list[RawSidecar]) -> None:
    marker = tmp_path / "project" / "session-end-ran"  # in the project: its hooks run in the session's hook box
    project = make_project(tmp_path, {
        "SessionEnd": [{"hooks": [{"type": "command", "name": "end-marker", "command": f"echo \"$PPID\" > {marker}"}]}],
        # A background hook still running when the frontend goes: it must not outlive the sidecar either.
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "name": "slow-audit", "command": "sleep 120",
                                                     "async": True, "timeout": 300}]}],
    })
    tool_started = project / "tool-started"  # inside the project: the agent's Bash is sandboxed to it
    model = write_scenario(tmp_path / "long-tool.json", {
        "turns": [[{"tool_use": {"name": "Bash", "input": {"command": f"touch {tool_started}; sleep 120", "timeout": 600000}}}],
                  "Done."],
    })
    sidecar = RawSidecar(sidecar_env())
    raw_sidecars.append(sidecar)
    sidecar.initialize()
    sidecar.call("hooks/trust", {"projectDir": str(project)})
    session = sidecar.call("session/new", {"projectDir": str(project), "model": model, "allowedTools": ["Bash"]})
    sidecar.request("session/prompt", {"sessionId": session["sessionId"], "prompt": "run it"})
    wait_for(tool_started.exists, WAIT_S, "the Bash tool to start", sidecar)
    seen: list[psutil.Process] = []

    def sleepers_running() -> bool:
        # The tool's shell forks its `sleep 120` a moment after `touch`, and the background hook starts in its own box:
        # both are processes another program starts, so they are waited for, not caught in one snapshot.
        nonlocal seen
        seen = descendants(sidecar.pid)
        commands = [" ".join(command_line(p)) for p in seen]
        return any("sleep 120" in c and "touch" not in c for c in commands) and len(seen) >= 3

    wait_for(sleepers_running, WAIT_S, "the tool's and the background hook's `sleep 120` (the CLI, the tool's shell, "
             "the background hook)", sidecar)

    # The frontend is gone: both ends of its pipes close at once, nobody answers anything anymore.
    assert sidecar.proc.stdin is not None and sidecar.proc.stdout is not None
    sidecar.proc.stdin.close()
    sidecar.proc.stdout.close()
    vanished = time.monotonic()
    # It exits by itself (its shutdown budget is 5 s; how long it took is printed, not asserted: a loaded machine
    # stretches it): a sidecar still there after 30 s is one that would have stayed.
    try:
        sidecar.proc.wait(30.0)
        print(f"sidecar exited {time.monotonic() - vanished:.2f} s after its frontend vanished")
    except subprocess.TimeoutExpired:
        sidecar.proc.kill()
        sidecar.proc.wait(10.0)
        rest = sidecar.proc.stderr.read().decode(errors="replace")[-6000:]  # type: ignore[union-attr]
        pytest.fail(f"the sidecar did not exit within 30 s of its frontend vanishing; stderr:\n{rest}")
    assert marker.exists(), "SessionEnd hooks did not run"
    deadline = time.monotonic() + 10.0  # the kernel ends what was killed a moment after the kill
    while (left := [p for p in seen if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"left behind: {[(p.pid, command_line(p)) for p in left]}"


# --------------------------------------------------------------------------- the frontend stops reading


def test_a_frontend_that_stops_reading_loses_nothing_and_the_sidecar_stays_bounded(tmp_path: Path,
                                                                                  raw_sidecars: list[RawSidecar]) -> None:
    count = 30_000
    text = "".join(f"{i:06d} " for i in range(count))  # one numbered 7-character chunk per event: order is checkable
    model = write_scenario(tmp_path / "chatty.json", {"text_chunk": 7, "turns": [text]})
    project = make_project(tmp_path)
    sidecar = RawSidecar(sidecar_env())
    raw_sidecars.append(sidecar)
    sidecar.initialize()
    session = sidecar.call("session/new", {"projectDir": str(project), "model": model})
    prompt_id = sidecar.request("session/prompt", {"sessionId": session["sessionId"], "prompt": "talk"})

    # Stop reading. Once the pipe to us is full the sidecar can write nothing more; it must hold back, not hoard.
    wait_for(sidecar.pipe_full, WAIT_S, "the sidecar's stdout pipe to fill")
    stalled_backlog = sidecar.pipe_backlog()[0]
    print(f"stalled with {stalled_backlog} of {sidecar.pipe_backlog()[1]} bytes unread")
    process = psutil.Process(sidecar.pid)
    stalled_rss = process.memory_info().rss
    samples = []
    for _ in range(40):  # the frontend stays stalled for ~2 s while the model keeps streaming
        samples.append(process.memory_info().rss)
        time.sleep(0.05)
    assert sidecar.pipe_backlog()[0] == stalled_backlog, "the backlog moved during the stall: the writer was not held"
    growth_mb = (max(samples) - stalled_rss) / 2**20
    print(f"RSS at stall {stalled_rss / 2**20:.1f} MiB, growth during the stall {growth_mb:.1f} MiB")
    assert growth_mb < 16, f"the sidecar's memory grew {growth_mb:.1f} MiB while the frontend was not reading"

    # Read again: every event arrives, in order, and the turn completes.
    result = sidecar.wait_answer(prompt_id, timeout=120)
    assert result.get("result", {}).get("stopReason") == "end_turn", result
    chunks = [e["params"]["update"]["text"] for e in sidecar.events
              if e["method"] == "session/update" and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == text, f"{len(chunks)} chunks arrived; text differs from what the model sent"
    print(f"{len(sidecar.events)} events after the stall, {len(chunks)} text chunks")


# --------------------------------------------------------------------------- calls for an ended session


@pytest.mark.asyncio
async def test_requests_for_an_ended_session_get_a_clear_session_ended_error(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    model = write_scenario(tmp_path / "short.json", {"turns": ["Hello."]})
    with anyio.fail_after(WAIT_S):
        async with SidecarClient.launch(env=sidecar_env(), cwd=ROOT) as client:
            session = await client.request("session/new", {"projectDir": str(project), "model": model})
            sid = session["sessionId"]
            await client.request("session/end", {"sessionId": sid, "reason": "logout"})
            for method, params in [
                ("session/prompt", {"sessionId": sid, "prompt": "are you there?"}),
                ("session/cancel", {"sessionId": sid}),
                ("session/end", {"sessionId": sid}),
                ("hooks/list", {"sessionId": sid}),
                ("hooks/test", {"sessionId": sid, "event": "Stop"}),
            ]:
                with pytest.raises(RemoteError) as caught:
                    await client.request(method, params)
                assert caught.value.code == -31001, (method, caught.value)
                assert caught.value.data == {"sessionId": sid, "state": "ended"}, (method, caught.value.data)
                assert "ended" in caught.value.message
            listed = {s["sessionId"]: s["state"] for s in (await client.request("session/list"))["sessions"]}
            assert listed[sid] == "ended"
            await client.ping()


# --------------------------------------------------------------------------- permission answers late or twice


def write_turn_scenario(tmp_path: Path, target: Path) -> str:
    # Write, not Bash: the built-in env-isolation hook answers "allow" for every Bash command it rewrites.
    return write_scenario(tmp_path / "ask.json", {
        "turns": [[{"tool_use": {"name": "Write", "input": {"file_path": str(target), "content": "permitted-output\n"}}}],
                  "Finished."],
    })


def tool_updates(events: list[Any]) -> list[dict[str, Any]]:
    return [e.params["update"] for e in events
            if e.name == "session/update" and e.params["update"]["sessionUpdate"] == "tool_call_update"]


# The sidecar numbers its own requests from 1 (docs/PROTOCOL.md); the only one in these sessions is the ask.
FIRST_SIDECAR_REQUEST_ID = 1


@pytest.mark.asyncio
async def test_a_permission_answer_after_the_timeout_is_denied_and_the_late_answer_ignored(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    target = project / "made.txt"
    asked = anyio.Event()
    withdrawn = anyio.Event()

    async def never_in_time(method: str, params: Any) -> dict[str, Any]:
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()  # the sidecar gave up and sent $/cancelRequest
        raise AssertionError("unreachable")

    with anyio.fail_after(WAIT_S):
        async with SidecarClient.launch(env=sidecar_env(ORION_PERMISSION_TIMEOUT="1"), cwd=ROOT, on_request=never_in_time) as client:
            session = await client.request("session/new", {"projectDir": str(project), "model": write_turn_scenario(tmp_path, target)})
            start = len(client.history)
            result = await client.request("session/prompt", {"sessionId": session["sessionId"], "prompt": "run it"})
            assert asked.is_set() and withdrawn.is_set()
            [update] = tool_updates(list(client.history)[start:])
            assert update["status"] == "denied"
            assert "did not answer within 1 seconds" in update["output"], update
            assert not target.exists()
            assert result["stopReason"] == "end_turn"

            await client.send_line(json.dumps({"jsonrpc": "2.0", "id": FIRST_SIDECAR_REQUEST_ID,
                                               "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}))
            await client.ping()
            assert not client.unmatched, list(client.unmatched)  # the late answer drew no error back
            assert client.returncode is None


@pytest.mark.asyncio
async def test_a_permission_answered_twice_keeps_the_first_answer(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    target = project / "made.txt"
    box: list[SidecarClient] = []
    asks: list[str] = []

    async def answer_twice(method: str, params: Any) -> dict[str, Any]:
        asks.append(method)
        # First answer (allow) goes out raw; the handler's own return (reject) follows as the second answer.
        await box[0].send_line(json.dumps({"jsonrpc": "2.0", "id": FIRST_SIDECAR_REQUEST_ID,
                                           "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}))
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    with anyio.fail_after(WAIT_S):
        async with SidecarClient.launch(env=sidecar_env(), cwd=ROOT, on_request=answer_twice) as client:
            box.append(client)
            session = await client.request("session/new", {"projectDir": str(project), "model": write_turn_scenario(tmp_path, target)})
            start = len(client.history)
            result = await client.request("session/prompt", {"sessionId": session["sessionId"], "prompt": "run it"})
            assert asks == ["session/request_permission"]
            [update] = tool_updates(list(client.history)[start:])
            assert update["status"] == "completed", update
            assert target.read_text() == "permitted-output\n"
            assert result["stopReason"] == "end_turn"
            await client.ping()
            assert not client.unmatched, list(client.unmatched)
            assert client.returncode is None


# --------------------------------------------------------------------------- an impatient client


def test_a_client_that_never_waits_is_refused_past_the_limit_and_the_sidecar_stays_bounded(
        tmp_path: Path, raw_sidecars: list[RawSidecar]) -> None:
    """A client that sends requests without waiting for answers (a bug, a script): past 256 being served, each new
    one is answered ServerBusy at once, with the limit; everything gets an answer, what was accepted completes, the
    sidecar's memory stays bounded, and once the answers are in, requests are served again."""
    from ipc.errors import SERVER_BUSY

    project = make_project(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        # long enough that none of the first 256 has ended while the rest arrive, on a loaded machine too
        {"type": "command", "name": "slow", "command": "sleep 10", "timeout": 30}]}]})
    sidecar = RawSidecar(sidecar_env())
    raw_sidecars.append(sidecar)
    sidecar.initialize()
    sidecar.call("hooks/trust", {"projectDir": str(project)})
    rss_before = psutil.Process(sidecar.pid).memory_info().rss
    sent = [sidecar.request("hooks/test", {"projectDir": str(project), "event": "PreToolUse", "hookName": "slow",
                                           "payload": {"tool_name": "Bash", "tool_input": {"command": "ls"}}})
            for _ in range(600)]
    deadline = time.monotonic() + 120
    while not all(i in sidecar.answers for i in sent):
        assert time.monotonic() < deadline and sidecar.pump(0.2), sidecar.stderr_text()
    answers = [sidecar.answers[i] for i in sent]
    busy = [a for a in answers if "error" in a and a["error"]["code"] == SERVER_BUSY]
    served = [a for a in answers if "result" in a]
    assert len(busy) + len(served) == len(sent), [a for a in answers if a not in busy and a not in served][:3]
    assert 256 <= len(served) < len(sent) and busy, (len(served), len(busy))
    assert busy[0]["error"]["data"]["limit"] == 256 and "wait for their answers" in busy[0]["error"]["message"]
    assert psutil.Process(sidecar.pid).memory_info().rss - rss_before < 200 * 1024 * 1024
    assert sidecar.call("ping", {}) is not None  # served again once the answers are in
