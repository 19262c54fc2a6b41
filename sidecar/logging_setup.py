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
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        line = f"{stamp} {record.levelname} {record.name}: {record.getMessage()}"
        extra = getattr(record, "data", None)
        if isinstance(extra, dict):
            line += " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in extra.items())
        if record.exc_info:
            line += "\n" + "\n".join("    " + part for part in self.formatException(record.exc_info).splitlines())
        # Tool output, hook stderr and payloads reach log lines; secrets in them must not reach the log file.
        from hooks.redaction import redact

        return redact(line)


def configure(level: str | None = None) -> None:
    """Send every record at `level` (default: $ORION_LOG_LEVEL or INFO) to stderr, one line each."""
    chosen = (level or os.environ.get(ENV_LEVEL) or "INFO").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(chosen)
