"""Full sessions through the official ACP Python SDK as the client: what an editor speaking ACP sees of the sidecar.

Everything runs for real: `python -m sidecar`, the bundled Claude Code CLI, the project's hooks, the scripted model.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError, image_block, resource_link_block, text_block
from acp.schema import McpServerStdio

from tests.acp.conftest import RecordingClient, acp_sidecar, model, project
from tests.waiting import until

pytestmark = [pytest.mark.asyncio, pytest.mark.cli, pytest.mark.slow]

# A 1×1 PNG: the smallest image the Messages API accepts.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2b2e1b80000000049454e44ae426082"
)).decode()


def model_requests(tmp_path: Path, scenario: str) -> list[dict[str, Any]]:
    path = tmp_path / "model-requests" / f"{scenario}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hook_calls(project_dir: Path) -> list[dict[str, Any]]:
    path = project_dir / ".e2e" / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def trust(conn: Any, project_dir: Path) -> None:
    # The SDK's ext_method adds ACP's leading underscore: "orion/hooks/trust" goes out as "_orion/hooks/trust".
    answer = await conn.ext_method("orion/hooks/trust", {"projectDir": str(project_dir)})
    assert answer["trusted"] is True


async def first_tool_call(client: RecordingClient, within_s: float = 60.0) -> None:
    """Until the running turn's first tool call has reached the client (the turn is then busy with it)."""
    with anyio.fail_after(within_s):
        while not client.of_kind("tool_call"):
            await anyio.sleep(0.05)


async def one_session(client: RecordingClient, tmp_path: Path, project_dir: Path, scenario: str, *prompts: str,
                      events: bool = True, **orion: Any) -> list[Any]:
    """Launch, trust the project, start a session on `scenario` (`orion`: more `_meta.orion` options), run the
    prompts in order; returns their answers. The sidecar is gone when it returns."""
    async with acp_sidecar(client, tmp_path, events=events) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model(scenario), **orion})
        return [await conn.prompt(session_id=session.session_id, prompt=[text_block(text)]) for text in prompts]


async def test_handshake_answers_with_acp_version_capabilities_and_auth_methods(tmp_path: Path, sdk_errors: list) -> None:
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        assert init.protocol_version == 1
        assert init.agent_info.name == "orion-sidecar"
        caps = init.agent_capabilities
        assert caps.load_session is True
        assert caps.prompt_capabilities.image is True and caps.prompt_capabilities.embedded_context is True
        assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is True
        assert {m.id for m in init.auth_methods} == {"claude", "scripted"}
        orion = init.field_meta["orion"]
        assert "_orion/hooks/list" in orion["methods"] and "_orion/hook_response" in orion["events"]
        # ACP's own session methods are not offered a second time in Orion's first shape.
        assert "_orion/session/new" not in orion["methods"]
        await conn.authenticate(method_id="scripted")
        with pytest.raises(RequestError) as unknown:
            await conn.authenticate(method_id="nope")
        assert unknown.value.code == -32602
    assert not sdk_errors


