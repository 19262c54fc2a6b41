"""`python -m hooks.sdk`: the builders for shell hooks (print the answer's JSON) and `get` to read an input field."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hooks.payload import MISSING, field_at
from hooks.sdk import outputs
from hooks.sdk.outputs import HookOutputJSON, SdkUsageError

# Builders whose JSON depends on the event: the event comes from --event, else from the hook input on stdin.
_EVENT_BUILDERS = ("deny", "ask", "allow", "rewrite", "context")


def _stdin_json() -> Any:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    text = sys.stdin.read()
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SdkUsageError(f"stdin is not the hook's JSON input: {exc.msg} at line {exc.lineno}") from None


def _event_of(args: argparse.Namespace) -> str | None:
    if args.event:
        return str(args.event)
    data = _stdin_json()
    if isinstance(data, dict) and isinstance(data.get("hook_event_name"), str):
        return str(data["hook_event_name"])
    return None


def _rewrite_input(pairs: list[str]) -> dict[str, Any]:
    if len(pairs) == 1 and pairs[0].lstrip().startswith("{"):
        value = json.loads(pairs[0])
        if not isinstance(value, dict):
            raise SdkUsageError("rewrite takes a JSON object or KEY=VALUE arguments")
        return value
    tool_input: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SdkUsageError(f"rewrite takes KEY=VALUE arguments (or one JSON object), got {pair!r}")
        tool_input[key] = value
    return tool_input


def build(args: argparse.Namespace) -> HookOutputJSON:
    name: str = args.builder
    event = _event_of(args) if name in _EVENT_BUILDERS else None
    if name == "deny":
        return outputs.deny(args.text, event=event or "PreToolUse")
    if name == "ask":
        return outputs.ask(args.text, event=event or "PreToolUse")
    if name == "allow":
        return outputs.allow(args.text, event=event or "PreToolUse")
    if name == "rewrite":
        return outputs.rewrite(event=event or "PreToolUse", **_rewrite_input(args.pairs))
    if name == "context":
        if event is None:
            raise SdkUsageError("context needs the event: pass --event NAME or pipe the hook's input to stdin")
        return outputs.context(args.text, event=event)
    if name == "block":
        return outputs.block(args.text)
    if name == "stop":
        return outputs.stop(args.text)
    return outputs.system_message(args.text)


def get_field(path: str) -> str:
    """One field of the hook input on stdin, by dotted path (`tool_input.command`): strings raw, the rest as JSON."""
    value = field_at(_stdin_json(), path)
    if value is MISSING:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hooks.sdk",
        description="Print a hook answer as Claude Code's hook output JSON (for shell hooks), or read an input field.",
    )
    sub = parser.add_subparsers(dest="builder", required=True)
    for name, helptext in (("deny", "refuse the tool call (or block the event) with REASON"),
                           ("ask", "PreToolUse: ask the user, showing REASON"),
                           ("context", "add TEXT to what the model reads"),
                           ("block", "decision block with REASON (UserPromptSubmit, Stop, PostToolUse...)"),
                           ("stop", "end the agent after this step; REASON is shown to the user"),
                           ("system-message", "show TEXT to the user")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("text")
        if name in _EVENT_BUILDERS:
            p.add_argument("--event", default=None, help="the hook's event (default: read from the input on stdin, "
                                                         "else PreToolUse)")
    p = sub.add_parser("allow", help="APPROVE the tool call (skips the permission prompt); optional REASON")
    p.add_argument("text", nargs="?", default=None)
    p.add_argument("--event", default=None)
    p = sub.add_parser("rewrite", help="PreToolUse: run the tool with this input (KEY=VALUE ... or one JSON object)")
    p.add_argument("pairs", nargs="+")
    p.add_argument("--event", default=None)
    p = sub.add_parser("get", help="print one field of the hook input on stdin (e.g. tool_input.command)")
    p.add_argument("path")
    args = parser.parse_args(argv)
    try:
        if args.builder == "get":
            sys.stdout.write(get_field(args.path) + "\n")
            return 0
        output = build(args)
    except (SdkUsageError, json.JSONDecodeError) as exc:
        print(f"python -m hooks.sdk: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
