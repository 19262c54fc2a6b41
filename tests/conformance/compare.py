"""Field-by-field comparison of two normalised observations: the differences a user or the model would notice.

`python -m tests.conformance.compare [CASE ...]` runs the cases through
`python -m sidecar`, compares each with its golden (recorded on the bare CLI by
`python -m tests.conformance.record`) and prints one line per case and every
difference; exit 1 when any case differs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().with_name("goldens")

# Keys of a hook's stdin whose presence and value must match; the rest only needs to be present in both.
STDIN_VALUE_KEYS = ("hook_event_name", "tool_name", "tool_input", "tool_response", "source", "reason", "prompt",
                    "stop_hook_active", "trigger", "error", "is_interrupt", "permission_mode", "cwd", "message",
                    "notification_type", "last_assistant_message", "custom_instructions", "mcp_arguments",
                    "file_path", "load_reason", "memory_type", "globs", "trigger_file_path")


def _in_order(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hook calls by event and tag, then (for calls the CLI runs side by side, whose arrival order varies: the
    memory files it loads while booting) by file: the same order for both runs."""
    return sorted(calls, key=lambda c: (c["stdin"].get("hook_event_name", ""), c.get("tag", ""),
                                        str(c["stdin"].get("load_reason", "")), str(c["stdin"].get("file_path", ""))))