async def test_a_plain_client_reaches_the_offline_model_through_the_scripted_auth_method(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    """A client that cannot put Orion's `_meta` in session/new (most can't) picks the advertised `scripted` method
    and gets sessions on the offline model; before, the method answered {} and session/new said "no credential"."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    project_dir = project(tmp_path)
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path, events=False) as (conn, init):
        [scripted] = [m for m in init.auth_methods if m.id == "scripted"]
        assert "scripted:basic" in (scripted.description or "")
        with pytest.raises(RequestError) as refused:  # no credential, no scripted model chosen: as before
            await conn.new_session(cwd=str(project_dir), mcp_servers=[])
        assert refused.value.code == -32000
        await conn.authenticate(method_id="scripted")
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[])
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello?")])
        assert session.field_meta["orion"]["model"] == "scripted:basic"
    assert result.stop_reason == "end_turn"
    said = "".join(u["content"]["text"] for u in client.of_kind("agent_message_chunk"))
    assert said.startswith("Hello! I am the scripted model.")


async def test_an_unsupported_version_is_answered_with_ours(tmp_path: Path) -> None:
    async with acp_sidecar(RecordingClient(), tmp_path, version=7) as (conn, init):
        assert init.protocol_version == 1


async def test_authenticate_without_credentials_is_acps_auth_required_naming_what_to_set(tmp_path: Path, monkeypatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        with pytest.raises(RequestError) as refused:
            await conn.authenticate(method_id="claude")
        assert refused.value.code == -32000
        assert "ANTHROPIC_API_KEY" in str(refused.value)


async def test_a_session_with_hooks_an_ask_a_hook_deny_and_orion_events(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("ask")})
        sid = session.session_id
        assert session.modes.current_mode_id == "default"
        assert session.field_meta["orion"]["hooks"]["untrusted"] == 0
        result = await conn.prompt(session_id=sid, prompt=[text_block("run the probe")])
    assert result.stop_reason == "end_turn"
    assert result.field_meta["orion"]["terminalReason"] == "completed"

    # The hook's ask reached the client as ACP's permission request, with the tool call and the hook's reason.
    [asked] = client.permission_requests
    call = asked["toolCall"]
    assert call["kind"] == "execute" and call["status"] == "pending"
    assert call["title"] == "touch asked-marker # ask-user-probe"  # what the agent asked for, not env-isolation's prefix
    assert call["rawInput"]["command"].endswith("touch asked-marker # ask-user-probe")
    assert "E2E-ASK" in call["content"][0]["content"]["text"]
    assert {o["optionId"] for o in asked["options"]} >= {"allow_once", "reject_once"}
    assert (project_dir / "asked-marker").exists()

    # The tool call and its result as ACP updates, under one toolCallId.
    [started] = client.of_kind("tool_call")
    finished = [u for u in client.of_kind("tool_call_update") if u.get("status") == "completed"]
    assert finished and finished[0]["toolCallId"] == started["toolCallId"] == call["toolCallId"]
    assert "".join(u["content"]["text"] for u in client.of_kind("agent_message_chunk")) == "Done with the probe."
    assert "user_message_chunk" not in client.kinds()  # a live prompt is the client's own

    # Orion's events arrived as extensions: ordered per session, timestamped, tied to the tool call.
    hook_events = [(m, p) for m, p in client.extensions if m.startswith("_orion/hook_") or m.startswith("orion/hook_")]
    assert hook_events, client.extensions
    seqs = [p["seq"] for _, p in client.extensions if p.get("sessionId") == sid]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    gate = [p for m, p in hook_events if m.endswith("hook_response") and p["hookName"] == "e2e-bash-gate"]
    assert gate and gate[0]["toolCallId"] == call["toolCallId"] and gate[0]["timestamp"].endswith("Z")
    assert not sdk_errors


async def test_a_hook_deny_is_a_failed_tool_call_and_a_reject_stops_the_tool(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient()
    await one_session(client, tmp_path, project_dir, "deny", "make the marker")
    assert not (project_dir / "denied-marker").exists()
    [denied] = [u for u in client.of_kind("tool_call_update") if u.get("status") == "failed"]
    assert denied["_meta"]["orion"]["status"] == "denied"
    assert "E2E-DENY" in denied["content"][0]["content"]["text"]
    assert not client.permission_requests

    rejecting = RecordingClient(answer=lambda request: "reject_once")
    other = tmp_path / "second"
    other.mkdir()
    project_two = project(other)
    await one_session(rejecting, tmp_path, project_two, "ask", "run the probe")
    assert len(rejecting.permission_requests) == 1
    assert not (project_two / "asked-marker").exists()
    assert [u for u in rejecting.of_kind("tool_call_update") if u.get("status") == "failed"]
    assert not sdk_errors


async def test_a_prompt_a_hook_blocked_ends_the_turn_with_the_reason_shown(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient()
    [result] = await one_session(client, tmp_path, project_dir, "plain", "a forbidden-prompt")
    assert result.stop_reason == "end_turn" and result.field_meta["orion"]["stopReason"] == "blocked"
    [notice] = [u for u in client.of_kind("agent_message_chunk") if u.get("_meta", {}).get("orion", {}).get("notice")]
    assert "E2E-PROMPT-BLOCKED" in notice["content"]["text"]
    assert notice["_meta"]["orion"]["notice"] == {"level": "error", "source": "hook", "event": "UserPromptSubmit"}
    assert model_requests(tmp_path, "plain") == []  # the model never saw it
    assert not sdk_errors


async def test_a_plain_client_gets_no_orion_events_and_the_sdk_logs_no_error(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient(answer=lambda request: "allow_once")
    await one_session(client, tmp_path, project_dir, "ask", "run the probe", events=False)
    assert hook_calls(project_dir), "the project's hooks ran"
    assert client.extensions == []
    assert client.of_kind("tool_call")
    assert not sdk_errors, [r.getMessage() for r in sdk_errors]


async def test_images_resource_links_and_embedded_context_reach_claude(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        readme = project_dir / "README.md"
        readme.write_text("# hooked\n")
        from acp import embedded_text_resource, resource_block

        result = await conn.prompt(session_id=session.session_id, prompt=[
            text_block("What is in this picture and in the file?"),
            image_block(PNG, "image/png"),
            resource_link_block("README.md", readme.as_uri()),
            resource_block(embedded_text_resource("file:///unsaved/buffer.py", "print('unsaved edit')")),
        ])
        assert result.stop_reason == "end_turn"
        with pytest.raises(RequestError) as audio:
            await conn.prompt(session_id=session.session_id, prompt=[
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}])
        assert audio.value.code == -32602 and "audio" in str(audio.value)
    [request] = [r for r in model_requests(tmp_path, "plain") if r.get("kind", "main") == "main"][-1:]
    content = json.dumps(request)
    assert '"type": "image"' in content and PNG in content
    assert readme.as_uri() in content
    assert "print('unsaved edit')" in content and "file:///unsaved/buffer.py" in content


async def test_set_mode_and_the_model_picker_switch_what_the_cli_uses(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        modes = {m.id for m in session.modes.available_modes}
        assert {"default", "acceptEdits", "plan"} <= modes
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        with pytest.raises(RequestError) as bad:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert bad.value.code == -32602
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        assert [o.id for o in session.config_options] == ["mode", "model", "effort"]
        [picker] = [o for o in session.config_options if o.id == "model"]
        assert picker.category == "model"
        assert {"default", "sonnet", "opus", "haiku"} <= {o.value for o in picker.options}
        changed = await conn.set_config_option(config_id="model", session_id=session.session_id, value="opus")
        assert {o.id: o.current_value for o in changed.config_options} == {"mode": "plan", "model": "opus",
                                                                            "effort": "default"}
        # the reasoning effort (ACP's thought_level): the levels the CLI offers for the model, applied to its
        # next requests
        [effort] = [o for o in changed.config_options if o.id == "effort"]
        assert effort.category == "thought_level"
        assert [o.value for o in effort.options][:4] == ["default", "low", "medium", "high"]
        higher = await conn.set_config_option(config_id="effort", session_id=session.session_id, value="high")
        assert {o.id: o.current_value for o in higher.config_options}["effort"] == "high"
        with pytest.raises(RequestError) as bad_effort:
            await conn.set_config_option(config_id="effort", session_id=session.session_id, value="extreme")
        assert bad_effort.value.code == -32602 and "not offered" in str(bad_effort.value)
        # the mode is a config option too (some clients switch modes only that way); the CLI follows it
        by_option = await conn.set_config_option(config_id="mode", session_id=session.session_id, value="acceptEdits")
        assert {o.id: o.current_value for o in by_option.config_options}["mode"] == "acceptEdits"
        with pytest.raises(RequestError) as bad_mode:
            await conn.set_config_option(config_id="mode", session_id=session.session_id, value="yolo")
        assert bad_mode.value.code == -32602
        await conn.set_config_option(config_id="mode", session_id=session.session_id, value="plan")
        with pytest.raises(RequestError) as bad_option:
            await conn.set_config_option(config_id="temperature", session_id=session.session_id, value="hot")
        assert bad_option.value.code == -32602
        await conn.prompt(session_id=session.session_id, prompt=[text_block("and with opus?")])
    # The next turn asked the model the user picked, at the effort picked (the turn before the switch did not).
    requests = model_requests(tmp_path, "plain")
    assert "opus" in requests[-1]["body"]["model"]
    assert requests[-1]["body"]["output_config"]["effort"] == "high"
    assert [r["body"].get("output_config", {}).get("effort") for r in requests if r["body"].get("tools")][0] != "high"
    assert client.of_kind("current_mode_update")[0]["currentModeId"] == "plan"
    # The CLI now runs in plan mode: the hook inputs say so.
    prompt_calls = [c for c in hook_calls(project_dir) if c["event"] == "UserPromptSubmit"]
    assert prompt_calls
    assert not sdk_errors


async def test_load_restores_the_model_and_mode_the_user_picked_but_no_weakened_layer(tmp_path: Path,
                                                                                       sdk_errors: list) -> None:
    """A session loaded after a restart comes back with the model and the plan mode its user picked last; what
    would lower a layer (no sandbox, a mode that skips asking) is not taken from Orion's index file: the client asks
    for it again in session/load, or the session comes back with the safe default."""
    project_dir = project(tmp_path)
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        await trust(conn, project_dir)
        planned = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        await conn.set_session_mode(session_id=planned.session_id, mode_id="plan")
        await conn.set_config_option(config_id="model", session_id=planned.session_id, value="opus")
        await conn.set_config_option(config_id="effort", session_id=planned.session_id, value="low")
        await conn.prompt(session_id=planned.session_id, prompt=[text_block("plan something")])
        loose = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                       orion={"model": model("plain"), "sandbox": "off"})
        await conn.set_session_mode(session_id=loose.session_id, mode_id="acceptEdits")
        await conn.prompt(session_id=loose.session_id, prompt=[text_block("edit something")])
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        again = await conn.load_session(cwd=str(project_dir), session_id=planned.session_id, mcp_servers=[])
        assert again.modes.current_mode_id == "plan"
        assert {o.id: o.current_value for o in again.config_options} == {"mode": "plan", "model": "opus",
                                                                          "effort": "low"}
        await conn.prompt(session_id=planned.session_id, prompt=[text_block("and now?")])
        back = await conn.load_session(cwd=str(project_dir), session_id=loose.session_id, mcp_servers=[])
        assert back.modes.current_mode_id == "default"
        # as confined as a session that asked for nothing (the file's "off" is not taken)
        assert back.field_meta["orion"]["sandbox"]["enabled"] == planned.field_meta["orion"]["sandbox"]["enabled"]
    assert "opus" in model_requests(tmp_path, "plain")[-1]["body"]["model"]
    assert model_requests(tmp_path, "plain")[-1]["body"]["output_config"]["effort"] == "low"
    # the client asking again in session/load is what brings the weaker settings back
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        asked = await conn.load_session(cwd=str(project_dir), session_id=loose.session_id, mcp_servers=[],
                                        orion={"sandbox": "off", "permissionMode": "acceptEdits"})
        assert asked.modes.current_mode_id == "acceptEdits"
        assert asked.field_meta["orion"]["sandbox"]["enabled"] is False
        assert loose.field_meta["orion"]["sandbox"]["enabled"] is False
    assert not sdk_errors


async def test_cancel_mid_turn_answers_cancelled(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    client = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("cancel")})
        sid = session.session_id
        outcome: dict[str, Any] = {}

        async def run() -> None:
            outcome["result"] = await conn.prompt(session_id=sid, prompt=[text_block("wait a while")])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await first_tool_call(client)
            await anyio.sleep(0.5)
            await conn.cancel(session_id=sid)
        assert outcome["result"].stop_reason == "cancelled"
        # The session is usable again afterwards.
        again = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])
        assert again.stop_reason == "end_turn"
    # Loaded later, its history is what the user saw: their two prompts, not the CLI's "[Request interrupted by
    # user...]" record as if they had typed it.
    later = RecordingClient()
    async with acp_sidecar(later, tmp_path) as (conn, init):
        await conn.load_session(cwd=str(project_dir), session_id=sid, mcp_servers=[])
    said = [u["content"]["text"] for u in later.of_kind("user_message_chunk")]
    assert said == ["wait a while", "and now?"], said


async def test_a_listed_session_that_was_never_prompted_loads(tmp_path: Path, sdk_errors: list) -> None:
    """acpx and others list sessions and reload one: one the user opened and never prompted loads empty, under its
    id, and takes prompts (it answered -32002, "no conversation to resume")."""
    project_dir = project(tmp_path)
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        await trust(conn, project_dir)
        sid = (await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})).session_id
    later = RecordingClient()
    async with acp_sidecar(later, tmp_path) as (conn, init):
        assert sid in [s.session_id for s in (await conn.list_sessions(cwd=str(project_dir))).sessions]
        await conn.load_session(cwd=str(project_dir), session_id=sid, mcp_servers=[])
        assert not later.of_kind("user_message_chunk")  # nothing to replay
        result = await conn.prompt(session_id=sid, prompt=[text_block("first words at last")])
    assert result.stop_reason == "end_turn"
    assert any(u["content"]["text"] == "Plain answer." for u in later.of_kind("agent_message_chunk"))
    assert not sdk_errors


async def test_a_session_loads_after_a_restart_with_its_history_and_a_resume_start(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    first = RecordingClient()
    async with acp_sidecar(first, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=[text_block("remember the word lantern")])

    second = RecordingClient()
    async with acp_sidecar(second, tmp_path) as (conn, init):
        listed = await conn.list_sessions(cwd=str(project_dir))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "remember the word lantern"
        loaded = await conn.load_session(cwd=str(project_dir), session_id=sid, mcp_servers=[])
        assert loaded.modes.current_mode_id == "default"
        # The history arrived before the answer: the user's words and the agent's.
        assert ("user_message_chunk", "remember the word lantern") in [
            (u["sessionUpdate"], u["content"]["text"]) for _, u in second.updates if u["sessionUpdate"] == "user_message_chunk"]
        assert any(u["content"]["text"] == "Plain answer." for u in second.of_kind("agent_message_chunk"))
        before = len(second.updates)
        result = await conn.prompt(session_id=sid, prompt=[text_block("what was the word?")])
        assert result.stop_reason == "end_turn" and len(second.updates) > before
        with pytest.raises(RequestError) as missing:
            await conn.load_session(cwd=str(project_dir), session_id="0f0f0f0f-0000-4000-8000-000000000000", mcp_servers=[])
        assert missing.value.code == -32002
    # The resumed CLI conversation went on: the model was sent the first exchange again.
    last = [r for r in model_requests(tmp_path, "plain") if r.get("kind", "main") == "main"][-1]
    assert "remember the word lantern" in json.dumps(last)
    starts = [c for c in hook_calls(project_dir) if c["event"] == "SessionStart"]
    assert [c["source"] for c in starts] == ["startup", "resume"] and {c["session_id"] for c in starts} == {sid}
    assert not sdk_errors


async def test_an_mcp_server_from_the_client_reaches_the_agent(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    marker = project_dir / "mcp-calls.txt"  # the client's MCP server runs in the session's box: the project is writable, /tmp is its own
    client = RecordingClient(answer=lambda request: "allow_once")
    server = McpServerStdio(name="probe", command=sys.executable,
                            args=[str(Path(__file__).with_name("mcp_probe_server.py"))],
                            env=[{"name": "PROBE_MARKER", "value": str(marker)}])
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[server], orion={"model": model("acp_mcp")})
        await conn.prompt(session_id=session.session_id, prompt=[text_block("use the probe")])
    assert marker.read_text().strip() == "hello from the agent"
    done = [u for u in client.of_kind("tool_call_update") if u.get("status") == "completed"]
    assert done and "PROBE-SAYS: HELLO FROM THE AGENT" in json.dumps(done)
    assert not sdk_errors


async def test_a_prepared_session_with_the_clients_mcp_server_is_taken_over(tmp_path: Path, sdk_errors: list) -> None:
    """`_orion/session/prepare` with session/new's own parameters starts the CLI ahead; session/new gets that CLI,
    with the client's MCP server, and no second one."""
    import psutil

    from tests.e2e.test_prepared_sessions import claude_pids, settle_pids

    project_dir = project(tmp_path)
    marker = project_dir / "mcp-calls.txt"  # the client's MCP server runs in the session's box: the project is writable, /tmp is its own
    client = RecordingClient(answer=lambda request: "allow_once")
    server = McpServerStdio(name="probe", command=sys.executable,
                            args=[str(Path(__file__).with_name("mcp_probe_server.py"))],
                            env=[{"name": "PROBE_MARKER", "value": str(marker)}])
    pids: list[int] = []
    async with acp_sidecar(client, tmp_path, pids=pids) as (conn, init):
        assert "_orion/session/prepare" in init.field_meta["orion"]["methods"]
        await trust(conn, project_dir)
        answer = await conn.ext_method("orion/session/prepare", {
            "cwd": str(project_dir), "mcpServers": [server.model_dump(by_alias=True, exclude_none=True)],
            "_meta": {"orion": {"model": model("acp_mcp")}}})
        assert answer == {"prepared": True, "expiresInS": 600.0}
        [cli] = await settle_pids(pids[0], 1)
        assert not client.of_kind("agent_message_chunk")
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[server], orion={"model": model("acp_mcp")})
        assert claude_pids(pids[0]) == {cli}
        assert psutil.Process(cli).is_running()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("use the probe")])
    assert marker.read_text().strip() == "hello from the agent"
    assert not sdk_errors


