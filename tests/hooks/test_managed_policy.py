"""An organization's managed Claude Code settings as a hook source and as policy (hooks/hookset.py `ManagedPolicy`):
their hooks are listed as the CLI's to run, never Orion's; `allowManagedHooksOnly` drops every other settings hook,
`disableAllHooks` (any value but false, as the CLI reads it) disables every settings hook, theirs too; their
`allowedHttpHookUrls` narrows every http hook and their `enabledPlugins: false` turns a plugin off. Orion's built-ins
and the host's programmatic hooks stay, as the CLI keeps calling SDK callbacks. Nothing outside those files sets
any of it (the end-to-end proof: tests/e2e/test_managed_settings.py, tests/conformance `managed_*`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hooks.registry import HookRegistry
from tests.hooks.support import cmd, settings, write_json
from tests.plugin_fixture import install


def managed_file(tmp_path: Path, doc: dict[str, Any], name: str = "managed-settings.json") -> Path:
    return write_json(tmp_path / "etc-claude-code" / name, doc)


def states(hs) -> dict[tuple[str, str], str]:
    return {(s.source, s.name): s.state for s in hs.entries}


def with_everyone(project, tmp_path: Path, managed: dict[str, Any], **kw: Any):
    """A hook in each source a user has (the user's Claude Code settings, the trusted project), a programmatic hook,
    and the organization's file."""
    claude_user = write_json(tmp_path / "claude-user.json", settings("Stop", cmd("echo c", name="c")))
    project.settings(settings("Stop", cmd("echo p", name="p")))
    project.trust()
    reg = HookRegistry()

    @reg.hook("Stop", name="host")
    async def host(inp, ctx):
        return None

    return project.load(registry=reg, claude_user_settings=claude_user,
                        managed_settings=(managed_file(tmp_path, managed),), **kw)


ORG = settings("Stop", cmd("echo org", name="org"))


def test_the_organizations_hooks_are_listed_as_the_clis_and_never_active(project, tmp_path) -> None:
    hs = with_everyone(project, tmp_path, ORG)
    assert states(hs) == {("managed", "org"): "managed", ("claude-user", "c"): "active", ("project", "p"): "active",
                          ("programmatic", "host"): "active"}
    [org] = [s for s in hs.entries if s.source == "managed"]
    assert "runs it itself" in org.reason and org.source_file == tmp_path / "etc-claude-code" / "managed-settings.json"
    assert org not in hs.active_for("Stop") and hs.counts()["managed"] == 1
    assert any("run in the Claude Code CLI itself" in w for w in hs.warnings)


@pytest.mark.parametrize("switch", [{"allowManagedHooksOnly": True}, {"allowManagedHooksOnly": "true"}])
def test_allow_managed_hooks_only_drops_every_other_settings_hook_but_keeps_orions_and_the_hosts(
        project, tmp_path, switch) -> None:
    hs = with_everyone(project, tmp_path, {**ORG, **switch})
    assert states(hs) == {("managed", "org"): "managed", ("claude-user", "c"): "dropped", ("project", "p"): "dropped",
                          ("programmatic", "host"): "active"}
    dropped = [s for s in hs.entries if s.state == "dropped"]
    assert all("allowManagedHooksOnly" in s.reason and "managed-settings.json" in s.reason for s in dropped)
    assert any("2 hook(s) of other settings files" in w for w in hs.warnings)


@pytest.mark.parametrize("value", [True, "yes", 1])
def test_the_organizations_disable_all_hooks_disables_every_settings_hook_its_own_too(project, tmp_path, value) -> None:
    """The CLI takes any disableAllHooks but false, "false" or null as set: a malformed policy restricts."""
    hs = with_everyone(project, tmp_path, {**ORG, "disableAllHooks": value})
    assert states(hs) == {("managed", "org"): "disabled", ("claude-user", "c"): "disabled",
                          ("project", "p"): "disabled", ("programmatic", "host"): "active"}


def test_a_drop_in_counts_like_the_main_file(project, tmp_path) -> None:
    main = managed_file(tmp_path, ORG)
    drop_in = managed_file(tmp_path, {"allowManagedHooksOnly": True}, "managed-settings.d/50-hooks.json")
    claude_user = write_json(tmp_path / "claude-user.json", settings("Stop", cmd("echo c", name="c")))
    hs = project.load(claude_user_settings=claude_user, managed_settings=(main, drop_in))
    assert states(hs) == {("managed", "org"): "managed", ("claude-user", "c"): "dropped"}
    assert str(drop_in) in next(s for s in hs.entries if s.name == "c").reason


def test_only_managed_settings_restrict_hooks_this_way(project, tmp_path) -> None:
    """A project (or the user's file) that says allowManagedHooksOnly changes nothing, and is told so."""
    project.settings({**settings("Stop", cmd("echo p", name="p")), "allowManagedHooksOnly": True})
    project.trust()
    hs = project.load(managed_settings=())
    assert states(hs) == {("project", "p"): "active"}
    assert any("allowManagedHooksOnly: only an organization's managed settings" in w for w in hs.warnings)


def test_the_organizations_url_list_narrows_every_http_hook_the_users_own_too(project, tmp_path) -> None:
    user = write_json(tmp_path / "orion-user.json", {"allowedHttpHookUrls": ["https://*"]})
    claude_user = write_json(tmp_path / "claude-user.json", settings(
        "Stop", {"type": "http", "url": "https://hooks.example.com/stop", "name": "mine"},
        {"type": "http", "url": "https://audit.example.org/stop", "name": "audit"}))
    hs = project.load(user_settings=user, claude_user_settings=claude_user, managed_settings=(
        managed_file(tmp_path, {"allowedHttpHookUrls": ["https://audit.example.org/*"]}),))
    assert states(hs) == {("claude-user", "mine"): "invalid", ("claude-user", "audit"): "active"}
    [mine] = [s for s in hs.entries if s.name == "mine"]
    assert "organization's managed settings" in mine.reason


def test_the_organizations_enabled_plugins_false_turns_a_plugin_off_and_true_makes_it_the_clis(project, tmp_path, monkeypatch) -> None:
    claude = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    plugin = install(claude, tmp_path / "marketplace", "guard", log_dir=tmp_path / "guard-log")
    hs = project.load(claude_user_settings=claude / "settings.json", managed_settings=(
        managed_file(tmp_path, {"enabledPlugins": {plugin.plugin_id: False}}),))
    rows = [s for s in hs.entries if s.plugin is not None]
    assert rows and {s.state for s in rows} == {"disabled"}, [(s.name, s.state, s.reason) for s in rows]
    assert all("enabledPlugins turns plugin" in s.reason for s in rows)
    # Their `true` makes it theirs: the CLI runs its hooks itself (measured), so Orion lists them and runs none.
    on = project.load(claude_user_settings=claude / "settings.json", managed_settings=(
        managed_file(tmp_path, {"enabledPlugins": {plugin.plugin_id: True}}),))
    rows = [s for s in on.entries if s.plugin is not None]
    assert rows and {(s.source, s.state) for s in rows} == {("managed-plugin", "managed")}
    assert not [s for s in rows if s in on.active_for(s.event)]
    assert rows[0].plugin.info()["enabledBy"] == "managed-plugin"
    assert any("managed settings enable plugin(s) " + plugin.plugin_id in w for w in on.warnings)


def test_a_managed_file_that_does_not_parse_is_said_and_restricts_nothing(project, tmp_path) -> None:
    """The CLI cannot read it either; the warning names the file and the place."""
    broken = tmp_path / "etc-claude-code" / "managed-settings.json"
    broken.parent.mkdir()
    broken.write_text('{"allowManagedHooksOnly": true,')
    claude_user = write_json(tmp_path / "claude-user.json", settings("Stop", cmd("echo c", name="c")))
    hs = project.load(claude_user_settings=claude_user, managed_settings=(broken,))
    assert states(hs) == {("claude-user", "c"): "active"}
    assert any(str(broken) in w and "not valid JSON" in w for w in hs.warnings), hs.warnings


@pytest.mark.asyncio
async def test_the_organizations_env_var_list_cuts_what_an_http_hook_may_send(project, tmp_path, monkeypatch) -> None:
    """httpHookAllowedEnvVars: a hook's allowedEnvVars becomes its intersection with the managed list (the CLI's
    rule), and a name left out never reaches the server, through the real executor and a real HTTP exchange."""
    import anyio

    from hooks.executors.http import HttpExecutor
    from hooks.types import HookCall, HookContext, SessionContext
    from tests.hooks.test_executor_http import PAYLOAD, hook_server

    monkeypatch.setenv("POLICY_TOKEN", "t0ken")
    monkeypatch.setenv("DEPLOY_KEY", "do-not-send")
    async with hook_server() as server:
        claude_user = write_json(tmp_path / "claude-user.json", settings("PreToolUse", {
            "type": "http", "url": f"{server.url}/echo", "name": "audit", "allowedEnvVars": ["POLICY_TOKEN", "DEPLOY_KEY"],
            "headers": {"Authorization": "Bearer $POLICY_TOKEN", "X-Deploy": "$DEPLOY_KEY"}}, matcher="Bash"))
        user = write_json(tmp_path / "orion-user.json", {"allowedHttpHookUrls": ["http://127.0.0.1:*/*"]})
        hs = project.load(claude_user_settings=claude_user, user_settings=user, managed_settings=(
            managed_file(tmp_path, {"httpHookAllowedEnvVars": ["POLICY_TOKEN"]}),))
        [spec] = [s for s in hs.entries if s.name == "audit"]
        assert spec.state == "active" and spec.config.allowedEnvVars == ["POLICY_TOKEN"]
        assert any("DEPLOY_KEY left out" in w for w in hs.warnings)
        context = HookContext(session=SessionContext(session_id="s-1", project_dir=project.root), event="PreToolUse",
                              hook_name="audit", execution_id="e-1", tool_use_id="toolu_1", deadline=0.0,
                              log=__import__("logging").getLogger("test"))

        async def progress(stream: str, line: str) -> None:
            return None

        ex = HttpExecutor()
        try:
            with anyio.fail_after(10):
                report = await ex.run(HookCall(hook=spec, event="PreToolUse", payload=PAYLOAD, context=context,
                                               timeout_s=5.0, progress=progress))
        finally:
            await ex.aclose()
    assert report.status == "ok", report
    [request] = server.received
    assert request.headers["authorization"] == "Bearer t0ken" and request.headers["x-deploy"] == ""


@pytest.mark.parametrize(("locked", "gone"), [
    (["hooks"], {"p", "prober-gate", "prober-stop", "deploy-gate"}),  # every non-plugin hook, scoped ones too
    (True, {"p", "prober-gate", "prober-stop", "deploy-gate"}),
    (["skills"], {"deploy-gate"}),  # the CLI loads no project skill: its hooks go with it
    (["agents"], {"prober-gate", "prober-stop"}),
    (["commands"], set()),
])
def test_plugin_only_customization_drops_the_hooks_of_the_surfaces_it_locks(project, tmp_path, locked, gone) -> None:
    """strictPluginOnlyCustomization (measured with ["hooks"] and true: only managed hooks ran, the user's, the
    project's and the flag settings' did not; case managed_plugin_only_customization_of_hooks)."""
    from tests.e2e.test_scoped_hooks import write_agent, write_skill

    project.settings(settings("Stop", cmd("echo p", name="p")))
    write_agent(project.root, tmp_path / "agent.log")
    write_skill(project.root, tmp_path / "skill.log")
    project.trust()
    hs = project.load(managed_settings=(managed_file(tmp_path, {"strictPluginOnlyCustomization": locked}),))
    dropped = {s.name for s in hs.entries if s.state == "dropped"}
    assert dropped == gone, [(s.name, s.state, s.reason) for s in hs.entries]
    assert all("strictPluginOnlyCustomization" in s.reason for s in hs.entries if s.name in gone)


@pytest.mark.parametrize(("policy", "kept"), [
    ({}, True),
    ({"blockedMarketplaces": [{"source": "directory", "path": "<market>/"}]}, False),
    ({"blockedMarketplaces": [{"source": "github", "repo": "acme/plugins"}]}, True),
    ({"strictKnownMarketplaces": []}, False),
    ({"strictKnownMarketplaces": [{"source": "github", "repo": "acme/*"}]}, False),
    ({"strictKnownMarketplaces": [{"source": "directory", "path": "<market>"}]}, True),
    ({"allowedMarketplaces": [{"source": "directory", "path": "<market>"}]}, True),
    ({"strictKnownMarketplaces": "not a list"}, False),
])
def test_the_organizations_marketplace_lists_keep_a_plugin_out(project, tmp_path, monkeypatch, policy, kept) -> None:
    """Measured on 2.1.330: the CLI does not load an installed plugin whose marketplace is blocked, or is not on the
    allowlist (empty, or naming another source); Orion then runs none of its hooks, and says why."""
    import json

    claude = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    plugin = install(claude, tmp_path / "marketplace", "guard", log_dir=tmp_path / "guard-log")
    known = json.loads((claude / "plugins" / "known_marketplaces.json").read_text())
    known[plugin.plugin_id.split("@")[1]]["source"] = {"source": "directory", "path": str(tmp_path / "marketplace")}
    (claude / "plugins" / "known_marketplaces.json").write_text(json.dumps(known))
    doc = json.loads(json.dumps(policy).replace("<market>", str(tmp_path / "marketplace")))
    hs = project.load(claude_user_settings=claude / "settings.json", managed_settings=(managed_file(tmp_path, doc),))
    rows = [s for s in hs.entries if s.plugin is not None]
    assert rows and {s.state for s in rows} == ({"active"} if kept else {"disabled"}), \
        [(s.name, s.state, s.reason) for s in rows]
    if not kept:
        assert all("Claude Code does not load it" in s.reason for s in rows)
