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


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


# --------------------------------------------------------------------------- the frontend disappears mid-turn


def test_frontend_vanishing_mid_turn_ends_the_session_and_every_process(tmp_path: Path, raw_sidecars: list[RawSidecar]) -> None:
    marker = tmp_path / "session-end-ran"
    tool_started = tmp_path / "tool-started"
    project = make_project(tmp_path, {
        "SessionEnd": [{"hooks": [{"type": "command", "name": "end-marker", "command": f"echo \"$PPID\" > {marker}"}]}],
        # A background hook still running when the frontend goes: it must not outlive the sidecar either.
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "name": "slow-audit", "command": "sleep 120",
                                                     "async": True, "timeout": 300}]}],
    })
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
    seen = descendants(sidecar.pid)
    commands = [" ".join(p.cmdline()) for p in seen if p.is_running()]
    assert any("sleep 120" in c and "touch" not in c for c in commands), commands  # the hook or the tool
    assert len(seen) >= 3, commands  # the CLI, the tool's shell, the background hook

    # The frontend is gone: both ends of its pipes close at once, nobody answers anything anymore.
    assert sidecar.proc.stdin is not None and sidecar.proc.stdout is not None
    sidecar.proc.stdin.close()
    sidecar.proc.stdout.close()
    vanished = time.monotonic()
    try:
        sidecar.proc.wait(3.0)
        print(f"sidecar exited {time.monotonic() - vanished:.2f} s after its frontend vanished")
    except subprocess.TimeoutExpired:
        sidecar.proc.wait(30.0)
        took = time.monotonic() - vanished
        rest = sidecar.proc.stderr.read().decode(errors="replace")[-6000:]  # type: ignore[union-attr]
        pytest.fail(f"the sidecar took {took:.1f} s (over 3 s) to exit after its frontend vanished; stderr:\n{rest}")
    assert marker.exists(), "SessionEnd hooks did not run"
    _, alive = psutil.wait_procs(seen, timeout=5.0)
    assert not alive, f"left behind: {[(p.pid, p.cmdline()) for p in alive if p.is_running()]}"
