"""hooks/settings, hooks/add, hooks/update, hooks/remove, hooks/enable: an app's settings page edits hooks in the
user's and the project's settings files over the wire (hooks/settings_edit.py holds the rules), and live sessions
pick the change up at once (a project's changed file waits for the user's review like any other change)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from ipc import protocol as p
from ipc.errors import InvalidParams, SettingsChanged
from sidecar.app import CallContext, SidecarApp
from sidecar.methods._services import reload_hooks


def _project(project_dir: str | None) -> Path | None:
    from sidecar.sessions import existing_dir

    return existing_dir(project_dir, "projectDir") if project_dir is not None else None


async def _edited(app: SidecarApp, outcome: Any, project: Path | None, *, every_project: bool) -> p.HooksEditResult:
    """Reload the live sessions the file feeds, and say where the project's trust stands after the edit."""
    await reload_hooks(app, None if every_project else project)
    result: dict[str, Any] = {"path": str(outcome.path), "digest": outcome.digest, "at": outcome.at,
                              "warnings": outcome.warnings}
    if project is not None:
        from hooks.validation import project_hookset

        hookset = await anyio.to_thread.run_sync(project_hookset, project)
        result.update(trusted=hookset.trusted, trustHash=hookset.trust_hash)
    return p.HooksEditResult.model_validate(result)


async def _run(call: Any) -> Any:
    from hooks import settings_edit

    try:
        return await anyio.to_thread.run_sync(call)
    except settings_edit.SettingsChanged as exc:
        raise SettingsChanged(str(exc), data=exc.data) from None
    except settings_edit.SettingsEditError as exc:
        raise InvalidParams(str(exc), data=exc.data) from None


def register(app: SidecarApp) -> None:
    @app.method("hooks/settings")
    async def hooks_settings(params: p.HooksSettingsParams, call: CallContext) -> p.HooksSettingsResult:
        from hooks.settings_edit import settings

        read = await _run(lambda: settings(params.target, _project(params.project_dir)))
        return p.HooksSettingsResult(target=read.target, path=str(read.path), exists=read.exists, digest=read.digest,
                                     hooks=read.hooks, disabled=read.disabled, error=read.error)

    @app.method("hooks/add")
    async def hooks_add(params: p.HooksAddParams, call: CallContext) -> p.HooksEditResult:
        from hooks.settings_edit import PROJECT_TARGETS, add

        project = _project(params.project_dir)
        outcome = await _run(lambda: add(params.target, project, params.digest, params.event, params.matcher,
                                         params.hook))
        return await _edited(app, outcome, project, every_project=params.target not in PROJECT_TARGETS)

    @app.method("hooks/update")
    async def hooks_update(params: p.HooksUpdateParams, call: CallContext) -> p.HooksEditResult:
        from hooks.settings_edit import PROJECT_TARGETS, update

        project = _project(params.project_dir)
        matcher = params.matcher if "matcher" in params.model_fields_set else ...
        outcome = await _run(lambda: update(params.target, project, params.digest, params.at.model_dump(),
                                            params.hook, matcher))
        return await _edited(app, outcome, project, every_project=params.target not in PROJECT_TARGETS)

    @app.method("hooks/remove")
    async def hooks_remove(params: p.HooksRemoveParams, call: CallContext) -> p.HooksEditResult:
        from hooks.settings_edit import PROJECT_TARGETS, remove

        project = _project(params.project_dir)
        outcome = await _run(lambda: remove(params.target, project, params.digest, params.at.model_dump()))
        return await _edited(app, outcome, project, every_project=params.target not in PROJECT_TARGETS)

    @app.method("hooks/enable")
    async def hooks_enable(params: p.HooksEnableParams, call: CallContext) -> p.HooksEditResult:
        from hooks.settings_edit import set_enabled

        project = _project(params.project_dir)
        outcome = await _run(lambda: set_enabled(params.scope, project, params.name, params.enabled))
        return await _edited(app, outcome, project, every_project=params.scope == "user")
