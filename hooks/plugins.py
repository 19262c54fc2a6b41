"""Claude Code plugins as a hook source: which plugins the user's and the project's settings enable, where each one lives on disk (as the bundled CLI 2.1.330 resolves it), its hooks files, what else it brings, and a pin of its content.

Layout, as the CLI keeps it (read from its source and checked by installing
fixture plugins with `claude plugin install`):

* plugins dir: `$CLAUDE_CODE_PLUGIN_CACHE_DIR`, else `<config dir>/plugins`
  (`<config dir>` is `$CLAUDE_CONFIG_DIR`, else `~/.claude`);
* `known_marketplaces.json`: `{name: {source: {source, path|repo|url...}, installLocation, lastUpdated}}`;
  a marketplace only declared in settings (`extraKnownMarketplaces`) with a
  `directory`/`file` source loads from the declared path;
* a marketplace's catalogue: `<installLocation>/.claude-plugin/marketplace.json`
  `{name, plugins: [{name, source, version?}], metadata: {pluginRoot?}}`;
* `installed_plugins.json` version 2: `{version: 2, plugins: {"<name>@<marketplace>": [{scope, installPath,
  version, projectPath?, ...}]}}`; a record applies to a session when its scope is `user`/`managed` or its
  `projectPath` is the session's project;
* where a plugin loads from: a catalogue entry whose `source` is a relative path, in a local (`directory`/`file`)
  marketplace, loads in place from the marketplace folder; every other plugin from its install record's
  `installPath` (the versioned cache `cache/<marketplace>/<name>/<version>`);
* `enabledPlugins` merges user < project < local (< flag < managed); only `true` turns a plugin on;
* hooks: `hooks/hooks.json` (`{"hooks": {Event: [...]}}`) plus `.claude-plugin/plugin.json` `hooks` (a path
  relative to the plugin root, an inline `{Event: [...]}` object, or a list of both; the standard file named
  again loads once);
* `CLAUDE_PLUGIN_ROOT` is the plugin's root, `CLAUDE_PLUGIN_DATA` is `<plugins dir>/data/<id with every
  character outside [A-Za-z0-9_-] turned into ->` (the CLI creates it on first use); both are exported to the
  hook's process, `${...}` of both is replaced in an exec-form hook's command and arguments, and a shell-form
  command is worded with its root written in (`[<command>]: <stderr>` names it so; measured).

Who enabled a plugin decides its source kind: the user's own Claude Code settings make it `plugin` (the user's,
like `claude-user`); a project's `.claude/settings.json` / `settings.local.json` make it `project-plugin` (waits
for the project's trust, its files part of the project's manifest). Only the user's files resolve a user-enabled
plugin: a project's `extraKnownMarketplaces` never decides where the user's plugin comes from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.config import ParsedSettings, parse_settings
from hooks.manifest import file_digest
from hooks.sources import read_json

PLUGIN = "plugin"  # enabled in the user's own Claude Code settings
PROJECT_PLUGIN = "project-plugin"  # enabled by a project's settings (and not by the user's)
# Enabled by an organization's managed settings: the CLI runs its hooks itself whatever Orion's flag settings say
# (measured on 2.1.330: a managed-enabled plugin's hook ran with flag `disableAllHooks: true`, with and without
# allowManagedHooksOnly), so Orion lists them and never runs them (hooks/hookset.py).
MANAGED_PLUGIN = "managed-plugin"
PLUGIN_KINDS = frozenset({PLUGIN, PROJECT_PLUGIN, MANAGED_PLUGIN})

# Files of one plugin pinned at most (a plugin with more is pinned by its first ones, in sorted walk order, and said).
MAX_PLUGIN_FILES = 5000
# Directories that are not the plugin's content: version control, and what a package manager can rebuild.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__"})
_ID = re.compile(r"^([^@\s/\\]+)@([^@\s/\\]+)$")
_LOCAL_MARKETPLACE_SOURCES = frozenset({"directory", "file"})


def data_dir_name(plugin_id: str) -> str:
    """The CLI's folder name for a plugin's data: every character outside [A-Za-z0-9_-] becomes `-`."""
    return re.sub(r"[^a-zA-Z0-9\-_]", "-", plugin_id)


def plugins_dir(config_dir: Path) -> Path:
    """Where the CLI keeps plugins: `CLAUDE_CODE_PLUGIN_CACHE_DIR`, else `<config dir>/plugins`."""
    explicit = os.environ.get("CLAUDE_CODE_PLUGIN_CACHE_DIR")
    return Path(explicit).expanduser() if explicit else Path(config_dir) / "plugins"


@dataclass(slots=True)
class Plugin:
    """One enabled plugin as resolved: where it lives, its hooks files, what else it brings, and its content pin."""

    id: str
    name: str
    marketplace: str
    kind: str  # PLUGIN | PROJECT_PLUGIN | MANAGED_PLUGIN
    enabled_in: Path  # the settings file whose enabledPlugins turned it on
    data_dir: Path
    root: Path | None = None
    version: str | None = None
    in_place: bool = False  # loads from the marketplace's own folder (a local marketplace), not a cached copy
    problem: str | None = None  # why it could not be resolved or read (it then brings no hooks)
    hooks: list[ParsedSettings] = field(default_factory=list)  # one per hooks file / inline section
    components: list[str] = field(default_factory=list)  # what the CLI loads from it besides hooks
    unsupported: list[str] = field(default_factory=list)  # what it declares that Orion does not run
    files: dict[str, str] = field(default_factory=dict)  # path relative to root -> digest
    truncated: bool = False
    # Its userConfig values as the CLI gives them to its hooks (`plugin_options`): option key -> text.
    options: dict[str, str] = field(default_factory=dict)
    sensitive: frozenset[str] = frozenset()  # the keys among them from the CLI's secure storage
    # Where its marketplace comes from, as registered (`{"source": "directory", "path": ...}`, `{"source": "github",
    # "repo": ...}`): what an organization's marketplace lists are matched against.
    market_source: dict[str, Any] | None = None

    @property
    def content_hash(self) -> str:
        canonical = json.dumps({"root": str(self.root), "files": self.files}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def env(self) -> dict[str, str]:
        """What the CLI exports to this plugin's hook processes."""
        if self.root is None:
            return {}
        options = {f"CLAUDE_PLUGIN_OPTION_{re.sub(r'[^A-Za-z0-9_]', '_', key).upper()}": value
                   for key, value in self.options.items()}
        return {**options, "CLAUDE_PLUGIN_ROOT": str(self.root), "CLAUDE_PLUGIN_DATA": str(self.data_dir)}

    def shell_command(self, command: str) -> str:
        """A shell-form command as the CLI words it (and the model reads it in `[<command>]: ...`): the plugin root
        written in for `${CLAUDE_PLUGIN_ROOT}` and `$CLAUDE_PLUGIN_ROOT`; `${CLAUDE_PLUGIN_DATA}` is left to the
        shell, which expands it from the hook's environment."""
        if self.root is None:
            return command
        return re.sub(r"\$\{CLAUDE_PLUGIN_ROOT\}|\$CLAUDE_PLUGIN_ROOT\b", lambda _m: str(self.root), command)

    def info(self) -> dict[str, Any]:
        """What a hook's listing says of the plugin it comes from."""
        return {"id": self.id, "name": self.name, "version": self.version, "marketplace": self.marketplace,
                "root": str(self.root) if self.root else None, "enabledBy": self.kind,
                "enabledIn": str(self.enabled_in)}


