"""QA commands (eval, calibrate, lint): thin adapters over the engine's QA modules.

Exit codes, as for the other commands: 0 success; 1 the command ran but the library
fell short (a threshold not met, lint errors, no valid skills); 2 bad usage or
configuration (a bad cases file, no skills root, a bad config).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from explorer.command_roots import command_roots
from explorer.engine.config import MODEL_FIELDS, Config, ConfigError, LoadedConfig, load_config
from explorer.engine.decision import json_default

if TYPE_CHECKING:  # the engine loads lazily: `route` and the hook never pay for QA imports
    from explorer.engine.cache import EmbeddingCache
    from explorer.engine.cases import CaseSet
    from explorer.engine.evaluate import Comparison, EvalReport
    from explorer.engine.models import Models
    from explorer.engine.snapshot import Index

Handler = Callable[[argparse.Namespace, LoadedConfig], int]
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1 (recall and false-inject rate are rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be above 0")
    return value


def add_commands(commands: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register the QA subcommands; `common` adds the shared --config/--set/... options."""
    evaluate = commands.add_parser(
        "eval",
        help="run labelled cases through the router: recall, false injections, failures",
        description="Route every case of a cases file (TOML, or the reference's TSV) and "
        "report recall, false-inject rate, host value, stage-1 recall@k, a breakdown by kind, "
        "every failure with the gate that caused it, and timings.",
    )
    evaluate.add_argument("cases", metavar="CASES", help="cases file (.toml, or .tsv)")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument(
        "--min-recall", type=_fraction, metavar="X", help="exit 1 when recall is below X"
    )
    evaluate.add_argument(
        "--max-false-inject",
        type=_fraction,
        metavar="X",
        help="exit 1 when the false-inject rate is above X",
    )
    evaluate.add_argument(
        "--min-host-value", type=_number, metavar="X", help="exit 1 when host value is below X"
    )
    other = evaluate.add_mutually_exclusive_group()
    other.add_argument(
        "--compare-config",
        metavar="FILE",
        help="also run with this config file in place of --config and show both side by side "
        "(thresholds apply to the main run)",
    )
    other.add_argument(
        "--compare-skills",
        metavar="DIR",
        action="append",
        help="also run over this library (repeatable) and show both side by side, e.g. a "
        "description before and after an edit (thresholds apply to the main run)",
    )
    common(evaluate)

    calibrate = commands.add_parser(
        "calibrate",
        help="sweep the gates' thresholds on train cases, report on validation",
        description="Sweep min_similarity, score_margin, lexical_min/lexical_margin (and "
        "rerank_min/rerank_margin with a reranker) over a grid; choose on the train split, "
        "report on the validation split.",
    )
    calibrate.add_argument("cases", metavar="CASES", help="cases file (.toml, or .tsv)")
    calibrate.add_argument("--json", action="store_true", help="print the report as JSON")
    calibrate.add_argument("--write", metavar="FILE", help="write the recommendation as TOML")
    calibrate.add_argument(
        "--seed", type=int, default=0, help="seed of the random split for cases without one"
    )
    calibrate.add_argument(
        "--top", type=_positive_int, default=10, metavar="N", help="grid rows to show (10)"
    )
    common(calibrate)

    lint = commands.add_parser(
        "lint",
        help="check skills against the Agent Skills spec and for retrieval problems",
        description="Spec rules (name, description, keys, XML tags, reserved words) and "
        "retrieval rules (near-duplicates, generic terms, trigger language, dead keywords, "
        "Claude Code listing budget). Exit 1 when there are errors.",
    )
    lint.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots")
    lint.add_argument(
        "--claude-code", action="store_true", help="accept Claude Code's extra frontmatter keys"
    )
    lint.add_argument("--json", action="store_true", help="print the findings as JSON")
    lint.add_argument(
        "--context-tokens",
        type=_positive_int,
        default=200_000,
        metavar="N",
        help="context window for the listing budget (default 200000)",
    )
    lint.add_argument(
        "--near-duplicate",
        type=_fraction,
        default=0.85,
        metavar="X",
        help="dense cosine from which two descriptions count as near-duplicates (0.85)",
    )
    common(lint, skills=False)


def _say(message: str) -> None:
    print(f"skill-explorer: {message}", file=sys.stderr)