async def test_the_projects_and_the_clis_slash_commands_are_offered_once(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path)
    commands = project_dir / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "review-diff.md").write_text("---\ndescription: Review the staged diff\n---\nReview $ARGUMENTS\n")
    client = RecordingClient()
    await one_session(client, tmp_path, project_dir, "plain", "hello", "again")
    [update] = client.of_kind("available_commands_update")  # the CLI repeats its list each turn; sent once
    offered = {c["name"]: c["description"] for c in update["availableCommands"]}
    assert offered["review-diff"] == "Review the staged diff"
    assert "compact" in offered or "init" in offered or len(offered) > 1, offered
    assert not sdk_errors


async def test_what_a_subagent_does_names_the_tool_call_that_runs_it(tmp_path: Path, sdk_errors: list) -> None:
    project_dir = project(tmp_path, "notes")
    agents = project_dir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "prober.md").write_text("---\nname: prober\ndescription: Runs the probe.\ntools: Bash\n---\nRun it.\n")
    client = RecordingClient(answer=lambda request: "allow_once")
    await one_session(client, tmp_path, project_dir, "subagent", "go", allowedTools=["Bash", "Agent"])
    calls = client.of_kind("tool_call")
    by_title = {c["toolCallId"]: c for c in calls}
    agent_call = next(c for c in calls if c["rawInput"].get("subagent_type") == "prober")
    main_bash = next(c for c in calls if c["rawInput"].get("command") == "echo from-the-main-agent")
    sub_bash = next(c for c in calls if c["rawInput"].get("command") == "echo from-the-subagent")
    assert sub_bash["_meta"]["orion"]["parentToolCallId"] == agent_call["toolCallId"]
    assert "parentToolCallId" not in (main_bash.get("_meta") or {}).get("orion", {})
    assert "parentToolCallId" not in (agent_call.get("_meta") or {}).get("orion", {})
    done = [u for u in client.of_kind("tool_call_update") if u["toolCallId"] == sub_bash["toolCallId"]]
    assert done and done[-1]["_meta"]["orion"]["parentToolCallId"] == agent_call["toolCallId"]
    assert len(by_title) == len(calls)
    assert not sdk_errors


