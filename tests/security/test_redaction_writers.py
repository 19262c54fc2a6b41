"""No secret is kept: a tool output, prompt, reply or failing hook full of credentials leaves none in anything Orion writes.

In-process through the hook runner with the built-in set (memory, continuity,
tracking), then a real session through `python -m sidecar` and the real CLI
(memory.sqlite3 and its WAL, events.jsonl, hook-timing.jsonl, stderr logs,
`log` events). Every file is read as raw bytes: a secret in a free SQLite page
or an unflushed WAL frame counts as kept.
"""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from hooks.memory.search import search_memory
from hooks.memory.store import open_store
from hooks.trust import TrustStore
from sidecar.log_forward import _params as log_event_params
from sidecar.logging_setup import LineFormatter
from tests.builtin.harness import sandbox
from tests.e2e.conftest import fixed_policy, open_sidecar
from tests.security.secret_samples import SECRETS

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "secret_output.yaml"

# The ones most likely to be missed go first: memory keeps the first ~2000 characters of an output.
FIRST = ("OpenAI project key", "Slack app-level token", "Stripe test secret key", "Google OAuth client secret",
         "Password in URL", ".netrc password", "Azure storage account key", "SendGrid API key", "PyPI token",
         "npm token", "Docker config auth", "JWT", "AWS access key id", "Anthropic API key")
ORDERED = sorted(SECRETS, key=lambda s: (s.name not in FIRST, FIRST.index(s.name) if s.name in FIRST else 0))
DEPLOY_LOG = "deploy started\n" + "\n".join(s.line for s in ORDERED) + "\ndeploy finished\n"


def forms(secret: str) -> list[bytes]:
    """The ways a secret can sit in a file: as is, JSON-escaped, and each single line of a multi-line one."""
    variants = {secret, json.dumps(secret)[1:-1]}
    variants.update(line for line in secret.splitlines() if len(line) >= 16)
    return [v.encode() for v in variants]


def leaks_in(data: bytes) -> list[str]:
    return [s.name for s in SECRETS if any(form in data for form in forms(s.secret))]


def leaks_under(root: Path) -> dict[str, list[str]]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            names = leaks_in(path.read_bytes())
            if names:
                found[str(path.relative_to(root))] = names
    return found


# ----------------------------------------------------------------------------- in-process: the hook runner


def failing_project_hook(project: Path, vault: Path) -> None:
    """A trusted project hook that fails on every tool, quoting the tool's output in its stderr (the error text tracking keeps)."""
    code = "import json,sys; d=json.load(sys.stdin); sys.stderr.write(json.dumps(d.get('tool_response'))); sys.exit(1)"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [{"hooks": [
        {"type": "command", "command": f"{sys.executable} -c \"{code}\""}]}]}}))
    vault.mkdir()
    TrustStore().trust(project, vault_dir=vault)


@pytest.mark.asyncio
async def test_secrets_in_a_session_reach_no_file_under_the_data_dir(tmp_path: Path) -> None:
    failing_project_hook(tmp_path / "project", tmp_path / "vault")
    secret_prompt = "deploy with these: " + " ".join(s.line for s in ORDERED[:6])
    async with sandbox(tmp_path) as sb:
        await sb.fire("SessionStart", {"source": "startup"})
        await sb.fire("UserPromptSubmit", {"prompt": secret_prompt})
        # One Bash output as the CLI hands it over: a structure whose strings hold newlines.
        agg = await sb.tool("PostToolUse", "Bash", {"command": "cat deploy.log"},
                            {"stdout": DEPLOY_LOG, "stderr": "warning\n" + ORDERED[1].line, "interrupted": False})
        # The failing hook really quoted the secrets: what it says must be redacted wherever it is stored.
        failed = [r for r in agg.results if r.outcome == "error"]
        assert failed and ORDERED[0].secret in (failed[0].error or "")
        warning = next(r for r in agg.results if r.hook_name == "secret-redaction")
        assert "secret" in warning.output.hookSpecificOutput.additionalContext
        # Each format on its own as an output, so none hides past memory's length cap.
        for sample in SECRETS:
            await sb.tool("PostToolUse", "Bash", {"command": "./print-one"}, {"stdout": f"line one\n{sample.line}"})
        await sb.fire("PreCompact", {"trigger": "manual", "custom_instructions": ORDERED[2].line})
        await sb.fire("Stop", {"stop_hook_active": False,
                               "last_assistant_message": f"Done. The key was\n{ORDERED[3].line}\nkeep it safe."})
        await sb.fire("SessionEnd", {"reason": "other"})
        with anyio.fail_after(10):
            await sb.runner.flush_tracking()
        store = open_store(sb.data)
        observations = store.observations("sess-1")
        hits = await search_memory(sb.data, "line one")
    # The observations were stored (redacted), not dropped.
    assert len(observations) >= len(SECRETS)
    assert hits and all("[REDACTED:" in h["text"] for h in hits)
    files = {str(p.relative_to(sb.data)) for p in sb.data.rglob("*") if p.is_file()}
    assert {"memory.sqlite3", "sessions/sess-1/events.jsonl", "analytics/hook-timing.jsonl"} <= files
    assert any(f.startswith("continuity/") for f in files)
    assert leaks_under(sb.data) == {}
    events = (sb.data / "sessions" / "sess-1" / "events.jsonl").read_text()
    assert "[REDACTED:" in events  # the failing hook's error text is there, redacted