@dataclass(slots=True)
class Enabled:
    """The final `enabledPlugins` value of one plugin id across the files that set it, and who set it."""

    plugin_id: str
    value: Any
    kind: str
    file: Path
    user_value: Any = None  # the user's own setting, when the project's overrides it


def enabled_plugins(user: tuple[Path, Any] | None, project: list[tuple[Path, Any]],
                    warnings: list[str], managed: list[tuple[Path, Any]] | None = None) -> list[Enabled]:
    """Every plugin id turned on (`true`) once user < project < local (< managed) are merged as the CLI merges them.

    A plugin the user's own settings turn on stays the user's (`plugin`) whatever the project says: a project's
    `false` does not switch off the user's plugin hooks (said in a warning), and a project's `true` adds nothing.
    A plugin only the project turns on is the project's (`project-plugin`), even when the user set it `false`.
    A plugin the organization's managed settings turn on is theirs (`managed-plugin`), whoever else enables it; their
    `false` is applied by the hook set's policy (hooks/hookset.py `ManagedPolicy`), which lists it as turned off.
    """
    found: dict[str, Enabled] = {}
    user_on: dict[str, Path] = {}
    for kind, path, doc in ([("claude-user", *user)] if user else []) + [("project", p, d) for p, d in project]:
        section = doc.get("enabledPlugins") if isinstance(doc, dict) else None
        if section is None:
            continue
        if not isinstance(section, dict):
            warnings.append(f"{path}: $.enabledPlugins: expected an object of {{\"plugin@marketplace\": true}}; ignored")
            continue
        for plugin_id, value in section.items():
            if not _ID.match(plugin_id):
                warnings.append(f"{path}: $.enabledPlugins: {plugin_id!r} is not a plugin@marketplace id; ignored")
                continue
            if kind == "claude-user":
                found[plugin_id] = Enabled(plugin_id, value, PLUGIN, path)
                if value is True:
                    user_on[plugin_id] = path
                continue
            if plugin_id in user_on:
                if value is not True:
                    warnings.append(
                        f"{path}: $.enabledPlugins: {plugin_id!r} is {json.dumps(value)} here, but the user's own "
                        f"settings ({user_on[plugin_id]}) turn it on: a project does not switch off the user's plugin "
                        "hooks in Orion (they keep running; the CLI may leave its skills and commands out)")
                continue
            before = found.get(plugin_id)
            found[plugin_id] = Enabled(plugin_id, value, PROJECT_PLUGIN, path,
                                       user_value=before.value if before and before.kind == PLUGIN else None)
    for path, doc in managed or []:
        section = doc.get("enabledPlugins") if isinstance(doc, dict) else None
        for plugin_id, value in (section.items() if isinstance(section, dict) else ()):
            if value is True and _ID.match(plugin_id):
                found[plugin_id] = Enabled(plugin_id, True, MANAGED_PLUGIN, path)
    out = []
    for entry in found.values():
        if entry.value is True:
            out.append(entry)
        elif isinstance(entry.value, list):
            warnings.append(f"{entry.file}: $.enabledPlugins: {entry.plugin_id!r} lists versions; as in Claude Code "
                            "only true turns a plugin on, so it stays off")
    return out


