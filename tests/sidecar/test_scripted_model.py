"""The scripted model: scenario parsing errors, the SSE event sequence, and the server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sidecar.scripted_model import (
    ScenarioError,
    ScriptedModelServer,
    get_or_start,
    load_scenario,
    parse_scenario,
    shared_server,
)
from sidecar.scripted_model.scenario import Usage
from sidecar.scripted_model.server import conversation_key
from sidecar.scripted_model.sse import encode_sse, resolve_tool_ids, stream_events

REPO = Path(__file__).resolve().parents[2]
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


# --------------------------------------------------------------------------- scenario parsing


def test_bad_block_error_names_file_and_path(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("turns:\n  - - text: ok\n  - - tool_use: {input: {command: ls}}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    message = str(info.value)
    assert str(bad) in message
    assert "turns[1].content[0].tool_use.name" in message


def test_unknown_key_and_bad_regex_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text(
        "rules:\n"
        "  - when: {last_user_matches: '(unclosed'}\n    reply: x\n"
        "  - when: {last_usr_contains: typo}\n    reply: x\n"
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    message = str(info.value)
    assert "rules[0].when.last_user_matches" in message and "invalid regular expression" in message
    # The unknown key is not repeated (it is the file's content), but the key it resembles is named.
    assert "rules[1].when.<unknown key>: unknown key (did you mean 'last_user_contains'?)" in message


def test_invalid_yaml_and_missing_file_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "syntax.yaml"
    bad.write_text("turns: [\n")
    with pytest.raises(ScenarioError, match="syntax.yaml: not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="nope.yaml"):
        load_scenario(tmp_path / "nope.yaml")


def test_shorthands_and_stop_reason_inference() -> None:
    scenario = parse_scenario(
        {
            "turns": [
                "just text",
                ["a", {"tool_use": {"name": "Bash", "input": {"command": "ls"}}}],
                {"content": ["cut short"], "stop_reason": "max_tokens", "usage": {"output_tokens": 99}},
            ]
        }
    )
    assert [t.effective_stop_reason() for t in scenario.turns] == ["end_turn", "tool_use", "max_tokens"]
    assert scenario.turns[0].content[0].text == "just text"
    assert scenario.turns[2].usage is not None and scenario.turns[2].usage.output_tokens == 99


def test_example_scenarios_all_load() -> None:
    files = sorted((REPO / "examples" / "scenarios").glob("*.yaml"))
    assert {f.stem for f in files} >= {"basic", "tools", "evaluator", "demo"}
    for file in files:
        assert load_scenario(file).name == file.stem


# --------------------------------------------------------------------------- SSE encoding


def test_stream_events_follow_the_documented_sequence() -> None:
    reply = parse_scenario({"turns": [["Hello there, world", {"tool_use": {"name": "Bash", "input": {"command": "ls -la"}, "id": "toolu_1"}}]]}).turns[0]
    blocks = resolve_tool_ids(reply)
    events = list(stream_events(blocks, stop_reason="tool_use", usage=Usage(output_tokens=7), model="m", text_chunk=5))
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1:6] == ["content_block_start"] + ["content_block_delta"] * 4  # "Hello there, world" in 5-char chunks
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta" and d["index"] == 0)
    assert text == "Hello there, world"
    tool_start = next(d for n, d in events if n == "content_block_start" and d["index"] == 1)
    assert tool_start["content_block"] == {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 1)
    assert json.loads(partial) == {"command": "ls -la"}
    assert names.count("content_block_stop") == 2
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use" and events[-2][1]["usage"]["output_tokens"] == 7
    # every data line is the event's own type, as the real API sends it
    assert all(data["type"] == name for name, data in events)
    assert encode_sse("message_stop", {"type": "message_stop"}) == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def test_thinking_block_streams_thinking_then_signature() -> None:
    blocks = resolve_tool_ids(parse_scenario({"turns": [[{"thinking": "hmm, let me see"}]]}).turns[0])
    deltas = [d["delta"]["type"] for n, d in stream_events(blocks, stop_reason="end_turn", usage=Usage(), model="m", text_chunk=4) if n == "content_block_delta"]
    assert deltas == ["thinking_delta"] * 4 + ["signature_delta"]


def test_generated_tool_ids_are_unique() -> None:
    reply = parse_scenario({"turns": [[{"tool_use": {"name": "Bash"}}, {"tool_use": {"name": "Bash"}}]]}).turns[0]
    ids = [b["id"] for b in resolve_tool_ids(reply)] + [b["id"] for b in resolve_tool_ids(reply)]
    assert len(set(ids)) == 4 and all(i.startswith("toolu_") for i in ids)


# --------------------------------------------------------------------------- the server over HTTP


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def streamed_text(text: str) -> str:
    return "".join(
        d["delta"].get("text", "") for n, d in parse_sse(text) if n == "content_block_delta"
    )


def request(user: str | list[dict[str, Any]], *, tools: bool = True, session: str | None = "s1", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "claude-x", "stream": True, "messages": [{"role": "user", "content": user}], **extra}
    if tools:
        body["tools"] = TOOLS
    if session:
        body["metadata"] = {"user_id": json.dumps({"device_id": "d", "session_id": session})}
    return body


SCENARIO = {
    "turns": ["turn zero", "turn one"],
    "default": "no more",
    "side_reply": "A title",
    "rules": [
        {"name": "danger", "when": {"last_user_contains": "rm -rf"}, "reply": '{"ok": false, "reason": "destructive"}'},
        {"name": "first-error", "once": True, "when": {"tool_result_is_error": True}, "reply": "I see an error"},
    ],
}


@pytest.mark.asyncio
async def test_server_answers_turns_rules_side_and_default_in_order() -> None:
    server = ScriptedModelServer(parse_scenario(SCENARIO))
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            post = lambda body: http.post("/v1/messages?beta=true", json=body)  # noqa: E731
            assert streamed_text((await post(request("hello"))).text) == "turn zero"
            assert streamed_text((await post(request("please rm -rf /"))).text) == '{"ok": false, "reason": "destructive"}'
            assert streamed_text((await post(request("title?", tools=False))).text) == "A title"
            error_result = [{"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}]
            assert streamed_text((await post(request(error_result))).text) == "I see an error"
            assert streamed_text((await post(request(error_result))).text) == "turn one"  # the once-rule is spent
            assert streamed_text((await post(request("more"))).text) == "no more"
    assert [r.answered_by for r in server.requests] == [
        "turn:0", "rule:danger", "side_reply", "rule:first-error", "turn:1", "default"
    ]
    assert [r.has_tools for r in server.main_requests()] == [True] * 5
    assert server.requests[0].body is not None and server.requests[0].body["messages"][0]["content"] == "hello"


@pytest.mark.asyncio
async def test_conversations_keep_their_own_turn_position() -> None:
    server = ScriptedModelServer(parse_scenario(SCENARIO))
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            a1 = await http.post("/v1/messages", json=request("hi", session="A"))
            b1 = await http.post("/v1/messages", json=request("hi", session="B"))
            a2 = await http.post("/v1/messages", json=request("again", session="A"))
    assert [streamed_text(r.text) for r in (a1, b1, a2)] == ["turn zero", "turn zero", "turn one"]


@pytest.mark.asyncio
async def test_request_log_keeps_only_the_newest_when_bounded() -> None:
    server = ScriptedModelServer(parse_scenario(SCENARIO), keep=2)
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            for word in ("one", "two", "three", "four"):
                await http.post("/v1/messages", json=request(word, session=word))
    assert [r.body["messages"][0]["content"] for r in server.requests] == ["three", "four"]
    assert [r.index for r in server.requests] == [2, 3]


def test_conversation_key_prefers_the_cli_session_id() -> None:
    body = request("x", session="from-metadata")
    assert conversation_key(body, {"x-claude-code-session-id": "from-header"}) == "session:from-header"
    assert conversation_key(body, {}) == "session:from-metadata"
    anonymous = request("same first message", session=None)
    assert conversation_key(anonymous, {}) == conversation_key(anonymous, {}) != conversation_key(request("other", session=None), {})


@pytest.mark.asyncio
async def test_non_streaming_count_tokens_404_and_bad_json(tmp_path: Path) -> None:
    log_file = tmp_path / "requests.jsonl"
    server = ScriptedModelServer(parse_scenario(SCENARIO), log_path=log_file)
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            plain = await http.post("/v1/messages", json={**request("is rm -rf ok?", tools=False), "stream": False})
            counted = await http.post("/v1/messages/count_tokens?beta=true", json=request("hi"))
            missing = await http.get("/v1/models")
            garbage = await http.post("/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
    assert plain.json()["content"] == [{"type": "text", "text": '{"ok": false, "reason": "destructive"}'}]
    assert plain.json()["stop_reason"] == "end_turn"
    assert counted.json()["input_tokens"] > 0
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    assert garbage.status_code == 400
    logged = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [entry["answered_by"] for entry in logged] == ["rule:danger", "count_tokens", "error", "error"]


@pytest.mark.asyncio
async def test_streaming_usage_and_stop_reason_come_from_the_scenario() -> None:
    scenario = parse_scenario(
        {"text_chunk": 3, "turns": [{"content": ["truncated answer"], "stop_reason": "max_tokens", "usage": {"input_tokens": 123, "output_tokens": 45}}]}
    )
    async with ScriptedModelServer(scenario).running() as url, httpx.AsyncClient(base_url=url) as http:
        with anyio.fail_after(10):
            events = parse_sse((await http.post("/v1/messages", json=request("go"))).text)
    assert events[0][1]["message"]["usage"]["input_tokens"] == 123
    assert events[-2][1] == {"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": None}, "usage": {"output_tokens": 45}}
    assert len([e for e in events if e[0] == "content_block_delta"]) == 6  # 16 chars, 3 per delta


@pytest.mark.asyncio
async def test_wait_for_requests_wakes_on_arrival_and_times_out() -> None:
    server = ScriptedModelServer(parse_scenario(SCENARIO))
    async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def waiter() -> None:
                    found = await server.wait_for_requests(2, timeout=5)
                    assert len(found) == 2
                tg.start_soon(waiter)
                await http.post("/v1/messages", json=request("one"))
                await http.post("/v1/messages", json=request("two", tools=False))
            assert len(await server.wait_for_requests(1, timeout=5, main_only=True)) == 1
        with pytest.raises(TimeoutError):
            await server.wait_for_requests(2, timeout=0.05, main_only=True)


def test_get_or_start_shares_one_server_per_scenario(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text("turns: [shared]\n")
    url = get_or_start(path)
    assert get_or_start(str(path)) == url
    response = httpx.post(url + "/v1/messages", json=request("hi"), timeout=5)
    assert streamed_text(response.text) == "shared"
    server = shared_server(path)
    assert server is not None and [r.answered_by for r in server.requests] == ["turn:0"]


def test_command_line_prints_the_url_and_serves(tmp_path: Path) -> None:
    path = tmp_path / "cli.yaml"
    path.write_text("turns: [from the command line]\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sidecar.scripted_model", str(path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        response = httpx.post(url + "/v1/messages", json=request("hi"), timeout=5)
        assert streamed_text(response.text) == "from the command line"
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_command_line_rejects_a_bad_scenario(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("turns: [[{tool_use: {}}]]\n")
    done = subprocess.run(
        [sys.executable, "-m", "sidecar.scripted_model", str(path)], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2 and "bad.yaml" in done.stderr and done.stdout == ""


def test_command_line_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cli.yaml"
    path.write_text("turns: [never served]\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "sidecar.scripted_model", str(path), "--port", str(port)],
                              cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "address already in use" in done.stderr and "--port" in done.stderr


@pytest.mark.asyncio
async def test_an_error_reply_answers_with_the_apis_error_status_and_body() -> None:
    scenario = parse_scenario({"turns": [{"error": {"status": 529, "type": "overloaded_error", "message": "busy"}}, "ok"]})
    server = ScriptedModelServer(scenario)
    with anyio.fail_after(10):
        async with server.running() as url, httpx.AsyncClient(base_url=url) as http:
            failed = await http.post("/v1/messages", json=request("hi"))
            then = await http.post("/v1/messages", json=request("again"))
    assert failed.status_code == 529
    assert failed.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    assert streamed_text(then.text) == "ok"
    assert server.requests[0].error == {"status": 529, "type": "overloaded_error", "message": "busy"}
    with pytest.raises(ScenarioError, match="either content or an error"):
        parse_scenario({"turns": [{"content": ["x"], "error": {"status": 400}}]})
    with pytest.raises(ScenarioError, match="at least one block"):
        parse_scenario({"turns": [{"content": []}]})