def test_log_lines_and_log_events_carry_no_secret() -> None:
    logger = logging.getLogger("tests.security.redaction")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter())
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger.addHandler(handler)
    logger.addHandler(keep)
    logger.propagate = False
    try:
        logger.warning("hook failed: %s", "stderr:\n" + DEPLOY_LOG, extra={"data": {"payload": {"out": DEPLOY_LOG}}})
        try:
            raise RuntimeError("boom\n" + ORDERED[0].line)
        except RuntimeError:
            logger.exception("hook crashed")
    finally:
        logger.removeHandler(handler)
        logger.removeHandler(keep)
        logger.propagate = True
    text = stream.getvalue()
    assert "[REDACTED:" in text and leaks_in(text.encode()) == []
    forwarded = json.dumps([log_event_params(r) for r in records])
    assert "[REDACTED:" in forwarded and leaks_in(forwarded.encode()) == []


# ----------------------------------------------------------------------------- a real session


@pytest.mark.cli
@pytest.mark.asyncio
async def test_a_real_sessions_bash_output_leaves_no_secret_behind(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"ORION_DATA_DIR": str(data), "ORION_LOG_LEVEL": "DEBUG", "ORION_LOG_FORWARD_LEVEL": "DEBUG"}
    async with open_sidecar(tmp_path, "notes", trust=False, permission=fixed_policy("allow_once"), env=env) as run:
        (run.project / "deploy.log").write_text(DEPLOY_LOG)
        code = ("import json,sys; d=json.load(sys.stdin); "
                "sys.stderr.write(str(d.get('tool_response'))); sys.exit(1)")
        settings = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": f"{sys.executable} -c \"{code}\""}]}]}}
        (run.project / ".claude").mkdir(exist_ok=True)
        (run.project / ".claude" / "settings.json").write_text(json.dumps(settings))
        await run.trust()
        sid = (await run.request("session/new", {"projectDir": str(run.project), "model": f"scripted:{SCENARIO}",
                                                 "allowedTools": ["Bash"]}, timeout=60.0))["sessionId"]
        result = await run.prompt(sid, f"Check the deploy. My token is {ORDERED[0].secret} by the way.")
        assert result["stopReason"] == "end_turn"
        # The tool really printed the secrets, and the failing project hook really quoted them.
        tool_output = json.dumps(run.model_requests("secret_output"))
        assert ORDERED[0].secret in tool_output or json.dumps(ORDERED[0].secret)[1:-1] in tool_output
        failed = await run.wait_event(lambda e: e.name == "hook_response" and e.params.get("outcome") == "error"
                                      and e.params.get("source") == "project")
        assert failed.params["event"] == "PostToolUse"
        await run.end(sid)
        hits = (await run.request("memory/search", {"query": "deploy"}))["results"]
        assert hits, "the Bash call left an observation"
        log_events = json.dumps(run.named("log"))
        # What the hooks printed and answered, as the frontend (and the inspector page) received it.
        hook_events = json.dumps([*run.named("hook_progress"), *run.named("hook_response"),
                                  *[u for u in run.updates(sid) if u.get("sessionUpdate") == "notice"]])
        await run.client.close()
    assert "[REDACTED:" in json.dumps(failed.params), failed.params  # the hook's stderr quoted them: redacted
    assert leaks_in(hook_events.encode()) == []
    assert leaks_in(log_events.encode()) == []
    assert leaks_in(json.dumps(hits).encode()) == []
    stderr = run.client.stderr_text()
    assert "deploy" in stderr or stderr  # the debug log ran
    assert leaks_in(stderr.encode()) == []
    written = {str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()}
    assert "memory.sqlite3" in written and f"sessions/{sid}/events.jsonl" in written
    assert leaks_under(data) == {}
    events = (data / "sessions" / sid / "events.jsonl").read_text()
    assert "[REDACTED:" in events


# ----------------------------------------------------------------------------- python -m hooks


def test_python_m_hooks_test_keeps_no_secret(tmp_path: Path) -> None:
    """`python -m hooks test` runs the built-in memory hooks for real: what it stores is redacted and private."""
    project = tmp_path / "project"
    project.mkdir()
    data = tmp_path / "data"
    env = dict(os.environ, ORION_DATA_DIR=str(data), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    payloads = [
        ("UserPromptSubmit", {"prompt": "use " + ORDERED[0].line}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "cat deploy.log"}, "tool_use_id": "t1",
                         "tool_response": {"stdout": DEPLOY_LOG, "stderr": ""}}),
    ]
    for event, payload in payloads:
        done = subprocess.run(
            [sys.executable, "-m", "hooks", "test", event, "--project", str(project), "--payload", "-",
             "--session-id", "cli-1"],
            input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert leaks_in((done.stdout + done.stderr).encode()) == []
    assert (data / "memory.sqlite3").exists()
    assert leaks_under(data) == {}
    for path in [data, *data.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
