"""session/new, session/prompt, session/cancel, session/end and session/list."""

from __future__ import annotations

from typing import Any

from ipc import protocol as p
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import has_session_manager, session_manager


def frontend_capabilities(app: SidecarApp) -> dict[str, Any] | None:
    """What Orion's own frontend said at `initialize` it shows (forms): None when nothing."""
    return getattr(app, "frontend_capabilities", None) or None


def register(app: SidecarApp) -> None:
    @app.on_shutdown
    async def end_sessions() -> None:
        if has_session_manager(app):
            await session_manager(app).end_all("other")

    @app.method("session/new")
    async def session_new(params: p.SessionNewParams, call: CallContext) -> p.SessionNewResult:
        session, hookset = await session_manager(app).new(**params.model_dump(),
                                                          client_capabilities=frontend_capabilities(app))
        return p.SessionNewResult(
            session_id=session.session_id,
            model=session.model,
            hooks=p.HookCounts(**hookset.counts()),
            sandbox=p.SandboxInfo.model_validate(session.sandbox.to_wire()),
            settings=p.SettingsInfo.model_validate(session.settings),
            warnings=list(hookset.warnings),
        )

    @app.method("session/prepare")
    async def session_prepare(params: p.SessionPrepareParams, call: CallContext) -> p.SessionPrepareResult:
        return p.SessionPrepareResult.model_validate(await session_manager(app).prepare(
            **params.model_dump(), client_capabilities=frontend_capabilities(app)))

    @app.method("session/context")
    async def session_context(params: p.SessionContextParams, call: CallContext) -> p.Empty:
        from hooks.builtin.user_choice import CLIENT_CONTEXT

        session = session_manager(app).live(params.session_id)
        session.context.state[CLIENT_CONTEXT] = {"openFiles": list(params.open_files), "activeFile": params.active_file}
        return p.Empty()

    @app.method("session/registerRoot")
    async def session_register_root(params: p.SessionRegisterRootParams,
                                    call: CallContext) -> p.SessionRegisterRootResult:
        return p.SessionRegisterRootResult(directory=await session_manager(app).register_root(
            params.session_id, params.directory, reload_claude_md=params.reload_claude_md))

    @app.method("session/prompt")
    async def session_prompt(params: p.SessionPromptParams, call: CallContext) -> dict:
        result = await session_manager(app).prompt(params.session_id, params.prompt)
        result.pop("isError", None)
        return result

    @app.method("session/cancel")
    async def session_cancel(params: p.SessionRef, call: CallContext) -> p.SessionCancelResult:
        return p.SessionCancelResult(cancelled=await session_manager(app).cancel(params.session_id))

    @app.method("session/end")
    async def session_end(params: p.SessionEndParams, call: CallContext) -> p.SessionEndResult:
        ran = await session_manager(app).end(params.session_id, params.reason)
        return p.SessionEndResult(ended=True, hooks_ran=ran)

    @app.method("session/list")
    async def session_list(params: p.Empty, call: CallContext) -> dict:
        return {"sessions": session_manager(app).list()}
