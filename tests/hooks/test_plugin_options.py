"""A plugin's userConfig values as its hooks get them (hooks/plugins.py `plugin_options`), and the one way Orion
differs from the CLI: a plugin only a project enables never gets the user's sensitive values. The bare CLI and the
sidecar compared on one installed plugin: tests/e2e/test_plugin_options.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hooks.plugins import MANAGED_PLUGIN, PLUGIN, PROJECT_PLUGIN, Plugin, js_text, plugin_options


@pytest.mark.parametrize(("value", "text"), [
    ("a b", "a b"), (7, "7"), (7.0, "7"), (0.5, "0.5"), (True, "true"), (False, "false"), (None, "null"),
    (["a", 1, None, True], "a,1,,true"), ({"k": 1}, "[object Object]")])
def test_values_read_as_javascript_writes_them(value, text) -> None:
    assert js_text(value) == text


def plugin(kind: str) -> Plugin:
    return Plugin(id="opts@market", name="opts", marketplace="market", kind=kind, enabled_in=Path("/s.json"),
                  data_dir=Path("/d"), root=Path("/r"))


USER = {"pluginConfigs": {"opts@market": {"options": {"api_url": "https://user", "max_items": 3}},
                          "other@market": {"options": {"api_url": "https://other"}}}}
MANAGED = {"pluginConfigs": {"opts@market": {"options": {"api_url": "https://org"}}}}
SECRETS = {"pluginSecrets": {"opts@market": {"token": "tok"}}}


@pytest.mark.parametrize("kind", [PLUGIN, MANAGED_PLUGIN])
def test_saved_values_then_the_organizations_then_the_secrets_for_the_users_plugin(kind) -> None:
    found, warnings = plugin(kind), []
    plugin_options(found, [USER, MANAGED], SECRETS, warnings)
    assert found.options == {"api_url": "https://org", "max_items": "3", "token": "tok"}
    assert found.sensitive == {"token"} and warnings == []
    assert found.env["CLAUDE_PLUGIN_OPTION_TOKEN"] == "tok" and found.env["CLAUDE_PLUGIN_OPTION_MAX_ITEMS"] == "3"


def test_a_plugin_only_a_project_enables_gets_no_secret_and_the_user_is_told() -> None:
    found, warnings = plugin(PROJECT_PLUGIN), []
    plugin_options(found, [USER], SECRETS, warnings)
    assert found.options == {"api_url": "https://user", "max_items": "3"} and not found.sensitive
    assert len(warnings) == 1 and "token" in warnings[0] and "tok" not in warnings[0].replace("token", "")


def test_nothing_saved_gives_nothing_not_the_defaults() -> None:
    found = plugin(PLUGIN)
    plugin_options(found, [{"pluginConfigs": "not an object"}], None, [])
    assert found.options == {} and not any(k.startswith("CLAUDE_PLUGIN_OPTION_") for k in found.env)
