"""`eval CASES`: run labelled cases through the router; recall, false injections, CI gates."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    fraction,
    number,
    say,
)
from explorer.cli.library import Engines, roots_and_cases, run_label, unknown_skill
from explorer.cli.quality import add_library_options, run_eval_by_library, wants_libraries
from explorer.cli.roots import command_roots
from explorer.engine import Config, ConfigError, LoadedConfig, load_config
from explorer.engine.route import json_default
from explorer.terminal import emit

if TYPE_CHECKING:
    from explorer.engine import Index
    from explorer.engine.qa import CaseSet, Comparison, EvalReport


def check_thresholds(report: EvalReport, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The CI gates: each requested threshold with the measured value and whether it holds."""
    checks = []
    for metric, limit, at_least in (
        ("recall", args.min_recall, True),
        ("false_inject_rate", args.max_false_inject, False),
        ("host_value", args.min_host_value, True),
    ):
        if limit is None:
            continue
        value = report.metric(metric)
        # An undefined metric (no positives / no negatives) cannot show the gate holds.
        held = value is not None and (value >= limit if at_least else value <= limit)
        checks.append(
            {"metric": metric, "limit": limit, "at_least": at_least, "value": value, "passed": held}
        )
    return checks


def own_cases(index: Index, skill: str | None) -> CaseSet | None:
    """With no CASES: the trigger evals the skills ship beside their SKILL.md (only
    `skill`'s with --skill), or None after saying there are none."""
    from explorer.engine.qa import own_trigger_evals

    chosen = [(s.id, s.directory) for s in index.skills if skill in (None, s.id)]
    cases = own_trigger_evals(chosen)
    for warning in cases.warnings:
        say(f"warning: {warning}")
    if not cases.cases:
        whose = f"{skill!r} has no" if skill else "no skill has"
        say(
            f"eval needs CASES (with --skills), or --by-library: {whose} trigger evals of "
            "its own (evals/*.json beside SKILL.md)"
        )
        return None
    return cases


class EvalCommand(Command):
    name = "eval"
    help = "run labelled cases through the router: recall, false injections, failures"
    description = (
        "Route every case of a cases file (TOML, the reference's TSV, or a skill-creator "
        "trigger eval set) and "
        "report recall, false-inject rate, host value, stage-1 recall@k, a breakdown by kind, "
        "every failure with the gate that caused it, and timings."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "cases",
            metavar="CASES",
            nargs="?",
            help="cases file: .toml, the reference's .tsv (all kinds, context and cwd "
            "columns), or a trigger eval set .json (with --skill); none: every skill's own "
            "trigger evals (evals/*.json beside its SKILL.md)",
        )
        parser.add_argument(
            "--cases",
            dest="cases_option",
            metavar="FILE",
            help="CASES as an option, as tune and lint --collisions take it",
        )
        parser.add_argument(
            "--skill",
            metavar="ID",
            help="the skill a skill-creator trigger eval set is about: a list of "
            '{"query": ..., "should_trigger": true|false}, or {"evals": [{"prompt": ..., '
            '"should_trigger": ...}]} (default: its skill_name); without CASES, only this '
            "skill's own trigger evals",
        )
        parser.add_argument(
            "--by-library",
            action="store_true",
            help="recall, false-inject rate, top-1 and recall@k per library of --manifest "
            "(default benchmarks/libraries.toml) or --library",
        )
        add_library_options(parser, "default with --by-library: benchmarks/libraries.toml")
        parser.add_argument(
            "--split",
            choices=("train", "validation", "both"),
            default="validation",
            help="with --by-library: which split to route (default validation)",
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--min-recall", type=fraction, metavar="X", help="exit 1 when recall is below X"
        )
        parser.add_argument(
            "--max-false-inject",
            type=fraction,
            metavar="X",
            help="exit 1 when the false-inject rate is above X",
        )
        parser.add_argument(
            "--min-host-value", type=number, metavar="X", help="exit 1 when host value is below X"
        )
        other = parser.add_mutually_exclusive_group()
        other.add_argument(
            "--compare-config",
            metavar="FILE",
            help="also run with this config file in place of --config and show both side by "
            "side (thresholds apply to the main run)",
        )
        other.add_argument(
            "--compare-skills",
            metavar="DIR",
            action="append",
            help="also run over this library (repeatable) and show both side by side, e.g. a "
            "description before and after an edit (thresholds apply to the main run)",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import evaluate
        from explorer.engine.qa import compare
        from explorer.qa_report import compare_text, eval_text

        if args.cases and args.cases_option:
            say("give the cases file once: CASES or --cases FILE")
            return EXIT_USAGE
        args.cases = args.cases or args.cases_option
        if args.by_library or wants_libraries(args):
            if args.cases or args.compare_config or args.compare_skills:
                say("--by-library runs the libraries' own cases: no CASES or --compare-*")
                return EXIT_USAGE
            return run_eval_by_library(args, loaded)
        cases: CaseSet | None = None
        if args.cases:
            inputs = roots_and_cases(args, loaded)
            if inputs is None:
                return EXIT_USAGE
            roots, cases = inputs
        else:
            found = command_roots(args, loaded)
            if found is None:
                return EXIT_USAGE
            roots = found
        other_config: Config | None = None
        if args.compare_config:
            try:
                other = load_config(
                    args.compare_config, args.assignments, use_ski_config=args.ski_config
                )
            except ConfigError as error:
                say(str(error))
                return EXIT_USAGE
            other_config = other.config
        engines = Engines(args)
        index = engines.index(roots, loaded.config)
        if not len(index):
            say(f"no valid skills under {', '.join(index.roots)}")
            return EXIT_FAILED
        if unknown_skill(index, args.skill):
            return EXIT_USAGE
        if cases is None:
            cases = own_cases(index, args.skill)
            if cases is None:
                return EXIT_USAGE
        report = evaluate(cases.cases, index, loaded.config, label=run_label(roots, args.config))
        for warning in report.warnings:
            say(f"warning: {warning}")
        checks = check_thresholds(report, args)

        other_report: EvalReport | None = None
        comparison: Comparison | None = None
        if other_config is not None or args.compare_skills:
            other_roots = args.compare_skills or roots
            config_b = other_config or loaded.config
            index_b = engines.index(other_roots, config_b, quiet=True)
            label_b = run_label(other_roots, args.compare_config or args.config)
            other_report = evaluate(cases.cases, index_b, config_b, label=label_b)
            comparison = compare(report, other_report)

        if args.json:
            data: dict[str, Any] = {**report.to_dict(), "checks": checks}
            if comparison is not None and other_report is not None:
                data = {
                    "a": report.to_dict(),
                    "b": other_report.to_dict(),
                    "compare": comparison.to_dict(),
                    "checks": checks,
                }
            print(json.dumps(data, indent=2, default=json_default))
        else:
            emit(*eval_text(report, args.cases or cases.source))
            if comparison is not None and other_report is not None:
                print()
                emit(*compare_text(comparison, report, other_report))
            if checks:
                print()
                for check in checks:
                    relation = ">=" if check["at_least"] else "<="
                    value = "undefined" if check["value"] is None else f"{check['value']:.3f}"
                    mark = "ok  " if check["passed"] else "FAIL"
                    print(f"{mark} {check['metric']} {value} (needs {relation} {check['limit']:g})")
        return EXIT_OK if all(check["passed"] for check in checks) else EXIT_FAILED
