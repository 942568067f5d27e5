"""Command adapters for routing quality over several libraries.

`calibrate --manifest FILE` / `--library DIR=CASES`: the joint sweep (engine/qa/multical.py).
`eval --by-library`: recall, false-inject rate, top-1 and recall@k per library and split.
(`bench --only quality` lives in explorer/bench/quality.py and shares these.)

The command modules only register options and call these; nothing here scores a skill.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, say
from explorer.engine import LoadedConfig
from explorer.engine.route import json_default

if TYPE_CHECKING:
    from explorer.engine.qa import LibrarySpec, RerankerCalibration


def add_library_options(parser: argparse.ArgumentParser, default_manifest: str = "") -> None:
    """--library / --manifest: the libraries a multi-library command runs over;
    `default_manifest` says when the benchmark manifest is read without either."""
    parser.add_argument(
        "--library",
        action="append",
        default=[],
        metavar="DIR=CASES",
        help="a library and its cases: DIR=CASES (the file's own split) or "
        "DIR=TRAIN,VALIDATION; NAME:DIR=... names it (repeatable)",
    )
    parser.add_argument(
        "--manifest",
        metavar="FILE",
        help="a TOML list of libraries ([[library]] name, skills, train, validation)"
        + (f"; {default_manifest}" if default_manifest else ""),
    )


def wants_libraries(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "library", None) or getattr(args, "manifest", None))


def library_specs(args: argparse.Namespace) -> list[LibrarySpec] | None:
    """The libraries named on the command line, or None after saying what is wrong."""
    from explorer.engine.qa import DEFAULT_MANIFEST, LibraryError, parse_library_arg, read_manifest

    try:
        specs = [parse_library_arg(text) for text in args.library]
        manifest = args.manifest or (None if specs else str(DEFAULT_MANIFEST))
        if manifest is not None:
            if not Path(manifest).is_file():
                say(f"{manifest}: no such manifest (give --manifest FILE or --library DIR=CASES)")
                return None
            specs += read_manifest(manifest)
    except LibraryError as error:
        say(str(error))
        return None
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        say(f"two libraries share a name: {', '.join(sorted(names))} (use NAME:DIR=...)")
        return None
    return specs


def run_calibrate_libraries(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.qa import (
        FIR_BUDGET,
        NEAR_MISS_BUDGET,
        Budget,
        CaseError,
        LibraryError,
        calibrate_libraries,
        open_libraries,
    )
    from explorer.quality_report import calibration_markdown, calibration_text, toml_values

    specs = library_specs(args)
    if specs is None:
        return EXIT_USAGE
    negatives = getattr(args, "budget", None)
    near_misses = getattr(args, "near_miss_budget", None)
    budget = Budget(
        FIR_BUDGET if negatives is None else negatives,
        NEAR_MISS_BUDGET if near_misses is None else near_misses,
        getattr(args, "scope", "pooled"),
    )
    try:
        with open_libraries(specs, loaded.config, args.cache_dir, warn=say) as libraries:
            report = calibrate_libraries(
                libraries,
                loaded.config,
                budget=budget,
                progress=None if args.json else lambda m: print(f"… {m}", file=sys.stderr),
            )
    except (LibraryError, CaseError, ValueError) as error:
        say(str(error))
        return EXIT_USAGE
    if args.write:
        Path(args.write).write_text(toml_values(report), encoding="utf-8")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=json_default))
    elif getattr(args, "markdown", False):
        print(calibration_markdown(report), end="")
    else:
        print(calibration_text(report))
    return EXIT_OK if report.verified else EXIT_FAILED


def run_calibrate_reranker(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    """`calibrate --manifest FILE --reranker`: the loaded reranker's gate, swept on train."""
    from explorer.engine.qa import CaseError, LibraryError, calibrate_reranker, open_libraries

    specs = library_specs(args)
    if specs is None:
        return EXIT_USAGE
    try:
        with open_libraries(specs, loaded.config, args.cache_dir, warn=say) as libraries:
            report = calibrate_reranker(
                libraries,
                loaded.config,
                progress=None if args.json else lambda m: print(f"… {m}", file=sys.stderr),
            )
    except (LibraryError, CaseError, ValueError) as error:
        say(str(error))
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=json_default))
    else:
        print(reranker_gate_markdown(report), end="")
    return EXIT_OK if report.verified else EXIT_FAILED


def reranker_gate_markdown(report: RerankerCalibration) -> str:
    """The gate sweep as Markdown: the chosen point, then each library with and without."""
    values = report.recommended
    floor = values["floor"]
    lines = [
        f"Reranker `{report.reranker}`: gate chosen on the train splits "
        f"({report.grid_size} points; {report.objective}). {report.verify_note}.",
        "",
        f"**Recommended**: floor {'§5.4 (min_similarity - 0.03)' if floor is None else floor}, "
        f"rerank_min {values['rerank_min']}, rerank_margin {values['rerank_margin']}, "
        f"lexical fast path {'kept' if values['fast_path'] else 'off (the reranker decides)'}",
        "",
        "| library | skills | split | recall without → with | false injects without → with |",
        "|---|---:|---|---|---|",
    ]

    def pair(a: float | None, b: float | None, x: int, y: int, total: int) -> str:
        def f(v: float | None) -> str:
            return "—" if v is None else f"{v:.2f}"

        return f"{f(a)} → {f(b)} ({x} → {y} of {total})"

    for library in report.libraries:
        for split, figures in (("train", library.train), ("validation", library.validation)):
            without, with_ = figures["without"], figures["with"]
            lines.append(
                f"| {library.name} | {library.skills} | {split} | "
                + pair(without.recall, with_.recall, without.hits, with_.hits, with_.positives)
                + " | "
                + pair(
                    without.false_inject_rate,
                    with_.false_inject_rate,
                    without.false_injects,
                    with_.false_injects,
                    with_.negatives,
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


def run_eval_by_library(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.qa import CaseError, LibraryError, by_library, open_libraries, quality_dict
    from explorer.quality_report import quality_text

    specs = library_specs(args)
    if specs is None:
        return EXIT_USAGE
    splits = ("train", "validation") if args.split == "both" else (args.split,)
    try:
        with open_libraries(specs, loaded.config, args.cache_dir, warn=say) as libraries:
            results = by_library(libraries, loaded.config, splits, progress=say)
    except (LibraryError, CaseError, ValueError) as error:
        say(str(error))
        return EXIT_USAGE
    if args.json:
        print(json.dumps(quality_dict(results, loaded.config), indent=2, default=json_default))
    else:
        # The benchmark manifest's libraries are the ones the learned preset was trained on.
        benchmarks = not args.library and args.manifest is None
        print(quality_text(quality_dict(results, loaded.config), benchmarks=benchmarks))
    failed = False
    for result in results:
        recall, fir = result.rates.recall, result.rates.false_inject_rate
        if args.min_recall is not None and (recall is None or recall < args.min_recall):
            failed = True
        if args.max_false_inject is not None and (fir is not None and fir > args.max_false_inject):
            failed = True
    return EXIT_FAILED if failed else EXIT_OK
