"""`explore [DIR]` (the default command): the interactive explorer over a live index."""

from __future__ import annotations

import argparse

from explorer.cli.base import (
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    add_cwd_option,
    say,
)
from explorer.cli.roots import command_roots, watchable
from explorer.engine import LoadedConfig, load_config


class ExploreCommand(Command):
    name = "explore"
    help = "the interactive explorer (the default: skill-explorer [DIR])"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "dirs",
            nargs="*",
            metavar="DIR",
            help="skills roots (as --skills; default: the roots every command reads)",
        )
        parser.add_argument("--prompt", default="", help="start with this prompt typed")
        add_cwd_option(parser)
        parser.add_argument(
            "--cases",
            metavar="FILE",
            help="labelled cases to re-run on every re-index "
            "(default: DIR/cases.toml when it exists); a skill-creator trigger eval set "
            ".json needs --skill",
        )
        parser.add_argument(
            "--skill",
            metavar="ID",
            help="open with the cursor on this skill (it stays highlighted as the prompt "
            "changes); also the skill a trigger eval set (--cases X.json) is about",
        )
        parser.add_argument(
            "--history",
            metavar="FILE",
            help="a telemetry log (ours or the reference's) for the History tab, replayed on "
            "every re-index and threshold edit (default: the state directory's "
            "telemetry.jsonl when it exists)",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.cli.commands.history import default_log
        from explorer.tui.app import ExplorerApp
        from explorer.tui.state import ConfigLayers

        roots = command_roots(args, loaded)  # the order every command reads them in
        if roots is None:
            return EXIT_USAGE
        if not watchable(roots):  # a table of one "rejected" root would say it worse
            say(
                f"nothing to explore: no such file or directory: {', '.join(roots)} "
                "(skill-explorer DIR opens a skills folder)"
            )
            return EXIT_USAGE
        history_log = args.history or (str(default_log()) if default_log().is_file() else None)
        app = ExplorerApp(
            roots,
            loaded.config,
            cache_dir=args.cache_dir,
            initial_prompt=args.prompt,
            cases_path=args.cases,
            cwd=args.cwd,
            cases_skill=args.skill,
            history_log=history_log,
            initial_skill=args.skill,
            layers=ConfigLayers(
                loaded,
                load_config(
                    args.config, args.assignments, use_ski_config=args.ski_config, project=False
                ),
            ),
        )
        app.run()
        return EXIT_OK
