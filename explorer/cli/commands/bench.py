"""`bench`: speed and memory against the targets, each beside a same-run baseline."""

from __future__ import annotations

import argparse
import json
from typing import Any

from explorer.cli.base import EXIT_OK, EXIT_USAGE, Command, add_common_options, say
from explorer.engine.config import LoadedConfig


class BenchCommand(Command):
    name = "bench"
    help = "measure speed and memory against the targets"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--sizes", default="100,1000", help="library sizes (default 100,1000)")
        parser.add_argument(
            "--repeats", type=int, default=50, help="prompts per timing (default 50)"
        )
        parser.add_argument(
            "--only",
            action="append",
            default=[],
            metavar="METRIC",
            help="run only this metric (repeatable)",
        )
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.bench.report import format_report
        from explorer.bench.run import run_bench

        try:
            sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
        except ValueError:
            say(f"--sizes {args.sizes!r}: expected numbers like 100,1000")
            return EXIT_USAGE
        only = set(args.only)
        ui = not only or "ui" in only
        engine_metrics = only - {"ui"}
        result: dict[str, Any] = {"meta": {}, "metrics": {}}
        if not only or engine_metrics:
            result = run_bench(
                args.skills[0] if args.skills else None,
                sizes,
                loaded.config,
                repeats=args.repeats,
                include=engine_metrics or None,
            )
        if ui:
            from explorer.bench.ui import run_ui_bench

            result["metrics"].update(run_ui_bench(tuple(sizes), loaded.config))
        print(json.dumps(result, indent=2) if args.json else format_report(result))
        return EXIT_OK
