"""The effective hook set of one project: every source merged in order, the security policy, trust, overrides, and a listing with states and reasons."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import logging
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.config import RawEntry, first_word
from hooks.matchers import Matcher, MatcherError, compile_matcher
from hooks.registry import HookRegistry, ProgrammaticHook, default_registry
from hooks.sources import SourcePaths, read_overrides, read_settings
from hooks.trust import TrustStore, hooks_section_hash
from hooks.types import HookFunction

log = logging.getLogger("hooks")

DEFAULT_TIMEOUT_S = {"command": 30.0, "python": 30.0, "prompt": 30.0, "agent": 60.0, "http": 30.0, "callable": 30.0}

# Types that can run code or reach the network on the host: never from user/vault settings, only in trusted projects.
_PRIVILEGED = frozenset({"command", "python", "http", "agent"})


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

    @property
    def active(self) -> bool:
        return self.state == "active"

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
        }


@dataclass(slots=True)
class HookSet:
    """Every hook of one project (active or not), the load warnings, and what is needed to reload."""

    paths: SourcePaths
    entries: list[HookSpec]
    warnings: list[str]
    builtin_options: dict[str, dict[str, Any]]
    trust_hash: str
    trusted: bool
    registry: HookRegistry
    vault_dir: Path | None = None
    trust_store: TrustStore | None = None
    _active: dict[str, list[HookSpec]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for spec in self.entries:
            if spec.active:
                self._active.setdefault(spec.event, []).append(spec)

    @property
    def project_dir(self) -> Path:
        return self.paths.project_dir

    def active_for(self, event: str) -> list[HookSpec]:
        return self._active.get(event, [])

    def by_name(self, name: str) -> list[HookSpec]:
        return [s for s in self.entries if s.name == name]

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
            trust_store=self.trust_store,
        )

    def to_listing(self) -> list[dict[str, Any]]:
        return [s.to_listing() for s in self.entries]

    def only(self, name: str) -> HookSet:
        """The same set with every hook but `name` left out (for `python -m hooks test --hook NAME`)."""
        return dataclasses.replace(self, entries=[s for s in self.entries if s.name == name])


def load_hookset(
    project_dir: Path,
    vault_dir: Path | None = None,
    *,
    registry: HookRegistry | None = None,
    builtin_settings: Path | None = None,
    user_settings: Path | None = None,
    trust_store: TrustStore | None = None,
) -> HookSet:
    """Read every source and apply policy, trust and overrides. Never raises for bad files: they become warnings and invalid entries."""
    paths = SourcePaths.for_project(project_dir, vault_dir, builtin_settings=builtin_settings, user_settings=user_settings)
    registry = default_registry if registry is None else registry
    store = trust_store if trust_store is not None else TrustStore()
    warnings: list[str] = []

    parsed = {}
    for kind, path in paths.ordered():
        p = read_settings(kind, path, paths.hooks_dir)
        parsed[kind] = p
        warnings.extend(p.errors)
        warnings.extend(p.warnings)

    disabled_by = next((p.file for k, p in parsed.items() if k != "builtin" and p.disable_all), None)
    overrides, problems = read_overrides(paths.overrides)
    warnings.extend(problems)
    allowed_urls: list[str] | None = None
    for p in parsed.values():
        if p.allowed_http_urls is not None:
            allowed_urls = (allowed_urls or []) + p.allowed_http_urls

    trust_hash = hooks_section_hash(parsed["project"].hooks_section, parsed["local"].hooks_section)
    trusted = store.is_trusted(paths.project_dir, trust_hash)

    builder = _Builder(paths, warnings, overrides, disabled_by, allowed_urls, trusted, trust_hash)
    for kind, p in parsed.items():
        for raw in p.entries:
            builder.add_settings_entry(kind, p.file, raw)
    for prog in registry:
        builder.add_programmatic(prog)

    builtin_options = parsed["builtin"].builtin_options
    return HookSet(
        paths=paths,
        entries=builder.specs,
        warnings=warnings,
        builtin_options=builtin_options,
        trust_hash=trust_hash,
        trusted=trusted,
        registry=registry,
        vault_dir=vault_dir,
        trust_store=trust_store,
    )


class _Builder:
    """Turns raw entries and programmatic hooks into HookSpecs with their state, in order."""

    def __init__(self, paths, warnings, overrides, disabled_by, allowed_urls, trusted, trust_hash) -> None:
        self.paths: SourcePaths = paths
        self.warnings: list[str] = warnings
        self.overrides: frozenset[str] = overrides
        self.disabled_by: Path | None = disabled_by
        self.allowed_urls: list[str] | None = allowed_urls
        self.trusted: bool = trusted
        self.trust_hash: str = trust_hash
        self.specs: list[HookSpec] = []
        self._ids: set[str] = set()
        self._dedupe: dict[tuple, str] = {}

    def _unique_id(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self._ids:
            n += 1
            candidate = f"{base}-{n}"
        self._ids.add(candidate)
        return candidate

    def add_settings_entry(self, kind: str, file: Path, raw: RawEntry) -> None:
        config = raw.config
        digest_src = json.dumps(
            [kind, raw.event, raw.matcher, config.model_dump(mode="json", by_alias=True) if config else raw.json_path],
            sort_keys=True,
        )
        hid = self._unique_id(f"{kind}:{raw.event}:{hashlib.sha256(digest_src.encode()).hexdigest()[:10]}")
        htype = config.type if config else raw.type_hint
        spec = HookSpec(
            id=hid,
            name=(config.name if config and config.name else _derived_name(htype, config, raw)),
            event=raw.event,
            matcher=raw.matcher,
            type=htype,
            source=kind,
            source_file=file,
            timeout_s=(config.timeout if config and config.timeout else DEFAULT_TIMEOUT_S.get(htype, 30.0)),
            fail_closed=bool(config and config.failClosed),
            run_async=bool(config and config.async_),
            config=config,
            json_path=raw.json_path,
            cwd=raw.cwd,
            builtin=(kind == "builtin"),
        )
        spec.log = logging.getLogger(f"hooks.hook.{spec.name}")
        where = f"{file}: {raw.json_path}"
        if raw.error:
            spec.state, spec.reason = "invalid", raw.error
        elif not self._compile(spec, where):
            pass
        elif htype == "http" and self.allowed_urls is not None and not any(
            fnmatch.fnmatchcase(config.url, pat) for pat in self.allowed_urls
        ):
            spec.state = "invalid"
            spec.reason = f"url {config.url!r} matches no allowedHttpHookUrls pattern"
            self.warnings.append(f"{where}: {spec.reason}")
        elif kind in ("user", "vault") and htype != "prompt":
            spec.state = "dropped"
            spec.reason = f"{htype} hooks are not allowed in {kind} settings (only prompt hooks are); dropped"
            self.warnings.append(f"{where}: {htype} hook {spec.name!r} dropped by policy: only prompt hooks are allowed from {kind} settings")
        else:
            self._apply_switches(spec, config.enabled, where)
            if spec.state == "active" and kind in ("project", "local") and htype in _PRIVILEGED and not self.trusted:
                spec.state = "untrusted"
                spec.reason = (
                    f"project hooks are not trusted yet (hook sections hash {self.trust_hash[:12]}); "
                    f"review them, then trust with `python -m hooks trust --project {self.paths.project_dir}`"
                )
        if spec.state in ("active", "untrusted", "disabled") and config is not None:
            self._prepare_executable(spec, config, where)
        self.specs.append(spec)

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
        if self._compile(spec, f"programmatic hook {prog.name!r}"):
            self._apply_switches(spec, True, f"programmatic hook {prog.name!r}")
        self.specs.append(spec)

    def _compile(self, spec: HookSpec, where: str) -> bool:
        try:
            spec.match = compile_matcher(spec.matcher)
        except MatcherError as exc:
            spec.state, spec.reason = "invalid", str(exc)
            self.warnings.append(f"{where}: {exc}")
            return False
        return True

    def _apply_switches(self, spec: HookSpec, enabled: bool, where: str) -> None:
        if not enabled:
            spec.state, spec.reason = "disabled", "enabled: false"
        elif spec.name in self.overrides:
            spec.state, spec.reason = "disabled", f"disabled by {self.paths.overrides}"
        elif self.disabled_by is not None and not spec.builtin:
            spec.state, spec.reason = "disabled", f"disableAllHooks is set in {self.disabled_by}"

    def _prepare_executable(self, spec: HookSpec, config: Any, where: str) -> None:
        if spec.type == "command":
            spec.command = config.command
            key = ("command", spec.event, spec.matcher or "", config.command, str(spec.cwd or ""))
            self._check_command(spec, config.command, where)
        elif spec.type == "python":
            spec.script = self._resolve_script(spec, config.script)
            key = ("python", spec.event, spec.matcher or "", str(spec.script))
            if not spec.script.is_file():
                msg = f"python hook script {spec.script} does not exist; the hook will fail every time it runs"
                self.warnings.append(f"{where}: {msg}")
                spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg
        else:
            return
        if spec.state != "active":
            return
        first = self._dedupe.get(key)
        if first is not None:
            spec.state, spec.reason = "disabled", f"identical to {first}; identical command hooks run once"
        else:
            self._dedupe[key] = spec.id
        spec.dedupe_key = key[:1] + key[3:]

    def _resolve_script(self, spec: HookSpec, script: str) -> Path:
        script = _expand(script, self.paths.project_dir)
        path = Path(script).expanduser()
        if path.is_absolute():
            return path
        base = spec.source_file.parent if spec.source == "builtin" and spec.source_file else self.paths.hooks_dir
        return base / path

    def _check_command(self, spec: HookSpec, command: str, where: str) -> None:
        # A mistyped path that silently disables a security gate is the failure users hate most: say so at load.
        self._check_interpreter_script(spec, command, where)
        word = first_word(command)
        if not word or "/" not in word:
            return
        word = _expand(word, self.paths.project_dir)
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


    def _check_interpreter_script(self, spec: HookSpec, command: str, where: str) -> None:
        # `python3 hooks/gate.py` with a typo: python exits 2, which hook semantics read as "block".
        script = interpreter_script(command)
        if script is None:
            return
        path = Path(_expand(script, self.paths.project_dir)).expanduser()
        if not path.is_absolute():
            path = (spec.cwd or self.paths.project_dir) / path
        if path.exists():
            return
        msg = (f"script {path} does not exist (run by {first_word(command)}); hook {spec.name!r} will fail every "
               f"time it runs (python exits 2, which blocks like a deliberate exit 2)")
        self.warnings.append(f"{where}: {msg}")
        spec.reason = f"{spec.reason}; {msg}" if spec.reason else msg


_INTERPRETER = re.compile(r"(?:python[0-9.]*|node|bash|sh|zsh|dash|ruby|perl|deno|bun|php)")
_SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".bash", ".zsh")


def interpreter_script(command: str) -> str | None:
    """The script file an interpreter command runs (`python3 -S hooks/x.py arg` → `hooks/x.py`), if it names one."""
    try:
        argv = shlex.split(command, comments=False)
    except ValueError:
        return None
    if not argv or not _INTERPRETER.fullmatch(os.path.basename(argv[0])):
        return None
    for arg in argv[1:]:
        if arg.startswith("-"):
            if arg in ("-c", "-m", "-e", "--eval"):
                return None  # inline code or a module, not a file
            continue
        return arg if arg.endswith(_SCRIPT_SUFFIXES) else None
    return None


def _expand(text: str, project_dir: Path) -> str:
    for var in ("${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"):
        text = text.replace(var, str(project_dir))
    return text


def _derived_name(htype: str, config: Any, raw: RawEntry) -> str:
    if config is None:
        return f"invalid@{raw.json_path}"
    if htype == "command":
        word = first_word(config.command) or config.command
        return Path(word).name if "/" in word or word.endswith((".sh", ".py")) else config.command[:60]
    if htype == "python":
        return Path(config.script).name
    if htype == "http":
        return config.url[:60]
    return f"{htype}:{' '.join(config.prompt.split())[:40]}"
