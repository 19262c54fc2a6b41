"""OpenTelemetry traces of a real session (`python -m sidecar` over ACP, the real CLI, the scripted model), exported
over OTLP/HTTP to a local receiver that decodes them with the official `opentelemetry-proto`: the span tree (session
under the client's traceparent, turn, model requests, tool calls, hooks under their tool call, a permission round
trip), hook attributes (deny, timeout), redaction, tracking rows carrying the span ids; and who may switch it on."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.tracing.otlp_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.cli, pytest.mark.timeout(240)]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
FAKE_KEY = "sk-ant-api03-" + "Zq8" * 12  # a key-shaped secret in a hook's reason: must not reach the trace


class AcpDriver:
    """`python -m sidecar` on raw pipes, ACP dialect; permission requests answered allow_once."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "sidecar"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.ids = 0
        self.buffer = b""
        self.asked: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []  # Orion's events, for a client that opted in
        self.stderr = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any], timeout: float = 90) -> Any:
        self.ids += 1
        ident = self.ids
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None and self.proc.stderr is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout, self.proc.stderr], [], [], 0.5)
            if self.proc.stderr in ready:
                self.stderr += os.read(self.proc.stderr.fileno(), 65536)
            if self.proc.stdout not in ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            assert chunk, f"the sidecar exited; stderr:\n{self.stderr.decode(errors='replace')[-3000:]}"
            self.buffer += chunk
            *lines, self.buffer = self.buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message.get("method") == "session/request_permission" and "id" in message:
                    self.asked.append(message["params"])
                    self.send({"jsonrpc": "2.0", "id": message["id"],
                               "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
                elif str(message.get("method", "")).startswith("_orion/"):
                    self.notes.append(message)
                elif message.get("id") == ident and "method" not in message:
                    assert "result" in message, message
                    return message["result"]
        raise AssertionError(f"no answer to {method}; stderr:\n{self.stderr.decode(errors='replace')[-3000:]}")

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("the sidecar did not exit within 30 s of its stdin closing") from None
        finally:
            self.stderr += self.proc.stderr.read()


def make_project(tmp: Path) -> Path:
    project = tmp / "project"
    (project / ".claude").mkdir(parents=True)
    gate = (f"if grep -q forbidden; then echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PreToolUse\", "
            f"\"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"no: token {FAKE_KEY}\"}}}}'; fi")
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "name": "bash-gate", "command": gate}]},
        {"matcher": "Write", "hooks": [{"type": "command", "name": "slow-gate", "command": "sleep 5", "timeout": 1}]},
    ]}}))
    return project