class _Engines:
    """Builds indexes for one command, sharing the cache and models between configs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._cache: EmbeddingCache | None = None
        self._models: dict[tuple[Any, ...], Models] = {}

    def index(self, roots: Sequence[str], config: Config, *, quiet: bool = False) -> Index:
        from explorer.engine.cache import EmbeddingCache
        from explorer.engine.models import load_models
        from explorer.engine.snapshot import build_index

        if self._cache is None:
            self._cache = EmbeddingCache(self.args.cache_dir or config.cache_dir or None)
            for warning in self._cache.warnings:
                _say(f"warning: {warning}")
        key = tuple(getattr(config, name) for name in MODEL_FIELDS)
        models = self._models.get(key)
        if models is None:
            models = self._models[key] = load_models(config, self._cache)
            for warning in models.warnings:
                _say(f"warning: {warning}")
        index = build_index(roots, config, models, self._cache)
        if not quiet:
            for problem in index.rejected:
                _say(f"skipped {problem}")
            for problem in index.warnings:
                _say(f"warning: {problem}")
        return index


def _load_cases(path: str) -> CaseSet | None:
    from explorer.engine.cases import CaseError, load_cases

    try:
        cases = load_cases(path)
    except CaseError as error:
        _say(str(error))
        return None
    for warning in cases.warnings:
        _say(f"warning: {warning}")
    if not cases.cases:
        _say(f"{path}: no cases")
        return None
    return cases


def _label(roots: Sequence[str], config_file: str | None) -> str:
    label = f"skills {', '.join(roots)}"
    return label + (f", config {config_file}" if config_file else "")


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


def _roots_and_cases(
    args: argparse.Namespace, loaded: LoadedConfig
) -> tuple[list[str], CaseSet] | None:
    """Both inputs of eval and calibrate, or None after saying what is wrong."""
    roots = command_roots(args, loaded)
    cases = _load_cases(args.cases) if roots is not None else None
    return None if roots is None or cases is None else (roots, cases)


def cmd_eval(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.evaluate import compare, evaluate
    from explorer.qa_report import compare_text, eval_text

    inputs = _roots_and_cases(args, loaded)
    if inputs is None:
        return EXIT_USAGE
    roots, cases = inputs
    other_config: Config | None = None
    if args.compare_config:
        try:
            other = load_config(
                args.compare_config, args.assignments, use_ski_config=args.ski_config
            )
        except ConfigError as error:
            _say(str(error))
            return EXIT_USAGE
        other_config = other.config
    engines = _Engines(args)
    index = engines.index(roots, loaded.config)
    if not len(index):
        _say(f"no valid skills under {', '.join(index.roots)}")
        return EXIT_FAILED
    report = evaluate(cases.cases, index, loaded.config, label=_label(roots, args.config))
    for warning in report.warnings:
        _say(f"warning: {warning}")
    checks = check_thresholds(report, args)

    other_report: EvalReport | None = None
    comparison: Comparison | None = None
    if other_config is not None or args.compare_skills:
        other_roots = args.compare_skills or roots
        config_b = other_config or loaded.config
        index_b = engines.index(other_roots, config_b, quiet=True)
        label_b = _label(other_roots, args.compare_config or args.config)
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
        print(eval_text(report, args.cases))
        if comparison is not None and other_report is not None:
            print()
            print(compare_text(comparison, report, other_report))
        if checks:
            print()
            for check in checks:
                relation = ">=" if check["at_least"] else "<="
                value = "undefined" if check["value"] is None else f"{check['value']:.3f}"
                mark = "ok  " if check["passed"] else "FAIL"
                print(f"{mark} {check['metric']} {value} (needs {relation} {check['limit']:g})")
    return EXIT_OK if all(check["passed"] for check in checks) else EXIT_FAILED


def cmd_calibrate(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.calibrate import calibrate
    from explorer.qa_report import calibration_text

    inputs = _roots_and_cases(args, loaded)
    if inputs is None:
        return EXIT_USAGE
    roots, cases = inputs
    index = _Engines(args).index(roots, loaded.config)
    if not len(index):
        _say(f"no valid skills under {', '.join(index.roots)}")
        return EXIT_FAILED
    report = calibrate(cases.cases, index, loaded.config, seed=args.seed)
    if not report.train_cases:
        _say("no train cases: the split left nothing to choose on")
        return EXIT_FAILED
    if args.write:
        try:
            with open(args.write, "w", encoding="utf-8") as handle:
                handle.write(report.to_toml(loaded.config))
        except OSError as error:
            _say(f"{args.write}: cannot write: {error.strerror or error}")
            return EXIT_FAILED
    if args.json:
        print(json.dumps(report.to_dict(top=args.top), indent=2, default=json_default))
    else:
        print(calibration_text(report, args.cases, args.top))
        if args.write:
            print(f"\nwrote the recommendation to {args.write} (use it with --config)")
    return EXIT_OK


def cmd_lint(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.lint import has_errors, lint
    from explorer.qa_report import lint_text

    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    index = _Engines(args).index(roots, loaded.config, quiet=True)
    findings = lint(
        roots,
        claude_code=args.claude_code,
        index=index,
        config=loaded.config,
        context_tokens=args.context_tokens,
        near_duplicate=args.near_duplicate,
    )
    if args.json:
        data = {
            "schema": "skill-explorer/lint@1",
            "skills": len(index),
            "findings": [finding.to_dict() for finding in findings],
        }
        print(json.dumps(data, indent=2))
    else:
        print(lint_text(findings, len(index)))
    return EXIT_FAILED if has_errors(findings) else EXIT_OK


HANDLERS: dict[str, Handler] = {"eval": cmd_eval, "calibrate": cmd_calibrate, "lint": cmd_lint}
