"""`why PROMPT`: channels, gates and BM25 terms of a routing, for any skill."""

from __future__ import annotations

import argparse

from explorer.cli.base import (
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    add_cwd_option,
    add_prompt_argument,
    positive_int,
)
from explorer.cli.library import library_index, unknown_skill
from explorer.engine import LoadedConfig
from explorer.terminal import emit

# Of what the hook would inject, the lines `why` shows unless --text: the skills it names
# and the head of a body; the body itself is the skill's SKILL.md.
INJECTION_SHOWN_LINES = 12


class WhyCommand(Command):
    name = "why"
    help = "explain a routing: channels, gates and BM25 terms"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_prompt_argument(parser)
        add_cwd_option(parser)
        parser.add_argument(
            "--skill", metavar="ID", help="explain this skill's terms, even if it lost"
        )
        parser.add_argument(
            "--top", type=positive_int, default=8, metavar="N", help="rows to show (default 8)"
        )
        parser.add_argument(
            "--text",
            action="store_true",
            help="print the whole text the hook would inject (by default its first "
            f"{INJECTION_SHOWN_LINES} lines)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the full decision as JSON (as route --json: every row's matches too)",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import decide
        from explorer.report import why_report

        index = library_index(args, loaded)
        if isinstance(index, int):
            return index
        if unknown_skill(index, args.skill):
            return EXIT_USAGE
        decision = decide(args.prompt, index, loaded.config, cwd=args.cwd)
        if args.json:
            print(decision.to_json())
            return EXIT_OK
        shown = None if args.text else INJECTION_SHOWN_LINES
        emit(*why_report(decision, index, top=args.top, skill=args.skill, text_lines=shown))
        return EXIT_OK