class _Catalogues:
    """known_marketplaces.json, installed_plugins.json and the marketplaces' catalogues, each read once."""

    def __init__(self, plugins: Path, warnings: list[str]) -> None:
        self.dir = plugins
        self.warnings = warnings
        known, error, _ = read_json(plugins / "known_marketplaces.json")
        if error:
            warnings.append(error)
        self.known = known if isinstance(known, dict) else {}
        installed, error, exists = read_json(plugins / "installed_plugins.json")
        if error:
            warnings.append(error)
        self.installed: dict[str, Any] = {}
        if isinstance(installed, dict) and installed.get("version") == 2 and isinstance(installed.get("plugins"), dict):
            self.installed = installed["plugins"]
        elif exists and not error and installed:
            warnings.append(f"{plugins / 'installed_plugins.json'}: not the version 2 record Claude Code 2.1.330 "
                            "writes; install records ignored (run `claude plugin list` once to convert it)")
        self._catalogues: dict[Path, tuple[Any, str | None]] = {}

    def catalogue(self, directory: Path) -> tuple[Any, str | None]:
        if directory not in self._catalogues:
            data, error, exists = read_json(directory / ".claude-plugin" / "marketplace.json")
            if not exists:
                error = f"{directory / '.claude-plugin' / 'marketplace.json'} does not exist"
            self._catalogues[directory] = (data if isinstance(data, dict) else None, error)
        return self._catalogues[directory]

    def record(self, plugin_id: str, project_dir: Path) -> dict[str, Any] | None:
        """The install record that applies in `project_dir`, as the CLI picks it (user/managed scope, or this project)."""
        records = self.installed.get(plugin_id)
        if not isinstance(records, list):
            return None
        for rec in records:
            if not isinstance(rec, dict):
                continue
            if rec.get("scope") in ("user", "managed"):
                return rec
            path = rec.get("projectPath")
            if isinstance(path, str) and _same_dir(Path(path), project_dir):
                return rec
        return None


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _marketplace_dir(record: dict[str, Any]) -> tuple[Path | None, bool]:
    """(folder holding `.claude-plugin/marketplace.json`, whether it is a local marketplace) of a known or
    declared marketplace."""
    source = record.get("source") if isinstance(record.get("source"), dict) else {}
    local = source.get("source") in _LOCAL_MARKETPLACE_SOURCES
    where = record.get("installLocation")
    if not isinstance(where, str) and local:
        where = source.get("path")
    if not isinstance(where, str) or not where:
        return None, local
    path = Path(where).expanduser()
    if path.suffix == ".json" or path.is_file():
        # A `file` source names the catalogue itself, under <marketplace>/.claude-plugin/.
        path = path.parent.parent
    return path, local