async def test_a_prompt_sent_while_a_turn_runs_waits_its_turn(tmp_path: Path, sdk_errors: list) -> None:
    """ACP prompt queueing: a second prompt sent while the first runs is not refused; it runs after the first has
    answered, and the model reads it after the first answer."""
    project_dir = project(tmp_path)
    client = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        sid = (await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("queue")})).session_id
        answers: dict[str, Any] = {}

        async def run(name: str, text: str) -> None:
            answers[name] = await conn.prompt(session_id=sid, prompt=[text_block(text)])
            answers.setdefault("order", []).append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "first", "sleep a little")
            await first_tool_call(client)  # the first turn is running its tool call
            tg.start_soon(run, "second", "QUEUED-PROMPT-2")
    assert answers["order"] == ["first", "second"]
    assert answers["first"].stop_reason == answers["second"].stop_reason == "end_turn"
    requests = [r for r in model_requests(tmp_path, "queue") if r["body"].get("tools")]
    asked = [i for i, r in enumerate(requests) if "QUEUED-PROMPT-2" in json.dumps(r["body"]["messages"][-1])]
    assert asked and all("QUEUED-PROMPT-2" not in json.dumps(r["body"]["messages"]) for r in requests[:asked[0]])
    assert not sdk_errors


async def test_steering_gives_the_running_turn_a_message_it_answers_before_the_prompt_does(
        tmp_path: Path, sdk_errors: list) -> None:
    """`_session/steering` (the adapter's steering extension): injected into the running turn, which answers only
    after the model has read it; a second steer before that is refused; with no turn running the content stays the
    client's (`promptRequired`). The project's UserPromptSubmit hooks judge a steered message like a prompt."""
    project_dir = project(tmp_path)
    client = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(client, tmp_path) as (conn, init):
        assert init.field_meta["steering"] == {"supported": True}
        await trust(conn, project_dir)
        sid = (await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("queue")})).session_id
        answers: dict[str, Any] = {}

        async def run() -> None:
            answers["prompt"] = await conn.prompt(session_id=sid, prompt=[text_block("sleep a little")])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await first_tool_call(client)
            steered = await conn.ext_method("session/steering", {"sessionId": sid, "prompt": [
                {"type": "text", "text": "STEERED-MESSAGE: also count to three"}]})
            assert steered == {"outcome": "injected"}
            with pytest.raises(RequestError) as twice:
                await conn.ext_method("session/steering", {"sessionId": sid, "prompt": [
                    {"type": "text", "text": "and another"}]})
            assert twice.value.code == -31003
        assert answers["prompt"].stop_reason == "end_turn"
        requests = [r for r in model_requests(tmp_path, "queue") if r["body"].get("tools")]
        assert "STEERED-MESSAGE" in json.dumps(requests[-1]["body"]["messages"][-1])  # read before the turn ended
        idle = await conn.ext_method("session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
        assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    # the prompt's and the steered message's (the project's hook records the event, not the text)
    assert len([c for c in hook_calls(project_dir) if c["event"] == "UserPromptSubmit"]) == 2
    assert not sdk_errors


async def test_orion_errors_keep_clear_of_acps_codes(tmp_path: Path) -> None:
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        assert unknown.value.code == -31001
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602
        with pytest.raises(RequestError) as bad_meta:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[], orion={"sandbox": "sometimes"})
        assert bad_meta.value.code == -32602 and "_meta" in json.dumps(bad_meta.value.data)


