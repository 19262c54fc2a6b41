"""What `python -m hooks validate` checks, for a file on disk or for a document an edit is about to write.

One analysis serves both: a project's settings file is judged by the same `load_hookset` that `hooks list`,
`hooks/list` and `session/new` use, with the edited document standing in for the file (`overlay`), so an edit made
over the wire (sidecar/methods/hooks_settings.py) is refused for exactly what `validate` would report.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hooks.config import parse_settings
from hooks.hookset import HookSet, load_hookset
from hooks.matchers import MatcherError, compile_matcher, matcher_problem
from hooks.paths import data_dir
from hooks.registry import default_registry
from hooks.sources import read_builtin_options, read_json, read_overrides

log = logging.getLogger(__name__)

# Problems the shared analysis reports as warnings (the hook still loads, and fails when it runs) that `validate`
# counts as errors: a hook that can never work is what a settings author asks validate to catch.
_FAILS_EVERY_TIME = ("will fail every time it runs", "is not executable", "is a directory, not an executable")


def project_hookset(project: Path, vault: Path | None = None, *, builtin: bool = True,
                    overlay: dict[Path, Any] | None = None) -> HookSet:
    """The one analysis of a project's hooks (what `list`, `hooks/list` and session/new see)."""
    registry = default_registry
    if builtin:
        try:
            from hooks.builtin import builtin_registry

            registry = builtin_registry(read_builtin_options(project, vault), data_dir=data_dir())
        except Exception as exc:  # the listing is still useful without the built-ins
            log.warning("built-in hooks unavailable: %s", exc)
    return load_hookset(project, vault, registry=registry, overlay=overlay)


def owning_project(path: Path) -> tuple[Path, str] | None:
    """(project, source kind) for `<project>/.claude/settings.json` / `settings.local.json` / `hook-overrides.json`."""
    resolved = path.resolve()
    if resolved.parent.name != ".claude":
        return None
    kinds = {"settings.json": "project", "settings.local.json": "local", "hook-overrides.json": "overrides"}
    kind = kinds.get(resolved.name)
    return (resolved.parent.parent, kind) if kind else None


def validate_file(path: Path) -> tuple[list[str], list[str], int]:
    """(errors, warnings, valid entries) for one settings or overrides file on disk."""
    data, error, exists = read_json(path)
    if not exists:
        return [f"{path} does not exist"], [], 0
    if error:
        return [error], [], 0
    return validate_document(path, data)


def validate_document(path: Path, data: Any) -> tuple[list[str], list[str], int]:
    """(errors, warnings, valid entries) for `data` as the content of the settings or overrides file `path`, by the
    analysis that reads that file (the project's, when the file is a project's)."""
    owner = owning_project(path)
    if path.name == "hook-overrides.json":
        _names, problems = read_overrides(path)
        errors = list(problems)
        warnings = []
        if owner is not None:
            hookset = project_hookset(owner[0])
            warnings = [w for w in hookset.warnings if "hook-overrides" in w or "override" in w.lower()]
        return errors, warnings, 0
    parsed = parse_settings(data, path, hooks_dir=path.parent / "hooks")
    errors, warnings = list(parsed.errors), list(parsed.warnings)
    valid = sum(1 for e in parsed.entries if e.config is not None)
    if owner is None:
        # No project analysis reads this file: its matchers are checked here as load_hookset checks a project's.
        for entry in parsed.entries:
            if entry.config is None:
                continue
            where = f"{path}: {entry.json_path}"
            try:
                compile_matcher(entry.matcher)
            except MatcherError as exc:
                errors.append(f"{where}: {exc}")
                valid -= 1
                continue
            if (problem := matcher_problem(entry.event, entry.matcher)) is not None:
                group = where.rsplit(".hooks[", 1)[0] if where.endswith("]") else where
                if f"{group}: {problem}" not in warnings:
                    warnings.append(f"{group}: {problem}")
        return errors, warnings, valid
    resolved = path.resolve()
    hookset = project_hookset(owner[0], overlay={resolved: data})
    mine = [spec for spec in hookset.entries if spec.source_file is not None and Path(spec.source_file).resolve() == resolved]
    file_warnings = [w for w in hookset.warnings if w.startswith(str(resolved)) or w.startswith(str(path))]
    for spec in mine:
        if spec.state != "invalid":
            continue
        # The analysis's own line names the file and the JSON path; fall back to the hook's name.
        said = [w for w in file_warnings if spec.reason and str(spec.reason) in w]
        errors.extend(said or [f"{path}: hook {spec.name!r} ({spec.event}): {spec.reason}"])
    for warning in file_warnings:
        if warning in errors:
            continue
        if any(marker in warning for marker in _FAILS_EVERY_TIME):
            errors.append(warning)
        elif warning not in warnings:
            warnings.append(warning)
    errors = list(dict.fromkeys(errors))
    valid = sum(1 for spec in mine if spec.state != "invalid")
    return errors, warnings, valid