def _inside(root: Path, path: Path) -> bool:
    try:
        return Path(os.path.normpath(path)).is_relative_to(Path(os.path.normpath(root)))
    except ValueError:
        return False


def resolve(enabled: Enabled, project_dir: Path, cat: _Catalogues,
            declared: dict[str, Any]) -> Plugin:
    """Where one enabled plugin lives and its version, as the CLI resolves it; `problem` says why not."""
    name, marketplace = enabled.plugin_id.rsplit("@", 1)
    plugin = Plugin(id=enabled.plugin_id, name=name, marketplace=marketplace, kind=enabled.kind,
                    enabled_in=enabled.file, data_dir=cat.dir / "data" / data_dir_name(enabled.plugin_id))
    market = cat.known.get(marketplace)
    if not isinstance(market, dict):
        market = declared.get(marketplace) if isinstance(declared.get(marketplace), dict) else None
    record = cat.record(enabled.plugin_id, project_dir)
    if market is None:
        plugin.problem = (f"marketplace {marketplace!r} is not registered (not in {cat.dir / 'known_marketplaces.json'}"
                          f"{' nor declared in extraKnownMarketplaces' if enabled.kind == PLUGIN else ''}); "
                          "Claude Code skips this plugin too")
        return plugin
    plugin.market_source = market.get("source") if isinstance(market.get("source"), dict) else None
    directory, local = _marketplace_dir(market)
    entry = None
    if directory is not None:
        catalogue, error = cat.catalogue(directory)
        if catalogue is None:
            plugin.problem = f"marketplace {marketplace!r}: {error or 'its catalogue is not a JSON object'}"
            return plugin
        entries = catalogue.get("plugins") if isinstance(catalogue.get("plugins"), list) else []
        entry = next((e for e in entries if isinstance(e, dict) and e.get("name") == name), None)
        if entry is None:
            plugin.problem = f"marketplace {marketplace!r} ({directory}) lists no plugin {name!r}; Claude Code skips it too"
            return plugin
    source = entry.get("source") if entry else None
    if isinstance(source, str) and local and directory is not None:
        root = directory / _entry_path(source, (catalogue.get("metadata") or {}).get("pluginRoot")
                                       if isinstance(catalogue.get("metadata"), dict) else None)
        if not _inside(directory, root):
            plugin.problem = f"its catalogue entry {source!r} leaves the marketplace folder {directory}; not loaded"
            return plugin
        plugin.root, plugin.in_place = Path(os.path.normpath(root)), True
    elif record is not None and isinstance(record.get("installPath"), str):
        plugin.root = Path(record["installPath"]).expanduser()
    elif isinstance(source, str) and directory is not None:
        # Not copied into the cache yet: the CLI copies it from the marketplace clone on load.
        plugin.root = Path(os.path.normpath(directory / _entry_path(source, None)))
    else:
        plugin.problem = (f"not installed (no install record in {cat.dir / 'installed_plugins.json'} for this "
                          f"project); install it with `claude plugin install {enabled.plugin_id}`")
        return plugin
    if not plugin.root.is_dir():
        plugin.problem = f"its folder {plugin.root} does not exist (reinstall it: `claude plugin install {enabled.plugin_id}`)"
        return plugin
    manifest_version = None
    manifest, error, exists = read_json(plugin.root / ".claude-plugin" / "plugin.json")
    if error:
        plugin.problem = error
        return plugin
    if exists and isinstance(manifest, dict) and isinstance(manifest.get("version"), str):
        manifest_version = manifest["version"]
    plugin.version = (manifest_version or (entry or {}).get("version") or (record or {}).get("version"))
    if plugin.version is not None:
        plugin.version = str(plugin.version)
    _read_contents(plugin, manifest if isinstance(manifest, dict) else {})
    return plugin


