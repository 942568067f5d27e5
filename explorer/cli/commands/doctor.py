"""`doctor`: the roots, model, reranker, cache, config layers and hook the router will use,
and what is wrong with them. Exits 1 when something stops routing."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from explorer.cli.base import EXIT_FAILED, EXIT_OK, Command, add_common_options
from explorer.engine.config import LoadedConfig
from explorer.terminal import emit

MARKS = {"ok": "✓", "info": "·", "warning": "!", "error": "✗"}


class DoctorCommand(Command):
    name = "doctor"
    help = "say what the router will use (roots, model, reranker, cache, config) and what is wrong"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the checks as JSON")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine.doctor import diagnose

        report = diagnose(loaded, args.skills, cache_dir=args.cache_dir)
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
                    f"\n{len(report.errors)} errors, {len(problems) - len(report.errors)} warnings"
                )
            else:
                print("\nnothing wrong")
        return EXIT_FAILED if report.errors else EXIT_OK
