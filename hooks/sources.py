"""Settings sources: which files are read, in which documented order, and reading each one without ever raising."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.config import ParsedSettings, parse_settings
from hooks.paths import claude_user_settings_path, managed_settings_files, user_settings_path

BUILTIN_SETTINGS = Path(__file__).with_name("builtin_settings.json")

# Hook lists concatenate in this order; the hooks of enabled Claude Code plugins (hooks/plugins.py) follow them, and
# programmatic hooks come after all of them. "user" is Orion's user settings, "claude-user" the user's own Claude Code
# settings (~/.claude/settings.json), which `claude` runs hooks from too. "managed" is an organization's managed
# Claude Code settings (managed-settings.json and its drop-ins): the CLI runs their hooks itself, whatever Orion's
# flag settings say (measured), so Orion lists them and applies their policy but never runs them (hooks/hookset.py).
SOURCE_ORDER = ("builtin", "managed", "user", "claude-user", "vault", "project", "local")


@dataclass(slots=True, frozen=True)
class SourcePaths:
    """Where every settings source of one project lives."""

    project_dir: Path
    builtin: Path
    user: Path
    claude_user: Path  # the user's Claude Code settings: $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json
    vault: Path | None  # <vault>/.orion/settings.json when a vault was given
    project: Path
    local: Path
    overrides: Path
    managed: tuple[Path, ...] = ()  # the organization's managed settings files that exist, in the CLI's order

    @classmethod
    def for_project(
        cls,
        project_dir: Path,
        vault_dir: Path | None = None,
        *,
        builtin_settings: Path | None = None,
        user_settings: Path | None = None,
        claude_user_settings: Path | None = None,
        managed_settings: tuple[Path, ...] | None = None,
    ) -> SourcePaths:
        project_dir = Path(project_dir).expanduser().resolve()
        claude = project_dir / ".claude"
        return cls(
            project_dir=project_dir,
            builtin=Path(builtin_settings) if builtin_settings else BUILTIN_SETTINGS,
            user=Path(user_settings) if user_settings else user_settings_path(),
            claude_user=Path(claude_user_settings) if claude_user_settings else claude_user_settings_path(),
            vault=(Path(vault_dir).expanduser() / ".orion" / "settings.json") if vault_dir else None,
            project=claude / "settings.json",
            local=claude / "settings.local.json",
            overrides=claude / "hook-overrides.json",
            managed=tuple(managed_settings) if managed_settings is not None else tuple(managed_settings_files()),
        )

    @property
    def claude_config_dir(self) -> Path:
        """The user's Claude Code folder (`claude` keeps its plugins there, hooks/plugins.py): `claude_user`'s folder."""
        return self.claude_user.parent

    @property
    def hooks_dir(self) -> Path:
        return self.project_dir / ".claude" / "hooks"

    @property
    def claude_user_is_project_file(self) -> bool:
        """True when the project is the home directory (or CLAUDE_CONFIG_DIR is its .claude): the user's Claude Code
        settings file is then the project's own, read once, as the project's (its hooks wait for trust)."""
        try:
            mine = self.claude_user.resolve()
            return mine in (self.project.resolve(), self.local.resolve())
        except (OSError, RuntimeError):
            return False

    def ordered(self) -> list[tuple[str, Path]]:
        files = [("builtin", self.builtin), *(("managed", path) for path in self.managed), ("user", self.user)]
        if not self.claude_user_is_project_file:
            files.append(("claude-user", self.claude_user))
        if self.vault is not None:
            files.append(("vault", self.vault))
        files += [("project", self.project), ("local", self.local)]
        return files


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def parse_json_strict(text: str) -> Any:
    """json.loads that refuses an object with the same key twice (which one a reader keeps differs between tools)."""
    return json.loads(text, object_pairs_hook=_no_duplicates)


def read_json(path: Path) -> tuple[Any, str | None, bool]:
    """(document, error, exists); a missing file is not an error, a duplicate key is."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None, False
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot read: {exc}", True
    if not text.strip():
        return {}, None, True
    try:
        return parse_json_strict(text), None, True
    except DuplicateKey as exc:
        return None, (f"{path}: key {str(exc)!r} appears twice in one object; which one counts would be ambiguous, "
                      "so the file is skipped (remove the duplicate)"), True
    except json.JSONDecodeError as exc:
        return None, f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); file skipped", True


def read_settings(kind: str, path: Path, hooks_dir: Path, overlay: Mapping[Path, Any] | None = None) -> ParsedSettings:
    """One settings file as the hook engine reads it; `overlay` (resolved path → document) stands in for files not
    yet written: an edit is checked by the very analysis that will read it (hooks/validation.py)."""
    resolved = _resolved(path) if overlay else None
    if overlay and resolved in overlay:
        data, error, exists = overlay[resolved], None, True
    else:
        data, error, exists = read_json(path)
    if error:
        out = ParsedSettings(file=path, exists=exists)
        out.errors.append(error)
        return out
    if not exists:
        return ParsedSettings(file=path, exists=False)
    # Only project-side legacy entries resolve bare script names in <project>/.claude/hooks.
    return parse_settings(data, path, hooks_dir=hooks_dir if kind in ("project", "local") else None)


def read_overrides(path: Path) -> tuple[frozenset[str], list[str]]:
    """Names disabled by `<project>/.claude/hook-overrides.json` `{"disabled": [names]}`, plus problems found."""
    data, error, exists = read_json(path)
    if error:
        return frozenset(), [error]
    if not exists:
        return frozenset(), []
    disabled = data.get("disabled", []) if isinstance(data, dict) else None
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        return frozenset(), [f"{path}: $.disabled: expected a list of hook names; overrides ignored"]
    return frozenset(disabled), []


def read_builtin_options(project_dir: Path, vault_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """Options for the built-in hooks, read before they are built: the `builtin` section of the built-in settings
    file, then, per hook, the user's own (Orion's user settings). Never a project's, a vault's or the user's Claude
    Code settings: a cloned project must not turn a guard's options, nor turn on an approval (auto-approve)."""
    paths = SourcePaths.for_project(project_dir, vault_dir)
    options = dict(read_settings("builtin", paths.builtin, paths.hooks_dir).builtin_options)
    for name, own in user_builtin_options(read_settings("user", paths.user, paths.hooks_dir)).items():
        options[name] = {**options.get(name, {}), **own}
    return options


# The built-in hooks the user configures in their own settings: the ones only they turn on. The guards' options
# stay those of the built-in settings file (a user turns a guard off with disabledHooks, visibly, not by options).
USER_CONFIGURABLE_BUILTINS = frozenset({"ambient-context", "auto-approve", "memory-related"})


def user_builtin_options(parsed: Any) -> dict[str, dict[str, Any]]:
    return {name: opts for name, opts in parsed.builtin_options.items() if name in USER_CONFIGURABLE_BUILTINS}