def run_session(tmp: Path, env: dict[str, str], project: Path, events: bool = False) -> AcpDriver:
    scenario = tmp / "turns.json"
    scenario.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "Write", "input": {"file_path": str(project / ".env"), "content": "X=1\n"}}}],
        [{"tool_use": {"name": "Bash", "input": {"command": "echo forbidden"}}}],
        [{"tool_use": {"name": "Bash", "input": {"command": "echo fine > fine.txt"}}}],
        [{"tool_use": {"name": "Write", "input": {"file_path": str(project / "notes.txt"), "content": "n\n"}}}],
        "Done.",
    ]}))
    driver = AcpDriver(env)
    driver.call("initialize", {"protocolVersion": 1,
                               "clientCapabilities": {"_meta": {"orion": {"events": True}}} if events else {}})
    driver.call("_orion/hooks/trust", {"projectDir": str(project)})
    session = driver.call("session/new", {"cwd": str(project), "mcpServers": [], "_meta": {
        "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        "orion": {"model": f"scripted:{scenario}", "allowedTools": ["Bash"]}}})
    result = driver.call("session/prompt", {"sessionId": session["sessionId"],
                                            "prompt": [{"type": "text", "text": "Go."}]})
    assert result["stopReason"] == "end_turn", result
    driver.call("_orion/session/end", {"sessionId": session["sessionId"]})
    driver.session_id = session["sessionId"]  # type: ignore[attr-defined]
    driver.close()
    return driver


@pytest.fixture
def receiver() -> Any:
    started = Receiver().start()
    yield started
    started.stop()


def test_a_session_traced_over_otlp_http(tmp_path: Path, receiver: Receiver) -> None:
    project = make_project(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
               OTEL_SERVICE_NAME="orion-under-test", OTEL_BSP_SCHEDULE_DELAY="100")
    env.pop("ANTHROPIC_API_KEY", None)
    driver = run_session(tmp_path, env, project)
    spans = receiver.spans
    by_id = {s.span_id: s for s in spans}
    names = [s.name for s in spans]
    assert {s.service for s in spans} == {"orion-under-test"}

    [session] = [s for s in spans if s.name == "orion.session"]
    # The client's traceparent is the session's parent: the app's own trace continues into the agent.
    assert session.trace_id == TRACE_ID and session.parent_id == PARENT_ID
    assert all(s.trace_id == TRACE_ID for s in spans), {s.name for s in spans if s.trace_id != TRACE_ID}
    assert session.attributes["orion.session.end_reason"] == "other"
    [turn] = [s for s in spans if s.name == "orion.turn"]
    assert turn.parent_id == session.span_id and turn.attributes["orion.stop_reason"] == "end_turn"
    models = [s for s in spans if s.name == "orion.model_request"]
    assert len(models) == 5 and all(m.parent_id == turn.span_id for m in models), names
    assert all(m.attributes.get("gen_ai.usage.output_tokens", 0) > 0 for m in models)

    tools = {s.span_id: s for s in spans if s.name.startswith("orion.tool ")}
    assert sorted(s.attributes["orion.tool.name"] for s in tools.values()) == ["Bash", "Bash", "Write", "Write"]
    assert all(s.parent_id == turn.span_id for s in tools.values())

    def hooks(name: str) -> list[Any]:
        return [s for s in spans if s.name == f"orion.hook {name}"]

    def tool_of(span: Any) -> Any:
        return tools[span.parent_id]

    # The guard's deny, under the .env Write it stopped.
    [deny] = [s for s in hooks("protection") if s.attributes.get("orion.hook.decision") == "deny"]
    assert tool_of(deny).attributes["orion.tool.name"] == "Write"
    assert tool_of(deny).attributes["orion.tool.status"] == "failed"
    assert deny.attributes["orion.hook.outcome"] == "blocked" and deny.attributes["orion.hook.source"] == "builtin"
    assert ".env" in deny.attributes["orion.hook.reason"]
    # The timeout: fail-open, an error status, timed_out.
    timeouts = hooks("slow-gate")  # on both Writes
    assert len(timeouts) == 2 and all(t.attributes["orion.hook.timed_out"] is True for t in timeouts)
    assert all(t.status_code == 2 and t.attributes["orion.hook.outcome"] == "timeout" for t in timeouts)
    assert {tool_of(t).span_id for t in timeouts} == {s.span_id for s in tools.values()
                                                      if s.attributes["orion.tool.name"] == "Write"}
    # The project hook's deny with a key-shaped token in its reason: redacted in the trace as everywhere.
    gate_denies = [s for s in hooks("bash-gate") if s.attributes.get("orion.hook.decision") == "deny"]
    assert len(gate_denies) == 1 and len(hooks("bash-gate")) == 2
    assert FAKE_KEY not in json.dumps([s.attributes for s in spans]) and "no: token" in gate_denies[0].attributes["orion.hook.reason"]
    assert gate_denies[0].attributes["orion.hook.exit_code"] == 0 and gate_denies[0].attributes["orion.hook.type"] == "command"
    # The permission round trip for the notes.txt Write (not allowed up front), under its tool call.
    [permission] = [s for s in spans if s.name == "orion.permission"]
    assert permission.attributes["orion.permission.outcome"] == "allow"
    assert tool_of(permission).attributes["orion.tool.name"] == "Write" and len(driver.asked) == 1
    # Turn-level hooks (UserPromptSubmit) hang under the turn, SessionStart's under the session.
    assert any(s.parent_id == turn.span_id for s in spans if s.attributes.get("orion.hook.event") == "UserPromptSubmit")
    assert all(by_id[s.parent_id].name == "orion.session"
               for s in spans if s.attributes.get("orion.hook.event") == "SessionStart")

    # The tracking rows carry the ids of their hook's span: a row in the inspector links to its trace.
    rows = [json.loads(line) for line in (Path(os.environ["ORION_DATA_DIR"]) / "sessions" / driver.session_id
                                          / "events.jsonl").read_text().splitlines()]
    hook_spans = {s.span_id: s for s in spans if s.name.startswith("orion.hook ")}
    assert rows and all(r.get("traceId") == TRACE_ID for r in rows)
    assert all(hook_spans[r["spanId"]].attributes["orion.hook.name"] == r["name"] for r in rows)


def test_a_project_cannot_switch_tracing_on(tmp_path: Path, receiver: Receiver) -> None:
    """A cloned project names an endpoint every way it could: its settings' env, an Orion-looking `tracing` key, and
    its local settings. The sidecar's own environment has no OTEL variables: nothing may arrive."""
    project = make_project(tmp_path)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    settings["env"] = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "ORION_TRACING": "1",
                       "OTEL_TRACES_EXPORTER": "otlp"}
    settings["tracing"] = {"enabled": True, "endpoint": receiver.endpoint}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"tracing": {"enabled": True, "endpoint": receiver.endpoint}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "ORION_TRACING"}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("ANTHROPIC_API_KEY", None)
    run_session(tmp_path, env, project)
    time.sleep(0.5)
    assert receiver.requests == 0 and receiver.spans == []


def test_the_users_own_settings_switch_it_on(tmp_path: Path, receiver: Receiver) -> None:
    """The user's Orion settings (not the environment) name the endpoint: the session is traced."""
    Path(os.environ["ORION_USER_SETTINGS"]).parent.mkdir(parents=True, exist_ok=True)
    Path(os.environ["ORION_USER_SETTINGS"]).write_text(json.dumps({"tracing": {"enabled": True, "endpoint": receiver.endpoint,
                                                                              "serviceName": "orion-user-set"}}))
    project = make_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "ORION_TRACING"}
    env.update(PYTHONPATH=str(ROOT), OTEL_BSP_SCHEDULE_DELAY="100")
    env.pop("ANTHROPIC_API_KEY", None)
    run_session(tmp_path, env, project)
    assert any(s.name == "orion.session" for s in receiver.spans)
    assert {s.service for s in receiver.spans} == {"orion-user-set"}


