"""Chooses how a session reaches a model: the offline scripted server (``scripted:<scenario>``) or the real API, and builds the CLI's environment for it.

Exceptions::

    ModelConfigError(ValueError)     no usable model: no API key and no scripted scenario
    └── ScenarioNotFound             ``scripted:<x>`` names no scenario file
"""

from __future__ import annotations

import os
from pathlib import Path

from sidecar.scripted_model.server import ScriptedModelServer, get_or_start, shared_server

SCRIPTED_PREFIX = "scripted:"
SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")
EXAMPLE_SCENARIOS = Path(__file__).resolve().parent.parent / "examples" / "scenarios"


class ModelConfigError(ValueError):
    """The session cannot reach any model with the given settings."""


class ScenarioNotFound(ModelConfigError):
    pass


# Variables that make the CLI talk only to the scripted server (REFERENCE.md: the CLI runs offline).
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def scenario_dirs() -> list[Path]:
    """Where bare scenario names are looked up: $ORION_SCENARIOS_DIR (if set), then examples/scenarios."""
    dirs = []
    if os.environ.get("ORION_SCENARIOS_DIR"):
        dirs.append(Path(os.environ["ORION_SCENARIOS_DIR"]))
    dirs.append(EXAMPLE_SCENARIOS)
    return dirs


def resolve_scenario(name_or_path: str) -> Path:
    """A scenario name (``demo``) is looked up in the scenario directories first, then taken as a path."""
    if name_or_path and "/" not in name_or_path and os.sep not in name_or_path:
        for directory in scenario_dirs():
            for candidate in [directory / name_or_path, *(directory / (name_or_path + s) for s in SCENARIO_SUFFIXES)]:
                if candidate.is_file():
                    return candidate.resolve()
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path.resolve()
    searched = ", ".join(str(d) for d in scenario_dirs())
    raise ScenarioNotFound(f"scenario {name_or_path!r} not found (looked in {searched} and as a path)")


def scripted_log_path(scenario: Path) -> Path | None:
    """``$ORION_SCRIPTED_LOG_DIR/<scenario stem>.jsonl`` when that variable is set: how a test outside the
    sidecar process sees what the model was sent (docs/SCRIPTED_MODEL.md)."""
    directory = os.environ.get("ORION_SCRIPTED_LOG_DIR")
    if not directory:
        return None
    Path(directory).mkdir(parents=True, exist_ok=True)
    return Path(directory) / (scenario.stem + ".jsonl")


def offline_env(base_url: str, home: Path) -> dict[str, str]:
    """The CLI's environment for a local Messages API at ``base_url``, with a throwaway HOME (created)."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    return {
        **OFFLINE_ENV,
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "scripted-model-offline",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }


def build_model_env(
    model: str | None, data_dir: Path, session_id: str
) -> tuple[dict[str, str], str | None, ScriptedModelServer | None]:
    """Return ``(env for the CLI, model name for the SDK or None for its default, scripted server or None)``.

    ``env`` holds only the variables to set on top of the inherited environment
    (the SDK merges ``options.env`` over ``os.environ``).
    """
    if model and model.startswith(SCRIPTED_PREFIX):
        scenario = resolve_scenario(model[len(SCRIPTED_PREFIX) :].strip())
        url = get_or_start(scenario, log_path=scripted_log_path(scenario))
        # One CLI home per session: the CLI writes ~/.claude.json and transcripts there, and two
        # sessions rewriting one config file at once is a race we do not need.
        return offline_env(url, Path(data_dir) / "cli-home" / session_id), None, shared_server(scenario)
    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise ModelConfigError("no ANTHROPIC_API_KEY: use model 'scripted:<scenario>' (e.g. 'scripted:demo')")
    return {}, (model or None), None
