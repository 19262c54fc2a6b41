"""The Agent Client Protocol's methods (docs/PROTOCOL.md "ACP"): the handshake's answer, authenticate, and the
session methods, each a thin mapping onto the one session core (sidecar/sessions.py) that Orion's methods use too."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ipc import protocol as p
from ipc.errors import AuthRequired, InvalidParams, validation_errors
from sidecar.app import ACP_REDEFINED, EXT_PREFIX, SERVER_NAME, SERVER_VERSION, CallContext, SidecarApp
from sidecar.methods._services import session_manager

SUPPORTED_VERSION = 1
SCRIPTED_AUTH = "scripted"
# The model a session that names none gets once the client chose the scripted auth method (a plain ACP client has no
# way to put Orion's `_meta` in session/new): text answers, no tools (sidecar/scenarios/basic.yaml).
SCRIPTED_DEFAULT = "scripted:basic"
CLAUDE_AUTH = "claude"

# Claude Code's permission modes as ACP session modes. bypassPermissions is not offered to root: the CLI refuses it.
MODES = (
    ("default", "Default", "Ask before each tool call the permission rules do not allow"),
    ("acceptEdits", "Accept edits", "File edits run without asking; other tools as in Default"),
    ("plan", "Plan", "The agent explores and plans; it changes nothing"),
    ("auto", "Auto", "A safety check on the model's server decides each tool call the permission rules do not "
                     "(hooks still deny or ask first); where that server does not run it, such calls are denied"),
    ("bypassPermissions", "Bypass permissions", "Every tool call runs without asking (hooks still deny or ask)"),
)


def available_modes() -> list[dict[str, str]]:
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return [{"id": mode, "name": name, "description": text} for mode, name, text in MODES
            if not (root and mode == "bypassPermissions")]


def mode_state(current: str | None) -> p.SessionModeState:
    return p.SessionModeState.model_validate({"currentModeId": current or "default", "availableModes": available_modes()})


# Claude Code's model aliases: what a user picks in `claude /model`. Any other model id is accepted too.
MODEL_ALIASES = (("default", "Default", "The CLI's default model for this account"),
                 ("sonnet", "Sonnet", "Claude Sonnet, latest"), ("opus", "Opus", "Claude Opus, latest"),
                 ("haiku", "Haiku", "Claude Haiku, latest"))


def model_option(current: str) -> dict[str, Any]:
    options = [{"value": value, "name": name, "description": text} for value, name, text in MODEL_ALIASES]
    if current not in {value for value, _, _ in MODEL_ALIASES}:
        options.insert(0, {"value": current, "name": current, "description": "The model this session started with"})
    return {"type": "select", "id": "model", "name": "Model", "category": "model", "currentValue": current,
            "options": options}


def mode_option(current: str | None) -> dict[str, Any]:
    """The permission mode as a config option too: some editor clients switch modes only through one."""
    modes = available_modes()
    return {"type": "select", "id": "mode", "name": "Mode", "category": "mode", "currentValue": current or "default",
            "options": [{"value": m["id"], "name": m["name"], "description": m["description"]} for m in modes]}


EFFORT_NAMES = {"low": "Low", "medium": "Medium", "high": "High", "xhigh": "Extra high", "max": "Max"}


def effort_option(current: str | None, levels: list[str]) -> dict[str, Any]:
    """The reasoning effort as ACP's `thought_level` option: "default" (the CLI chooses, from its settings or the
    model) and the levels the CLI offers for the current model."""
    return {"type": "select", "id": "effort", "name": "Effort", "category": "thought_level",
            "description": "How much the model reasons before it answers",
            "currentValue": current or "default",
            "options": [{"value": "default", "name": "Default", "description": "The CLI's own choice"},
                        *({"value": level, "name": EFFORT_NAMES.get(level, level)} for level in levels)]}


def config_options(session: Any) -> list[dict[str, Any]]:
    options = [mode_option(session.permission_mode), model_option(session.current_model)]
    if session.effort_levels:  # a model without effort levels gets no picker
        options.append(effort_option(session.effort, session.effort_levels))
    return options


def acp_initialize(app: SidecarApp, params: p.AcpInitializeParams) -> p.AcpInitializeResult:
    """Answer ACP's handshake and switch the connection to ACP. A version we do not speak is answered with ours
    (ACP: the client then decides whether to go on)."""
    app.use_acp(params.client_capabilities)
    orion_methods = sorted({EXT_PREFIX + name for name in app.method_names
                            if name not in ("initialize", "exit", "$/cancelRequest", *ACP_REDEFINED)}
                           | {name for name in app.routes.acp_names() if name.startswith(EXT_PREFIX)})
    return p.AcpInitializeResult.model_validate({
        "protocolVersion": SUPPORTED_VERSION,
        "agentInfo": {"name": SERVER_NAME, "title": "Orion Sidecar", "version": SERVER_VERSION},
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"list": {}, "close": {}, "delete": {}, "resume": {}, "fork": {},
                                    "additionalDirectories": {}, "systemPrompt": {"mode": {"override": {}}}},
        },
        "authMethods": [
            {"id": CLAUDE_AUTH, "name": "Claude credentials",
             "description": "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the sidecar's environment, an apiKeyHelper "
                            "in ~/.claude/settings.json, or the Claude Code login (`claude /login`)"},
            {"id": SCRIPTED_AUTH, "name": "Scripted model (offline)",
             "description": "No credential: after this, a session that names no model uses the offline scripted model "
                            f"`{SCRIPTED_DEFAULT}`; any session may name one in `_meta.orion.model: \"scripted:<scenario>\"`"},
        ],
        "_meta": {"orion": {"methods": orion_methods,
                            "events": sorted(EXT_PREFIX + name for name in _orion_event_names()),
                            "protocol": p.PROTOCOL_VERSION,
                            # a prompt sent while a turn runs waits its turn (docs/PROTOCOL.md "Prompt queueing")
                            "promptQueueing": True},
                  # the `_session/steering` request (docs/PROTOCOL.md "Steering"), where clients look for it
                  "steering": {"supported": True}},
    })


def _orion_event_names() -> list[str]:
    from sidecar.acp.dialect import ORION_EVENTS

    return list(ORION_EVENTS)


def credential_problem() -> str | None:
    """None when a real-model session can authenticate (the check `session/new` makes); otherwise what to set."""
    from sidecar.sdk_env import NoCredential, real_model_credential

    try:
        real_model_credential()
    except NoCredential as exc:
        return str(exc)
    return None


def orion_options(meta: dict[str, Any] | None, system_prompt: p.AcpSystemPrompt | None = None) -> p.OrionSessionOptions:
    """`_meta.orion` of session/new or session/load as Orion's options; an invalid one is refused with its path.
    ACP's `systemPrompt`, when given, sets both of Orion's system-prompt options (the one it does not use to "",
    so that on load and fork it replaces what the session had rather than adding to it)."""
    raw = (meta or {}).get("orion") or {}
    if not isinstance(raw, dict):
        raise InvalidParams(data={"errors": [{"loc": ["_meta", "orion"], "msg": "must be an object", "type": "dict_type"}]})
    try:
        options = p.OrionSessionOptions.model_validate(raw)
    except ValidationError as exc:
        errors = [{**e, "loc": ["_meta", "orion", *e["loc"]]} for e in validation_errors(exc)]
        raise InvalidParams(data={"errors": errors}) from None
    if system_prompt is None:
        return options
    if options.system_prompt is not None or options.system_prompt_append is not None:
        raise InvalidParams("systemPrompt and _meta.orion.systemPrompt/systemPromptAppend are two ways to say one "
                            "thing: send one of them", data={"errors": [{"loc": ["systemPrompt"], "msg": "given twice",
                                                                          "type": "value_error"}]})
    text = system_prompt_text(system_prompt)
    if system_prompt.mode == "append":
        return options.model_copy(update={"system_prompt": "", "system_prompt_append": text})
    return options.model_copy(update={"system_prompt": text, "system_prompt_append": ""})


SYSTEM_PROMPT_MODES = ("append", "override")
SYSTEM_PROMPT_LIMIT = 200_000  # characters: far beyond any system prompt, short of what would fill the CLI's argv


def system_prompt_text(system_prompt: p.AcpSystemPrompt) -> str:
    """ACP's `systemPrompt` content as one text, or -32602 naming what is wrong (ACP: an agent that cannot apply it
    errors instead of creating, loading, resuming or forking the session)."""
    def refuse(message: str, loc: list[Any]) -> InvalidParams:
        return InvalidParams(message, data={"errors": [{"loc": ["systemPrompt", *loc], "msg": message,
                                                         "type": "value_error"}]})

    if system_prompt.mode not in SYSTEM_PROMPT_MODES:
        raise refuse(f"systemPrompt mode {system_prompt.mode!r} is not supported (have 'append', 'override')", ["mode"])
    if not system_prompt.content:
        raise refuse("systemPrompt content is empty (ACP: send at least one text block, or no systemPrompt)",
                     ["content"])
    texts = []
    for index, block in enumerate(system_prompt.content):
        if block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise refuse(f"systemPrompt content[{index}] is a {block.get('type')!r} block: only text blocks are "
                         "supported", ["content", index])
        texts.append(block["text"])
    text = "\n\n".join(texts)
    if not text.strip():
        raise refuse("systemPrompt content holds no text", ["content"])
    if len(text) > SYSTEM_PROMPT_LIMIT:
        raise refuse(f"systemPrompt is {len(text)} characters (at most {SYSTEM_PROMPT_LIMIT})", ["content"])
    return text


def sdk_mcp_servers(servers: list[Any]) -> dict[str, Any]:
    """ACP's McpServer list as the SDK's `mcp_servers` mapping (name → config); two servers with one name are refused."""
    out: dict[str, Any] = {}
    for index, server in enumerate(servers):
        if server.name in out:
            raise InvalidParams(f"mcpServers[{index}]: a second server named {server.name!r}",
                                data={"errors": [{"loc": ["mcpServers", index, "name"], "msg": "duplicate name",
                                                  "type": "duplicate"}]})
        if server.type == "stdio":
            out[server.name] = {"type": "stdio", "command": server.command, "args": list(server.args),
                                "env": {var.name: var.value for var in server.env}}
        else:
            out[server.name] = {"type": server.type, "url": server.url,
                                "headers": {header.name: header.value for header in server.headers}}
    return out


def _session_meta(session: Any, hookset: Any) -> dict[str, Any]:
    return {"orion": {
        "model": session.model,
        "hooks": hookset.counts(),
        "sandbox": session.sandbox.to_wire(),
        "settings": session.settings,
        "clientTools": session.client_tools or {"files": False, "terminal": False},
        "warnings": list(hookset.warnings),
    }}


def _traceparent(meta: dict[str, Any] | None) -> str | None:
    """A W3C trace context the client sent in `_meta` (ACP reserves `traceparent` there), for hooks/tracing.py."""
    value = (meta or {}).get("traceparent")
    return value if isinstance(value, str) and len(value) <= 128 else None


def _session_kwargs(app: SidecarApp, params: p.AcpNewSessionParams) -> dict[str, Any]:
    """session/new's (and _orion/session/prepare's) parameters as the session core's."""
    options = orion_options(params.meta, params.system_prompt)
    if options.model is None and getattr(app, "default_model", None):
        options = options.model_copy(update={"model": app.default_model})  # type: ignore[attr-defined]
    return {"project_dir": _absolute_dir(params.cwd), **options.model_dump(),
            "mcp_servers": sdk_mcp_servers(params.mcp_servers),
            "client_capabilities": app.acp.client_capabilities if app.acp else None,
            "additional_dirs": list(params.additional_directories or [])}