def test_a_session_traced_over_otlp_grpc(tmp_path: Path) -> None:
    """OTLP over gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`, the `tracing-grpc` extra) to a real grpcio server serving
    the official TraceService: the same tree arrives."""
    from tests.tracing.otlp_receiver import GrpcReceiver

    receiver = GrpcReceiver().start()
    try:
        project = make_project(tmp_path)
        env = dict(os.environ, PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                   OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_SERVICE_NAME="orion-over-grpc", OTEL_BSP_SCHEDULE_DELAY="100")
        env.pop("ANTHROPIC_API_KEY", None)
        run_session(tmp_path, env, project)
    finally:
        receiver.stop()
    spans = receiver.spans
    [session] = [s for s in spans if s.name == "orion.session"]
    assert session.trace_id == TRACE_ID and session.parent_id == PARENT_ID
    assert {s.service for s in spans} == {"orion-over-grpc"} and receiver.requests >= 1
    [turn] = [s for s in spans if s.name == "orion.turn"]
    tools = [s for s in spans if s.name.startswith("orion.tool ")]
    assert len(tools) == 4 and all(t.parent_id == turn.span_id for t in tools)
    assert any(s.name == "orion.hook protection" and s.attributes.get("orion.hook.decision") == "deny" for s in spans)


def test_an_unreachable_collector_is_reported_once_and_the_session_goes_on(tmp_path: Path) -> None:
    """The endpoint refuses connections: the session runs to its end, the client hears it once (a `log` warning
    naming the setting), stderr says it once with no exporter traceback or per-batch lines, and the sidecar exits
    when its stdin closes instead of retrying into the void."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    project = make_project(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
               OTEL_BSP_SCHEDULE_DELAY="100")
    env.pop("ANTHROPIC_API_KEY", None)
    driver = run_session(tmp_path, env, project, events=True)  # asserts end_turn, closes, waits for the exit
    reports = [n["params"] for n in driver.notes if n["method"] == "_orion/log"
               and "tracing:" in n["params"].get("message", "")]
    assert len(reports) == 1, (reports, driver.stderr.decode(errors="replace")[-3000:])
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in reports[0]["message"] and f"127.0.0.1:{port}" in reports[0]["message"]
    assert reports[0]["level"] == "warning"
    stderr = driver.stderr.decode(errors="replace")
    assert stderr.count("tracing: spans cannot be sent") == 1, stderr[-3000:]
    assert "Traceback" not in stderr and "Failed to export" not in stderr, stderr[-3000:]
