"""Real-model sessions without ANTHROPIC_API_KEY, through `python -m sidecar` and the real CLI.

The "real model" here is a Messages API on 127.0.0.1: `python -m sidecar.scripted_model` started by the test and
reached the way a gateway is, through ANTHROPIC_BASE_URL. The session does not use `scripted:`, so the sidecar
takes its real-model path: it decides which credential the CLI will use (sidecar/credentials.py) and the CLI
authenticates with it; the server's request log shows what the CLI sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipc.errors import AUTH_REQUIRED, RemoteError
from tests.e2e.conftest import standalone_model

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

ANSWER = "Answered through the gateway."
# Everything that could give the CLI a credential; the tests start from none of them.
CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                   "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CONFIG_DIR")
# Keep the CLI from reaching anything but the local server.
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
           "DISABLE_ERROR_REPORTING": "1"}


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local Messages API (the scripted model server, run standalone): its URL and its request log."""
    with scripted_gateway(tmp_path) as served:
        yield served


@contextlib.contextmanager
def scripted_gateway(tmp_path: Path, probe: str | None = None) -> Iterator[tuple[str, Path]]:
    """The scripted model server on 127.0.0.1, answering ANSWER (after having the agent run the Bash `probe`, when
    given): its URL and its request log."""
    first = [[{"tool_use": {"name": "Bash", "input": {"command": probe, "description": "look"}}}]] if probe else []
    scenario = tmp_path / "gateway.json"
    scenario.write_text(json.dumps({"turns": [*first, ANSWER], "default": ANSWER, "side_reply": "Gateway chat"}))
    log = tmp_path / "gateway-requests.jsonl"
    with standalone_model(scenario, log) as url:
        yield url, log


def requests_sent(log: Path) -> list[dict[str, Any]]:
    """The main-loop requests the CLI sent (with tools), oldest first."""
    if not log.exists():
        return []
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in records if r["has_tools"]]


def every_word_of(run: Any) -> str:
    """Everything the frontend received and everything the sidecar logged: no secret may be in it."""
    return json.dumps([[e.name, e.params] for e in run.events], default=str) + run.client.stderr_text()


