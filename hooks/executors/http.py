"""The `http` hook executor: POST the event payload as JSON, read a capped reply with the command-hook output schema."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:  # httpx (~25 ms, its CLI module pulls click and pygments) loads with the first http hook
    import httpx

from hooks.executors.evaluation import hook_setting
from hooks.executors.mcp_tool import blocking_report, blocks_on_failure
from hooks.interpret import parse_stdout
from hooks.types import ExecutionReport, HookCall

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
_ERROR_BODY_SHOWN = 500

_ENV_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_header(value: str, allowed: frozenset[str], environ: Mapping[str, str]) -> str:
    """Expand `$VAR` / `${VAR}` for allowlisted names; any other reference becomes empty.

    Emptying (rather than leaving `$SECRET` literally) keeps a settings file from learning
    whether a variable exists by watching what a server receives.
    """

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return environ.get(name, "") if name in allowed else ""

    return _ENV_REFERENCE.sub(substitute, value)


class BodyTooLarge(Exception):
    """The reply went past the byte cap; reading stopped there."""


async def _read_capped(response: httpx.Response, cap: int) -> str:
    received = bytearray()
    async for chunk in response.aiter_bytes():
        if len(received) + len(chunk) > cap:
            raise BodyTooLarge(f"response body larger than the {cap}-byte cap; stopped reading")
        received += chunk
    return received.decode(response.encoding or "utf-8", errors="replace")


class HttpExecutor:
    """Runs `http` hooks through one shared AsyncClient (closed with `aclose` when this executor made it)."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._owns_client = client is None
        self._client = client
        self.max_body_bytes = max_body_bytes
        self._environ = environ if environ is not None else os.environ

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared client, made at the first http hook (a session without one never imports httpx)."""
        if self._client is None:
            import httpx

            # Redirects are not followed: a policy server that moved should be edited in settings,
            # and following would POST hook payloads to a URL the allowlist never saw.
            self._client = httpx.AsyncClient(follow_redirects=False)
        return self._client

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    def _headers(self, hook: Any) -> dict[str, str]:
        allowed = frozenset(hook_setting(hook, "allowedEnvVars", []))
        configured: dict[str, str] = hook_setting(hook, "headers", {})
        headers = {name: expand_header(value, allowed, self._environ) for name, value in configured.items()}
        headers.setdefault("Content-Type", "application/json")
        return headers

    async def run(self, call: HookCall) -> ExecutionReport:
        report = await self._run(call)
        if report.status in ("error", "timeout") and blocks_on_failure(hook_setting(call.hook, "onFailure"), call.event):
            return blocking_failure(call, report)
        return report

    async def _run(self, call: HookCall) -> ExecutionReport:
        url = hook_setting(call.hook, "url")
        if not url:
            return ExecutionReport(status="error", error="http hook has no url")
        body = json.dumps(call.payload, ensure_ascii=False, default=str).encode()
        import httpx

        try:
            with anyio.fail_after(call.timeout_s):
                return await self._exchange(url, body, self._headers(call.hook), call.timeout_s)
        except (TimeoutError, httpx.TimeoutException):
            return ExecutionReport(status="timeout", error=f"no complete reply from {url} within {call.timeout_s:g} s")
        except httpx.ConnectError as exc:
            return ExecutionReport(status="error", error=f"POST {url} failed: {type(exc).__name__}: {exc}",
                                   stderr=_refused(url) if _is_refusal(exc) else f"{type(exc).__name__}: {exc}")
        except httpx.HTTPError as exc:
            return ExecutionReport(status="error", error=f"POST {url} failed: {type(exc).__name__}: {exc}",
                                   stderr=f"{type(exc).__name__}: {exc}")

    async def _exchange(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> ExecutionReport:
        async with self.client.stream("POST", url, content=body, headers=headers, timeout=timeout_s) as response:
            try:
                text = await _read_capped(response, self.max_body_bytes)
            except BodyTooLarge as exc:
                return ExecutionReport(status="error", error=f"HTTP {response.status_code} from {url}: {exc}")
        if not response.is_success:
            shown = text.strip()[:_ERROR_BODY_SHOWN]
            error = f"HTTP {response.status_code} from {url}" + (f": {shown}" if shown else "")
            # stderr: what Claude Code names as the cause when onFailure blocks (the server's body left out)
            return ExecutionReport(status="error", stderr=f"HTTP {response.status_code} from {url}", error=error)
        # A 2xx body is a command hook's JSON answer, read by the same parser; an empty body is an empty answer. Unlike
        # a command's stdout, plain text is no answer at all: Claude Code 2.1.330 refuses it as a hook error
        # ("HTTP hook must return JSON"), so it never becomes context (conformance case http_hook_plain_body).
        output, plain, problem = parse_stdout(text)
        if problem is not None:
            return ExecutionReport(status="error", stdout=text, error=f"{problem} (reply from {url})")
        if output is None and plain and plain.strip():
            shown = "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in plain.strip()[:_ERROR_BODY_SHOWN])
            return ExecutionReport(status="error", stdout=text, stderr="HTTP hook must return JSON",
                                   error=f"HTTP hook must return JSON, but {url} answered with plain text: {shown}")
        return ExecutionReport(status="ok", stdout=text, output=output)


# --------------------------------------------------------------------------- onFailure: "block"


def url_label(url: str) -> tuple[str | None, bool]:
    """The hook's URL as Claude Code names it in what the model reads (no user, password, query or fragment, no
    trailing "/"), and whether the URL carried any of those (a place a secret sits: then the cause is withheld too).
    (None, True) for a URL that is not plain http(s)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None, True
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None, True
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    label = urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
    return label, bool(parts.username or parts.password or parts.query or parts.fragment)


WITHHELD_CAUSE = ("Error details are hidden because they may contain this hook's URL, and any secrets in it can't be "
                  "reliably removed.")


def blocking_failure(call: HookCall, report: ExecutionReport) -> ExecutionReport:
    """A failed call of a hook with `onFailure: "block"`, in Claude Code 2.1.330's words (conformance cases
    http_hook_error_blocks, http_hook_unreachable_blocks): `[<url>]: failed; blocking because onFailure is "block"`
    and the cause on the next line; "timed out" for a timeout. A URL that carried credentials, a query or a fragment
    is named by its bare address and its cause withheld."""
    label, secretive = url_label(hook_setting(call.hook, "url") or "")
    what = "timed out" if report.status == "timeout" else "failed"
    cause = "" if report.status == "timeout" else (report.stderr or "").strip()
    if cause and secretive:
        cause = WITHHELD_CAUSE
    reason = f'[{label or "http hook"}]: {what}; blocking because onFailure is "block"' + (f"\n{cause}" if cause else "")
    return blocking_report(call.event, reason, report.error)


def _is_refusal(exc: Exception) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "Connection refused" in str(cause) \
                or getattr(cause, "errno", None) == 111:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _refused(url: str) -> str:
    """Node's words for a refused connection, which Claude Code passes on: `connect ECONNREFUSED <host>:<port>`."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    return f"connect ECONNREFUSED {parts.hostname}:{port}"
