"""`hook`: the Claude Code UserPromptSubmit hook (JSON on stdin, context on stdout)."""

from __future__ import annotations

import argparse
import sys

from explorer.cli.base import Command


class HookCommand(Command):
    name = "hook"
    help = "Claude Code UserPromptSubmit hook: JSON on stdin, context on stdout"

    def main(self, args: argparse.Namespace) -> int:
        """No config loading here: the hook reads its own, and stays silent on any error."""
        from explorer.engine.hook import run_hook

        return run_hook(
            sys.stdin,
            sys.stdout,
            sys.stderr,
            cli_roots=args.skills,
            config_file=args.config,
            assignments=args.assignments,
            use_ski_config=args.ski_config,
            cache_dir=args.cache_dir,
        )
