"""An offline Anthropic Messages API that answers from a scripted scenario: record and replay for testing agent apps."""

from sidecar.scripted_model.scenario import Reply, Rule, Scenario, ScenarioError, load_scenario, parse_scenario
from sidecar.scripted_model.server import (
    RequestRecord,
    ScriptedModelServer,
    get_or_start,
    shared_server,
    stop_shared_servers,
)

__all__ = [
    "Reply",
    "RequestRecord",
    "Rule",
    "Scenario",
    "ScenarioError",
    "ScriptedModelServer",
    "get_or_start",
    "load_scenario",
    "parse_scenario",
    "shared_server",
    "stop_shared_servers",
]
