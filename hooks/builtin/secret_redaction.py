"""`secret-redaction`: when a tool's output carries secrets, warn the model and remember that stored copies must be redacted."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from hooks.builtin.common import BuiltinEnv, Options, as_text, context
from hooks.redaction import Finding, find_secrets
from hooks.types import HookContext, HookFunction, HookOutput

# Tool output can be megabytes; secrets past this point are still redacted by
# whatever stores the text (memory, tracking), they just do not raise a warning.
SCAN_CHARS = 200_000


def make_secret_redaction(opts: Options, env: BuiltinEnv) -> HookFunction:
    scan_chars = int(opts.get("scan_chars", SCAN_CHARS))

    async def secret_redaction(payload: dict[str, Any], ctx: HookContext) -> HookOutput | None:
        response = payload.get("tool_response")

        def scan() -> list[Finding]:
            # Serializing and scanning are pure CPU (about 0.15 ms per KiB): off the event loop.
            return find_secrets(as_text(response)[:scan_chars])

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
