"""Plain command hooks: read the input from stdin, print the answer on stdout, or block with exit code 2."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import NoReturn, TextIO

from hooks.sdk.inputs import AnyInput, InputError, parse_input
from hooks.sdk.outputs import HookOutputJSON


def read_input(stream: TextIO | None = None) -> AnyInput:
    """The hook's stdin, parsed into its event's typed input (InputError names what is wrong)."""
    text = (stream or sys.stdin).read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError("hook", "(input)", f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return parse_input(data)


def emit(output: HookOutputJSON | None, stream: TextIO | None = None) -> None:
    """Print the answer as the one JSON line Claude Code reads on stdout (nothing for None: no objection)."""
    if output is None:
        return
    out = stream or sys.stdout
    out.write(json.dumps(output, ensure_ascii=False) + "\n")
    out.flush()


def exit_blocking(reason: str) -> NoReturn:
    """Block the Claude Code way without JSON: `reason` on stderr, exit code 2."""
    sys.stderr.write(reason.rstrip("\n") + "\n")
    sys.stderr.flush()
    raise SystemExit(2)


def run_hook(handler: Callable[[AnyInput], HookOutputJSON | None]) -> NoReturn:
    """A command hook's whole `main`: read stdin, call `handler`, print its answer, exit 0.

    Input that does not parse exits 1 with the reason on stderr: a non-blocking hook error (the hook's
    `failClosed: true` turns it into a refusal).
    """
    try:
        parsed = read_input()
    except InputError as exc:
        sys.stderr.write(f"{exc}\n")
        raise SystemExit(1) from None
    emit(handler(parsed))
    raise SystemExit(0)