def _absolute_dir(cwd: str) -> str:
    if not Path(cwd).is_absolute():
        raise InvalidParams("cwd must be an absolute path (ACP)",
                            data={"errors": [{"loc": ["cwd"], "msg": "not absolute", "type": "value_error"}]})
    return cwd


def register(app: SidecarApp) -> None:
    @app.method("authenticate", acp=True)
    async def authenticate(params: p.AuthenticateParams, call: CallContext) -> p.AcpEmpty:
        if params.method_id == SCRIPTED_AUTH:
            app.default_model = SCRIPTED_DEFAULT  # type: ignore[attr-defined]
            return p.AcpEmpty()
        if params.method_id != CLAUDE_AUTH:
            raise InvalidParams(f"unknown auth method {params.method_id!r} (have {CLAUDE_AUTH!r}, {SCRIPTED_AUTH!r})",
                                data={"methodId": params.method_id})
        problem = credential_problem()
        if problem is not None:
            raise AuthRequired(problem, data={"methodId": params.method_id})
        return p.AcpEmpty()

    @app.method("session/new", acp=True)
    async def session_new(params: p.AcpNewSessionParams, call: CallContext) -> p.AcpNewSessionResult:
        session, hookset = await session_manager(app).new(**_session_kwargs(app, params),
                                                          traceparent=_traceparent(params.meta))
        return p.AcpNewSessionResult.model_validate({
            "sessionId": session.session_id, "modes": mode_state(session.permission_mode).wire(),
            "configOptions": config_options(session), "_meta": _session_meta(session, hookset),
        })

    @app.method(EXT_PREFIX + "session/prepare", acp=True)
    async def session_prepare(params: p.AcpNewSessionParams, call: CallContext) -> p.SessionPrepareResult:
        return p.SessionPrepareResult.model_validate(await session_manager(app).prepare(**_session_kwargs(app, params)))

    async def load(params: p.AcpLoadSessionParams, *, replay: bool) -> p.AcpLoadSessionResult:
        options = orion_options(params.meta, params.system_prompt)
        session, hookset = await session_manager(app).load(
            params.session_id, _absolute_dir(params.cwd), options.model_dump(by_alias=True),
            mcp_servers=sdk_mcp_servers(params.mcp_servers),
            client_capabilities=app.acp.client_capabilities if app.acp else None, replay=replay,
        )
        return p.AcpLoadSessionResult.model_validate({
            "modes": mode_state(session.permission_mode).wire(),
            "configOptions": config_options(session), "_meta": _session_meta(session, hookset),
        })

    @app.method("session/load", acp=True)
    async def session_load(params: p.AcpLoadSessionParams, call: CallContext) -> p.AcpLoadSessionResult:
        return await load(params, replay=True)

    @app.method("session/resume", acp=True)
    async def session_resume(params: p.AcpLoadSessionParams, call: CallContext) -> p.AcpLoadSessionResult:
        """`session/load` without the history replayed: the client already shows it."""
        return await load(params, replay=False)

    @app.method("session/fork", acp=True)
    async def session_fork(params: p.AcpForkSessionParams, call: CallContext) -> p.AcpNewSessionResult:
        options = orion_options(params.meta, params.system_prompt)
        session, hookset = await session_manager(app).fork(
            params.session_id, _absolute_dir(params.cwd), options.model_dump(by_alias=True),
            mcp_servers=sdk_mcp_servers(params.mcp_servers),
            client_capabilities=app.acp.client_capabilities if app.acp else None,
            additional_dirs=list(params.additional_directories or []),
        )
        return p.AcpNewSessionResult.model_validate({
            "sessionId": session.session_id, "modes": mode_state(session.permission_mode).wire(),
            "configOptions": config_options(session), "_meta": _session_meta(session, hookset),
        })

    @app.method("session/close", acp=True)
    async def session_close(params: p.AcpSessionRef, call: CallContext) -> p.AcpEmpty:
        """End a live session (its SessionEnd hooks run, its CLI goes); it stays listed and can be loaded again."""
        await session_manager(app).end(params.session_id, "other")
        return p.AcpEmpty()

    @app.method("session/delete", acp=True)
    async def session_delete(params: p.AcpSessionRef, call: CallContext) -> p.AcpEmpty:
        """Take a session off `session/list` for good (ended first if live), with what Orion kept of it."""
        await session_manager(app).delete(params.session_id)
        return p.AcpEmpty()

    @app.method("session/list", acp=True)
    async def session_list(params: p.AcpListSessionsParams, call: CallContext) -> p.AcpListSessionsResult:
        manager = session_manager(app)
        entries = manager.index.list(params.cwd)
        live = {s.session_id: s for s in manager.live_sessions()}
        sessions = []
        for entry in entries:
            sid = entry["sessionId"]
            info: dict[str, Any] = {"sessionId": sid, "cwd": entry.get("cwd", ""), "updatedAt": entry.get("updatedAt"),
                                    "_meta": {"orion": {"live": sid in live, "model": (entry.get("options") or {}).get("model")}}}
            if entry.get("title"):
                info["title"] = entry["title"]
            sessions.append(info)
        return p.AcpListSessionsResult.model_validate({"sessions": sessions})

    @app.method("session/set_mode", acp=True)
    async def session_set_mode(params: p.SetModeParams, call: CallContext) -> p.AcpEmpty:
        modes = {mode["id"] for mode in available_modes()}
        if params.mode_id not in modes:
            raise InvalidParams(f"unknown mode {params.mode_id!r} (available: {', '.join(sorted(modes))})",
                                data={"modeId": params.mode_id})
        await session_manager(app).set_mode(params.session_id, params.mode_id)
        return p.AcpEmpty()

    @app.method("session/set_config_option", acp=True)
    async def session_set_config_option(params: p.SetConfigOptionParams, call: CallContext) -> p.SetConfigOptionResult:
        manager = session_manager(app)
        if params.config_id == "mode":
            modes = {mode["id"] for mode in available_modes()}
            if params.value not in modes:
                raise InvalidParams(f"unknown mode {params.value!r} (available: {', '.join(sorted(modes))})",
                                    data={"value": params.value})
            await manager.set_mode(params.session_id, params.value)
            session = manager.live(params.session_id)
        elif params.config_id == "model":
            value = params.value.strip()
            if not value or len(value) > 200 or any(c.isspace() for c in value):
                raise InvalidParams(f"not a model name: {params.value!r}", data={"value": params.value})
            session = await manager.set_model(params.session_id, value)
        elif params.config_id == "effort":
            session = await manager.set_effort(params.session_id, params.value)
        else:
            raise InvalidParams(f"unknown config option {params.config_id!r} (have 'mode', 'model', 'effort')",
                                data={"configId": params.config_id})
        return p.SetConfigOptionResult.model_validate({"configOptions": config_options(session)})

    @app.method("session/prompt", acp=True)
    async def session_prompt(params: p.AcpPromptParams, call: CallContext) -> p.AcpPromptResult:
        from sidecar.acp.content import prompt_content
        from sidecar.acp.dialect import acp_stop_reason, acp_usage

        content = prompt_content([block.wire() for block in params.prompt])
        result = await session_manager(app).prompt(params.session_id, content.text, content.blocks,
                                                   traceparent=_traceparent(params.meta))
        orion = {k: v for k, v in {
            "stopReason": result["stopReason"], "terminalReason": result.get("terminalReason"),
            "resultText": result.get("resultText"), "costUsd": result.get("costUsd"),
            "durationMs": result.get("durationMs"), "numTurns": result.get("numTurns"),
            "isError": result.get("isError") or None,
        }.items() if v is not None}
        body: dict[str, Any] = {"stopReason": acp_stop_reason(result["stopReason"]), "_meta": {"orion": orion}}
        usage = acp_usage(result.get("usage") or {})
        if usage is not None:
            body["usage"] = usage
        return p.AcpPromptResult.model_validate(body)

    @app.method("_session/steering", acp=True)
    async def session_steering(params: p.AcpSteeringParams, call: CallContext) -> p.AcpSteeringResult:
        """Steer the running turn. With none running the content stays the client's (`promptRequired`): a turn
        started here would have no session/prompt to answer, and its refusal would reach nobody."""
        from sidecar.acp.content import prompt_content

        content = prompt_content([block.wire() for block in params.prompt])
        if await session_manager(app).steer(params.session_id, content.text, content.blocks):
            return p.AcpSteeringResult(outcome="injected")
        return p.AcpSteeringResult(outcome="promptRequired", reason="noRunningTurn")

    @app.method("session/cancel", acp=True)
    async def session_cancel(params: p.AcpCancelParams, call: CallContext) -> None:
        await session_manager(app).cancel(params.session_id)
        return None