def _text_of(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out: list[Any] = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            out.append(block.get("text"))
        elif kind == "tool_use":
            out.append({"tool_use": block.get("name"), "input": block.get("input")})
        elif kind == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                inner = "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
            out.append({"tool_result": inner, "is_error": bool(block.get("is_error"))})
        elif kind in ("thinking", "redacted_thinking"):
            continue
        else:
            out.append({kind: "…"})
    return out


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the model reads, message by message, without transport details (cache markers, signatures)."""
    return [{"role": m.get("role"), "content": _text_of(m)} for m in messages]


def differences(golden: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    diffs: list[str] = []
    g_calls, o_calls = _in_order(golden["hook_calls"]), _in_order(ours["hook_calls"])
    g_ids = [(c["stdin"].get("hook_event_name"), c["tag"]) for c in g_calls]
    o_ids = [(c["stdin"].get("hook_event_name"), c["tag"]) for c in o_calls]
    if g_ids != o_ids:
        diffs.append(f"hook calls: CLI {g_ids} vs ours {o_ids}")
    for g, o in zip(g_calls, o_calls):
        where = f"hook {g['tag']} on {g['stdin'].get('hook_event_name')}"
        missing = sorted(set(g["stdin"]) - set(o["stdin"]))
        extra = sorted(set(o["stdin"]) - set(g["stdin"]))
        if missing or extra:
            diffs.append(f"{where}: stdin keys missing {missing}, extra {extra}")
        for key in STDIN_VALUE_KEYS:
            if key in g["stdin"] and key in o["stdin"] and g["stdin"][key] != o["stdin"][key]:
                diffs.append(f"{where}: stdin {key}: CLI {g['stdin'][key]!r} vs ours {o['stdin'][key]!r}")
        if g.get("cwd") != o.get("cwd"):
            diffs.append(f"{where}: cwd CLI {g.get('cwd')!r} vs ours {o.get('cwd')!r}")
        g_env, o_env = g.get("env", {}), o.get("env", {})
        for key in sorted(set(g_env) | set(o_env)):
            if key == "CLAUDE_CODE_ENTRYPOINT":
                continue  # names the embedding (sdk-cli vs sdk-py): differs by design
            if g_env.get(key) != o_env.get(key):
                diffs.append(f"{where}: env {key}: CLI {g_env.get(key)!r} vs ours {o_env.get(key)!r}")
    if len(golden["requests"]) != len(ours["requests"]):
        diffs.append(f"model requests: CLI {len(golden['requests'])} vs ours {len(ours['requests'])}")
    for i, (g, o) in enumerate(zip(golden["requests"], ours["requests"])):
        gc, oc = conversation(g), conversation(o)
        if gc != oc:
            diffs.append(f"model request {i}: " + _first_difference(gc, oc))
    for key in ("stop_reason",):
        if golden["result"].get(key) != ours["result"].get(key):
            diffs.append(f"result {key}: CLI {golden['result'].get(key)!r} vs ours {ours['result'].get(key)!r}")
    if golden["files"] != ours["files"]:
        diffs.append(f"files left by tools: CLI {golden['files']} vs ours {ours['files']}")
    return diffs


def _first_difference(g: list[dict[str, Any]], o: list[dict[str, Any]]) -> str:
    for j, (gm, om) in enumerate(zip(g, o)):
        if gm != om:
            for k, (gb, ob) in enumerate(zip(gm["content"], om["content"])):
                if gb != ob:
                    if isinstance(gb, str) and isinstance(ob, str):
                        return f"message {j} ({gm['role']}) block {k}: " + _string_difference(gb, ob)
                    return f"message {j} ({gm['role']}) block {k}: CLI {_short(gb)} vs ours {_short(ob)}"
            return (f"message {j} ({gm['role']}): CLI has {len(gm['content'])} blocks "
                    f"{_short(gm['content'][len(om['content']):])}, ours {len(om['content'])} {_short(om['content'][len(gm['content']):])}")
    return f"CLI sent {len(g)} messages, ours {len(o)}: extra {_short((g if len(g) > len(o) else o)[min(len(g), len(o)):])}"


def _string_difference(g: str, o: str, context: int = 60) -> str:
    at = next((i for i, (a, b) in enumerate(zip(g, o)) if a != b), min(len(g), len(o)))
    start = max(0, at - context)
    return (f"at character {at}: CLI …{_short(g[start:at + 3 * context], 300)} vs ours …{_short(o[start:at + 3 * context], 300)}")


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def load_golden(name: str) -> dict[str, Any]:
    """A golden as recorded, with the recording day and machine normalised like a fresh observation's
    (harness.normalise)."""
    from tests.conformance.harness import machine_neutral

    return json.loads(machine_neutral((GOLDEN_DIR / f"{name}.json").read_text()))


def _failure(exc: BaseException) -> str:
    """What failed, down to the first leaf of an exception group (a task group's "1 sub-exception" says nothing)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc} {getattr(exc, 'data', '') or ''}".rstrip()


async def _run(names: list[str]) -> int:
    from tests.conformance.cases import BY_NAME, CASES, KNOWN_DIFFERENCES
    from tests.conformance.harness import normalise, run_sidecar

    chosen = [BY_NAME[n] for n in names] if names else CASES
    agree = documented = 0
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        for case in chosen:
            root = Path(tmp) / case.name
            try:
                golden = load_golden(case.name)
                ours = normalise((await run_sidecar(case, root, golden)).to_json(), root)
                diffs = differences(golden, ours)
            except Exception as exc:  # one broken case must not hide the others
                diffs = [f"the run failed: {_failure(exc)}"]
            marker, why = KNOWN_DIFFERENCES.get(case.name, (None, ""))
            explained = bool(diffs) and marker is not None and all(marker in d for d in diffs)
            agree += not diffs
            documented += explained
            print(f"{'AGREE ' if not diffs else 'KNOWN ' if explained else 'DIFFER'} {case.name}"
                  + (f"  ({why})" if explained else ""))
            for d in diffs:
                print(f"    - {d}")
    print(f"\n{agree} of {len(chosen)} cases agree with the bundled CLI; {documented} differ only as documented "
          f"(docs/FIDELITY.md), {len(chosen) - agree - documented} differ otherwise")
    # Documented differences are the known price of a choice, not a failure of this run.
    return 0 if agree + documented == len(chosen) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*")
    sys.exit(asyncio.run(_run(parser.parse_args().cases)))


if __name__ == "__main__":
    main()
