"""The CLI gets only the environment it needs: no Orion secret, no token meant for a hook, whatever the sidecar holds.

Read where it counts: the real CLI process's /proc/<pid>/environ in a session started by `python -m sidecar`
(its Bash commands inherit exactly that), plus the allow-list's rules in isolation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from sidecar.sdk_env import cli_environment
from tests.e2e.conftest import open_sidecar

PROBES = Path(__file__).resolve().parent / "scenarios" / "sandbox_probe.yaml"

SIDECAR_SECRETS = {
    "ORION_SIDECAR_TOKEN": "orion-token-8c1f",
    "ORION_WEBHOOK_SECRET": "orion-webhook-secret-77e2",
    "GITHUB_TOKEN": "ghp_notreal0000000000000000000000000000",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-not-for-the-cli",
    "DATABASE_PASSWORD": "db-password-3a9",
    "HOOK_API_TOKEN": "hook-token-for-the-http-hook-only",
}


def cli_process(sidecar_pid: int) -> psutil.Process:
    """The session's Claude Code CLI: the sidecar's child running the bundled binary."""
    found = [p for p in psutil.Process(sidecar_pid).children(recursive=True)
             if p.cmdline() and Path(p.cmdline()[0]).name == "claude"]
    assert len(found) == 1, [p.cmdline()[:1] for p in found]
    return found[0]


@pytest.mark.cli
@pytest.mark.asyncio
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/environ")
async def test_the_cli_process_holds_no_orion_secret_and_no_hook_token(tmp_path: Path) -> None:
    env = {**SIDECAR_SECRETS, "ORION_CLI_ENV_PASS": "BUILD_FLAVOR HOOK_API_TOKEN ORION_WEBHOOK_SECRET",
           "BUILD_FLAVOR": "debug"}
    async with open_sidecar(tmp_path, "notes", env=env) as run:
        # A trusted project whose http hook may send HOOK_API_TOKEN: that token is the hook's, not the agent's.
        (run.project / ".claude").mkdir()
        (run.project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Notification": [{"hooks": [
            {"type": "http", "url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer $HOOK_API_TOKEN"},
             "allowedEnvVars": ["HOOK_API_TOKEN"]}]}]}}))
        await run.trust()
        result = await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{PROBES}"},
                                   timeout=60.0)
        cli_env = cli_process(run.client.process.pid).environ()
        for name, value in SIDECAR_SECRETS.items():
            assert name not in cli_env and value not in cli_env.values(), name
        assert {n for n in cli_env if n.startswith("ORION_")} <= {"ORION_SIDECAR_RUN"}
        # What it needs is there: the model connection, a PATH and HOME, and what the user explicitly passed.
        assert cli_env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
        assert cli_env["PATH"] and cli_env["HOME"] and cli_env["BUILD_FLAVOR"] == "debug"
        assert cli_env["CLAUDE_CODE_ENTRYPOINT"] == "sdk-py"
        # And Bash, which inherits it, prints none of them either.
        await run.request("session/prompt", {"sessionId": result["sessionId"], "prompt": "probe own env"}, timeout=60.0)
        output = "".join(str(u.get("output")) for u in run.updates(result["sessionId"], "tool_call_update"))
        assert "probe-done" in output or run.permission_requests  # allowed, or asked and refused: either way no leak
        for value in SIDECAR_SECRETS.values():
            assert value not in output
        await run.end(result["sessionId"])


def test_the_allow_list() -> None:
    base = {
        "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
        "HTTPS_PROXY": "http://proxy:3128", "ANTHROPIC_API_KEY": "sk-ant-x", "CLAUDE_CODE_USE_BEDROCK": "0",
        "AWS_SECRET_ACCESS_KEY": "aws", "ORION_DATA_DIR": "/d", "ORION_SIDECAR_RUN": "tok",
        "SLACK_TOKEN": "xoxb", "PYTHONPATH": "/repo", "MY_HOOK_TOKEN": "t",
        "ORION_CLI_ENV_PASS": "PYTHONPATH, MY_HOOK_TOKEN ORION_DATA_DIR bad-name",
    }
    env = cli_environment({"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "MY_HOOK_TOKEN": "x"}, base=base,
                          withheld={"MY_HOOK_TOKEN"})
    assert env == {
        "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm",
        "HTTPS_PROXY": "http://proxy:3128", "ANTHROPIC_API_KEY": "sk-ant-x", "CLAUDE_CODE_USE_BEDROCK": "0",
        "ORION_SIDECAR_RUN": "tok", "PYTHONPATH": "/repo", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
    }
    # A provider's credentials pass only when the user chose that provider.
    bedrock = cli_environment({}, base={**base, "CLAUDE_CODE_USE_BEDROCK": "1"})
    assert bedrock["AWS_SECRET_ACCESS_KEY"] == "aws"


@pytest.mark.cli
@pytest.mark.asyncio
@pytest.mark.timeout(240)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/environ")
async def test_a_prompt_hooks_evaluator_cli_holds_no_orion_secret_either(tmp_path: Path, monkeypatch) -> None:
    """Prompt and agent hooks start CLIs of their own (sidecar/evaluator.py): the same allow-list applies."""
    import os

    import anyio

    from sidecar.evaluator import SdkModelClient
    from sidecar.scripted_model.server import get_or_start
    from sidecar.sdk_env import offline_env

    for name, value in SIDECAR_SECRETS.items():
        monkeypatch.setenv(name, value)
    scenario = tmp_path / "slow.yaml"
    # Streamed slowly, so the evaluator's CLI is alive while its environment is read.
    scenario.write_text('delta_delay_ms: 100\ntext_chunk: 4\nside_reply: \'{"ok": true, "reason": "fine, no objection"}\'\n')
    env = offline_env(get_or_start(scenario), tmp_path / "cli-home")
    client = SdkModelClient(env, None, tmp_path / "data")
    seen: dict[str, str] = {}

    async def watch() -> None:
        while not seen:
            for proc in psutil.Process(os.getpid()).children(recursive=True):
                try:
                    argv = proc.cmdline()  # once: a process that ends between two reads has none the second time
                    if argv and Path(argv[0]).name == "claude":
                        seen.update(proc.environ())
                        return
                except psutil.Error:
                    continue
            await anyio.sleep(0.02)

    with anyio.fail_after(180):  # liveness only: a loaded CI machine once needed more than 60 s here
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            answer = await client.complete("Judge this: ls", model=None, timeout_s=150)
            tg.cancel_scope.cancel()
    assert "ok" in answer and seen, "the evaluator's CLI was never seen running"
    for name, value in SIDECAR_SECRETS.items():
        assert name not in seen and value not in seen.values(), name
    # Only run markers (random, per process): the supervisor's token and the evaluator's own.
    assert {n for n in seen if n.startswith("ORION_")} <= {"ORION_SIDECAR_RUN", "ORION_EVALUATOR_RUN"}
