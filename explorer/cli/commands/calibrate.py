"""`calibrate CASES`: sweep the gates' thresholds on train cases, report on validation.

`calibrate --manifest FILE` / `--library DIR=TRAIN,VALIDATION ...`: sweep over several
libraries together (fusion weight, guards, fast path, floor rule, margin), choose on all
their train splits, report each library on its validation split (engine/qa/multical.py).
"""

from __future__ import annotations

import argparse
import json
import os

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    fraction,
    positive_int,
    say,
)
from explorer.cli.library import Engines, roots_and_cases
from explorer.cli.quality import (
    add_library_options,
    run_calibrate_libraries,
    run_calibrate_reranker,
    wants_libraries,
)
from explorer.engine import LoadedConfig
from explorer.engine.route import json_default
from explorer.terminal import emit


class CalibrateCommand(Command):
    name = "calibrate"
    help = "sweep the thresholds in force on train cases, report on validation"
    description = (
        "Under the relevance model (the default preset): sweep relevance_threshold and keep "
        "the most train recall within the false-inject --budget. Under the gates: sweep "
        "min_similarity, score_margin, lexical_min/lexical_margin (and "
        "rerank_min/rerank_margin with a reranker) over a grid. Either way: choose on the "
        "train split, report on the validation split."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "cases", metavar="CASES", nargs="?", help="cases file (.toml, or .tsv); or --manifest"
        )
        add_library_options(parser)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--write",
            metavar="FILE",
            help="write the recommendation as TOML (an existing FILE needs --force)",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="let --write update an existing FILE: only the swept fields change",
        )
        parser.add_argument(
            "--markdown",
            action="store_true",
            help="with --manifest/--library: print the report as Markdown (docs/calibration.md's "
            "generated report is pasted from it)",
        )
        parser.add_argument(
            "--budget",
            type=fraction,
            metavar="X",
            help="the train false-inject rate on plain negatives (default 0.05); with CASES, "
            "under the relevance model, the budget its relevance_threshold is chosen within",
        )
        parser.add_argument(
            "--near-miss-budget",
            type=fraction,
            metavar="X",
            help="with --manifest/--library: the train false-inject rate on near-misses, "
            "the negatives of a '# group: near-miss' block (default 0.30)",
        )
        parser.add_argument(
            "--scope",
            choices=("pooled", "library"),
            default="pooled",
            help="with --manifest/--library: hold all libraries' train negatives together "
            "(pooled, default) or each library's to the budgets",
        )
        parser.add_argument(
            "--reranker",
            action="store_true",
            help="with --manifest/--library: calibrate the loaded reranker's agreement gate "
            "(its floor, rerank_min, rerank_margin) instead of stage 1 (engine/qa/rerankcal.py); "
            "with --set reranker=... for another model",
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="seed of the random split for cases without one"
        )
        parser.add_argument(
            "--top", type=positive_int, default=10, metavar="N", help="grid rows to show (10)"
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import calibrate
        from explorer.engine.qa import missing_skill_warnings
        from explorer.qa_report import calibration_text

        if wants_libraries(args):
            if args.cases:
                say("give CASES with --skills, or --manifest/--library, not both")
                return EXIT_USAGE
            if args.reranker:
                return run_calibrate_reranker(args, loaded)
            return run_calibrate_libraries(args, loaded)
        if not args.cases:
            say("calibrate needs CASES (with --skills) or --manifest/--library")
            return EXIT_USAGE
        if args.write and os.path.exists(args.write) and not args.force:
            say(
                f"{args.write} exists; --force updates the swept fields in it and keeps the "
                "rest, or --write a new file"
            )
            return EXIT_USAGE
        inputs = roots_and_cases(args, loaded)
        if inputs is None:
            return EXIT_USAGE
        roots, cases = inputs
        index = Engines(args).index(roots, loaded.config)
        if not len(index):
            say(f"no valid skills under {', '.join(index.roots)}")
            return EXIT_FAILED
        for warning in missing_skill_warnings(cases.cases, index.ids):
            say(f"warning: {warning}")
        budget = {} if args.budget is None else {"budget": args.budget}
        report = calibrate(cases.cases, index, loaded.config, seed=args.seed, **budget)
        if not report.train_cases:
            say("no train cases: the split left nothing to choose on")
            return EXIT_FAILED
        refused = bool(args.write) and report.validation_prefers_current
        if args.write and not refused:
            from explorer.engine import ConfigError
            from explorer.engine.base import update_toml

            recommended = report.recommended_config(loaded.config)
            try:
                written = update_toml(
                    args.write,
                    {name: getattr(recommended, name) for name in report.swept},
                    header=report.to_toml(loaded.config).splitlines(keepends=True)[0],
                )
            except ConfigError as error:
                say(str(error))
                return EXIT_FAILED
        if args.json:
            print(json.dumps(report.to_dict(top=args.top), indent=2, default=json_default))
        else:
            emit(*calibration_text(report, args.cases, args.top))
            if args.write and not refused:
                emit(
                    f"\nwrote the recommendation to {args.write} (use it with --config): "
                    + "; ".join(written)
                )
        if refused:  # the caution says why; a file of worse values is no recommendation
            say(
                f"not written to {args.write}: on the validation split the current values do "
                "better than the best on train"
            )
            return EXIT_FAILED
        return EXIT_OK
