"""Chooses how a session reaches a model: the offline scripted server (``scripted:<scenario>``) or the real API, and builds the CLI's environment for it.

Exceptions::

    ModelConfigError(ValueError)     no usable model
    ├── NoCredential                 a real model, and nothing the CLI could authenticate with (sidecar/credentials.py);
    │                                the message names every way to give it one
    ├── ScenarioNotFound             ``scripted:<x>`` names no file
    ├── NotAScenario                 it names a file that is no scenario file (suffix, kind, size, permissions)
    └── InvalidScenario              a scenario file that does not follow the format

None of their messages quote the file: ``scripted:/etc/shadow`` must not echo the file back to whoever asked.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sidecar.credentials import cli_truthy, find_credential, missing_credential_message

if TYPE_CHECKING:  # the scripted model (~25 ms: its scenario models, yaml, h11) loads only for scripted sessions
    from sidecar.scripted_model.server import ScriptedModelServer

SCRIPTED_PREFIX = "scripted:"
SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")
SCENARIO_MAX_BYTES = 8 * 1024 * 1024
# The example scenarios ship inside the package (package data), so `scripted:demo` works from a plain install;
# examples/scenarios in the repository is a link to this directory.
EXAMPLE_SCENARIOS = Path(__file__).resolve().parent / "scenarios"

log = logging.getLogger("sidecar.sdk_env")


class ModelConfigError(ValueError):
    """The session cannot reach any model with the given settings."""

    reason = "modelUnavailable"


class NoCredential(ModelConfigError):
    """A real-model session whose CLI would find no credential. Same ``reason`` as its parent: on the wire it is the
    error a session without an API key always got, now with a message naming what to set."""


class ScenarioNotFound(ModelConfigError):
    reason = "scenarioNotFound"


class NotAScenario(ModelConfigError):
    reason = "notAScenario"


class InvalidScenario(ModelConfigError):
    reason = "invalidScenario"


# Variables that make the CLI talk only to the scripted server (REFERENCE.md: the CLI runs offline).
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def scenario_dirs() -> list[Path]:
    """Where bare scenario names are looked up: $ORION_SCENARIOS_DIR (if set), then the shipped examples
    (sidecar/scenarios, linked from examples/scenarios)."""
    dirs = []
    if os.environ.get("ORION_SCENARIOS_DIR"):
        dirs.append(Path(os.environ["ORION_SCENARIOS_DIR"]))
    dirs.append(EXAMPLE_SCENARIOS)
    return dirs


def _is_scenario_name(path: Path) -> bool:
    return path.suffix.lower() in SCENARIO_SUFFIXES


def resolve_scenario(name_or_path: str) -> Path:
    """A scenario name (``demo``) is looked up in the scenario directories first, then taken as a path.

    Only a readable regular file with a scenario suffix (after symlinks are followed, too) qualifies:
    anything else is refused by name, before a byte of it is read.
    """
    if name_or_path and "/" not in name_or_path and os.sep not in name_or_path:
        names = [name_or_path] if _is_scenario_name(Path(name_or_path)) else [name_or_path + s for s in SCENARIO_SUFFIXES]
        for directory in scenario_dirs():
            for candidate in (directory / name for name in names):
                if candidate.is_file():
                    return _checked(candidate, name_or_path)
    path = Path(name_or_path).expanduser()
    if path.exists() or path.is_symlink():
        return _checked(path, name_or_path)
    searched = ", ".join(str(d) for d in scenario_dirs())
    raise ScenarioNotFound(f"scenario {name_or_path!r} not found (looked in {searched} and as a path)")


def _checked(path: Path, asked: str) -> Path:
    resolved = path.resolve()
    if not (_is_scenario_name(path) and _is_scenario_name(resolved)):
        raise NotAScenario(f"{asked!r} is not a scenario file: a scenario is a .yaml, .yml or .json file")
    if not resolved.is_file():
        raise NotAScenario(f"{asked!r} is not a scenario file: not a regular file")
    if not os.access(resolved, os.R_OK):
        raise NotAScenario(f"{asked!r} is not a scenario file: not readable")
    if resolved.stat().st_size > SCENARIO_MAX_BYTES:
        raise NotAScenario(f"{asked!r} is not a scenario file: larger than {SCENARIO_MAX_BYTES // (1024 * 1024)} MiB")
    return resolved


def scripted_log_path(scenario: Path) -> Path | None:
    """``$ORION_SCRIPTED_LOG_DIR/<scenario stem>.jsonl`` when that variable is set: how a test outside the
    sidecar process sees what the model was sent (docs/SCRIPTED_MODEL.md)."""
    directory = os.environ.get("ORION_SCRIPTED_LOG_DIR")
    if not directory:
        return None
    Path(directory).mkdir(parents=True, exist_ok=True)
    return Path(directory) / (scenario.stem + ".jsonl")


def offline_env(base_url: str, home: Path) -> dict[str, str]:
    """The CLI's environment for a local Messages API at ``base_url``, with a throwaway HOME (created 0700: the CLI
    keeps raw prompts and transcripts there)."""
    from hooks.private_files import private_dir

    private_dir(home / ".claude")
    return {
        **OFFLINE_ENV,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "scripted-model-offline",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }


def build_model_env(
    model: str | None, data_dir: Path, session_id: str, *, setting_sources: Iterable[str] | None = None
) -> tuple[dict[str, str], str | None, ScriptedModelServer | None]:
    """Return ``(env for the CLI, model name for the SDK or None for its default, scripted server or None)``.

    ``env`` holds only what the model connection needs; ``cli_environment`` adds the rest of what the CLI may see.
    A real model needs a credential the CLI can authenticate with (sidecar/credentials.py); ``setting_sources``
    (the CLI's, None for its default, which loads the user's settings) says whether an ``apiKeyHelper`` or
    ``env`` in the user's Claude Code settings counts.
    """
    if model and model.startswith(SCRIPTED_PREFIX):
        from sidecar.scripted_model.scenario import ScenarioError
        from sidecar.scripted_model.server import get_or_start, shared_server

        scenario = resolve_scenario(model[len(SCRIPTED_PREFIX) :].strip())
        try:
            url = get_or_start(scenario, log_path=scripted_log_path(scenario))
        except ScenarioError as exc:
            raise InvalidScenario(str(exc)) from None
        # One CLI home per session: the CLI writes ~/.claude.json and transcripts there, and two
        # sessions rewriting one config file at once is a race we do not need.
        return offline_env(url, Path(data_dir) / "cli-home" / session_id), None, shared_server(scenario)
    credential = real_model_credential(setting_sources)
    # The source's name and where it was found, never its value.
    log.info("session %s: model %s, credential %s", session_id, model or "(the CLI's default)", credential)
    return {}, (model or None), None


def real_model_credential(setting_sources: Iterable[str] | None = None) -> object:
    """The credential a real-model CLI would authenticate with (its source, never its value), or NoCredential
    naming what to set. What `session/new` and ACP's `authenticate` both check."""
    # What the CLI will see: the allow-listed environment (HOME and CLAUDE_CONFIG_DIR locate its settings and login).
    env = cli_environment({})
    user = setting_sources is None or "user" in setting_sources
    credential = find_credential(env, user_settings=user)
    if credential is None:
        raise NoCredential(missing_credential_message(env, user_settings=user))
    return credential


