"""`doctor`: the roots, model, reranker, cache, config layers and hook the router will use,
and what is wrong with them. Exits 1 when something stops routing."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from explorer.cli.base import EXIT_FAILED, EXIT_OK, Command, add_common_options, say
from explorer.engine import ConfigError, LoadedConfig, load_config
from explorer.engine.base import counted, skipped_error
from explorer.terminal import emit

MARKS = {"ok": "✓", "info": "·", "warning": "!", "error": "✗"}


class DoctorCommand(Command):
    name = "doctor"
    help = "say what the router will use (roots, model, reranker, cache, config) and what is wrong"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the checks as JSON")
        add_common_options(parser)

    def main(self, args: argparse.Namespace) -> int:
        """A config the other commands refuse is diagnosed, not a usage error: each bad file
        or --set is an error in the report, and the rest is checked without it."""
        self.config_errors: list[str] = []
        try:
            loaded = load_config(args.config, args.assignments, use_ski_config=args.ski_config)
        except ConfigError:
            loaded = self._lenient(args)
        for warning in loaded.warnings:
            if skipped_error(warning) is None:  # a skipped file or --set: the report's error
                say(f"warning: {warning}")
        return self.run(args, loaded)

    def _lenient(self, args: argparse.Namespace) -> LoadedConfig:
        """The config as the hook reads it: a bad file or --set skipped, and named."""
        loaded = load_config(
            args.config, args.assignments, use_ski_config=args.ski_config, strict=False
        )
        skipped = (skipped_error(warning) for warning in loaded.warnings)
        self.config_errors += [error for error in skipped if error is not None]
        return loaded

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine.host import diagnose

        report = diagnose(
            loaded,
            args.skills,
            cache_dir=args.cache_dir,
            config_errors=getattr(self, "config_errors", ()),
        )
        if args.json:
            print(json.dumps([asdict(check) for check in report.checks], indent=2))
        else:
            area = None
            for check in report.checks:
                if check.area != area:
                    area = check.area
                    print(f"{area}:")
                emit(f"  {MARKS[check.status]} {check.message}")
            problems = report.problems
            if problems:
                print(
                    f"\n{counted(len(report.errors), 'error')}, "
                    f"{counted(len(problems) - len(report.errors), 'warning')}"
                )
            else:
                print("\nnothing wrong")
        return EXIT_FAILED if report.errors else EXIT_OK
