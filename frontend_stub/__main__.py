"""`python -m frontend_stub` / `orion`: a command-line frontend for the sidecar; subcommands live in frontend_stub/commands/."""

from __future__ import annotations

import argparse
import sys

import anyio

from frontend_stub.commands import discover


def main(argv: list[str] | None = None) -> int:
    commands = discover()
    parser = argparse.ArgumentParser(prog="orion", description="Command-line frontend for Orion Sidecar.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help, description=command.help))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return anyio.run(commands[args.command].run, args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
