"""`python -m hooks`: list the effective hooks, test an event against the real executors, validate a settings file, trust a project, prune old sessions' data."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from hooks.hookset import HookSet, exact_runs, printable
from hooks.paths import data_dir
from hooks.runner import HookRunner
from hooks.errors import TrustError
from hooks.trust import TrustStore
from hooks.validation import project_hookset, validate_file
from hooks.types import ALL_EVENTS, HookProgress, HookResult, HookStarted, SessionContext


def _load(args: argparse.Namespace) -> HookSet:
    project = Path(args.project).resolve()
    vault = Path(args.vault).resolve() if args.vault else None
    return _project_hookset(project, vault, builtin=not args.no_builtin)


def _project_hookset(project: Path, vault: Path | None = None, *, builtin: bool = True) -> HookSet:
    """The one analysis of a project's hooks (what `list`, `hooks/list` and session/new see)."""
    return project_hookset(project, vault, builtin=builtin)


def _table(rows: list[dict[str, Any]]) -> str:
    cols = ("name", "event", "matcher", "type", "source", "state", "runs", "reason")
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in cols] for r in rows]
    widths = [min(max([len(c)] + [len(row[i]) for row in cells]), 40 if c != "reason" else 200) for i, c in enumerate(cols)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(cols, widths))]
    for row in cells:
        lines.append("  ".join((v if len(v) <= w else v[: w - 1] + "…").ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _runs_text(runs: dict[str, Any]) -> str:
    if "argv" in runs:
        return "exec: " + " ".join(runs["argv"])  # the table's short form; the exact one is listed below it
    what = runs.get("command") or runs.get("module") or runs.get("url") or runs.get("function") or runs.get("prompt") or ""
    return " ".join(str(what).split())


def cmd_list(args: argparse.Namespace) -> int:
    hookset = _load(args)
    if args.json:
        print(json.dumps({"hooks": hookset.to_listing(), "warnings": hookset.warnings, "trustHash": hookset.trust_hash,
                          "trust": hookset.trust_listing()}, indent=2))
        return 0
    rows = hookset.to_listing()
    for row in rows:
        row["runs"] = _runs_text(row["runs"])
        if row.get("plugin"):  # which plugin, and which version of it
            plugin = row["plugin"]
            row["source"] = f"{row['source']} {plugin['name']} {plugin['version'] or '?'}"
    print(_table(rows))
    print("\nsettings files read, in order:")
    for kind, path in hookset.paths.ordered():
        print(f"  {kind:<12} {path}{'' if path.exists() else '  (absent)'}")
    exact = [(spec.name, text) for spec in hookset.entries if spec.type == "command"
             and (text := exact_runs(spec.runs())) is not None]
    if exact:
        print("\nwhat each command hook runs, exactly:")
        for name, text in exact:
            print(f"  {name}: {text}")
    pinned = [(spec.name, path, digest) for spec in hookset.entries for path, digest in spec.pinned]
    if pinned:
        print("\nfiles the hooks run (sha256 as reviewed):")
        for name, path, digest in pinned:
            print(f"  {name}: {printable(str(path))[0]}  {digest}")
    for warning in hookset.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    trust = hookset.trust_listing()
    for change in trust["changes"]:
        print(f"changed since trusted: {change['path']} ({change['change']})", file=sys.stderr)
    _print_plugins(hookset, trust["plugins"])
    if hookset.needs_trust and not hookset.trusted:
        print(f"\nproject hooks are untrusted; after reviewing them run: python -m hooks trust --project "
              f"{hookset.project_dir}{' --vault ' + str(hookset.vault_dir) if hookset.vault_dir else ''} "
              f"--hash {hookset.trust_hash}", file=sys.stderr)
    return 0


def _print_plugins(hookset: HookSet, plugins: list[dict[str, Any]]) -> None:
    """The Claude Code plugins enabled for this project: where each comes from, what else it brings, its trust."""
    if not plugins:
        return
    print("\nClaude Code plugins enabled (hooks/plugins.py):")
    for plugin in plugins:
        print(f"  {plugin['id']} {plugin['version'] or '(no version)'}  {plugin['enabledBy']} ({plugin['enabledIn']})"
              f"  {plugin['state']}")
        print(f"    root {plugin['root'] or '-'}{'  (in place)' if plugin['inPlace'] else ''};"
              f" data {plugin['dataDir']}; {plugin['files']} files, hash {plugin['hash']}")
        if plugin["components"]:
            print(f"    also brings (loaded by the CLI): {', '.join(plugin['components'])}")
        for note in [plugin["problem"], *plugin["unsupported"]]:
            if note:
                print(f"    not run by Orion: {note}")
        for change in plugin["changes"]:
            print(f"    changed since trusted: {change['path']} ({change['change']})")
        if plugin["state"] == "changed":
            print(f"    after reviewing it run: python -m hooks trust --project {hookset.project_dir} --plugin "
                  f"{plugin['id']} --hash {plugin['hash']}", file=sys.stderr)


class _PrintObserver:
    async def on_started(self, started: HookStarted) -> None:
        print(f"▶ {started.hook_name} ({started.hook_type}, {started.source}) [{started.execution_id}]", file=sys.stderr)

    async def on_progress(self, progress: HookProgress) -> None:
        print(f"  {progress.hook_name} {progress.stream}: {progress.line}", file=sys.stderr)

    async def on_response(self, result: HookResult, session_id: str) -> None:
        pass


def _result_dict(r: HookResult) -> dict[str, Any]:
    return {
        "executionId": r.execution_id,
        "hook": r.hook_name,
        "type": r.hook_type,
        "source": r.source,
        "outcome": r.outcome,
        "exitCode": r.exit_code,
        "durationMs": round(r.duration_ms, 2),
        "output": r.output.to_json_dict() if r.output else None,
        "text": r.text,
        "stdout": r.stdout,
        "stderr": r.stderr,
        "error": r.error,
        "traceback": r.traceback,
        "failClosed": r.fail_closed,
        "enforced": r.enforced,
    }


class _ModelChoiceError(Exception):
    """`--model` names no usable model."""


def _remote_executors(hookset: HookSet, args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The http, prompt and agent executors, as a session has them; prompt and agent hooks get the model `--model`
    names (`scripted:<scenario>` offline) or the one the user configured. The model connection is built only when
    a prompt or agent hook is about to run (it imports the SDK)."""
    from hooks.executors.remote import default_llm_executors

    if not any(spec.type in ("prompt", "agent") for spec in hookset.active_for(args.event)):
        return default_llm_executors(None), lambda: None
    from sidecar.evaluator import hook_model
    from sidecar.scripted_model.server import stop_shared_servers
    from sidecar.sdk_env import ModelConfigError

    try:
        client, default_model, scratch = hook_model(args.model, data_dir(), args.session_id)
    except ModelConfigError as exc:  # a scenario that is missing or broken: one line, not a traceback
        raise _ModelChoiceError(f"--model {args.model}: {exc}") from None

    def cleanup() -> None:
        stop_shared_servers()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    return default_llm_executors(client, default_model=default_model), cleanup


def cmd_test(args: argparse.Namespace) -> int:
    raw = sys.stdin.read() if args.payload == "-" else Path(args.payload).read_text(encoding="utf-8")
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        print(f"error: payload is not valid JSON: {exc}", file=sys.stderr)
        return 2
    hookset = _load(args)
    if args.hook:
        known = hookset.by_name(args.hook)
        if not known:
            print(f"error: no hook named {args.hook!r}", file=sys.stderr)
            return 2
        for spec in known:
            if not spec.active:
                print(f"note: {spec.name} ({spec.id}) is {spec.state}: {spec.reason}", file=sys.stderr)
        hookset = hookset.only(args.hook)
    session = SessionContext(session_id=args.session_id, project_dir=hookset.project_dir, vault_dir=hookset.vault_dir)
    try:
        executors, cleanup = _remote_executors(hookset, args)
    except _ModelChoiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def go() -> dict[str, Any]:
        runner = HookRunner(hookset, _PrintObserver(), executors=executors)
        try:
            agg = await runner.fire(args.event, payload, session)
        finally:
            await runner.aclose()
            cleanup()
        return {
            "results": [_result_dict(r) for r in agg.results],
            "aggregate": {
                "decision": agg.decision,
                "reason": agg.reason,
                "additionalContext": agg.additional_context,
                "updatedInput": agg.updated_input,
                "systemMessages": agg.system_messages,
                "continue": agg.continue_,
                "stopReason": agg.stop_reason,
            },
            "hookJson": agg.to_hook_json(),
        }

    print(json.dumps(asyncio.run(go()), indent=2, ensure_ascii=False))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    path = Path(args.file)
    errors, warnings, valid = validate_file(path)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{path}: {valid} valid hook entr{'y' if valid == 1 else 'ies'}, {len(errors)} error(s), "
          f"{len(warnings)} warning(s)")
    if errors:
        return 1
    return 1 if (args.strict and warnings) else 0


def cmd_stats(args: argparse.Namespace) -> int:
    from hooks.stats import format_table, hook_stats, parse_since

    try:
        since, until = parse_since(args.since), parse_since(args.until)
        rows = hook_stats(Path(args.data_dir) if args.data_dir else data_dir(), session_id=args.session,
                          project_dir=Path(args.project).resolve() if args.project else None, since=since, until=until)
    except ValueError as exc:  # a bad time or session id: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"hooks": rows}, indent=2) if args.json else format_table(rows))
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from hooks.pruning import prune
    from hooks.retention import MIB, load_policy

    policy = load_policy()
    report = prune(Path(args.data_dir) if args.data_dir else data_dir(), policy, dry_run=args.dry_run)
    if args.json:
        print(json.dumps({"dryRun": report.dry_run, "policy": policy.describe(),
                          "removed": [{"sessionId": s.session_id, "bytes": s.size, "lastUsed": iso_time(s.newest),
                                       "reason": s.reason} for s in report.removed],
                          "removedBytes": report.removed_bytes, "open": report.live,
                          "kept": report.kept, "keptBytes": report.kept_bytes}, indent=2))
        return 0
    verb = "would remove" if args.dry_run else "removed"
    for s in report.removed:
        print(f"{verb} {s.session_id}  {s.size / MIB:.2f} MiB  last used {iso_time(s.newest)}  ({s.reason})")
    for sid in report.live:
        print(f"kept {sid}: due, but open in a sidecar")
    print(report.summary())
    return 0


def iso_time(t: float) -> str:
    from hooks.tracking import iso

    return iso(t)


def cmd_trust(args: argparse.Namespace) -> int:
    project = Path(args.project).resolve()
    vault = Path(args.vault).resolve() if args.vault else None
    store = TrustStore()
    if args.plugin:
        return _trust_plugin(store, project, args)
    try:
        if args.revoke:
            print("revoked" if store.revoke(project, vault) else "was not trusted")
            return 0
        digest = store.trust(project, args.hash, vault)
    except TrustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.hash is None:
        print(f"note: no --hash given: trusted the project as it is on disk now ({digest}); pass the hash "
              "`python -m hooks list` showed to trust exactly what you reviewed", file=sys.stderr)
    print(f"trusted {project} (manifest hash {digest})")
    return 0


def _trust_plugin(store: TrustStore, project: Path, args: argparse.Namespace) -> int:
    """`trust --plugin ID`: pin a plugin of the user's own settings again after an update (`--revoke` forgets the pin)."""
    from hooks.trust import trust_user_plugin

    try:
        if args.revoke:
            print("pin removed" if store.revoke_plugin(args.plugin) else "was not pinned")
            return 0
        digest = trust_user_plugin(store, project, args.plugin, args.hash)
    except TrustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"trusted plugin {args.plugin} (content hash {digest})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--project", default=".", help="project directory (default: current)")
        p.add_argument("--vault", default=None, help="notes vault directory (reads <vault>/.orion/settings.json)")
        p.add_argument("--no-builtin", action="store_true", help="leave out the built-in Orion hooks")

    p = sub.add_parser("list", help="the effective hooks with their states and reasons")
    common(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("stats", help="per hook, from the tracking files: runs, p50/p95 duration, failures, timeouts, "
                                     "blocks (slowest first)")
    p.add_argument("--session", default=None, help="one session's records")
    p.add_argument("--project", default=None, help="one project's records (every session in it)")
    p.add_argument("--since", default=None, help="30m, 2h, 7d or an ISO time (UTC)")
    p.add_argument("--until", default=None, help="as --since")
    p.add_argument("--data-dir", default=None, help="Orion's data directory (default: $ORION_DATA_DIR or its default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("prune", help="remove old sessions' data by the retention policy of your Orion settings "
                                     "(oldest first; never an open session's)")
    p.add_argument("--dry-run", action="store_true", help="only print what would be removed and how much")
    p.add_argument("--data-dir", default=None, help="Orion's data directory (default: $ORION_DATA_DIR or its default)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_prune)

    p = sub.add_parser("test", help="fire one event through the real executors and print every result and the aggregate")
    p.add_argument("event", choices=ALL_EVENTS)
    p.add_argument("--payload", required=True, help="payload JSON file, or - for stdin")
    p.add_argument("--hook", default=None, help="run only the hook with this name")
    p.add_argument("--session-id", default="hooks-test")
    p.add_argument("--model", default=None, help="the model prompt and agent hooks ask: scripted:<scenario> (offline, "
                                                 "docs/SCRIPTED_MODEL.md) or a model name (default: the one you "
                                                 "configured for sessions)")
    common(p)
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("validate", help="check a settings.json (or hook-overrides.json) file; exit 1 on errors "
                                        "(a project's file gets the same analysis as `list` and session/new)")
    p.add_argument("file")
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("trust", help="trust what the project's hooks run, as listed (after reviewing them)")
    p.add_argument("--project", default=".")
    p.add_argument("--vault", default=None, help="the notes vault the project is used with (its hooks are trusted with it)")
    p.add_argument("--hash", default=None, help="the trust hash `list` showed: trust only that reviewed version")
    p.add_argument("--revoke", action="store_true")
    p.add_argument("--plugin", default=None, help="a Claude Code plugin of the user's own settings (name@marketplace) "
                                                  "that changed since it was trusted: trust its content as listed")
    p.set_defaults(func=cmd_trust)

    args = parser.parse_args(argv)
    # A mistyped --project would otherwise be analysed (and trusted) as an empty project that exists nowhere; a revoke
    # may still name a folder that is gone.
    if args.cmd in ("list", "test", "trust") and not getattr(args, "revoke", False) and not Path(args.project).is_dir():
        parser.error(f"--project {args.project} is not a directory")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
