"""`skill-explorer`: the command line, one module per command under `explorer.cli.commands`.

`skill-explorer [DIR]` with no command opens the explorer. Exit codes are described in
`explorer.cli.base`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from explorer import __version__
from explorer.cli.commands import REGISTRY, create_command


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line: one subparser per registered command (`only`: that one's
    alone, which parses its arguments the same and skips importing and building the rest;
    the hook runs on every prompt, so its start-up counts)."""
    parser = argparse.ArgumentParser(
        prog="skill-explorer",
        description="See why an agent skill triggers, or why it does not.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in REGISTRY if only is None else (only,):
        command = create_command(name)
        # No abbreviations: `--skill` on a command without it would be read as `--skills`.
        # Every command's --help opens with a sentence: its own, else its one-line help.
        description = command.description or f"{command.help[:1].upper()}{command.help[1:]}."
        sub = subparsers.add_parser(
            name, help=command.help, description=description, allow_abbrev=False
        )
        command.add_arguments(sub)
        sub.set_defaults(command_parser=sub)  # its usage, for an argument it does not know
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or (
        arguments[0] not in REGISTRY and arguments[0] not in ("-h", "--help", "--version")
    ):
        arguments = ["explore", *arguments]  # skill-explorer [DIR] opens the explorer
    parser = build_parser(arguments[0] if arguments[0] in REGISTRY else None)
    try:
        args, unknown = parser.parse_known_args(arguments)
        if unknown:  # said with the command's usage, not the top level's
            args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as stop:
        # The hook never blocks a prompt, even when its own command line in the host's
        # settings is wrong: argparse has said why on stderr, and a host reads exit 2
        # from a UserPromptSubmit hook as "block this prompt".
        if arguments[0] == "hook" and stop.code not in (0, None):
            return 0
        raise
    try:
        return create_command(args.command).main(args)
    except KeyboardInterrupt:  # Ctrl-C: stopped as asked, not a traceback (128 + SIGINT)
        print("skill-explorer: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        from explorer.engine.index import StoreDamaged

        if not isinstance(error, StoreDamaged):
            raise
        # A part of the persisted index read only when needed failed its checksum: the
        # store is removed by then, and the command runs once more on a new build.
        print(f"skill-explorer: {error}; the index store is rebuilt", file=sys.stderr)
        return create_command(args.command).main(args)
