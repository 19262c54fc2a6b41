"""Logging for the sidecar: structured one-line records on stderr (stdout belongs to the protocol)."""

from __future__ import annotations

import json
import logging
import os
import sys
import time

ENV_LEVEL = "ORION_LOG_LEVEL"


class LineFormatter(logging.Formatter):
    """`2026-11-21T12:00:00.123Z INFO sidecar.app: message key=value`, exceptions indented below."""

    def format(self, record: logging.LogRecord) -> str:
        # Tool output, hook stderr and payloads reach log lines; secrets in them must not reach the log.
        # Each part is redacted as text *before* it is JSON-encoded (an encoded `\n` hides the next token's start).
        from hooks.redaction import redact, redact_value

        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        # Hook names become logger names (`hooks.hook.<name>`) and come from project settings: redacted too.
        line = f"{stamp} {record.levelname} {redact(record.name)}: {redact(record.getMessage())}"
        extra = getattr(record, "data", None)
        if isinstance(extra, dict):
            line += " " + " ".join(f"{k}={json.dumps(redact_value(v), default=str)}" for k, v in extra.items())
        if record.exc_info:
            trace = redact(self.formatException(record.exc_info))
            line += "\n" + "\n".join("    " + part for part in trace.splitlines())
        return line


def configure(level: str | None = None) -> None:
    """Send every record at `level` (default: $ORION_LOG_LEVEL or WARNING) to stderr, one line each. WARNING by
    default: ACP clients (Toad, editor plugins) show whatever an agent writes on stderr, some as error notices."""
    chosen = (level or os.environ.get(ENV_LEVEL) or "WARNING").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(chosen)