def _entry_path(source: str, plugin_root: Any) -> str:
    if isinstance(plugin_root, str) and plugin_root and not source.startswith(("./", "../")):
        return os.path.join(plugin_root, source)
    return source


def _read_contents(plugin: Plugin, manifest: dict[str, Any]) -> None:
    """The plugin's hooks files, what else it brings, and the digests of its files."""
    root = plugin.root
    assert root is not None
    standard = root / "hooks" / "hooks.json"
    data, error, exists = read_json(standard)
    if error:
        plugin.hooks.append(_errored(standard, error))
    elif exists:
        _add_hooks_file(plugin, standard, data)
    declared = manifest.get("hooks")
    for i, item in enumerate(declared if isinstance(declared, list) else [declared] if declared is not None else []):
        where = f"{root / '.claude-plugin' / 'plugin.json'}"
        if isinstance(item, str):
            path = Path(os.path.normpath(root / item))
            if not _inside(root, path):
                plugin.hooks.append(_errored(Path(where), f"$.hooks: {item!r} leaves the plugin folder; not loaded"))
            elif path == standard:
                continue  # the standard file, named again: loaded once
            else:
                data, error, exists = read_json(path)
                if error or not exists:
                    plugin.hooks.append(_errored(Path(where), f"$.hooks: {error or f'{path} does not exist'}"))
                else:
                    _add_hooks_file(plugin, path, data)
        elif isinstance(item, dict):
            plugin.hooks.append(parse_settings({"hooks": item}, Path(where)))
        else:
            plugin.hooks.append(_errored(Path(where), f"$.hooks[{i}]: expected a path or an object of events"))
    plugin.components = _components(root, manifest)
    plugin.files, plugin.truncated = _digests(root)


def _errored(file: Path, error: str) -> ParsedSettings:
    out = ParsedSettings(file=file, exists=True)
    out.errors.append(f"{file}: {error}" if not error.startswith(str(file)) else error)
    return out


def _add_hooks_file(plugin: Plugin, path: Path, data: Any) -> None:
    if not isinstance(data, dict):
        plugin.hooks.append(_errored(path, "$: expected a JSON object with \"hooks\""))
        return
    if data.get("modules"):
        plugin.unsupported.append(f"hooks modules named in {path} ($.modules): a Claude Code hooks module runs in "
                                  "the CLI's own process; Orion does not run it")
    plugin.hooks.append(parse_settings({"hooks": data.get("hooks") or {}}, path))


# What the CLI loads from a plugin besides hooks: (component, manifest keys, default locations under the root).
_COMPONENTS = (
    ("commands", ("commands",), ("commands",)),
    ("agents", ("agents",), ("agents",)),
    ("skills", ("skills",), ("skills", "SKILL.md")),
    ("MCP servers", ("mcpServers",), (".mcp.json",)),
    ("LSP servers", ("lspServers",), (".lsp.json",)),
    ("output styles", ("outputStyles",), ("output-styles",)),
    ("monitors", ("monitors",), ()),
    ("settings", ("settings",), ("settings.json",)),
)


def _components(root: Path, manifest: dict[str, Any]) -> list[str]:
    found = []
    for name, keys, paths in _COMPONENTS:
        if any(manifest.get(key) for key in keys) or any((root / p).exists() for p in paths):
            found.append(name)
    return found


def _digests(root: Path) -> tuple[dict[str, str], bool]:
    """Every file under the plugin root (links not followed into directories), by path relative to it.

    Plain strings, not Path objects: a plugin with its node_modules holds thousands of files, and after the first
    sight each costs only the two stat calls of file_digest's cache.
    """
    out: dict[str, str] = {}
    base = os.fspath(root)
    cut = len(base) + 1
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        linked = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in sorted(filenames) + linked:
            path = os.path.join(dirpath, name)
            out[path[cut:]] = file_digest(path)  # type: ignore[arg-type]
            if len(out) >= MAX_PLUGIN_FILES:
                return out, True
    return out, False


