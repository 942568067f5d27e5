"""`hook`: the Claude Code UserPromptSubmit hook (JSON on stdin, context on stdout)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from explorer.cli.base import EXIT_OK, Command
from explorer.terminal import visible  # stdlib only until rich is asked for

PREFIX = "skill-explorer hook: "


def run_hook(
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    *,
    event: str | None = None,
    cli_roots: Sequence[str] = (),
    config_file: str | None = None,
    assignments: Sequence[str] = (),
    use_ski_config: bool = True,
    cache_dir: str | None = None,
    verbose: bool = False,
) -> int:
    """Read the host's JSON, write the engine's answer; 0 whatever happens (§7). stderr
    gets a config value or file it skips; with `verbose` (-v) or SKILL_EXPLORER_DEBUG=1
    also what else it could not use, and what it decided."""
    started = time.monotonic()  # the time budget (hook_budget_ms) counts from here
    debug = verbose or os.environ.get("SKILL_EXPLORER_DEBUG") == "1"
    try:
        from explorer.engine import answer_hook

        answer = answer_hook(
            stdin.read(),
            event=event,
            cli_roots=cli_roots,
            config_file=config_file,
            assignments=assignments,
            use_ski_config=use_ski_config,
            cache_dir=cache_dir,
            started=started,
        )
        for line in answer.stderr_lines(debug):  # paths from the payload: shown, never sent
            print(PREFIX + visible(line), file=stderr)
        if answer.payload is not None:
            stdout.write(json.dumps(answer.payload))
            stdout.write("\n")
    except Exception as error:  # an import or a closed pipe: still never block the prompt
        if debug:
            print(visible(f"{PREFIX}{type(error).__name__}: {error}"), file=stderr)
    return EXIT_OK


class HookCommand(Command):
    name = "hook"
    help = (
        "Claude Code hook: UserPromptSubmit routes the prompt (context on stdout); "
        "PostToolUse and SessionStart keep the session ledger"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.epilog = (
            "It always exits 0. On stderr it names a config value or file it skips; with -v "
            "or SKILL_EXPLORER_DEBUG=1 also a root or payload it could not use, and what it "
            "decided."
        )
        parser.add_argument(
            "--event",
            choices=("UserPromptSubmit", "PostToolUse", "SessionStart"),
            help="the host event (default: the payload's hook_event_name, else UserPromptSubmit)",
        )

    def main(self, args: argparse.Namespace) -> int:
        """No config loading here: the hook reads its own, and stays silent on any error."""
        return run_hook(
            sys.stdin,
            sys.stdout,
            sys.stderr,
            event=args.event,
            cli_roots=args.skills,
            config_file=args.config,
            assignments=args.assignments,
            use_ski_config=args.ski_config,
            cache_dir=args.cache_dir,
            verbose=args.verbose,
        )
