"""`python -m hooks.memory`: which memory backend is in use, importing a local SQLite memory into the team database,
embedding stored memory for search by meaning (`backfill`), applying the user's retention (`prune`), and giving
a pruned SQLite file's free pages back to the disk (`compact`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

from hooks.memory.config import MemoryConfigError, load_config, redact_url
from hooks.paths import data_dir as default_data_dir


def _config(args: argparse.Namespace):
    if args.url:
        return dataclasses.replace(load_config({**os.environ, "ORION_MEMORY_URL": args.url}), source="--url")
    return load_config()


def cmd_import(args: argparse.Namespace) -> int:
    from hooks.memory.importer import import_sqlite

    config = _config(args)
    if config.backend != "postgres":
        print("import-to-postgres: no PostgreSQL database configured: set ORION_MEMORY_URL, memory.url in the user "
              "settings, or pass --url", file=sys.stderr)
        return 2
    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    try:
        report = import_sqlite(data, config)
    except (FileNotFoundError, ConnectionError) as exc:
        print(f"import-to-postgres: {exc}", file=sys.stderr)
        return 1
    # "imported": rows the database did not hold yet; "read": rows of the SQLite memory (a second run reads them
    # all again and imports none).
    print(json.dumps({"imported": report.added, "read": report.as_dict(), "into": redact_url(config.url or "")}))
    return 0


def _store(args: argparse.Namespace, config):
    """The store `args` name: the --url database, else the one the user's configuration opens for the data dir."""
    from hooks.memory.store import open_store

    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    if config.backend == "postgres" and args.url:
        from hooks.memory.pg_store import PostgresMemoryStore

        return PostgresMemoryStore(config, data)
    return open_store(data)


def cmd_status(args: argparse.Namespace) -> int:
    from hooks.memory.prune import retention_status
    from hooks.memory.store import close_all_stores

    config = _config(args)
    store = _store(args, config)
    try:
        status = store.status()
        if status.get("up"):
            status["usage"] = store.usage()
            status["retention"] = retention_status(store, Path(args.data_dir) if args.data_dir else default_data_dir(),
                                                   config)
    finally:
        store.close()
        close_all_stores()
    print(json.dumps(status))
    return 0 if status.get("up") else 1


def cmd_prune(args: argparse.Namespace) -> int:
    from hooks.memory.prune import run_prune
    from hooks.memory.store import close_all_stores, memory_exists

    config = _config(args)
    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    if config.backend == "sqlite" and not memory_exists(data):
        print(f"prune: no memory in {data}", file=sys.stderr)
        return 1
    store = _store(args, config)
    try:
        if not store.status().get("up"):
            print(f"prune: {store.describe()} does not answer; nothing was removed", file=sys.stderr)
            return 1
        report = run_prune(data, store, project=args.project, dry_run=args.dry_run)
    finally:
        store.close()
        close_all_stores()
    if not report["retention"]["inForce"]:
        print("prune: no retention is set in the user's settings (memory.retention): everything is kept",
              file=sys.stderr)
    print(json.dumps(report))
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from hooks.memory.store import close_all_stores, memory_exists

    config = _config(args)
    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    if config.backend != "sqlite":
        print("compact: the memory is a PostgreSQL database, whose own vacuum reuses free space; nothing to do",
              file=sys.stderr)
        return 2
    if not memory_exists(data):
        print(f"compact: no memory in {data}", file=sys.stderr)
        return 1
    store = _store(args, config)
    try:
        free = store.free_bytes()  # not usage(): that counts every project's rows too (0.8 s at 1M)
        # VACUUM builds the new file in SQLite's temporary folder, then writes it back through the WAL: twice the
        # pages in use, counted against this disk (the temporary folder is on it here, or elsewhere and smaller).
        need = 2 * (store.path.stat().st_size - free)
        spare = shutil.disk_usage(store.path.parent).free
        if spare < need:
            print(f"compact: the file is written again and needs {need} bytes free beside it; the disk has {spare}."
                  " Nothing was changed", file=sys.stderr)
            return 1
        report = store.compact()
    finally:
        store.close()
        close_all_stores()
    print(json.dumps({**report, "freed": report["before"] - report["after"]}))
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    from hooks.memory.backfill import run_backfill

    return run_backfill(Path(args.data_dir) if args.data_dir else default_data_dir(), progress=args.progress,
                        nice=args.nice, prune=args.prune)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hooks.memory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, helptext in (
        ("import-to-postgres", cmd_import, "copy <data dir>/memory.sqlite3 into the PostgreSQL memory (idempotent)"),
        ("status", cmd_status, "the backend in use, whether it answers, writes waiting for it, and its size and "
                               "growth: items, bytes, added in the last day/week/month, largest projects (exit 1 "
                               "when down)"),
        ("backfill", cmd_backfill, "embed the stored items that have no vector yet (resumable; exit 2 without the "
                                   "embedding model)"),
        ("prune", cmd_prune, "remove what the user's retention (memory.retention in the user's settings) does not "
                             "keep, and say what went: counts and bytes per project"),
        ("compact", cmd_compact, "SQLite: give the file's free pages (after a prune) back to the disk (VACUUM; "
                                 "needs twice the pages in use free on disk, and holds writes meanwhile)"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--data-dir", default=None, help="Orion's data directory (default: $ORION_DATA_DIR or its default)")
        p.add_argument("--url", default=None, help="postgresql:// URL (default: ORION_MEMORY_URL, else memory.url in "
                                                   "the user's settings)")
        if name == "backfill":
            p.add_argument("--progress", choices=("text", "json"), default="text",
                           help="progress on stderr as text (default), or one JSON object per batch on stdout")
            p.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority by this much")
            p.add_argument("--prune", action="store_true",
                           help="first, the retention pass if the day's is due (what a sidecar starts)")
        if name == "prune":
            p.add_argument("--project", default=None, help="only this project: its folder (absolute) or its key")
            p.add_argument("--dry-run", action="store_true", help="say what would be removed; change nothing")
        p.set_defaults(func=func)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except MemoryConfigError as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
