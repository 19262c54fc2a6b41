"""`secret-redaction`: when a tool's output carries secrets, warn the model and remember that stored copies must be redacted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread

from hooks.builtin.common import BuiltinEnv, Options, context
from hooks.redaction import Finding, find_secrets
from hooks.types import HookContext, HookFunction, HookOutput

# Tool output can be megabytes; secrets past this point are still redacted by
# whatever stores the text (memory, tracking), they just do not raise a warning.
SCAN_CHARS = 200_000


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a tool response, keys included, depth-first (a bounded depth: responses are data)."""
    if isinstance(value, str):
        yield value
    elif depth < 32 and isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item, depth + 1)
    elif depth < 32 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, depth + 1)


def make_secret_redaction(opts: Options, env: BuiltinEnv) -> HookFunction:
    scan_chars = int(opts.get("scan_chars", SCAN_CHARS))

    async def secret_redaction(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        response = payload.get("tool_response")

        def scan() -> list[Finding]:
            # Scanning is pure CPU (tens of µs per KiB): off the event loop. Each decoded string is scanned
            # on its own, never the JSON encoding of the response (where a newline is an escaped `\n`).
            found: list[Finding] = []
            budget = scan_chars
            for text in _strings(response):
                if budget <= 0:
                    break
                found.extend(find_secrets(text[:budget]))
                budget -= len(text)
            return found

        findings = await anyio.to_thread.run_sync(scan)
        if not findings:
            return None
        kinds = sorted({f.kind for f in findings})
        seen = ctx.state.setdefault("secrets_seen", {})
        for kind in kinds:
            seen[kind] = seen.get(kind, 0) + 1
        # Only kinds and counts are logged: the log must not become a second copy of the secret.
        ctx.log.warning("secret-redaction: %s output contained %d secret(s): %s",
                        payload.get("tool_name"), len(findings), ", ".join(kinds))
        return context(
            "PostToolUse",
            f"<secret-warning>\nThe output of {payload.get('tool_name') or 'the tool'} contains "
            f"{len(findings)} secret(s) ({', '.join(kinds)}). Do not repeat, quote or summarise these values, "
            "do not write them into files, commits or messages, and refer to them only by name. Orion redacts "
            "them from its memory and logs.\n</secret-warning>",
        )

    return secret_redaction
