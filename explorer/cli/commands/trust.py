"""`trust [DIR]`: let the hook read DIR's skill-explorer.toml (workspace trust).

With no DIR it trusts the current directory, with DIR that one, and every directory under
it; your home directory, or one above it, only with --all-under. --list shows the list,
--remove DIR takes one off. The hook ignores a project config until its directory is
trusted, because the hook runs in every repository the agent opens, cloned ones included.
"""

from __future__ import annotations

import argparse
import os

from explorer.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Command, described_by, say
from explorer.engine import LoadedConfig
from explorer.terminal import emit


class TrustCommand(Command):
    name = "trust"
    help = "trust a directory's skill-explorer.toml for the hook (--list, --remove DIR)"
    description = described_by(__doc__)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dir", nargs="?", metavar="DIR", help="default: this directory")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--list", action="store_true", help="show the trusted directories")
        group.add_argument("--remove", action="store_true", help="stop trusting DIR")
        parser.add_argument(
            "--all-under",
            action="store_true",
            help="trust DIR even when it is your home directory, the filesystem's root or "
            "above your home: every project under it, cloned ones included",
        )

    def main(self, args: argparse.Namespace) -> int:
        # No config is loaded: trust is about the config files themselves.
        return self.run(args, None)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig | None) -> int:
        from explorer.engine.host import add_trusted, remove_trusted, trust_file, trusted

        if args.list:
            entries = trusted()
            if entries:
                emit(*entries)
            else:
                say(f"no trusted directories ({trust_file()})")
            return EXIT_OK
        directory = os.path.abspath(args.dir or os.getcwd())
        if args.remove:
            if remove_trusted(directory):
                emit(f"no longer trusted: {directory}")
                return EXIT_OK
            say(f"{directory} is not in the trust list ({trust_file()})")
            return EXIT_FAILED
        if not os.path.isdir(directory):
            say(f"{directory}: not a directory")
            return EXIT_USAGE
        real = os.path.realpath(directory)
        home = os.path.realpath(os.path.expanduser("~"))
        if not args.all_under and (home + os.sep).startswith(real.rstrip(os.sep) + os.sep):
            say(
                f"{real} holds your home directory: trusting it trusts every project under "
                "it, cloned ones included. Trust each project's directory, or pass "
                "--all-under to mean it"
            )
            return EXIT_USAGE
        added = add_trusted(real)
        emit(
            f"{'trusted' if added else 'already trusted'}: {real} and every directory under "
            f"it (the hook now reads their skill-explorer.toml; list in {trust_file()})"
        )
        return EXIT_OK
