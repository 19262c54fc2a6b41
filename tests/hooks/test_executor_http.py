"""http hooks against a real HTTP server on 127.0.0.1: decisions, errors, timeouts, caps, header expansion."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from hooks.executors.http import HttpExecutor, expand_header
from hooks.types import HookCall, HookContext, SessionContext

PAYLOAD = {
    "session_id": "s-1",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf /"},
    "tool_use_id": "toolu_1",
}

# --------------------------------------------------------------------------- a tiny real server


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HookServer:
    url: str
    received: list[Received] = field(default_factory=list)
    huge_sent: int = 0
    huge_aborted: asyncio.Event = field(default_factory=asyncio.Event)
    slow_released: asyncio.Event = field(default_factory=asyncio.Event)


Route = Callable[[HookServer, asyncio.StreamWriter], Awaitable[None]]


def _reply(writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str = "application/json") -> None:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode() + body)


async def _allow(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 200, json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}).encode())


async def _deny(server: HookServer, writer: asyncio.StreamWriter) -> None:
    body = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "policy server says no rm -rf",
        }
    }
    _reply(writer, 200, json.dumps(body).encode())


async def _slow(server: HookServer, writer: asyncio.StreamWriter) -> None:
    # Never answers on its own; the test releases it after the hook has given up.
    await server.slow_released.wait()
    _reply(writer, 200, b"{}")


async def _error(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 500, b"internal trouble", "text/plain")


async def _garbage(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 200, b'{"decision": "block", "reason": unquoted garbage\x00\xff')


async def _plain(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 200, b"remember to run the linter\n", "text/plain")


async def _empty(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 204, b"")


async def _echo(server: HookServer, writer: asyncio.StreamWriter) -> None:
    _reply(writer, 200, b"")


HUGE = 50 * 1024 * 1024


async def _huge(server: HookServer, writer: asyncio.StreamWriter) -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n"
    writer.write(head.encode() + b'{"reason": "')
    chunk = b"x" * 65536
    try:
        while server.huge_sent < HUGE:
            writer.write(chunk)
            await writer.drain()
            server.huge_sent += len(chunk)
    except (ConnectionError, OSError):
        server.huge_aborted.set()


ROUTES: dict[str, Route] = {
    "/allow": _allow,
    "/deny": _deny,
    "/slow": _slow,
    "/error": _error,
    "/garbage": _garbage,
    "/plain": _plain,
    "/empty": _empty,
    "/echo": _echo,
    "/huge": _huge,
}


@asynccontextmanager
async def hook_server() -> AsyncIterator[HookServer]:
    server_state = HookServer(url="")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await reader.readline()).decode()
            method, path, _ = request_line.split(" ", 2)
            headers: dict[str, str] = {}
            while (line := (await reader.readline()).decode().strip()):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            server_state.received.append(Received(method, path, headers, body))
            await ROUTES[path](server_state, writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server_state.url = f"http://127.0.0.1:{port}"
    try:
        yield server_state
    finally:
        server_state.slow_released.set()
        server.close()


# --------------------------------------------------------------------------- calls


def make_call(config: dict[str, Any], *, timeout_s: float = 5.0, event: str = "PreToolUse") -> HookCall:
    hook = SimpleNamespace(
        name="policy", id="user:PreToolUse:0", fail_closed=bool(config.get("failClosed")), source="user",
        config=SimpleNamespace(**{"type": "http", "headers": None, "allowedEnvVars": None, "timeout": None, **config}),
    )
    session = SessionContext(session_id="s-1", project_dir=Path.cwd())
    context = HookContext(
        session=session, event=event, hook_name="policy", execution_id="e-1", tool_use_id="toolu_1",
        deadline=0.0, log=logging.getLogger("test"),
    )

    async def progress(stream: str, line: str) -> None:
        return None

    return HookCall(hook=hook, event=event, payload=PAYLOAD, context=context, timeout_s=timeout_s, progress=progress)


@asynccontextmanager
async def executor(**kwargs: Any) -> AsyncIterator[HttpExecutor]:
    ex = HttpExecutor(**kwargs)
    try:
        yield ex
    finally:
        await ex.aclose()


# --------------------------------------------------------------------------- tests


@pytest.mark.asyncio
async def test_allow_reply_is_parsed_and_payload_is_posted_as_json() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/allow"}))
    assert report.status == "ok"
    assert report.output is not None and report.output.hookSpecificOutput.permissionDecision == "allow"
    [request] = server.received
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == PAYLOAD


@pytest.mark.asyncio
async def test_deny_reply_carries_the_reason() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/deny"}))
    assert report.status == "ok"
    specific = report.output.hookSpecificOutput
    assert specific.permissionDecision == "deny"
    assert specific.permissionDecisionReason == "policy server says no rm -rf"


@pytest.mark.asyncio
async def test_slow_server_past_the_timeout_is_a_timeout_not_a_hang() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/slow"}, timeout_s=0.3))
            assert not server.slow_released.is_set()
    assert report.status == "timeout"
    assert "0.3 s" in report.error
    assert report.output is None and not report.blocking_error


@pytest.mark.asyncio
async def test_server_error_is_a_non_blocking_error_with_the_status() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/error"}))
    assert report.status == "error"
    assert "HTTP 500" in report.error and "internal trouble" in report.error
    assert not report.blocking_error and report.output is None


@pytest.mark.asyncio
async def test_garbage_json_body_is_an_error_not_a_decision() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/garbage"}))
    assert report.status == "error"
    assert "invalid JSON" in report.error
    assert report.output is None and not report.blocking_error


@pytest.mark.asyncio
async def test_a_plain_text_reply_is_a_hook_error_and_an_empty_one_an_empty_answer() -> None:
    """Claude Code 2.1.330 takes only JSON from an http hook: plain words never become context (conformance case
    http_hook_plain_body); an empty body is an empty answer."""
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            plain = await ex.run(make_call({"url": f"{server.url}/plain"}))
            empty = await ex.run(make_call({"url": f"{server.url}/empty"}))
    assert (plain.status, plain.output, plain.text) == ("error", None, None)
    assert "must return JSON" in plain.error and "remember to run the linter" in plain.error
    assert (empty.status, empty.output, empty.text) == ("ok", None, None)


@pytest.mark.asyncio
async def test_fifty_megabyte_body_is_cut_off_at_the_cap() -> None:
    with anyio.fail_after(30):
        async with hook_server() as server, executor(max_body_bytes=1024 * 1024) as ex:
            report = await ex.run(make_call({"url": f"{server.url}/huge"}, timeout_s=20))
            await server.huge_aborted.wait()
    assert report.status == "error"
    assert "cap" in report.error
    # The server saw the connection drop long before it could push all 50 MB.
    assert server.huge_sent < HUGE // 2
    assert len(report.stdout) == 0


@pytest.mark.asyncio
async def test_connection_refused_is_a_non_blocking_error() -> None:
    async with hook_server() as server:
        dead_url = f"{server.url}/allow"
    with anyio.fail_after(10):
        async with executor() as ex:
            report = await ex.run(make_call({"url": dead_url}))
    assert report.status == "error"
    assert "ConnectError" in report.error


@pytest.mark.asyncio
async def test_headers_expand_only_allowlisted_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_TOKEN", "t0ken")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    config = {
        "headers": {
            "Authorization": "Bearer $POLICY_TOKEN",
            "X-Braced": "${POLICY_TOKEN}-suffix",
            "X-Secret": "[$AWS_SECRET_ACCESS_KEY][${AWS_SECRET_ACCESS_KEY}]",
        },
        "allowedEnvVars": ["POLICY_TOKEN"],
    }
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/echo", **config}))
    assert report.status == "ok"
    [request] = server.received
    assert request.headers["authorization"] == "Bearer t0ken"
    assert request.headers["x-braced"] == "t0ken-suffix"
    assert request.headers["x-secret"] == "[][]"
    assert "do-not-leak" not in json.dumps(request.headers)


def test_expand_header_leaves_text_without_references_alone() -> None:
    assert expand_header("plain value, 5$ fee", frozenset(), {}) == "plain value, 5$ fee"
    assert expand_header("$A$B", frozenset({"A", "B"}), {"A": "1"}) == "1"


@pytest.mark.asyncio
async def test_one_shared_client_serves_concurrent_hooks() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            reports: list[str] = []

            async def one(path: str) -> None:
                reports.append((await ex.run(make_call({"url": f"{server.url}{path}"}))).status)

            async with anyio.create_task_group() as tg:
                for path in ("/allow", "/deny", "/error", "/plain"):
                    tg.start_soon(one, path)
    assert sorted(reports) == ["error", "error", "ok", "ok"]  # /error, and /plain (not JSON)
    assert len(server.received) == 4


# --------------------------------------------------------------------------- load-time policy


def write_settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_urls_outside_allowed_http_hook_urls_are_refused_at_load(tmp_path: Path) -> None:
    from hooks.hookset import load_hookset

    project = tmp_path / "project"
    write_settings(
        project / ".claude" / "settings.json",
        {
            "allowedHttpHookUrls": ["http://127.0.0.1:*/policy/*"],
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [
                            {"type": "http", "name": "inside", "url": "http://127.0.0.1:8123/policy/check"},
                            {"type": "http", "name": "outside", "url": "https://evil.example.com/collect"},
                        ],
                    }
                ]
            },
        },
    )
    hookset = load_hookset(project)
    by_name = {entry["name"]: entry for entry in hookset.to_listing()}
    assert by_name["outside"]["state"] == "invalid"
    assert "allowedHttpHookUrls" in by_name["outside"]["reason"]
    assert by_name["inside"]["state"] != "invalid"
    assert any("evil.example.com" in warning for warning in hookset.warnings)


# --------------------------------------------------------------------------- through the runner


@pytest.mark.asyncio
async def test_runner_enforces_http_deny_and_fails_open_on_errors_unless_fail_closed(tmp_path: Path) -> None:
    from hooks.executors.remote import default_llm_executors
    from tests.hooks.support import Project, Recorder, running, session, settings

    project = Project((tmp_path / "proj").resolve())
    with anyio.fail_after(20):
        async with hook_server() as server:
            project.settings(settings(
                "PreToolUse",
                {"type": "http", "name": "broken", "url": f"{server.url}/error"},
                {"type": "http", "name": "policy", "url": f"{server.url}/deny"},
                {"type": "http", "name": "strict-slow", "url": f"{server.url}/slow", "timeout": 0.3, "failClosed": True},
                matcher="Bash",
            ))
            project.trust()
            recorder = Recorder()
            async with running(project.load(), recorder, executors=default_llm_executors(None)) as runner:
                denied = await runner.fire("PreToolUse", dict(PAYLOAD), session(project))
                project.settings(settings(
                    "PreToolUse",
                    {"type": "http", "name": "broken", "url": f"{server.url}/error"},
                    {"type": "http", "name": "strict-slow", "url": f"{server.url}/slow", "timeout": 0.3, "failClosed": True},
                    matcher="Bash",
                ))
                project.trust()
                runner.reload()
                closed = await runner.fire("PreToolUse", dict(PAYLOAD), session(project))
    assert denied.decision == "deny" and denied.reason == "policy server says no rm -rf"
    outcomes = {r.hook_name: r.outcome for r in recorder.responses()}
    assert outcomes["broken"] == "error"
    assert closed.decision == "deny"
    assert "strict-slow" in closed.reason
    assert [r.outcome for r in closed.results] == ["error", "timeout"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("path", "cause"), [("/error", "HTTP 500 from {url}/error"),
                                             ("/plain", "HTTP hook must return JSON")])
async def test_on_failure_block_blocks_with_the_clis_words(path: str, cause: str) -> None:
    """`onFailure: "block"`: a failed call blocks in Claude Code 2.1.330's words (conformance cases
    http_hook_error_blocks, http_hook_unreachable_blocks); the server's body stays out of them."""
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}{path}", "onFailure": "block"}))
    assert report.status == "ok" and report.blocking_error and report.exit_code == 2
    assert report.stderr == (f'[{server.url}{path}]: failed; blocking because onFailure is "block"\n'
                             + cause.format(url=server.url))


@pytest.mark.asyncio
async def test_on_failure_block_withholds_the_cause_of_a_url_that_carries_a_secret() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            url = server.url.replace("http://", "http://user:hunter2@") + "/error?token=s3cret"
            report = await ex.run(make_call({"url": url, "onFailure": "block"}))
    assert report.blocking_error
    assert "hunter2" not in report.stderr and "s3cret" not in report.stderr
    assert report.stderr.startswith(f"[{server.url}/error]: failed;") and "details are hidden" in report.stderr


@pytest.mark.asyncio
async def test_on_failure_block_is_ignored_where_the_cli_ignores_it() -> None:
    with anyio.fail_after(10):
        async with hook_server() as server, executor() as ex:
            report = await ex.run(make_call({"url": f"{server.url}/error", "onFailure": "block"}, event="Stop"))
    assert report.status == "error" and not report.blocking_error