async def test_a_loadable_session_keeps_no_secret_its_prompt_carried(tmp_path: Path, monkeypatch) -> None:
    """The session index (its title) and the kept transcript are Orion's files: a secret in a prompt stays out."""
    from tests.security.test_redaction_writers import ORDERED, leaks_under

    secret = ORDERED[0].secret
    project_dir = project(tmp_path)
    data = tmp_path / "data"
    monkeypatch.setenv("ORION_DATA_DIR", str(data))
    async with acp_sidecar(RecordingClient(), tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain")})
        await conn.prompt(session_id=session.session_id, prompt=[text_block(f"deploy with {secret} please")])
        await conn.ext_method("orion/session/end", {"sessionId": session.session_id})
        listed = await conn.list_sessions()
    assert secret not in listed.sessions[0].title and "[REDACTED:" in listed.sessions[0].title
    kept = data / "transcripts" / f"{session.session_id}.jsonl"
    assert kept.is_file() and "[REDACTED:" in kept.read_text()
    assert leaks_under(data) == {}


async def test_an_mcp_server_that_fails_to_start_is_named_and_the_session_goes_on(tmp_path: Path) -> None:
    project_dir = project(tmp_path)
    broken = McpServerStdio(name="broken", command=str(tmp_path / "no-such-server"), args=[], env=[])
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[broken], orion={"model": model("plain")})
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
    assert result.stop_reason == "end_turn"
    notices = [u for u in client.of_kind("agent_message_chunk") if u.get("_meta", {}).get("orion", {}).get("notice")]
    assert any("'broken' failed to start" in n["content"]["text"] for n in notices), client.updates
    assert notices[0]["_meta"]["orion"]["notice"]["source"] == "mcp"


