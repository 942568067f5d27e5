"""`route PROMPT`: the decision for one prompt, as a summary or as the full JSON."""

from __future__ import annotations

import argparse

from explorer.cli.base import (
    EXIT_OK,
    Command,
    add_common_options,
    add_cwd_option,
    add_prompt_argument,
)
from explorer.cli.library import library_index
from explorer.engine import LoadedConfig
from explorer.terminal import emit


class RouteCommand(Command):
    name = "route"
    help = "route one prompt and print the decision"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_prompt_argument(parser)
        add_cwd_option(parser)
        parser.add_argument("--json", action="store_true", help="print the full decision as JSON")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import decide

        index = library_index(args, loaded)
        if isinstance(index, int):
            return index
        decision = decide(args.prompt, index, loaded.config, cwd=args.cwd)
        if args.json:
            print(decision.to_json())
            return EXIT_OK
        from explorer.engine.host import is_control_payload
        from explorer.report import closest_line, decision_summary

        emit(decision_summary(decision))
        closest = closest_line(decision)
        if closest is not None:
            emit(closest, "(skill-explorer why PROMPT says what moved each skill)")
        if decision.injected and is_control_payload(decision.prompt):
            emit("the hook injects nothing for it: it ignores a control payload (§7)")
        return EXIT_OK
