"""hooks/list, hooks/reload, hooks/trust and hooks/test: the hook engine, per live session or per project."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import anyio

from ipc import protocol as p
from ipc.errors import InvalidParams, ModelUnavailable
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import reload_hooks, session_manager


async def _project_hookset(app: SidecarApp, params: p.HookScope):
    from sidecar.sessions import existing_dir, load_session_hookset

    project = existing_dir(params.project_dir or "", "projectDir")
    vault = existing_dir(params.vault_dir, "vaultDir") if params.vault_dir else None
    return await anyio.to_thread.run_sync(load_session_hookset, project, vault, session_manager(app).settings.data_dir)


def _listing(hookset, boxed: bool | None = None) -> dict[str, Any]:
    """`boxed`: whether this session has a hook box (None: whether sessions here get a boundary by default)."""
    from sidecar.hook_box import listing_boundary

    if boxed is None:
        from sidecar.sandbox import backend_problem, platform_name

        boxed = platform_name() == "linux" and backend_problem(os.environ.get("PATH")) is None
    rows = hookset.to_listing()
    by_id = {spec.id: spec for spec in hookset.entries}
    for row in rows:
        spec = by_id.get(row.get("id"))
        if spec is not None:
            row["boundary"] = listing_boundary(spec, hookset.trusted, boxed)
    return {"hooks": rows, "warnings": list(hookset.warnings),
            "trustHash": hookset.trust_hash, "trusted": hookset.trusted, "trust": hookset.trust_listing()}


def _result_dict(result) -> dict[str, Any]:
    from sidecar.hook_events import hook_response_params

    data = hook_response_params(result, "")
    data.pop("sessionId", None)
    return data


def _aggregate_dict(agg) -> dict[str, Any]:
    from hooks.aggregate import to_hook_json

    return {
        "event": agg.event,
        "decision": agg.decision,
        "reason": agg.reason,
        "additionalContext": agg.additional_context,
        "updatedInput": agg.updated_input,
        "systemMessages": list(agg.system_messages),
        "continue": agg.continue_,
        "stopReason": agg.stop_reason,
        "hookOutput": to_hook_json(agg),
    }


async def _remote_executors(app: SidecarApp, params: p.HooksTestParams, hookset: Any, session: Any,
                            run_id: str) -> tuple[dict[str, Any], Path | None]:
    """http, prompt and agent executors for a test run, and a scratch directory to remove afterwards. A live session's
    prompt and agent hooks ask its own model connection; otherwise the model `params.model` names (scripted:<scenario>
    offline) or the one the user configured, built as session/new would (only when such a hook is about to run)."""
    from hooks.executors.remote import default_llm_executors

    if session is not None:
        prompt = session.runner.executors.get("prompt")
        client = getattr(prompt, "model_client", None)
        return default_llm_executors(client, default_model=getattr(prompt, "default_model", None)), None
    if not any(spec.type in ("prompt", "agent") for spec in hookset.active_for(params.event)):
        return default_llm_executors(None), None
    from sidecar.evaluator import hook_model
    from sidecar.sdk_env import ModelConfigError

    try:
        client, default_model, scratch = await anyio.to_thread.run_sync(
            hook_model, params.model, session_manager(app).settings.data_dir, run_id)
    except ModelConfigError as exc:
        # As session/new reports it: the problem named, never the file's content.
        raise ModelUnavailable(str(exc), data={"model": params.model, "reason": exc.reason}) from None
    return default_llm_executors(client, default_model=default_model), scratch


async def _trust_plugin(app: SidecarApp, store: Any, project: Path, params: p.HooksTrustParams) -> p.HooksTrustResult:
    """hooks/trust with `plugin`: pin a plugin of the user's own settings again after an update (or forget its pin)."""
    from hooks.errors import TrustError
    from hooks.trust import trust_user_plugin

    if params.revoke:
        await anyio.to_thread.run_sync(store.revoke_plugin, params.plugin)
        digest, trusted = "", False
    else:
        try:
            digest = await anyio.to_thread.run_sync(trust_user_plugin, store, project, params.plugin, params.hash)
        except TrustError as exc:
            raise InvalidParams(str(exc), data={"projectDir": str(project), "plugin": params.plugin,
                                                "reviewedHash": params.hash}) from exc
        trusted = True
    await reload_hooks(app)  # the user's plugin is in every project's sessions
    return p.HooksTrustResult(trusted=trusted, hash=digest)