async def test_setup_in_meta_orion_runs_the_projects_setup_hooks_with_its_trigger(tmp_path: Path) -> None:
    """An editor's "maintenance" action: `_meta.orion.setup` runs the project's Setup hooks as the session starts
    (Claude Code's `--maintenance`); a hook on the other trigger stays silent; a trigger Claude Code does not have is
    refused with its path."""
    project_dir = project(tmp_path, "notes")
    log = project_dir / "setup-calls.jsonl"
    record = f"cat >> '{log}' && echo >> '{log}'"
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Setup": [
        {"matcher": "maintenance", "hooks": [{"type": "command", "command": record}]},
        {"matcher": "init", "hooks": [{"type": "command", "command": f"echo init >> '{log}.init'"}]}]}}))
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(project_dir), mcp_servers=[], orion={"model": model("plain"),
                                                                                 "setup": "install"})
        assert refused.value.code == -32602 and ["_meta", "orion", "setup"] == refused.value.data["errors"][0]["loc"]
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": model("plain"), "setup": "maintenance"})
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        assert answer.stop_reason == "end_turn"
    [call] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert call["hook_event_name"] == "Setup" and call["trigger"] == "maintenance"
    assert call["session_id"] == session.session_id and not Path(f"{log}.init").exists()


async def test_a_teammate_session_runs_teammate_idle_hooks_and_stays_a_teammate_when_loaded(tmp_path: Path) -> None:
    """An app that runs an agent team: `_meta.orion.teammate` starts the session's CLI as that team member, so the
    project's TeammateIdle hooks run as its turn ends (after Stop, as in Claude Code), with its name and team; a load
    of the session keeps it one. A name Claude Code would not take is refused with its path."""
    project_dir = project(tmp_path, "notes")
    log = project_dir / "idle-calls.jsonl"
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"TeammateIdle": [
        {"hooks": [{"type": "command", "command": f"cat >> '{log}' && echo >> '{log}'"}]}]}}))
    client = RecordingClient()
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        for bad in ({"name": "a@b", "team": "crew"}, {"name": "helper"}, {"name": "-x", "team": "crew"}):
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                       orion={"model": model("plain"), "teammate": bad})
            assert refused.value.code == -32602, bad
            assert refused.value.data["errors"][0]["loc"][:3] == ["_meta", "orion", "teammate"], bad
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": model("plain"), "teammate": {"name": "helper",
                                                                                       "team": "crew"}})
        assert (await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])).stop_reason == "end_turn"
        await until(log.exists, 30, "the TeammateIdle hook ran")
        await conn.ext_method("orion/session/end", {"sessionId": session.session_id})
        await conn.load_session(cwd=str(project_dir), mcp_servers=[], session_id=session.session_id,
                                orion={"model": model("plain")})
        await conn.prompt(session_id=session.session_id, prompt=[text_block("and again")])
        await until(lambda: len(log.read_text().strip().splitlines()) >= 2, 30, "the loaded session's TeammateIdle hook ran")
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(c["hook_event_name"], c["teammate_name"], c["team_name"]) for c in calls] == \
        [("TeammateIdle", "helper", "crew")] * 2
    assert {c["session_id"] for c in calls} == {session.session_id}


