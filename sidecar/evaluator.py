"""The SDK-backed ModelClient for prompt and agent hooks: one short CLI session per evaluation, killed whole at its deadline.

Claude Code's own agent hooks have overrun their timeout by forty minutes. Here the
deadline is a watchdog that SIGKILLs every process the session started before the
SDK's (graceful, multi-second) close runs. Processes are found by a per-call marker in
their environment, which the CLI passes on to everything it spawns, so grandchildren in
other process groups and children orphaned by the CLI's death are found as well.

Exceptions (from hooks.executors.evaluation)::

    EvaluationError                 the session ended without text (API error, turn limit, CLI crash)
    TimeoutError                    the deadline passed; every process of the session is gone
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

if TYPE_CHECKING:  # psutil loads when a prompt/agent hook's leftovers are looked for, not at session start
    import psutil

from hooks import children
from hooks.executors.evaluation import EvaluationError
from hooks.private_files import private_dir

log = logging.getLogger(__name__)

RUN_MARKER_ENV = "ORION_EVALUATOR_RUN"
_STDERR_LINES_KEPT = 20
# How long to let killed processes stop before giving up on them (SIGKILL takes a few ms).
_REAP_WAIT_S = 2.0
_REAP_POLL_S = 0.01
_CREATE_TIME_SLACK_S = 30.0

T = TypeVar("T")


def find_marked_processes(marker: str, since: float) -> list[psutil.Process]:
    """Processes started at or after `since` whose environment carries `marker`, plus their descendants."""
    me = os.getpid()
    import psutil

    found: dict[int, psutil.Process] = {}
    # Only a speed-up (older processes cannot carry a fresh marker): psutil derives create_time
    # from a whole-second boot time, measured here more than a second off time.time(), so the
    # window is generous.
    for proc in psutil.process_iter(["create_time"]):
        created = proc.info.get("create_time")
        if proc.pid == me or created is None or created < since - _CREATE_TIME_SLACK_S:
            continue
        with suppress(psutil.Error):
            if proc.environ().get(RUN_MARKER_ENV) == marker:
                found[proc.pid] = proc
    for proc in list(found.values()):
        with suppress(psutil.Error):
            for child in proc.children(recursive=True):
                found.setdefault(child.pid, child)
    return list(found.values())


def kill_marked_processes(marker: str, since: float) -> list[psutil.Process]:
    """SIGKILL every process (and every foreign process group) of one evaluation run; returns those hit."""
    import psutil

    victims = find_marked_processes(marker, since)
    own_group = os.getpgid(0)
    groups: set[int] = set()
    for proc in victims:
        with suppress(psutil.Error, OSError):
            group = os.getpgid(proc.pid)
            if group != own_group:
                groups.add(group)
        with suppress(psutil.Error):
            proc.kill()
    for group in groups:
        with suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    return victims


async def wait_gone(victims: list[psutil.Process]) -> None:
    """Wait (bounded) until killed processes have stopped running.

    A zombie counts as gone: it holds nothing but its pid. Nothing is reaped here, since
    reaping our direct child would steal its exit status from asyncio's child watcher (the
    SDK's close() reaps the CLI).
    """
    deadline = anyio.current_time() + _REAP_WAIT_S
    pending = victims
    while pending and anyio.current_time() < deadline:
        pending = [p for p in pending if _still_running(p)]
        if pending:
            await anyio.sleep(_REAP_POLL_S)


def _still_running(proc: psutil.Process) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def run_with_deadline(marker: str, timeout_s: float, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work`; at the deadline (or on cancellation) kill every marked process first, then let `work` unwind."""
    since = time.time()
    timed_out = False
    result: T | None = None
    error: Exception | None = None

    async with anyio.create_task_group() as group:

        async def watchdog() -> None:
            nonlocal timed_out
            try:
                await anyio.sleep(timeout_s)
                timed_out = True
            finally:
                # Runs on the deadline, on outside cancellation and after normal completion
                # alike: whatever the session left behind does not outlive this call. The
                # kill is synchronous so that it lands before `work` starts unwinding.
                victims = kill_marked_processes(marker, since)
                if victims:
                    why = "deadline" if timed_out else "end of evaluation"
                    log.warning("evaluator %s: killed %d leftover process(es): %s", why, len(victims), [p.pid for p in victims])
                with anyio.CancelScope(shield=True):
                    await wait_gone(victims)
            group.cancel_scope.cancel()

        group.start_soon(watchdog)
        try:
            result = await work()
        except Exception as exc:
            error = exc
        group.cancel_scope.cancel()

    if timed_out:
        # A CLI killed by the watchdog surfaces in `work` as a connection or process error.
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if error is not None:
        raise error
    return result  # type: ignore[return-value]