def load_plugins(claude_user: Path | None, project_dir: Path, project_files: list[Path],
                 warnings: list[str], managed_docs: list[tuple[Path, dict[str, Any]]] | None = None) -> list[Plugin]:
    """Every plugin the user's Claude Code settings (`claude_user`, None when that file is the project's own), the
    project's settings files and the organization's managed settings (`managed_docs`: each file with its JSON object)
    turn on, resolved, with their hooks read; problems go to `warnings`."""
    user_doc = None
    if claude_user is not None:
        doc, _error, exists = read_json(claude_user)  # its own errors are reported by the settings source
        user_doc = (claude_user, doc) if exists and isinstance(doc, dict) else None
    project_docs = []
    for path in project_files:
        doc, _error, exists = read_json(path)
        if exists and isinstance(doc, dict):
            project_docs.append((path, doc))
    managed_docs = managed_docs or []
    wanted = enabled_plugins(user_doc, project_docs, warnings, managed_docs)
    if not wanted:
        return []
    config_dir = (claude_user.parent if claude_user is not None else Path(os.environ.get("CLAUDE_CONFIG_DIR") or
                                                                          Path.home() / ".claude"))
    cat = _Catalogues(plugins_dir(config_dir), warnings)
    user_declared = _declared([user_doc[1]] if user_doc else [])
    project_declared = {**user_declared, **_declared([doc for _p, doc in project_docs])}
    managed_declared = {**user_declared, **_declared([doc for _p, doc in managed_docs])}
    # Where the CLI keeps a plugin's sensitive options on Linux; macOS keeps them in the keychain, which Orion does
    # not read (docs/HOOKS.md says so: such a hook sees them unset).
    secrets_doc = read_json(config_dir / ".credentials.json")[0] if sys.platform != "darwin" else None
    option_docs = [doc for _p, doc in ([user_doc] if user_doc else []) + managed_docs]
    out = []
    for enabled in wanted:
        declared = {PLUGIN: user_declared, MANAGED_PLUGIN: managed_declared}.get(enabled.kind, project_declared)
        plugin = resolve(enabled, project_dir, cat, declared)
        if plugin.problem is None:
            plugin_options(plugin, option_docs, secrets_doc, warnings)
        if plugin.problem:
            warnings.append(f"{enabled.file}: $.enabledPlugins: plugin {plugin.id}: {plugin.problem}; its hooks do "
                            "not run")
        if plugin.truncated:
            warnings.append(f"plugin {plugin.id}: more than {MAX_PLUGIN_FILES} files; only the first "
                            f"{MAX_PLUGIN_FILES} are pinned for trust")
        for note in plugin.unsupported:
            warnings.append(f"plugin {plugin.id}: {note}")
        out.append(plugin)
    return out


def js_text(value: Any) -> str:
    """A JSON value as the CLI's JavaScript `String(value)` writes it (what CLAUDE_PLUGIN_OPTION_* hold)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_text(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def plugin_options(plugin: Plugin, settings_docs: list[Any], secrets_doc: Any, warnings: list[str]) -> None:
    """The plugin's userConfig values, as the CLI hands them to its hooks (measured on 2.1.330): the saved values of
    `pluginConfigs[<id>].options` in the user's and the managed settings (a project's are not read; managed last),
    then its sensitive values from the CLI's secure storage (`pluginSecrets[<id>]` of `.credentials.json`); no
    defaults; keys the manifest does not declare too. Orion's one difference: a sensitive value goes only to a
    plugin the user's (or the organization's) settings enable, never to one only a project enables, which a
    project's own marketplace could have put under the same id."""
    options: dict[str, Any] = {}
    for doc in settings_docs:
        section = doc.get("pluginConfigs") if isinstance(doc, dict) else None
        entry = section.get(plugin.id) if isinstance(section, dict) else None
        saved = entry.get("options") if isinstance(entry, dict) else None
        if isinstance(saved, dict):
            options.update(saved)
    vault = secrets_doc.get("pluginSecrets") if isinstance(secrets_doc, dict) else None
    secrets = vault.get(plugin.id) if isinstance(vault, dict) else None
    if isinstance(secrets, dict) and secrets:
        if plugin.kind == PROJECT_PLUGIN:
            warnings.append(f"plugin {plugin.id}: enabled only by the project ({plugin.enabled_in}), so its hooks do "
                            f"not get the sensitive options saved for that id ({', '.join(sorted(secrets))}); Claude "
                            "Code would give them")
        else:
            options.update(secrets)
            plugin.sensitive = frozenset(str(key) for key in secrets)
    plugin.options = {str(key): js_text(value) for key, value in options.items()}