async def test_auto_mode_is_a_mode_the_cli_runs_and_its_denials_reach_hooks_and_the_user(tmp_path: Path) -> None:
    """Claude Code's auto mode as an ACP mode: the CLI's own safety check decides what the rules do not. Offline the
    model's server does not run that check, so the CLI denies the call, fires the project's PermissionDenied hook
    (reason "Classifier unavailable") and tells its user why, which reaches the client as Orion's notice."""
    project_dir = project(tmp_path, "notes")
    log = project_dir / "denied.jsonl"
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PermissionDenied": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"cat >> '{log}' && echo >> '{log}'"}]}]}}))
    scenario = tmp_path / "auto.json"
    scenario.write_text(json.dumps({"turns": [
        [{"tool_use": {"name": "Bash", "input": {"command": "rm -rf /tmp/orion-acp-auto-nothing-here",
                                                  "description": "clean up"}}}],
        "Could not clean up."], "default": "Done."}))
    client = RecordingClient(answer=lambda request: "allow_once")
    async with acp_sidecar(client, tmp_path) as (conn, init):
        await trust(conn, project_dir)
        session = await conn.new_session(cwd=str(project_dir), mcp_servers=[],
                                         orion={"model": f"scripted:{scenario}", "builtinHooks": False})
        assert "auto" in {m.id for m in session.modes.available_modes}
        await conn.set_session_mode(session_id=session.session_id, mode_id="auto")
        result = await conn.prompt(session_id=session.session_id, prompt=[text_block("clean up")])
    assert result.stop_reason == "end_turn"
    assert client.permission_requests == []  # the CLI decided; nobody was asked
    [call] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert (call["hook_event_name"], call["tool_name"], call["reason"], call["permission_mode"]) == (
        "PermissionDenied", "Bash", "Classifier unavailable", "auto")
    [update] = [u for u in client.of_kind("tool_call_update") if u.get("status") in ("failed", "completed")]
    assert update["status"] == "failed"
    notices = [u for u in client.of_kind("agent_message_chunk") if u.get("_meta", {}).get("orion", {}).get("notice")]
    assert any(n["_meta"]["orion"]["notice"]["source"] == "cli" and "Auto mode" in n["content"]["text"]
               for n in notices), client.updates