class SdkModelClient:
    """Implements hooks.executors.evaluation.ModelClient with claude-agent-sdk (imported on first use)."""

    def __init__(self, env: dict[str, str], default_model: str | None, data_dir: Path) -> None:
        self.env = dict(env)
        self.default_model = default_model
        self.data_dir = Path(data_dir)

    async def complete(
        self, prompt: str, *, model: str | None, timeout_s: float, system: str | None = None
    ) -> str:
        scratch = private_dir(self.data_dir / "evaluator")  # Orion's data: 0700 like the rest of the data dir
        return await self._session(
            prompt, cwd=scratch, tools=[], max_turns=1, model=model, timeout_s=timeout_s, system=system
        )

    async def run_agent(
        self,
        prompt: str,
        *,
        cwd: Path,
        tools: list[str],
        max_turns: int,
        model: str | None,
        timeout_s: float,
        system: str | None = None,
    ) -> str:
        return await self._session(
            prompt, cwd=cwd, tools=tools, max_turns=max_turns, model=model, timeout_s=timeout_s, system=system
        )

    async def _session(
        self,
        prompt: str,
        *,
        cwd: Path,
        tools: list[str],
        max_turns: int,
        model: str | None,
        timeout_s: float,
        system: str | None,
    ) -> str:
        from claude_agent_sdk.types import ClaudeAgentOptions  # not the package: sidecar/sdk_loader.py

        from sidecar.agent import clean_cli_launch
        from sidecar.sdk_env import cli_environment

        marker = secrets.token_hex(12)
        # Like the session's CLI: only allow-listed variables, never Orion's secrets or tokens meant for hooks.
        env, cli_path = clean_cli_launch({**cli_environment(self.env), RUN_MARKER_ENV: marker}, None)
        stderr_tail: deque[str] = deque(maxlen=_STDERR_LINES_KEPT)
        options = ClaudeAgentOptions(
            tools=list(tools),
            allowed_tools=list(tools),
            # Never prompts: anything outside the allowlist is refused, not asked about.
            permission_mode="dontAsk",
            max_turns=max_turns,
            model=model or self.default_model,
            system_prompt=system,
            # The CLI must run no settings hooks of its own (they would re-enter our hooks).
            setting_sources=[],
            cwd=str(cwd),
            env=env,
            cli_path=cli_path,
            stderr=stderr_tail.append,
        )
        return await run_with_deadline(marker, timeout_s, lambda: _converse(prompt, options, stderr_tail))


async def _converse(prompt: str, options: Any, stderr_tail: deque[str]) -> str:
    from claude_agent_sdk.types import AssistantMessage, ResultMessage, TextBlock

    from sidecar import sdk_loader

    ClaudeSDKClient = await anyio.to_thread.run_sync(sdk_loader.load_client, False)  # noqa: N806 - a class

    last_text = ""
    result: ResultMessage | None = None
    async with ClaudeSDKClient(options) as client:
        # Recorded for the sidecar's watchdog: an evaluation must not outlive a killed sidecar either.
        pid = getattr(getattr(getattr(client, "_transport", None), "_process", None), "pid", None)
        if pid:
            children.started(pid, own_group=False)
        await client.query(prompt)
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage):
                texts = [block.text for block in message.content if isinstance(block, TextBlock)]
                if texts:
                    last_text = "\n".join(texts)
            elif isinstance(message, ResultMessage):
                result = message
    if result is None:
        raise EvaluationError(_with_stderr("the CLI ended without a result", stderr_tail))
    if result.is_error or result.subtype != "success":
        detail = "; ".join(result.errors or []) or result.subtype
        if result.subtype == "error_max_turns":
            detail = f"reached its turn limit ({options.max_turns}) without a final answer"
        raise EvaluationError(_with_stderr(f"model session failed: {detail}", stderr_tail))
    text = result.result if result.result is not None else last_text
    if not text.strip():
        raise EvaluationError("the model returned no text")
    return text


class UnavailableModel:
    """A ModelClient for when no model can be reached (no credential): every prompt or agent hook reports why, as a
    hook error, instead of the whole run failing."""

    def __init__(self, why: str) -> None:
        self.why = why

    async def complete(self, prompt: str, *, model: str | None, timeout_s: float, system: str | None = None) -> str:
        raise EvaluationError(self.why)

    async def run_agent(self, prompt: str, **_: Any) -> str:
        raise EvaluationError(self.why)


def hook_model(model: str | None, data_dir: Path, run_id: str) -> tuple[Any, str | None, Path | None]:
    """(ModelClient, default model for hooks naming none, scratch CLI home to remove afterwards) for prompt and agent
    hooks run outside a session (`python -m hooks test`, `hooks/test`), built as session/new builds a session's.

    `model`: ``scripted:<scenario>`` (offline), a model name, or None for what the user configured. A missing
    credential gives an UnavailableModel (each such hook says what to set); a bad scenario raises ModelConfigError.
    """
    from sidecar.sdk_env import SCRIPTED_PREFIX, NoCredential, build_model_env

    try:
        env, model_name, _server = build_model_env(model, data_dir, run_id)
    except NoCredential as exc:
        return UnavailableModel(str(exc)), None, None
    scratch = Path(data_dir) / "cli-home" / run_id if model and model.startswith(SCRIPTED_PREFIX) else None
    return SdkModelClient(env, None, data_dir), model_name, scratch


def _with_stderr(message: str, stderr_tail: deque[str]) -> str:
    return f"{message} (CLI stderr: {' | '.join(stderr_tail)})" if stderr_tail else message