_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def market_matches(entry: Any, source: dict[str, Any] | None, *, blocking: bool = False) -> bool:
    """Whether an organization's marketplace entry (`strictKnownMarketplaces`, `blockedMarketplaces`) names this
    marketplace source, as the CLI's schema says they match: exactly, but a github entry's `owner/*` names every
    repository of that owner, and (for a block) an entry naming a branch or tag in `ref` also names every full
    commit id of that repository. Paths are compared normalised."""
    if not isinstance(entry, dict) or not isinstance(source, dict) or entry.get("source") != source.get("source"):
        return False
    for key, want in entry.items():
        if key == "source":
            continue
        have = source.get(key)
        if key == "repo" and isinstance(want, str) and want.endswith("/*") and isinstance(have, str):
            if have.split("/", 1)[0].lower() != want[:-2].lower():
                return False
        elif key == "ref" and blocking and isinstance(have, str) and _COMMIT.match(have):
            continue
        elif key == "path" and isinstance(want, str) and isinstance(have, str):
            if os.path.normpath(os.path.expanduser(want)) != os.path.normpath(os.path.expanduser(have)):
                return False
        elif want != have:
            return False
    return True


def _declared(docs: list[Any]) -> dict[str, Any]:
    """`extraKnownMarketplaces` of these settings documents, later ones winning, as marketplace records."""
    out: dict[str, Any] = {}
    for doc in docs:
        section = doc.get("extraKnownMarketplaces") if isinstance(doc, dict) else None
        if isinstance(section, dict):
            for name, value in section.items():
                if isinstance(value, dict) and isinstance(value.get("source"), dict):
                    out[name] = {"source": value["source"]}
    return out


def ensure_data_dir(plugin: Plugin) -> None:
    """Create the plugin's data folder 0700 (the CLI creates it on first use; Orion runs the hooks now)."""
    from hooks.private_files import private_dir

    try:
        private_dir(plugin.data_dir)
    except OSError:
        pass  # the hook then fails on its own writes, and says so; the listing still works


# --------------------------------------------------------------------------- what a session says about plugins


def session_notices(plugins: list[Plugin], *, user_config_dir: Path | None, cli_config_dir: Path | None,
                    cli_sources: list[str], project_trusted: bool, held_back: set[str]) -> list[str]:
    """What Orion tells the user at session start about the plugins Claude Code would load: which ones the CLI does
    not load in this session and why, and what Orion itself does not run. Empty when there is nothing to say."""
    out = []
    own_config = (cli_config_dir is not None and user_config_dir is not None
                  and not _same_dir(cli_config_dir, user_config_dir))
    for plugin in plugins:
        besides = ", ".join(plugin.components)
        what = f"its {besides}" if besides else "its components"
        label = f"plugin {plugin.id}{' ' + plugin.version if plugin.version else ''}"
        if plugin.problem:
            continue  # said by the hook set's own warning
        if plugin.id in held_back:
            if plugin.kind == PROJECT_PLUGIN:  # a user's changed plugin is said by the hook set's own warning
                out.append(f"{label}, enabled by {plugin.enabled_in}: the project is not trusted; Orion runs none of "
                           f"its hooks and the CLI does not load {what} until the project is trusted (hooks/list, "
                           "hooks/trust)")
        elif own_config and plugin.components:
            out.append(f"{label}: Orion runs its hooks, but the session's CLI runs with its own configuration folder "
                       f"({cli_config_dir}), where no plugin is installed, so {what} are not loaded in this session")
        elif plugin.components and ((plugin.kind == PLUGIN and "user" not in cli_sources)
                                    or (plugin.kind == PROJECT_PLUGIN and not {"project", "local"} & set(cli_sources))):
            out.append(f"{label}: Orion runs its hooks, but the session's CLI does not read the settings that enable "
                       f"it (setting sources {cli_sources}), so {what} are not loaded in this session")
    return out