# --------------------------------------------------------------------------- the CLI's environment

# What the CLI (and so every Bash command it runs) may inherit from the sidecar. An allow-list: the
# sidecar's environment holds Orion's secrets and the tokens http hooks send, and the SDK would hand
# all of it to the CLI (it merges options.env over os.environ).
CLI_ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TMPDIR", "TZ", "LANG", "LANGUAGE",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "CLAUDE_CONFIG_DIR", "MAX_THINKING_TOKENS", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT",
    "BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS", "BASH_MAX_OUTPUT_LENGTH",
    "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING", "DISABLE_BUG_COMMAND",
})
# ANTHROPIC_*: the model connection (key, base URL, auth token, model names); CLAUDE_CODE_*: the CLI's own
# switches (provider choice, OAuth token, traffic); LC_*: locale.
CLI_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "LC_")
# A third-party provider's credentials pass only when the user chose that provider.
# The switch is read as the CLI reads it (credentials.cli_truthy): "1", "true", "yes", "on".
PROVIDER_ENV = {
    "CLAUDE_CODE_USE_BEDROCK": ("AWS_",),
    "CLAUDE_CODE_USE_VERTEX": ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION", "VERTEX_REGION_", "GCLOUD_PROJECT"),
    "CLAUDE_CODE_USE_FOUNDRY": ("AZURE_",),
}
# Never to the CLI, whatever matches above or the user lists: the sidecar's own configuration and secrets.
NEVER_PREFIXES = ("ORION_",)
# The one exception: the run token the process supervisor finds our leftovers by (sidecar/reaper.py). It is
# no secret (it only marks processes as this sidecar's) and must reach the CLI's commands for the sweep to work.
RUN_TOKEN_VAR = "ORION_SIDECAR_RUN"
# Names the user wants the CLI to have besides the above (space- or comma-separated), e.g. a build tool's setting.
PASS_VAR = "ORION_CLI_ENV_PASS"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def cli_environment(
    model_env: Mapping[str, str],
    *,
    base: Mapping[str, str] | None = None,
    withheld: Iterable[str] = (),
) -> dict[str, str]:
    """The whole environment the CLI starts with: the allow-listed part of ``base`` (the sidecar's), then ``model_env``.

    ``withheld`` names (e.g. every ``allowedEnvVars`` entry of the session's http hooks) never pass, even when
    an allow rule or the user's ``ORION_CLI_ENV_PASS`` names them.
    """
    base = os.environ if base is None else base
    never = set(withheld)
    extra = {name for name in re.split(r"[\s,]+", base.get(PASS_VAR, "")) if _NAME.match(name)}
    providers = tuple(p for switch, prefixes in PROVIDER_ENV.items() if cli_truthy(base.get(switch)) for p in prefixes)

    def allowed(name: str) -> bool:
        if name == RUN_TOKEN_VAR:
            return True
        if name in never or name.startswith(NEVER_PREFIXES):
            return False
        return name in CLI_ENV_NAMES or name in extra or name.startswith(CLI_ENV_PREFIXES + providers)

    env = {name: value for name, value in base.items() if allowed(name)}
    env.update({name: value for name, value in model_env.items() if name not in never})
    return env


def hook_env_names(specs: Iterable[object]) -> set[str]:
    """Every variable a hook is allowed to read for itself (http hooks' ``allowedEnvVars``): tokens meant for hooks."""
    names: set[str] = set()
    for spec in specs:
        config = getattr(spec, "config", None)
        listed = config.get("allowedEnvVars") if isinstance(config, dict) else getattr(config, "allowedEnvVars", None)
        names.update(str(name) for name in listed or ())
    return names