def register(app: SidecarApp) -> None:
    @app.method("hooks/list")
    async def hooks_list(params: p.HookScope, call: CallContext) -> dict:
        if params.session_id:
            session = session_manager(app).get(params.session_id)
            return _listing(session.runner.hookset, session.context.box is not None)
        return _listing(await _project_hookset(app, params))

    @app.method("hooks/reload")
    async def hooks_reload(params: p.HookScope, call: CallContext) -> dict:
        if params.session_id:
            runner = session_manager(app).get(params.session_id).runner
            return _listing(await anyio.to_thread.run_sync(runner.reload))
        return _listing(await _project_hookset(app, params))

    @app.method("hooks/trust")
    async def hooks_trust(params: p.HooksTrustParams, call: CallContext) -> p.HooksTrustResult:
        from hooks.errors import TrustError
        from hooks.trust import TrustStore, current_hash
        from sidecar.sessions import existing_dir

        project = existing_dir(params.project_dir, "projectDir")
        vault = existing_dir(params.vault_dir, "vaultDir") if params.vault_dir else None
        store = TrustStore()
        if params.plugin:
            return await _trust_plugin(app, store, project, params)
        if params.revoke:
            await anyio.to_thread.run_sync(store.revoke, project, vault)
            digest, trusted = await anyio.to_thread.run_sync(current_hash, project, vault), False
        else:
            try:
                digest = await anyio.to_thread.run_sync(store.trust, project, params.hash, vault)
            except TrustError as exc:
                # The project changed between review and trust: trusting "what is on disk" would trust unseen code.
                now = await anyio.to_thread.run_sync(current_hash, project, vault)
                raise InvalidParams(str(exc), data={"projectDir": str(project), "reviewedHash": params.hash,
                                                    "currentHash": now}) from exc
            trusted = True
        await reload_hooks(app, project)  # a revoke stops its live sessions' hooks at once
        return p.HooksTrustResult(trusted=trusted, hash=digest)

    @app.method("hooks/stats")
    async def hooks_stats(params: p.HooksStatsParams, call: CallContext) -> dict:
        from hooks.stats import hook_stats, parse_since
        from sidecar.sessions import existing_dir

        manager = session_manager(app)
        try:
            since, until = parse_since(params.since), parse_since(params.until)
        except ValueError as exc:
            raise InvalidParams(str(exc), data={"since": params.since, "until": params.until}) from None
        project = existing_dir(params.project_dir, "projectDir") if params.project_dir else None
        for session in manager.live_sessions():  # what live sessions tracked so far is counted too
            await session.runner.flush_tracking()
        rows = await anyio.to_thread.run_sync(lambda: hook_stats(
            manager.settings.data_dir, session_id=params.session_id, project_dir=project, since=since, until=until))
        return {"hooks": rows}

    @app.method("hooks/test")
    async def hooks_test(params: p.HooksTestParams, call: CallContext) -> dict:
        from hooks.runner import HookRunner
        from hooks.types import ALL_EVENTS, SessionContext
        from sidecar.hook_events import IpcHookObserver

        if params.event not in ALL_EVENTS:
            raise InvalidParams(f"unknown hook event {params.event!r}", data={"event": params.event, "events": list(ALL_EVENTS)})
        if params.session_id:
            session = session_manager(app).get(params.session_id)
            hookset, context = session.runner.hookset, session.context
        else:
            hookset = await _project_hookset(app, params)
            sid = f"hooks-test-{uuid.uuid4().hex[:12]}"

            async def emit(event: str, payload: dict[str, Any]) -> None:
                await app.notify(event, {**payload, "sessionId": sid})

            context = SessionContext(
                session_id=sid, project_dir=hookset.project_dir, vault_dir=hookset.vault_dir,
                data_dir=session_manager(app).settings.data_dir, emit=emit,
            )
        if params.hook_name:
            hookset = hookset.only(params.hook_name)
            if not hookset.entries:
                raise InvalidParams(f"no hook named {params.hook_name!r}", data={"hookName": params.hook_name})
        tool_use_id = params.payload.get("tool_use_id")
        if params.session_id and not params.hook_name:
            agg = await session.runner.fire(params.event, dict(params.payload), context, tool_use_id=tool_use_id)
        else:
            executors, scratch = await _remote_executors(app, params, hookset, session if params.session_id else None,
                                                         context.session_id)
            runner = HookRunner(hookset, IpcHookObserver(app.notify), executors=executors, data_dir=context.data_dir)
            try:
                agg = await runner.fire(params.event, dict(params.payload), context, tool_use_id=tool_use_id)
            finally:
                await runner.aclose()
                if scratch is not None:
                    await anyio.to_thread.run_sync(shutil.rmtree, scratch, True)
        return {"aggregate": _aggregate_dict(agg), "results": [_result_dict(r) for r in agg.results]}
