"""The effective hook set of one project: every source merged in order, the security policy, trust, switches, and a listing with states and reasons.

Who may flip what (docs/SECURITY.md): a switch reaches only the hooks of the
source that set it, except the user's own settings, which reach every source;
a project (or vault) never weakens the built-in guards, the app's hooks or the
user's own Claude Code hooks, and none of its hooks runs until the user trusts
the manifest of everything it would execute (hooks.manifest).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.scoped import read_scoped
from hooks.plugins import MANAGED_PLUGIN, PLUGIN, PROJECT_PLUGIN, Plugin, ensure_data_dir, load_plugins
from hooks.conditions import TOOL_CONDITION_EVENTS, Condition, ConditionError, parse_condition
from hooks.config import ParsedSettings, RawEntry, first_word, split_command
from hooks.matchers import Matcher, MatcherError, compile_matcher, exact_names, matcher_problem, matches_all
from hooks.registry import HookRegistry, ProgrammaticHook, default_registry
from hooks.manifest import (INTERPRETER, SCRIPT_SUFFIXES, USER_CONFIG_PLACEHOLDER, Manifest, argv_files,
                            build_manifest, command_files, expand_exec_word, expand_project_dir, pins)
from hooks.sources import (USER_CONFIGURABLE_BUILTINS, SourcePaths, read_json, read_overrides, read_settings,
                           user_builtin_options)
from hooks.trust import TrustStatus, TrustStore
from hooks.url_patterns import url_matches, url_problem
from hooks.interpret import FEEDBACK_EVENTS
from hooks.types import BLOCKING_EVENTS, HookFunction

# Words a POSIX shell (sh -c) runs itself: no PATH lookup to fail.
_SHELL_WORDS = frozenset({
    ".", ":", "[", "[[", "alias", "bg", "break", "case", "cd", "command", "continue", "echo", "eval", "exec", "exit",
    "export", "false", "fc", "fg", "for", "getopts", "hash", "if", "jobs", "kill", "printf", "pwd", "read",
    "readonly", "return", "set", "shift", "source", "test", "times", "trap", "true", "type", "ulimit", "umask",
    "unalias", "unset", "until", "wait", "while",
})

log = logging.getLogger("hooks")

DEFAULT_TIMEOUT_S = {"command": 30.0, "python": 30.0, "prompt": 30.0, "agent": 60.0, "http": 30.0, "mcp_tool": 60.0,
                     "callable": 30.0}

# Sources written by someone other than the user: none of their hooks runs (prompt hooks included: they spend the
# user's model budget and send project data to a model) until the user trusts their manifest.
TRUST_SOURCES = frozenset({"project", "local", "vault", PROJECT_PLUGIN})
# Sources a project's own switches (hook-overrides.json, disableAllHooks, allowedHttpHookUrls) reach: its settings
# files, and the plugins only the project enables (hooks/plugins.py).
PROJECT_SOURCES = frozenset({"project", "local", PROJECT_PLUGIN})
_POSITION = re.compile(r"\$\.hooks\.(?P<event>[A-Za-z]+)\[(?P<group>\d+)\]\.hooks\[(?P<index>\d+)\]")
# The user's own Claude Code settings (~/.claude/settings.json): hooks `claude` runs for this user in every project.
# They run without the project's trust (the user wrote them), unless they run a file inside the project; only
# Orion's user settings switch them (`claudeUserHooks`, `disabledHooks`, `disableAllHooks`) besides their own file.
CLAUDE_USER = "claude-user"
# An organization's managed Claude Code settings (hooks/sources.py): their hooks are listed, never run by Orion.
MANAGED = "managed"
# The user's own Claude Code setup: their settings file's hooks and the plugins it enables. Both run without the
# project's trust except a hook that runs a file inside the project; `claudeUserHooks` switches both.
USER_CLAUDE_SOURCES = frozenset({CLAUDE_USER, PLUGIN})
# Built-in hooks that approve (the user's standing answers): off under an organization's allowManagedPermissionRulesOnly.
APPROVING_BUILTINS = frozenset({"auto-approve"})
# Session state key: the ids of `once` hooks that have succeeded in the session.
ONCE_DONE = "_hooks_once_done"


@dataclass(slots=True)
class HookSpec:
    """One hook as the engine knows it, whatever its source; `config` is the validated settings entry (None for programmatic)."""

    id: str
    name: str
    event: str
    matcher: str | None
    type: str
    source: str
    source_file: Path | None
    state: str = "active"
    reason: str | None = None
    timeout_s: float = 30.0
    fail_closed: bool = False
    run_async: bool = False
    config: Any = None
    # engine-internal
    json_path: str | None = None
    match: Matcher | None = None
    command: str | None = None
    script: Path | None = None
    cwd: Path | None = None
    fn: HookFunction | None = None
    scope: str = "global"
    scope_value: str | None = None
    builtin: bool = False
    dedupe_key: tuple[str, ...] | None = None
    log: logging.Logger | None = None
    # (file, digest) of every file this hook runs, as reviewed; checked again before each run.
    pinned: tuple[tuple[Path, str], ...] = ()
    # A hook of the user's own (claude-user) that runs a file inside the project: that file is the project's code,
    # so it waits for the project's trust, joins the trust manifest and is checked before each run like a project's.
    runs_project_code: bool = False
    # Exec form (a command entry with `args`): the program and its arguments as started, placeholders expanded,
    # no shell in between. None: shell form, `command` runs through `shell`.
    argv: tuple[str, ...] | None = None
    # The exec form as listings show it when a plugin's sensitive option is in `argv`: that word as written.
    shown_argv: tuple[str, ...] | None = None
    shell: str | None = None  # the entry's `shell` ("bash", "powershell"; None: the default, bash)
    condition: Condition | None = None  # `if`: runs only for tool calls the rule matches (hooks/conditions.py)
    once: bool = False  # a skill's hook: not run again in the session after its first success
    rewake: bool = False  # asyncRewake: in the background, and its exit 2 is reported as a block after the turn
    status_message: str | None = None

    # The Claude Code plugin this hook comes from (hooks.plugins.Plugin), and what its process gets on top of every
    # hook's environment (CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA).
    plugin: Any = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.state == "active"

    def skips(self, event: str, payload: dict[str, Any], state: Any, cwd: str) -> bool:
        """Whether the entry's own fields keep it from this call: its `if` does not hold, or it is a `once` hook that
        already succeeded in this session."""
        if self.condition is not None and not self.condition.holds(event, payload, cwd):
            return True
        return self.once and self.id in state.get(ONCE_DONE, ())

    def finished(self, outcome: str, state: Any) -> None:
        """After a run: a `once` hook that succeeded does not run again (Claude Code removes it on success only)."""
        if self.once and outcome == "success":
            state.setdefault(ONCE_DONE, set()).add(self.id)

    @property
    def label(self) -> str | None:
        """A command hook as Claude Code names it to the model (`[<label>]: <stderr>`): the command, then the
        arguments as written, joined by spaces."""
        if self.type != "command" or self.command is None:
            return None
        args = self.config.args if self.config is not None and getattr(self.config, "args", None) is not None else None
        return " ".join([self.command, *args]) if args is not None else self.command

    def to_listing(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "event": self.event,
            "matcher": self.matcher,
            "type": self.type,
            "source": self.source,
            "sourceFile": str(self.source_file) if self.source_file else None,
            "state": self.state,
            "reason": self.reason,
            "timeout": self.timeout_s,
            "failClosed": self.fail_closed,
            "async": self.run_async,
            **({"if": self.condition.text} if self.condition is not None else {}),
            **({"statusMessage": self.status_message} if self.status_message else {}),
            **({"once": True} if self.once else {}),
            **({"asyncRewake": True} if self.rewake else {}),
            "runs": self.runs(),
            **({"scope": {self.scope: self.scope_value}} if self.scope != "global" and self.scope_value else {}),
            **({"plugin": self.plugin.info()} if self.plugin is not None else {}),
            "at": self.position(),
        }

    def position(self) -> dict[str, Any] | None:
        """`{event, group, index}` of a settings entry in its file (`$.hooks.<event>[g].hooks[i]`), for editing."""
        match = _POSITION.fullmatch(self.json_path or "") if self.source_file is not None else None
        if match is None:
            return None
        return {"event": match["event"], "group": int(match["group"]), "index": int(match["index"])}

    def runs(self) -> dict[str, Any]:
        """Exactly what this hook executes or contacts, and a digest of each file it runs: what the user reviews."""
        config = self.config
        out: dict[str, Any] = {}
        if self.type == "command" and self.argv is not None:
            # Exec form: exactly what is started, word by word; no shell reads any of it.
            out["argv"] = list(self.shown_argv or self.argv)
            out["shell"] = None
            if self.cwd is not None:
                out["cwd"] = str(self.cwd)
            if any(printable(word)[1] for word in self.argv):
                out["unprintable"] = True
        elif self.type == "command" and self.command is not None:
            out["command"] = self.command
            out["shell"] = "powershell" if self.shell == "powershell" else "sh -c"
            if self.cwd is not None:
                out["cwd"] = str(self.cwd)
            if printable(self.command)[1]:
                out["unprintable"] = True
        elif self.type == "python" and self.script is not None:
            out["module"] = str(self.script)
        elif self.type == "http" and config is not None:
            out["url"] = config.url
            if config.headers:
                out["headers"] = sorted(config.headers)
        elif self.type == "mcp_tool" and config is not None:
            out["mcpTool"] = {"server": config.server, "tool": config.tool, "input": config.input}
        elif self.type in ("prompt", "agent") and config is not None:
            out["prompt"] = config.prompt
            out["model"] = config.model
        elif self.type == "callable" and self.fn is not None:
            out["function"] = f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', '?')}"
        if self.pinned:
            out["files"] = [{"path": str(path), "digest": digest} for path, digest in self.pinned]
        return out


@dataclass(slots=True)
class HookSet:
    """Every hook of one project (active or not), the load warnings, the trust decision, and what is needed to reload."""

    paths: SourcePaths
    entries: list[HookSpec]
    warnings: list[str]
    builtin_options: dict[str, dict[str, Any]]
    manifest: Manifest
    trust: TrustStatus
    registry: HookRegistry
    vault_dir: Path | None = None
    trust_store: TrustStore | None = None
    # The Claude Code plugins the user's and the project's settings enable, and each user plugin's pin state.
    plugins: list[Plugin] = field(default_factory=list)
    plugin_trust: dict[str, Any] = field(default_factory=dict)
    _active: dict[str, list[HookSpec]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for spec in self.entries:
            if spec.active:
                self._active.setdefault(spec.event, []).append(spec)

    @property
    def project_dir(self) -> Path:
        return self.paths.project_dir

    @property
    def trust_hash(self) -> str:
        return self.manifest.hash

    @property
    def trusted(self) -> bool:
        return self.trust.trusted

    def active_for(self, event: str) -> list[HookSpec]:
        return self._active.get(event, [])

    def by_name(self, name: str) -> list[HookSpec]:
        return [s for s in self.entries if s.name == name]

    def counts(self) -> dict[str, int]:
        """How many hooks are active, wait for trust, or were dropped by policy, and how many the organization's
        managed settings give the CLI to run itself (what session/new reports)."""
        states = [spec.state for spec in self.entries]
        return {"active": states.count("active"), "untrusted": states.count("untrusted"),
                "dropped": states.count("dropped"), "managed": states.count("managed")}

    @property
    def needs_trust(self) -> bool:
        return any(s.state == "untrusted" for s in self.entries)

    def reload(self) -> HookSet:
        """Re-read every file (same project, vault, registry and trust store)."""
        return load_hookset(
            self.paths.project_dir,
            self.vault_dir,
            registry=self.registry,
            builtin_settings=self.paths.builtin,
            user_settings=self.paths.user,
            claude_user_settings=self.paths.claude_user,
            trust_store=self.trust_store,
        )

    def to_listing(self) -> list[dict[str, Any]]:
        return [s.to_listing() for s in self.entries]

    def trust_listing(self) -> dict[str, Any]:
        """The trust decision as `hooks/list` reports it: hash to review, every pinned file, and what changed since trust."""
        return {
            "trusted": self.trust.trusted,
            "trustHash": self.manifest.hash,
            "trustedAt": self.trust.trusted_at,
            "files": [{"path": label, "digest": digest} for label, digest in sorted(self.manifest.files.items())],
            "changes": list(self.trust.changes),
            "plugins": [self._plugin_listing(plugin) for plugin in self.plugins],
        }

    def _plugin_listing(self, plugin: Plugin) -> dict[str, Any]:
        """One enabled plugin as the listing shows it: where it comes from, what it brings, and its trust state."""
        pin = self.plugin_trust.get(plugin.id)
        if plugin.problem:
            state = "unresolved"
        elif plugin.kind == PROJECT_PLUGIN:
            state = "trusted" if self.trust.trusted else "untrusted"
        else:
            state = "changed" if pin is not None and not pin.trusted else "trusted"
        return {**plugin.info(), "state": state, "problem": plugin.problem, "hash": plugin.content_hash,
                "components": list(plugin.components), "unsupported": list(plugin.unsupported),
                "dataDir": str(plugin.data_dir), "inPlace": plugin.in_place, "files": len(plugin.files),
                "pinnedAt": getattr(pin, "pinned_at", None), "pinnedVersion": getattr(pin, "pinned_version", None),
                "changes": list(pin.changes) if pin is not None and not pin.trusted else []}

    def held_back_plugins(self) -> set[str]:
        """Plugins the CLI must not load in a session of this project (flag settings `enabledPlugins: false`): a
        user's plugin whose content changed since its pin, and a project's plugin while the project is untrusted."""
        out = {pid for pid, pin in self.plugin_trust.items() if not pin.trusted}
        if not self.trust.trusted:
            out |= {p.id for p in self.plugins if p.kind == PROJECT_PLUGIN}
        return out

    def only(self, name: str) -> HookSet:
        """The same set with every hook but `name` left out (for `python -m hooks test --hook NAME`)."""
        return dataclasses.replace(self, entries=[s for s in self.entries if s.name == name])


@dataclass(slots=True)
class Switches:
    """Every switch that turns hooks off or narrows them, with the sources each one may reach."""

    user_disabled: frozenset[str] = frozenset()  # user settings `disabledHooks`: any hook, built-ins included
    project_disabled: frozenset[str] = frozenset()  # <project>/.claude/hook-overrides.json: project hooks only
    disable_all: dict[str, Path] = field(default_factory=dict)  # source kind -> the file whose disableAllHooks covers it
    trusted_urls: list[str] | None = None  # built-in and user allowedHttpHookUrls: every http hook
    project_urls: list[str] | None = None  # project and local allowedHttpHookUrls: narrow project hooks only
    claude_user_urls: list[str] | None = None  # the Claude Code user file's allowedHttpHookUrls: narrow its own hooks
    claude_user_on: bool = True  # Orion's user settings `claudeUserHooks` (only that file may set it)
    managed: ManagedPolicy = field(default_factory=lambda: ManagedPolicy())


@dataclass(slots=True)
class ManagedPolicy:
    """What an organization's managed Claude Code settings decide about hooks. Only those files (root's, on Linux)
    set any of it; nothing a user, a project or the agent writes loosens it. Measured on the bundled CLI 2.1.330, with
    Orion's flag settings `disableAllHooks: true` in place: the CLI still runs the managed files' own hooks;
    `allowManagedHooksOnly` stops the user's, the project's and the flag settings' hooks; a managed `disableAllHooks`
    stops every settings hook, the managed ones too; the SDK's callbacks (Orion's whole engine) are called in every
    case."""

    only_managed: Path | None = None  # the file whose allowManagedHooksOnly (or disableAllHooks) holds
    disable_all: Path | None = None  # the file whose disableAllHooks holds
    urls: list[str] | None = None  # allowedHttpHookUrls of the managed files: every http hook must match
    plugins_off: dict[str, Path] = field(default_factory=dict)  # enabledPlugins false: plugin id -> the file
    # httpHookAllowedEnvVars of the managed files: an http hook's allowedEnvVars is cut to these names.
    env_vars: list[str] | None = None
    # the file whose allowManagedPermissionRulesOnly holds: only its allow rules count, so no built-in approves
    rules_only: Path | None = None
    # strictPluginOnlyCustomization: the surfaces ("hooks", "skills", "agents", ...) only plugins and the managed
    # settings may customize, and the file that says so
    plugin_only: frozenset[str] = frozenset()
    plugin_only_file: Path | None = None
    # blockedMarketplaces, and strictKnownMarketplaces (or its alias allowedMarketplaces): (entries, file)
    blocked_markets: list[tuple[Any, Path]] = field(default_factory=list)
    strict_markets: list[Any] | None = None
    strict_file: Path | None = None

    @classmethod
    def read(cls, managed: list[ParsedSettings], docs: Mapping[Path, Any]) -> ManagedPolicy:
        """From the managed files as parsed, and as read (`docs`: file -> its JSON object, for the keys the hook
        parser does not keep and the CLI's own truthiness rules)."""
        out = cls()
        for p in managed:
            doc = docs.get(p.file) or {}
            # The CLI takes any disableAllHooks but false, "false" or null as set (a malformed policy restricts).
            if doc.get("disableAllHooks") not in (None, False, "false"):
                out.disable_all = out.disable_all or p.file
                out.only_managed = out.only_managed or p.file
            if p.allow_managed_hooks_only or doc.get("allowManagedHooksOnly") not in (None, False, "false"):
                out.only_managed = out.only_managed or p.file
            if p.allowed_http_urls is not None:
                out.urls = (out.urls or []) + p.allowed_http_urls
            if doc.get("allowManagedPermissionRulesOnly") not in (None, False, "false"):
                out.rules_only = out.rules_only or p.file
            locked = doc.get("strictPluginOnlyCustomization")
            if locked is not None and locked is not False:
                # `true` locks every surface; a list, the ones it names; anything else locks every one (restricts).
                surfaces = {str(x) for x in locked} if isinstance(locked, list) else {"*"}
                out.plugin_only |= surfaces
                out.plugin_only_file = out.plugin_only_file or p.file
            blocked = doc.get("blockedMarketplaces")
            out.blocked_markets += [(entry, p.file) for entry in (blocked if isinstance(blocked, list) else [])]
            allow = doc.get("strictKnownMarketplaces", doc.get("allowedMarketplaces"))
            if allow is not None:
                # Not a list: nothing is allowed (a malformed policy restricts).
                out.strict_markets = (out.strict_markets or []) + (allow if isinstance(allow, list) else [])
                out.strict_file = out.strict_file or p.file
            names = doc.get("httpHookAllowedEnvVars")
            if names is not None:
                # Not a list of names: no name is allowed (a malformed policy restricts).
                out.env_vars = (out.env_vars or []) + ([str(n) for n in names if isinstance(n, str)]
                                                       if isinstance(names, list) else [])
            section = doc.get("enabledPlugins")
            if isinstance(section, dict):
                for plugin_id, value in section.items():
                    # Managed settings outrank every other file: their `false` turns a plugin off for the session
                    # (their `true` makes it theirs: hooks/plugins.py MANAGED_PLUGIN).
                    if value is not True:
                        out.plugins_off[str(plugin_id)] = p.file
        return out

    def market_refusal(self, plugin: Plugin) -> str | None:
        """Why the organization's marketplace lists keep this plugin out (the CLI does not load it then, measured:
        a blocked local marketplace, an empty allowlist, one naming another source), or None."""
        from hooks.plugins import market_matches

        source = plugin.market_source
        for entry, file in self.blocked_markets:
            if market_matches(entry, source, blocking=True):
                return (f"its marketplace {plugin.marketplace!r} is in blockedMarketplaces of {file}, the "
                        "organization's managed settings: Claude Code does not load it")
        if self.strict_markets is not None and not any(market_matches(e, source) for e in self.strict_markets):
            return (f"its marketplace {plugin.marketplace!r} is not in strictKnownMarketplaces of {self.strict_file}, "
                    "the organization's managed settings: Claude Code does not load it")
        return None

    def notes(self, hooks: list[HookSpec]) -> list[str]:
        """What a session's warnings say about the managed settings' hooks (Orion neither runs nor observes them)."""
        out = []
        mine = [s for s in hooks if s.source == MANAGED and s.state == "managed"]
        if mine:
            files = sorted({str(s.source_file) for s in mine})
            out.append(f"{len(mine)} hook(s) of the organization's managed Claude Code settings ({', '.join(files)}) "
                       "run in the Claude Code CLI itself, as in Claude Code: Orion lists them (state \"managed\") "
                       "but neither runs nor can switch them off")
        theirs = sorted({s.plugin.id for s in hooks if s.source == MANAGED_PLUGIN and s.state == "managed"})
        if theirs:
            out.append(f"the organization's managed settings enable plugin(s) {', '.join(theirs)}: the Claude Code CLI "
                       "runs their hooks itself where it loads them (a session whose CLI reads the user's Claude Code "
                       "folder); Orion lists them (state \"managed\") and never runs them")
        for switch, where in (("allowManagedHooksOnly", self.only_managed),
                              ("strictPluginOnlyCustomization", self.plugin_only_file)):
            dropped = [s for s in hooks if s.state == "dropped" and (s.reason or "").startswith(switch)]
            if dropped:
                out.append(f"{switch} is set in {where}, the organization's managed settings: {len(dropped)} hook(s) "
                           "of other settings files do not run, as in Claude Code")
        return out


def _switches(parsed: dict[str, Any], overrides: frozenset[str], managed: ManagedPolicy | None = None) -> Switches:
    sw = Switches(user_disabled=parsed["user"].disabled_hooks, project_disabled=overrides,
                  managed=managed or ManagedPolicy())
    sw.claude_user_on = parsed["user"].claude_user_hooks is not False
    # Narrowest first, so the widest file (the user's own) is the one named when several set it.
    for kind, covers in (("vault", ("vault",)), ("local", PROJECT_SOURCES), ("project", PROJECT_SOURCES),
                         (CLAUDE_USER, (CLAUDE_USER, PLUGIN, PROJECT_PLUGIN)),
                         ("user", ("user", CLAUDE_USER, "vault", "project", "local", PLUGIN, PROJECT_PLUGIN,
                                   "programmatic"))):
        p = parsed.get(kind)
        if p is not None and p.disable_all:
            for covered in covers:
                sw.disable_all[covered] = p.file
    for kind in ("builtin", "user"):
        if parsed[kind].allowed_http_urls is not None:
            sw.trusted_urls = (sw.trusted_urls or []) + parsed[kind].allowed_http_urls
    for kind in ("project", "local"):
        if parsed[kind].allowed_http_urls is not None:
            sw.project_urls = (sw.project_urls or []) + parsed[kind].allowed_http_urls
    if CLAUDE_USER in parsed:
        sw.claude_user_urls = parsed[CLAUDE_USER].allowed_http_urls
    return sw


def _misplaced_switches(parsed: dict[str, Any]) -> list[str]:
    """`claudeUserHooks` anywhere but Orion's user settings: said, and ignored (a project must not reach the user's hooks)."""
    out = [f"{p.file}: $.claudeUserHooks: only Orion's user settings may turn the user's Claude Code hooks on or off; ignored"
           for kind, p in parsed.items() if kind != "user" and p.claude_user_hooks is not None]
    out += [f"{p.file}: $.allowManagedHooksOnly: only an organization's managed settings restrict hooks this way (as in "
            "Claude Code); ignored" for p in parsed.values() if p.allow_managed_hooks_only]
    # Options of the built-in hooks (a guard's, auto-approve's): the user's settings only (hooks/sources.py).
    out += [f"{p.file}: $.builtin: only Orion's user settings configure the built-in hooks; ignored"
            for kind, p in parsed.items() if kind not in ("user", "builtin") and p.builtin_options]
    user = parsed.get("user")
    if user is not None:
        out += [f"{user.file}: $.builtin.{name}: only {', '.join(sorted(USER_CONFIGURABLE_BUILTINS))} are configured "
                "here (a guard is turned off with disabledHooks); ignored"
                for name in sorted(set(user.builtin_options) - USER_CONFIGURABLE_BUILTINS)]
    return out
    return out


def load_hookset(
    project_dir: Path,
    vault_dir: Path | None = None,
    *,
    registry: HookRegistry | None = None,
    builtin_settings: Path | None = None,
    user_settings: Path | None = None,
    claude_user_settings: Path | None = None,
    trust_store: TrustStore | None = None,
    overlay: Mapping[Path, Any] | None = None,
    managed_settings: tuple[Path, ...] | None = None,
) -> HookSet:
    """Read every source and apply policy, switches and trust. Never raises for bad files: they become warnings and
    invalid entries. `overlay` (resolved path → document) stands in for settings files an edit has not written yet;
    `managed_settings` for the platform's managed settings files (tests; a session always reads the platform's)."""
    paths = SourcePaths.for_project(project_dir, vault_dir, builtin_settings=builtin_settings, user_settings=user_settings,
                                    claude_user_settings=claude_user_settings, managed_settings=managed_settings)
    registry = default_registry if registry is None else registry
    store = trust_store if trust_store is not None else TrustStore()
    warnings: list[str] = []

    parsed = {}
    managed: list[ParsedSettings] = []  # the organization's files: one kind, several files
    files: list[tuple[str, ParsedSettings]] = []  # every file, in SOURCE_ORDER
    for kind, path in paths.ordered():
        p = read_settings(kind, path, paths.hooks_dir, overlay)
        files.append((kind, p))
        if kind == MANAGED:
            managed.append(p)
        else:
            parsed[kind] = p
        warnings.extend(p.errors)
        warnings.extend(p.warnings)
    overrides, problems = read_overrides(paths.overrides)
    warnings.extend(problems)
    warnings.extend(_misplaced_switches(parsed))
    if paths.claude_user_is_project_file:
        warnings.append(f"{paths.claude_user}: the user's Claude Code settings are this project's own settings file "
                        "(the project is the home directory); read once, as the project's: its hooks wait for trust")

    # The managed files as JSON objects, read once for the policy and the plugins they enable.
    managed_docs = {path: doc for path in paths.managed if isinstance(doc := read_json(path)[0], dict)}
    policy = ManagedPolicy.read(managed, managed_docs)
    builder = _Builder(paths, warnings, _switches(parsed, overrides, policy))
    for kind, p in files:
        for raw in p.entries:
            builder.add_settings_entry(kind, p.file, raw)
    # The project's subagents and skills with hooks of their own (hooks/scoped.py): project hooks, scoped.
    for scoped in read_scoped(paths.project_dir, warnings):
        warnings.extend(scoped.parsed.errors)
        for raw in scoped.parsed.entries:
            builder.add_settings_entry("project", scoped.parsed.file, raw, scope=(scoped.scope, scoped.name))
    # The Claude Code plugins the user's and the project's settings enable (hooks/plugins.py), after the files.
    plugins = load_plugins(None if paths.claude_user_is_project_file else paths.claude_user, paths.project_dir,
                           [paths.project, paths.local], warnings, list(managed_docs.items()))
    for plugin in plugins:
        for section in plugin.hooks:
            warnings.extend(section.errors)
            for raw in section.entries:
                builder.add_settings_entry(plugin.kind, section.file, raw, plugin=plugin)
    for prog in registry:
        builder.add_programmatic(prog)
    builder.check_switch_names()
    builder.check_shadowing()
    warnings.extend(policy.notes(builder.specs))

    vault_root = Path(vault_dir).expanduser().resolve() if vault_dir is not None else None
    project_plugins = [p for p in plugins if p.kind == PROJECT_PLUGIN]
    manifest = build_manifest(paths.project_dir, vault_root, builder.trust_files(project_plugins),
                              plugins=project_plugins)
    status = store.status(paths.project_dir, manifest, vault_root)
    builder.apply_trust(status, manifest)
    plugin_trust = {p.id: store.plugin_status(p.id, p.content_hash, p.files, version=p.version, root=str(p.root))
                    for p in plugins if p.kind == PLUGIN and p.problem is None}
    builder.apply_plugin_trust(plugin_trust)
    for plugin in plugins:
        if any(s.plugin is plugin and s.active for s in builder.specs):
            ensure_data_dir(plugin)

    return HookSet(
        paths=paths,
        entries=builder.specs,
        warnings=warnings,
        builtin_options={**parsed["builtin"].builtin_options, **user_builtin_options(parsed["user"])},
        manifest=manifest,
        trust=status,
        registry=registry,
        vault_dir=vault_dir,
        trust_store=trust_store,
        plugins=plugins,
        plugin_trust=plugin_trust,
    )


class _Builder:
    """Turns raw entries and programmatic hooks into HookSpecs with their state, in order."""

    def __init__(self, paths: SourcePaths, warnings: list[str], switches: Switches) -> None:
        self.paths = paths
        self.warnings = warnings
        self.switches = switches
        self.specs: list[HookSpec] = []
        self._ids: set[str] = set()
        self._dedupe: dict[tuple, HookSpec] = {}

    def _unique_id(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self._ids:
            n += 1
            candidate = f"{base}-{n}"
        self._ids.add(candidate)
        return candidate

    def add_settings_entry(self, kind: str, file: Path, raw: RawEntry, *, scope: tuple[str, str] | None = None,
                           plugin: Plugin | None = None) -> None:
        config = raw.config
        digest_src = json.dumps(
            [kind, raw.event, raw.matcher, config.model_dump(mode="json", by_alias=True) if config else raw.json_path,
             *(list(scope) if scope else []), *([plugin.id] if plugin is not None else [])],
            sort_keys=True,
        )
        hid = self._unique_id(f"{kind}:{raw.event}:{hashlib.sha256(digest_src.encode()).hexdigest()[:10]}")
        htype = config.type if config else raw.type_hint
        spec = HookSpec(
            id=hid,
            name=(config.name if config and config.name else _plugin_hook_name(plugin, htype, config, raw)
                  if plugin is not None else _derived_name(htype, config, raw)),
            event=raw.event,
            matcher=raw.matcher,
            type=htype,
            source=kind,
            source_file=file,
            timeout_s=(config.timeout if config and config.timeout else DEFAULT_TIMEOUT_S.get(htype, 30.0)),
            fail_closed=bool(config and config.failClosed),
            run_async=bool(config and (config.async_ or getattr(config, "asyncRewake", False))),
            config=config,
            json_path=raw.json_path,
            cwd=raw.cwd,
            builtin=(kind == "builtin"),
            scope=scope[0] if scope else "global",
            scope_value=scope[1] if scope else None,
            plugin=plugin,
            env=plugin.env if plugin is not None else {},
        )
        spec.log = logging.getLogger(f"hooks.hook.{spec.name}")
        where = f"{file}: {raw.json_path}"
        if config is not None:
            self._entry_fields(spec, config, where)
        if raw.error:
            spec.state, spec.reason = "invalid", raw.error
        elif not self._compile(spec, where):
            pass
        elif (ruled := self._managed_rule(spec)) is not None:
            spec.state, spec.reason = ruled
        elif htype == "http" and (url_problem := self._url_problem(kind, config.url)):
            spec.state, spec.reason = "invalid", url_problem
            self.warnings.append(f"{where}: {spec.reason}")
        elif kind in USER_CLAUDE_SOURCES and not self.switches.claude_user_on:
            spec.state = "disabled"
            spec.reason = (f"claudeUserHooks is false in {self.paths.user}: hooks from the user's Claude Code settings "
                           f"({plugin.enabled_in if plugin is not None else file}) do not run in Orion")
        elif plugin is not None and htype == "python":
            spec.state, spec.reason = "invalid", ("type \"python\" is Orion's own; a Claude Code plugin's hooks are "
                                                  "command, http, prompt or agent hooks")
            self.warnings.append(f"{where}: {spec.reason}")
        elif kind in ("user", "vault") and htype != "prompt":
            spec.state = "dropped"
            spec.reason = f"{htype} hooks are not allowed in {kind} settings (only prompt hooks are); dropped"
            self.warnings.append(f"{where}: {htype} hook {spec.name!r} dropped by policy: only prompt hooks are allowed from {kind} settings")
        else:
            self._apply_switches(spec, config.enabled, where)
        if htype == "http" and config is not None and spec.state in ("active", "disabled", "untrusted"):
            spec.config = config = self._managed_env_vars(config, where)
        if spec.state in ("active", "disabled", "managed") and config is not None:
            self._prepare_executable(spec, config, where)
        if spec.fail_closed and spec.state != "invalid":
            self._check_fail_closed(spec, where)
        self.specs.append(spec)

    def _entry_fields(self, spec: HookSpec, config: Any, where: str) -> None:
        """`if`, `once`, `statusMessage`, `asyncRewake`: what they do here, and a warning where Claude Code would
        quietly not do what the author wrote."""
        spec.status_message = config.statusMessage or None
        spec.rewake = bool(getattr(config, "asyncRewake", False))
        if config.if_:
            try:
                spec.condition = parse_condition(config.if_)
            except ConditionError as exc:
                # The CLI reads a malformed rule as a tool name no call has: the hook never runs. Said, and kept so.
                spec.condition = Condition(config.if_, config.if_)
                self.warnings.append(f"{where}: if: {exc}; the hook never runs")
            if spec.event not in TOOL_CONDITION_EVENTS:
                msg = (f"if: hook {spec.name!r} never runs: a condition is tested only on tool events "
                       f"({', '.join(sorted(TOOL_CONDITION_EVENTS))}), and Claude Code skips a hook with one on "
                       f"{spec.event}; remove \"if\" or move the hook")
                self.warnings.append(f"{where}: {msg}")
                spec.reason = msg
        if config.once:
            if spec.scope == "skill":
                spec.once = True
            else:
                self.warnings.append(f"{where}: once: has effect only on a skill's hooks; Claude Code runs hook "
                                     f"{spec.name!r} every time, and so does Orion")

    def _check_user_config(self, spec: HookSpec, where: str) -> None:
        """A plugin's exec-form hook whose `${user_config.KEY}` has no saved value does not run (the CLI skips it,
        measured, and the model reads nothing of it): listed invalid, with the keys, and said."""
        missing = sorted({m.group(1) for w in spec.argv or () for m in USER_CONFIG_PLACEHOLDER.finditer(w)})
        if missing and spec.state in ("active", "disabled"):
            spec.state, spec.reason = "invalid", (
                f"its arguments use the option(s) {', '.join(missing)} of plugin {spec.plugin.id}, which have no saved "
                "value (Claude Code's /plugin sets them); Claude Code does not run it either")
            self.warnings.append(f"{where}: {spec.reason}")

    def _check_fail_closed(self, spec: HookSpec, where: str) -> None:
        # A promise the engine cannot keep is worse than none: the author believes a gate exists.
        if spec.run_async:
            why = "it is async: nobody waits for its answer, so its failure cannot refuse anything"
        elif spec.event not in BLOCKING_EVENTS and spec.event not in FEEDBACK_EVENTS:
            why = f"{spec.event} cannot be refused, so its failure refuses nothing"
        else:
            return
        self.warnings.append(f"{where}: failClosed on hook {spec.name!r} has no effect: {why}")

    def _managed_rule(self, spec: HookSpec) -> tuple[str, str] | None:
        """(state, reason) the organization's managed settings give a settings hook, or None: their own hooks are the
        CLI's to run; their disableAllHooks stops every settings hook, allowManagedHooksOnly every hook but theirs;
        their enabledPlugins `false` turns a plugin's hooks off. Built-in and programmatic hooks are Orion's and the
        host's own features (SDK callbacks, which the CLI calls under either switch)."""
        policy = self.switches.managed
        if spec.builtin:
            return None
        if policy.disable_all is not None:
            return "disabled", (f"disableAllHooks is set in {policy.disable_all}, the organization's managed settings: "
                                "no settings hook runs, as in Claude Code")
        if spec.source == MANAGED:
            return "managed", ("an organization's managed hook: the Claude Code CLI runs it itself, as in Claude Code; "
                               "Orion neither runs nor can switch it off")
        if spec.source == MANAGED_PLUGIN:
            return "managed", (f"plugin {spec.plugin.id} is enabled by {spec.plugin.enabled_in}, the organization's "
                               "managed settings: the Claude Code CLI runs its hooks itself, where it loads the plugin "
                               "(a session whose CLI reads the user's Claude Code folder); Orion never runs them")
        if spec.plugin is not None and spec.plugin.id in policy.plugins_off:
            return "disabled", (f"enabledPlugins turns plugin {spec.plugin.id} off in "
                                f"{policy.plugins_off[spec.plugin.id]}, the organization's managed settings")
        if spec.plugin is not None and (why := policy.market_refusal(spec.plugin)):
            return "disabled", why
        if policy.only_managed is not None:
            return "dropped", (f"allowManagedHooksOnly is set in {policy.only_managed}, the organization's managed "
                               "settings: only its own hooks run, as in Claude Code")
        locked = policy.plugin_only
        surface = spec.scope if spec.scope in ("skill", "agent") else "hooks"
        if spec.plugin is None and locked and ("*" in locked or "hooks" in locked or f"{surface}s" in locked):
            return "dropped", (f"strictPluginOnlyCustomization is set in {policy.plugin_only_file}, the organization's "
                               "managed settings: only plugins and the managed settings customize "
                               f"{'hooks' if surface == 'hooks' else surface + 's'} here, as in Claude Code")
        return None

    def _managed_env_vars(self, config: Any, where: str) -> Any:
        """An http hook's entry with its allowedEnvVars cut to the organization's httpHookAllowedEnvVars, when the
        managed settings set one (the CLI takes the intersection); said when a name goes."""
        limit = self.switches.managed.env_vars
        gone = sorted(set(config.allowedEnvVars) - set(limit)) if limit is not None else []
        if not gone:
            return config
        self.warnings.append(f"{where}: allowedEnvVars: {', '.join(gone)} left out: the organization's managed "
                             "settings (httpHookAllowedEnvVars) do not allow them in http hook headers")
        return config.model_copy(update={"allowedEnvVars": [n for n in config.allowedEnvVars if n in limit]})

    def _url_problem(self, kind: str, url: str) -> str | None:
        # Each pattern is matched part by part on the parsed URL (hooks/url_patterns.py), never as one string.
        sw = self.switches
        refused = url_problem(url)
        if refused is not None:
            return refused
        if sw.managed.urls is not None and not any(url_matches(url, pat) for pat in sw.managed.urls):
            return (f"url {url!r} matches no allowedHttpHookUrls pattern of the organization's managed settings "
                    f"({len(sw.managed.urls)} pattern(s))")
        if sw.trusted_urls is not None and not any(url_matches(url, pat) for pat in sw.trusted_urls):
            return f"url {url!r} matches no allowedHttpHookUrls pattern of the user's settings"
        if kind in PROJECT_SOURCES and sw.project_urls is not None and not any(
            url_matches(url, pat) for pat in sw.project_urls
        ):
            return f"url {url!r} matches no allowedHttpHookUrls pattern of the project's settings"
        if kind in USER_CLAUDE_SOURCES and sw.claude_user_urls is not None and not any(
            url_matches(url, pat) for pat in sw.claude_user_urls
        ):
            return f"url {url!r} matches no allowedHttpHookUrls pattern of the user's Claude Code settings"
        return None

    def add_programmatic(self, prog: ProgrammaticHook) -> None:
        source = "builtin" if prog.builtin else "programmatic"
        spec = HookSpec(
            id=self._unique_id(f"{source}:{prog.event}:{prog.name}"),
            name=prog.name,
            event=prog.event,
            matcher=prog.matcher,
            type="callable",
            source=source,
            source_file=None,
            timeout_s=float(prog.timeout),
            fail_closed=prog.fail_closed,
            run_async=prog.run_async,
            fn=prog.fn,
            scope=prog.scope,
            scope_value=prog.scope_value,
            builtin=prog.builtin,
        )
        spec.log = logging.getLogger(f"hooks.hook.{prog.name}")
        rules_only = self.switches.managed.rules_only
        if not self._compile(spec, f"programmatic hook {prog.name!r}"):
            pass
        elif prog.builtin and prog.name in APPROVING_BUILTINS and rules_only is not None:
            # The user's standing allow list is an allow rule by another name; the organization allows only its own.
            spec.state, spec.reason = "disabled", (
                f"allowManagedPermissionRulesOnly is set in {rules_only}, the organization's managed settings: only "
                "their allow rules approve a tool, so the user's auto-approve list does not (as Claude Code ignores "
                "the user's allow rules then)")
        else:
            self._apply_switches(spec, True, f"programmatic hook {prog.name!r}")
        self.specs.append(spec)

    def check_switch_names(self) -> None:
        """Say when a switch names no hook (a typo: with the closest known name) or a hook its file may not turn off."""
        sw = self.switches
        sources_of: dict[str, set[str]] = {}
        for spec in self.specs:
            sources_of.setdefault(spec.name, set()).add(spec.source)
        for name in sorted(sw.project_disabled):
            found = sources_of.get(name)
            if not found:
                own = [n for n, kinds in sources_of.items() if kinds & PROJECT_SOURCES]
                self.warnings.append(f"{self.paths.overrides}: $.disabled: {name!r} names no hook"
                                     f"{_closest(name, own or list(sources_of))}; nothing is turned off by it")
            elif not found & PROJECT_SOURCES:
                self.warnings.append(
                    f"{self.paths.overrides}: $.disabled: {name!r} is a {'/'.join(sorted(found))} hook; a project may turn "
                    "off only its own hooks (built-in, app and the user's Claude Code hooks are turned off in the user's "
                    "settings: disabledHooks); ignored"
                )
        for name in sorted(sw.user_disabled):
            if name not in sources_of:
                self.warnings.append(f"{self.paths.user}: $.disabledHooks: {name!r} names no hook"
                                     f"{_closest(name, list(sources_of))}; nothing is turned off by it")

    def trust_files(self, project_plugins: list[Plugin] = ()) -> list[Path]:  # type: ignore[assignment]
        """The files hooks from untrusted sources would run, and the project files the user's own hooks would run
        (when they run): part of what the user trusts. A project plugin's own files are pinned as the plugin's."""
        roots = [p.root for p in project_plugins if p.root is not None]
        files = [path for spec in self.specs if spec.source in TRUST_SOURCES for path, _ in spec.pinned
                 if not any(Path(os.path.normpath(path)).is_relative_to(root) for root in roots)]
        for spec in self.specs:
            if spec.runs_project_code and spec.state == "active":
                files += [path for path, _ in spec.pinned if self._in_project(path)]
        return files

    def _in_project(self, path: Path) -> bool:
        return Path(os.path.normpath(path)).is_relative_to(self.paths.project_dir)

    def apply_trust(self, status: TrustStatus, manifest: Manifest) -> None:
        if status.trusted:
            return
        if status.changes:
            listed = ", ".join(f"{c['path']} ({c['change']})" for c in status.changes[:8])
            more = f" and {len(status.changes) - 8} more" if len(status.changes) > 8 else ""
            why = f"the project changed since it was trusted: {listed}{more}"
        else:
            why = "the project is not trusted yet"
        reason = (f"{why}; review what its hooks run (`python -m hooks list --project {self.paths.project_dir}`), then "
                  f"trust it with `python -m hooks trust --project {self.paths.project_dir} --hash {manifest.hash}`")
        untrusted = [s for s in self.specs if s.source in TRUST_SOURCES and s.state == "active"]
        for spec in untrusted:
            spec.state, spec.reason = "untrusted", f"{reason}; {spec.reason}" if spec.reason else reason
        for spec in self.specs:
            if spec.runs_project_code and spec.state == "active":
                inside = ", ".join(str(p) for p, _ in spec.pinned if self._in_project(p))
                whose = (f"the user's plugin {spec.plugin.id}" if spec.plugin is not None
                         else "the user's Claude Code settings")
                why_user = (f"this hook of {whose} runs {inside}, which is the project's code: "
                            f"it waits for the project's trust; {reason}")
                spec.state, spec.reason = "untrusted", f"{why_user}; {spec.reason}" if spec.reason else why_user
                untrusted.append(spec)
        if untrusted and status.changes:
            self.warnings.append(f"{self.paths.project_dir}: {why}; its hooks do not run until it is trusted again")

    def apply_plugin_trust(self, pins: dict[str, Any]) -> None:
        """A user's plugin whose content differs from its pin (an update) waits for the user's trust, naming what changed."""
        for plugin_id, pin in pins.items():
            if pin.trusted:
                continue
            listed = ", ".join(f"{c['path']} ({c['change']})" for c in pin.changes[:8])
            more = f" and {len(pin.changes) - 8} more" if len(pin.changes) > 8 else ""
            since = "first seen" if pin.pinned_how == "first-seen" else "trusted"
            why = (f"plugin {plugin_id} changed since it was {since} (version {pin.pinned_version or 'unknown'}, "
                   f"{pin.pinned_at}): {listed}{more}; review it, then trust it again with `python -m hooks trust "
                   f"--project {self.paths.project_dir} --plugin {plugin_id}` (or hooks/trust with its \"plugin\")")
            held = [s for s in self.specs if s.plugin is not None and s.plugin.id == plugin_id and s.state == "active"]
            for spec in held:
                spec.state, spec.reason = "untrusted", f"{why}; {spec.reason}" if spec.reason else why
            self.warnings.append(f"{why}; its hooks do not run and the CLI does not load it until then")

    def _compile(self, spec: HookSpec, where: str) -> bool:
        try:
            spec.match = compile_matcher(spec.matcher)
        except MatcherError as exc:
            spec.state, spec.reason = "invalid", str(exc)
            self.warnings.append(f"{where}: {exc}")
            return False
        if not spec.builtin and (problem := matcher_problem(spec.event, spec.matcher)) is not None:
            # The matcher is the group's: said once for the group, not once per hook in it.
            group = where.rsplit(".hooks[", 1)[0] if spec.json_path and spec.json_path.endswith("]") else where
            if f"{group}: {problem}" not in self.warnings:
                self.warnings.append(f"{group}: {problem}")
        return True

    def check_shadowing(self) -> None:
        """Say when an active hook can never run because an earlier identical one (same command, failClosed and
        timeout) on the same event has a matcher that covers all of its own: the engine runs identical hooks once."""
        active = [s for s in self.specs if s.active and s.dedupe_key is not None and s.scope == "global"]
        for i, later in enumerate(active):
            for earlier in active[:i]:
                if earlier.event != later.event or earlier.dedupe_key != later.dedupe_key:
                    continue
                if _covers(earlier.matcher, later.matcher):
                    self.warnings.append(
                        f"{_where(later)}: hook {later.name!r} never runs: {_where(earlier)} runs the same command "
                        f"(same args, shell, if, failClosed and timeout) for every tool its matcher {later.matcher!r} "
                        "selects, and "
                        "identical hooks run once; remove one, or give it its own command")
                    break

    def _apply_switches(self, spec: HookSpec, enabled: bool, where: str) -> None:
        sw = self.switches
        if not enabled:
            spec.state, spec.reason = "disabled", "enabled: false"
        elif spec.name in sw.user_disabled:
            spec.state, spec.reason = "disabled", f"disabled by disabledHooks in {self.paths.user}"
        elif spec.source in PROJECT_SOURCES and spec.name in sw.project_disabled:
            spec.state, spec.reason = "disabled", f"disabled by {self.paths.overrides}"
        elif not spec.builtin and spec.source in sw.disable_all:
            spec.state, spec.reason = "disabled", f"disableAllHooks is set in {sw.disable_all[spec.source]}"

    def _prepare_executable(self, spec: HookSpec, config: Any, where: str) -> None:
        if spec.type == "command":
            # A plugin's shell command with its root written in, as the CLI words it: pins and the after-`cd` check
            # see the real paths (${CLAUDE_PLUGIN_DATA} stays for the shell, from the hook's environment).
            command = spec.plugin.shell_command(config.command) if spec.plugin is not None else config.command
            spec.command = command
            spec.shell = config.shell
            # Identity as Claude Code has it (shell, command, args, if), plus what Orion adds to it.
            key = ("command", spec.event, spec.matcher or "", command, str(spec.cwd or ""), spec.fail_closed,
                   spec.timeout_s, spec.scope, spec.scope_value or "", config.shell or "bash",
                   json.dumps(config.args), config.if_ or "")
            cwd = spec.cwd or self.paths.project_dir
            options = spec.plugin.options if spec.plugin is not None else None
            if config.args is not None:
                spec.argv = tuple(expand_exec_word(w, self.paths.project_dir, spec.env.get("CLAUDE_PLUGIN_ROOT"),
                                                   spec.env.get("CLAUDE_PLUGIN_DATA"), options)
                                  for w in (config.command, *config.args))
                self._check_exec(spec, config, where)
                spec.pinned = pins(argv_files(spec.argv, cwd))
                if options is not None:
                    self._check_user_config(spec, where)
                    if spec.plugin.sensitive:  # a secret the user saved is not for listings (hooks/list, the CLI's)
                        shown = {k: v for k, v in options.items() if k not in spec.plugin.sensitive}
                        spec.shown_argv = tuple(
                            expand_exec_word(w, self.paths.project_dir, spec.env.get("CLAUDE_PLUGIN_ROOT"),
                                             spec.env.get("CLAUDE_PLUGIN_DATA"), shown)
                            for w in (config.command, *config.args))
            else:
                if options is not None and "${user_config." in command and spec.state != "managed":
                    # The CLI refuses this (the value would be parsed by the shell) and does not run the hook.
                    spec.state, spec.reason = "invalid", (
                        f"a plugin's shell-form command may not use ${{user_config.*}} (the shell would parse the "
                        "value): use the exec form (\"args\") or read $CLAUDE_PLUGIN_OPTION_<KEY>; Claude Code does not "
                        "run it either")
                    self.warnings.append(f"{where}: {spec.reason}")
                self._check_command(spec, command, where)
                spec.pinned = pins(command_files(command, cwd, self.paths.project_dir))
        elif spec.type == "python":
            spec.script = self._resolve_script(spec, config.script)
            key = ("python", spec.event, spec.matcher or "", str(spec.script), "", spec.fail_closed, spec.timeout_s,
                   spec.scope, spec.scope_value or "")
            spec.pinned = pins([spec.script])
            if not spec.script.is_file():
                msg = f"python hook script {spec.script} does not exist; the hook will fail every time it runs"
                self.warnings.append(f"{where}: {msg}")
                spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg
        elif spec.type == "mcp_tool":
            # Identity as Claude Code has it: server, tool, input, whether a failure blocks, and `if`.
            key = ("mcp_tool", spec.event, spec.matcher or "", config.server, config.tool,
                   json.dumps(config.input, sort_keys=True), config.onFailure not in (None, "continue"),
                   spec.fail_closed, spec.timeout_s, spec.scope, spec.scope_value or "", config.if_ or "")
        else:
            return
        if spec.plugin is not None:
            # A word the shell expands at run time (`"$_P/scripts/x.js"`) names no file the load can see; the plugin's
            # own files are pinned whole (hooks/plugins.py), so only real paths outside it are kept.
            spec.pinned = tuple((path, digest) for path, digest in spec.pinned if "$" not in str(path))
        if spec.source in USER_CLAUDE_SOURCES:
            spec.runs_project_code = any(self._in_project(path) for path, _ in spec.pinned)
        if spec.state != "active":
            return
        # Identical hooks run once, as in Claude Code; failClosed and the timeout are part of what makes two hooks
        # identical (a fail-closed gate must not vanish behind a fail-open twin that runs the same command).
        first = self._dedupe.get(key)
        if first is not None:
            spec.state, spec.reason = "disabled", f"identical to {first.id}; identical command hooks run once"
            self.warnings.append(f"{where}: hook {spec.name!r} never runs: it is identical to {_where(first)} "
                                 "(same command, args, shell, if, matcher, failClosed and timeout; identical hooks "
                                 "run once); remove one")
        else:
            self._dedupe[key] = spec
        spec.dedupe_key = key[:1] + key[3:]

    def _check_exec(self, spec: HookSpec, config: Any, where: str) -> None:
        """An exec-form entry: its program is started without a shell, so a second word in `command`, a
        `${CLAUDE_PLUGIN_ROOT}` outside a plugin or a missing program or script can only fail; say so at load."""
        assert spec.argv is not None
        problems: list[str] = []
        program = spec.argv[0]
        if config.shell is not None:
            self.warnings.append(f"{where}: shell: {config.shell!r} has no effect: with \"args\" the program is "
                                 "started without a shell")
        if any(c.isspace() for c in config.command) and "/" not in config.command:
            problems.append(f"exec form starts \"command\" as one program, and no program is called "
                            f"{config.command!r}: hook {spec.name!r} will fail every time it runs; put the program "
                            "alone in \"command\" and the rest in \"args\"")
        unexpanded = sorted({v for w in spec.argv for v in ("CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA")
                             if "${" + v + "}" in w})
        for var in unexpanded:
            problems.append(f"${{{var}}} is set only for a plugin's hooks: hook {spec.name!r} will fail every time it "
                            "runs")
        if not problems and "/" in program:
            path = Path(program) if os.path.isabs(program) else (spec.cwd or self.paths.project_dir) / program
            if not path.exists():
                problems.append(f"program {path} does not exist; hook {spec.name!r} will fail every time it runs")
            elif path.is_dir() or not os.access(path, os.X_OK):
                problems.append(f"program {path} is not an executable file")
        elif not problems and shutil.which(program) is None:
            problems.append(f"program {program!r} is not on PATH; hook {spec.name!r} will fail every time it runs "
                            "(give its path)")
        if not problems and INTERPRETER.fullmatch(os.path.basename(program)):
            script = next((a for a in spec.argv[1:] if not a.startswith("-")), None)
            flags = [a for a in spec.argv[1:] if a in ("-c", "-m", "-e", "--eval")]
            if script is not None and not flags and script.endswith(SCRIPT_SUFFIXES):
                path = Path(script) if os.path.isabs(script) else (spec.cwd or self.paths.project_dir) / script
                if not path.exists():
                    problems.append(f"script {path} does not exist (run by {program}); hook {spec.name!r} will fail "
                                    "every time it runs")
        for msg in problems:
            self.warnings.append(f"{where}: {msg}")
            spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg

    def _resolve_script(self, spec: HookSpec, script: str) -> Path:
        script = expand_project_dir(script, self.paths.project_dir)
        path = Path(script).expanduser()
        if path.is_absolute():
            return path
        # Built-in and the user's Claude Code settings resolve next to their own file (~/.claude/x.py), never in the project.
        own_dir = spec.source in ("builtin", CLAUDE_USER) and spec.source_file
        base = spec.source_file.parent if own_dir else self.paths.hooks_dir
        return base / path

    def _check_command(self, spec: HookSpec, command: str, where: str) -> None:
        # A mistyped path that silently disables a security gate is the failure users hate most: say so at load.
        self._check_interpreter_script(spec, command, where)
        word = first_word(command)
        if word and "/" not in word:
            self._check_bare_program(spec, word, where)
            return
        if not word:
            return
        word = expand_project_dir(word, self.paths.project_dir)
        path = Path(word).expanduser()
        if not path.is_absolute():
            path = (spec.cwd or self.paths.project_dir) / path
        if not path.exists():
            msg = f"command path {path} does not exist; hook {spec.name!r} will fail every time it runs (check the path)"
        elif path.is_dir():
            msg = f"command path {path} is a directory, not an executable"
        elif not os.access(path, os.X_OK):
            msg = f"command path {path} is not executable; fix with: chmod +x {shlex.quote(str(path))}"
        else:
            return
        self.warnings.append(f"{where}: {msg}")
        spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg


    def _check_bare_program(self, spec: HookSpec, word: str, where: str) -> None:
        # `audit.sh` (a legacy bare name, or a typo) that is neither a shell word nor on PATH: the shell answers 127.
        if word in _SHELL_WORDS or word.startswith(("$", "(", "{", "!")) or "=" in word or any(c in word for c in "*?[`"):
            return
        if shutil.which(word) is not None:
            return
        msg = (f"program {word!r} is not on PATH nor a shell builtin; hook {spec.name!r} will fail every time it "
               f"runs (exit 127; give a path, e.g. \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/{word})")
        self.warnings.append(f"{where}: {msg}")
        spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg

    def _check_interpreter_script(self, spec: HookSpec, command: str, where: str) -> None:
        # `python3 hooks/gate.py` with a typo: python exits 2, which hook semantics read as "block".
        script = interpreter_script(command)
        if script is None:
            return
        path = Path(expand_project_dir(script, self.paths.project_dir)).expanduser()
        if not path.is_absolute():
            path = (spec.cwd or self.paths.project_dir) / path
        if path.exists():
            return
        msg = (f"script {path} does not exist (run by {first_word(command)}); hook {spec.name!r} will fail every "
               f"time it runs (python exits 2, which blocks like a deliberate exit 2)")
        self.warnings.append(f"{where}: {msg}")
        spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg




_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def printable(text: str) -> tuple[str, bool]:
    """(text as a terminal can show it, whether anything had to be escaped): control, format (bidi overrides,
    zero-width) and unassigned characters become escapes, so what is reviewed is what runs."""
    out, escaped = [], False
    for ch in text:
        if ch in _ESCAPES and ch != "\\":
            out.append(_ESCAPES[ch])
            escaped = True
        elif ch == "\\":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
            escaped = True
        else:
            out.append(ch)
    return "".join(out), escaped


def exact_runs(runs: dict[str, Any]) -> str | None:
    """What a command hook runs, as one line a person can read and trust: the exec form's argv as a JSON list (each
    word and its bounds exact: the line parses back to the argv), the shell form's command line; escapes said so."""
    if "argv" in runs:
        words = [json.dumps(word, ensure_ascii=False) for word in runs["argv"]]
        escaped = any(printable(word)[1] for word in runs["argv"])
        text = "exec, no shell: [" + ", ".join(printable(w)[0] if escaped else w for w in words) + "]"
    elif "command" in runs:
        shown, escaped = printable(runs["command"])
        text = f"{runs.get('shell') or 'sh -c'}: {shown}"
    else:
        return None
    if escaped:
        text += "  (shown escaped: it holds characters a terminal would not show as they are; see --json)"
    return text


def _plugin_hook_name(plugin: Plugin, htype: str, config: Any, raw: RawEntry) -> str:
    """`<plugin>:<script and its arguments>`, paths by their last part: `guard:guard.sh`, `ork:run-hook.mjs
    pretool/bash-guard` (many hooks of one plugin start the same interpreter)."""
    if htype != "command" or config is None:
        return printable(f"{plugin.name}:{_derived_name(htype, config, raw)}")[0]
    args = getattr(config, "args", None)
    # A shell script's last simple command is what it is for (`...; node "$P/bun-runner.js" worker.cjs hook x`).
    last = re.split(r"[;&|\n]+", config.command.strip().rstrip(";&|"))[-1] if args is None else ""
    words = [config.command, *args] if args is not None else split_command(last) or split_command(config.command)
    if words and INTERPRETER.fullmatch(os.path.basename(words[0])):
        words = words[1:][next((i for i, w in enumerate(words[1:]) if not w.startswith("-")), 0):] or words
    words = [w.rsplit("/", 1)[-1] if "/" in w else w for w in words]
    return printable(f"{plugin.name}:{' '.join(words)}"[:80])[0]


def _where(spec: HookSpec) -> str:
    if spec.source_file is not None:
        return f"{spec.source_file}: {spec.json_path}" if spec.json_path else str(spec.source_file)
    return f"programmatic hook {spec.name!r}"


def _closest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (closest known hook: {close[0]!r})" if close else " (check the spelling: `python -m hooks list` names every hook)"


def _covers(earlier: str | None, later: str | None) -> bool:
    """Whether every name `later` selects is selected by `earlier` too (exact-name matchers and match-all only)."""
    if matches_all(earlier):
        return True
    wide, narrow = exact_names(earlier), exact_names(later)
    return wide is not None and narrow is not None and narrow <= wide


def _exec_name(command: str, args: list[str]) -> str:
    """`node ${CLAUDE_PLUGIN_ROOT}/bin/run-hook.mjs pretool/bash/guard` → `run-hook.mjs pretool/bash/guard`: the
    script and what follows it, so fifty hooks that all start node keep fifty names."""
    program = Path(command).name if "/" in command else command
    words = [program, *args]
    if INTERPRETER.fullmatch(program):
        at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
        if at is not None:
            words = [Path(args[at]).name if "/" in args[at] else args[at], *args[at + 1:]]
    return " ".join(words)[:60]


def interpreter_script(command: str) -> str | None:
    """The script file an interpreter command runs (`python3 -S hooks/x.py arg` → `hooks/x.py`), if it names one."""
    argv = split_command(command)
    if not argv or not INTERPRETER.fullmatch(os.path.basename(argv[0])):
        return None
    for arg in argv[1:]:
        if arg.startswith("-"):
            if arg in ("-c", "-m", "-e", "--eval"):
                return None  # inline code or a module, not a file
            continue
        return arg if arg.endswith(SCRIPT_SUFFIXES) else None
    return None


def _derived_name(htype: str, config: Any, raw: RawEntry) -> str:
    if config is None:
        return f"invalid@{raw.json_path}"
    if htype == "command" and config.args is not None:
        return printable(_exec_name(config.command, config.args))[0]
    if htype == "command":
        word = first_word(config.command) or config.command
        return printable(Path(word).name if "/" in word or word.endswith((".sh", ".py")) else config.command[:60])[0]
    if htype == "python":
        return Path(config.script).name
    if htype == "http":
        return config.url[:60]
    if htype == "mcp_tool":
        return f"{config.server}/{config.tool}"
    return f"{htype}:{' '.join(config.prompt.split())[:40]}"