async def start_and_prompt(run: Any, model: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    params: dict[str, Any] = {"projectDir": str(run.project)}
    if model:
        params["model"] = model
    new = await run.request("session/new", params, timeout=90.0)
    result = await run.prompt(new["sessionId"], "Say something.", timeout=90.0)
    await run.end(new["sessionId"])
    return new, result


async def test_a_gateway_with_an_auth_token_and_no_api_key(sidecar, gateway) -> None:
    url, log = gateway
    token = "gateway-token-0451-not-a-real-one"
    env = {**OFFLINE, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_AUTH_TOKEN": token}
    async with sidecar(env=env) as run:
        new, result = await start_and_prompt(run, model="claude-sonnet-4-5")
        assert new["model"] == "claude-sonnet-4-5"
        assert result["stopReason"] == "end_turn" and result["resultText"] == ANSWER
        # The real CLI sent the token as a bearer token, for the model the session asked for.
        sent = requests_sent(log)
        assert sent and sent[0]["body"]["model"] == "claude-sonnet-4-5"
        assert sent[0]["headers"]["authorization"] == f"Bearer {token}"
        assert "x-api-key" not in sent[0]["headers"]
        # The sidecar names the source, never the value.
        assert "credential ANTHROPIC_AUTH_TOKEN (environment)" in run.client.stderr_text()
        assert token not in every_word_of(run)


async def test_an_api_key_helper_in_the_users_claude_settings(sidecar, gateway, tmp_path: Path) -> None:
    url, log = gateway
    config = tmp_path / "claude-config"
    config.mkdir()
    # In the CLI's config dir: the CLI runs the helper inside the session's OS boundary, which has a /tmp of its own
    # (tmp_path is not there) and writes only where the CLI may (its config dir).
    ran = config / "helper-ran"
    helper = config / "key-helper.sh"
    helper.write_text(f"#!/bin/sh\necho run >> '{ran}'\necho helper-key-0451-dummy\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    (config / "settings.json").write_text(json.dumps({"apiKeyHelper": str(helper)}))
    env = {**OFFLINE, "ANTHROPIC_BASE_URL": url, "CLAUDE_CONFIG_DIR": str(config)}
    async with sidecar(env=env) as run:
        _, result = await start_and_prompt(run)
        assert result["stopReason"] == "end_turn" and result["resultText"] == ANSWER
        sent = requests_sent(log)
        assert sent and sent[0]["headers"]["x-api-key"] == "helper-key-0451-dummy"
        assert ran.exists()  # the CLI ran it; the sidecar only saw it configured (tests/sidecar/test_credentials.py)
        assert f"credential apiKeyHelper (user settings {config / 'settings.json'})" in run.client.stderr_text()
        assert "helper-key-0451-dummy" not in every_word_of(run)


async def test_nothing_set_is_refused_by_name_and_the_sidecar_stays_up(sidecar) -> None:
    async with sidecar(env=OFFLINE) as run:
        with pytest.raises(RemoteError) as refused:
            await run.request("session/new", {"projectDir": str(run.project)}, timeout=60.0)
        error = refused.value
        assert error.code == AUTH_REQUIRED  # ACP's "authentication required"
        assert error.data == {"model": None, "reason": "noCredential"}
        for what in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "apiKeyHelper",
                     "settings.json", "CLAUDE_CODE_OAUTH_TOKEN", "claude /login", "CLAUDE_CODE_USE_BEDROCK",
                     "CLAUDE_CODE_USE_VERTEX", "scripted:"):
            assert what in error.message, what
        await run.client.ping()


async def test_a_base_url_alone_is_refused_with_what_it_lacks(sidecar, gateway) -> None:
    url, log = gateway
    async with sidecar(env={**OFFLINE, "ANTHROPIC_BASE_URL": url}) as run:
        with pytest.raises(RemoteError) as refused:
            await run.request("session/new", {"projectDir": str(run.project)}, timeout=60.0)
        assert "ANTHROPIC_BASE_URL is set" in refused.value.message
        assert "set ANTHROPIC_AUTH_TOKEN to any value" in refused.value.message
        await run.client.ping()
    assert requests_sent(log) == []


async def test_an_untrusted_projects_api_key_helper_is_no_credential(sidecar, gateway, tmp_path: Path) -> None:
    """A project's apiKeyHelper is project code: it neither counts as a credential nor runs."""
    url, log = gateway
    ran = tmp_path / "project-helper-ran"
    helper = tmp_path / "project-helper.sh"
    helper.write_text(f"#!/bin/sh\necho run >> '{ran}'\necho project-key\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    async with sidecar(env={**OFFLINE, "ANTHROPIC_BASE_URL": url}, trust=False) as run:
        (run.project / ".claude").mkdir(exist_ok=True)
        (run.project / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": str(helper)}))
        with pytest.raises(RemoteError) as refused:
            await run.request("session/new", {"projectDir": str(run.project)}, timeout=60.0)
        assert refused.value.code == AUTH_REQUIRED
        await run.client.ping()
    assert not ran.exists()
    assert requests_sent(log) == []


async def test_the_api_key_never_enters_the_box(sidecar, tmp_path: Path) -> None:
    """With the OS boundary on, the CLI holds a placeholder and the sidecar's model relay sends the real key: every
    way a command in the box could read it (its environment, the CLI's, every process's, a file under /proc, a grep
    of the whole box's /proc) finds nothing, and the gateway still receives the key."""
    from sidecar.model_credential import PLACEHOLDER
    from sidecar.sandbox import backend_problem

    if backend_problem(os.environ.get("PATH")) is not None:
        pytest.skip("no OS boundary on this machine (bubblewrap missing): the key is in the CLI's environment there")
    key = "sk-ant-api03-box-test-0451-" + "x" * 40
    # the pattern is put together in a file, so that no command line in the box holds the key's text itself
    probe = ("printf 'box-test-04%s' 51 > /tmp/pattern; echo ENV:; env | grep -c -f /tmp/pattern; echo PROCS:; "
             "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat \"$f\" 2>/dev/null; echo; done "
             "| tr '\\0' '\\n' | grep -c -f /tmp/pattern; echo CLI:; "
             "cat /proc/1/environ >/dev/null 2>&1 && echo readable || echo refused")
    with scripted_gateway(tmp_path, probe) as (url, log):
        env = {**OFFLINE, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key}
        async with sidecar(env=env) as run:
            new = await run.request("session/new", {"projectDir": str(run.project), "model": "claude-sonnet-4-5",
                                                    "allowedTools": ["Bash"]}, timeout=90.0)
            assert new["sandbox"]["enabled"] is True
            result = await run.prompt(new["sessionId"], "Look around.", timeout=90.0)
            holders = cli_environs_holding(f"ANTHROPIC_API_KEY={PLACEHOLDER}")  # read from outside the box
            await run.end(new["sessionId"])
            assert result["resultText"] == ANSWER
            assert key not in every_word_of(run)
    sent = requests_sent(log)
    assert sent and all(r["headers"]["x-api-key"] == key for r in sent)  # the model got the real key
    output = json.dumps(sent[1]["body"]["messages"][-1])
    # the command ran in the box: the key was in no environment there; the CLI's own (its shield keeps commands
    # from reading it) holds the placeholder, as seen from outside
    assert "ENV:\\n0\\nPROCS:\\n0\\nCLI:\\nrefused" in output, output
    assert holders >= 1


async def test_without_a_box_the_key_stays_out_of_the_cli_too(sidecar, tmp_path: Path) -> None:
    """`sandbox: "off"` (the app's choice; also a machine without bubblewrap): no box, and still the CLI holds only
    a placeholder and reaches the model through the sidecar's relay on a private unix socket. The agent's command
    finds the key in no environment, the CLI's included, and the gateway gets it."""
    from sidecar.model_credential import PLACEHOLDER

    key = "sk-ant-api03-nobox-test-0451-" + "w" * 40
    probe = ("printf 'nobox-test-04%s' 51 > pattern.txt; echo ENV:; env | grep -c -f pattern.txt; echo PROCS:; "
             "for f in /proc/[0-9]*/environ; do cat \"$f\" 2>/dev/null; echo; done | tr '\\0' '\\n' "
             "| grep -c -f pattern.txt; echo SOCKET:; env | grep -c '^ANTHROPIC_UNIX_SOCKET='")
    with scripted_gateway(tmp_path, probe) as (url, log):
        async with sidecar(env={**OFFLINE, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key}) as run:
            new = await run.request("session/new", {"projectDir": str(run.project), "model": "claude-sonnet-4-5",
                                                    "allowedTools": ["Bash"], "sandbox": "off"}, timeout=90.0)
            assert new["sandbox"]["enabled"] is False
            result = await run.prompt(new["sessionId"], "Look around.", timeout=90.0)
            holders = cli_environs_holding(f"ANTHROPIC_API_KEY={PLACEHOLDER}")
            holds_key = cli_environs_holding(f"ANTHROPIC_API_KEY={key}")
            await run.end(new["sessionId"])
            assert result["resultText"] == ANSWER
            assert key not in every_word_of(run)
    sent = requests_sent(log)
    assert sent and all(r["headers"]["x-api-key"] == key for r in sent)
    output = json.dumps(sent[1]["body"]["messages"][-1])
    # run as root here, the command could read the sidecar's own environment; a user's agent cannot (the sidecar
    # is not dumpable: tests/security/test_private_process.py), so only the others are counted
    assert "ENV:\\n0\\n" in output and "SOCKET:\\n1" in output, output
    assert holders >= 1 and holds_key == 0


@pytest.mark.parametrize("route", ["direct", "through the user's proxy"])
async def test_an_https_model_gets_the_key_from_the_sidecar_over_verified_tls(sidecar, tmp_path: Path,
                                                                              route: str) -> None:
    """The real model is https (api.anthropic.com, a company gateway): the CLI in the box holds a placeholder and
    an http URL of the same host, speaks plain HTTP into the box's model socket, and the sidecar's relay opens the
    TLS connection (the certificate verified with the user's NODE_EXTRA_CA_CERTS, through the user's HTTPS_PROXY
    when there is one) and puts the real key in. The model gets the key; the CLI never had it."""
    from sidecar.model_credential import PLACEHOLDER
    from sidecar.sandbox import backend_problem
    from tests.e2e.tls_model import connect_proxy, tls_model

    if backend_problem(os.environ.get("PATH")) is not None:
        pytest.skip("no OS boundary on this machine (bubblewrap missing)")
    key = "sk-ant-api03-tls-test-0451-" + "y" * 40
    with scripted_gateway(tmp_path) as (url, log):
        target = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        with tls_model(target, tmp_path, names=("127.0.0.1", "model.test")) as (port, ca_file, seen), \
                connect_proxy(("127.0.0.1", port)) as (proxy_port, proxy_seen):
            env = {**OFFLINE, "ANTHROPIC_API_KEY": key, "NODE_EXTRA_CA_CERTS": str(ca_file),
                   "ANTHROPIC_CUSTOM_HEADERS": f"X-Gateway-Key: gw-{key}"}  # a gateway's own key rides along
            if route == "direct":
                env["ANTHROPIC_BASE_URL"] = base = f"https://127.0.0.1:{port}"
            else:  # a name only the company proxy resolves, on the default port, as api.anthropic.com would be
                env.update(ANTHROPIC_BASE_URL="https://model.test", HTTPS_PROXY=f"http://127.0.0.1:{proxy_port}")
                base = "https://model.test"
            async with sidecar(env=env) as run:
                new = await run.request("session/new", {"projectDir": str(run.project), "model": "claude-sonnet-4-5"},
                                        timeout=90.0)
                assert new["sandbox"]["enabled"] is True
                result = await run.prompt(new["sessionId"], "Say something.", timeout=90.0)
                holds_placeholder = cli_environs_holding(f"ANTHROPIC_API_KEY={PLACEHOLDER}")
                plain_url = cli_environs_holding("ANTHROPIC_BASE_URL=" + base.replace("https://", "http://", 1))
                holds_key = (cli_environs_holding(f"ANTHROPIC_API_KEY={key}")
                             + cli_environs_holding(f"ANTHROPIC_CUSTOM_HEADERS=X-Gateway-Key: gw-{key}"))
                await run.end(new["sessionId"])
                assert result["resultText"] == ANSWER
                assert key not in every_word_of(run)
    sent = requests_sent(log)
    assert sent and all(r["headers"]["x-api-key"] == key for r in sent)  # the model got the real key
    assert all(r["headers"]["x-gateway-key"] == f"gw-{key}" for r in sent)
    assert holds_placeholder >= 1 and plain_url >= 1 and holds_key == 0
    assert seen.handshakes >= 1 and seen.refused == 0  # every connection to the model was TLS, verified
    if route == "direct":
        assert proxy_seen.connects == []
    else:
        assert proxy_seen.connects and set(proxy_seen.connects) == {"model.test:443"}
        assert set(seen.server_names) == {"model.test"}  # the certificate was checked for the model's name


async def test_an_https_model_whose_certificate_is_not_trusted_never_gets_the_key(sidecar, tmp_path: Path) -> None:
    """Without the CA that signed the model's certificate, the sidecar's relay refuses the connection: nothing,
    and no key, reaches the server, the log says why, and the sidecar goes on."""
    from sidecar.sandbox import backend_problem
    from tests.e2e.tls_model import tls_model

    if backend_problem(os.environ.get("PATH")) is not None:
        pytest.skip("no OS boundary on this machine (bubblewrap missing)")
    key = "sk-ant-api03-tls-untrusted-" + "z" * 40
    with scripted_gateway(tmp_path) as (url, log):
        target = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        with tls_model(target, tmp_path) as (port, _ca_file, seen):
            env = {**OFFLINE, "ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": f"https://127.0.0.1:{port}",
                   "CLAUDE_CODE_MAX_RETRIES": "0"}
            async with sidecar(env=env) as run:
                new = await run.request("session/new", {"projectDir": str(run.project), "model": "claude-sonnet-4-5"},
                                        timeout=90.0)
                with contextlib.suppress(RemoteError):
                    await run.prompt(new["sessionId"], "Say something.", timeout=120.0)
                await run.end(new["sessionId"])
                await run.client.ping()
                stderr = run.client.stderr_text()
                assert key not in every_word_of(run)
    assert requests_sent(log) == [] and seen.handshakes == 0 and seen.refused >= 1
    assert "could not be reached over TLS" in stderr and "CERTIFICATE_VERIFY_FAILED" in stderr


def cli_environs_holding(entry: str) -> int:
    """How many of this machine's Claude Code CLI processes hold `entry` in their environment (read from outside)."""
    found = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"_bundled/claude" not in (proc / "cmdline").read_bytes().split(b"\0")[0]:
                continue
            found += entry.encode() in (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
    return found
