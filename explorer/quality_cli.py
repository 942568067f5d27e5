"""Command adapters for routing quality over several libraries.

`calibrate --manifest FILE` / `--library DIR=CASES`: the joint sweep (engine/multical.py).
`eval --by-library`: recall, false-inject rate, top-1 and recall@k per library and split.
`bench --only quality`: the same for the config in force over the benchmark libraries'
validation split, written as JSON beside the other benchmark results.

The command modules only register options and call these; nothing here scores a skill.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.engine.config import Config, LoadedConfig
from explorer.engine.decision import json_default

if TYPE_CHECKING:
    from explorer.engine.libraries import LibraryCases, LibrarySpec
    from explorer.engine.quality import LibraryQuality
    from explorer.engine.snapshot import Index

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _say(message: str) -> None:
    print(f"skill-explorer: {message}", file=sys.stderr)


def add_library_options(parser: argparse.ArgumentParser) -> None:
    """--library / --manifest: the libraries a multi-library command runs over."""
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
        help="a TOML list of libraries ([[library]] name, skills, train, validation); "
        "default with --by-library: benchmarks/libraries.toml",
    )


def wants_libraries(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "library", None) or getattr(args, "manifest", None))


def library_specs(args: argparse.Namespace) -> list[LibrarySpec] | None:
    """The libraries named on the command line, or None after saying what is wrong."""
    from explorer.engine.libraries import (
        DEFAULT_MANIFEST,
        LibraryError,
        parse_library_arg,
        read_manifest,
    )

    try:
        specs = [parse_library_arg(text) for text in args.library]
        manifest = args.manifest or (None if specs else str(DEFAULT_MANIFEST))
        if manifest is not None:
            if not Path(manifest).is_file():
                _say(f"{manifest}: no such manifest (give --manifest FILE or --library DIR=CASES)")
                return None
            specs += read_manifest(manifest)
    except LibraryError as error:
        _say(str(error))
        return None
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        _say(f"two libraries share a name: {', '.join(sorted(names))} (use NAME:DIR=...)")
        return None
    return specs


@contextmanager
def loaded_libraries(
    specs: Sequence[LibrarySpec], config: Config, cache_dir: str | None, *, quiet: bool = False
) -> Iterator[list[tuple[LibraryCases, Index]]]:
    """Each library's cases and index (one model load and one cache for all of them)."""
    from explorer.engine.libraries import library_roots, load_library_cases
    from explorer.engine.library import open_engine, open_library

    engine = open_engine(config, cache_dir)
    if not quiet:
        for warning in engine.warnings:
            _say(f"warning: {warning}")
    loaded: list[tuple[LibraryCases, Index]] = []
    with ExitStack() as stack:
        for spec in specs:
            cases = load_library_cases(spec)
            if not quiet:
                for warning in cases.warnings:
                    _say(f"warning: {warning}")
            roots = stack.enter_context(library_roots(spec))
            index = open_library(roots, config, engine=engine)
            if not len(index):
                raise ValueError(f"{spec.name}: no valid skills under {', '.join(roots)}")
            loaded.append((cases, index))
        yield loaded


def run_calibrate_libraries(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.cases import CaseError
    from explorer.engine.libraries import LibraryError
    from explorer.engine.multical import FIR_BUDGET, calibrate_libraries
    from explorer.quality_report import calibration_markdown, calibration_text, toml_values

    specs = library_specs(args)
    if specs is None:
        return EXIT_USAGE
    budget = args.budget if getattr(args, "budget", None) is not None else FIR_BUDGET
    try:
        with loaded_libraries(specs, loaded.config, args.cache_dir) as libraries:
            report = calibrate_libraries(
                libraries,
                loaded.config,
                budget=budget,
                progress=None if args.json else lambda m: print(f"… {m}", file=sys.stderr),
            )
    except (LibraryError, CaseError, ValueError) as error:
        _say(str(error))
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


def quality_rows(results: Sequence[LibraryQuality]) -> tuple[list[str], list[list[str]]]:
    from explorer.quality_report import rates_cells

    headers = ["library", "N", "split", "recall", "false-inject", "top-1", "recall@k"]
    rows = [
        [result.library, str(result.skills), result.split, *rates_cells(result.rates)]
        for result in results
    ]
    return headers, rows


def quality_text(results: Sequence[LibraryQuality], config: Config) -> str:
    from explorer.quality_report import rows_text

    headers, rows = quality_rows(results)
    return "\n".join([f"preset {config.preset}", *rows_text(headers, rows)])


def run_eval_by_library(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.cases import CaseError
    from explorer.engine.libraries import LibraryError
    from explorer.engine.quality import by_library, quality_dict

    specs = library_specs(args)
    if specs is None:
        return EXIT_USAGE
    splits = ("train", "validation") if args.split == "both" else (args.split,)
    try:
        with loaded_libraries(specs, loaded.config, args.cache_dir) as libraries:
            results = by_library(libraries, loaded.config, splits)
    except (LibraryError, CaseError, ValueError) as error:
        _say(str(error))
        return EXIT_USAGE
    if args.json:
        print(json.dumps(quality_dict(results, loaded.config), indent=2, default=json_default))
    else:
        print(quality_text(results, loaded.config))
    failed = False
    for result in results:
        recall, fir = result.rates.recall, result.rates.false_inject_rate
        if args.min_recall is not None and (recall is None or recall < args.min_recall):
            failed = True
        if args.max_false_inject is not None and (fir is not None and fir > args.max_false_inject):
            failed = True
    return EXIT_FAILED if failed else EXIT_OK


def quality_bench(
    config: Config, cache_dir: str | None = None, manifest: str | None = None
) -> dict[str, Any]:
    """`bench --only quality`: the config in force over the benchmark libraries' validation
    split; the figures the committed baseline (benchmarks/quality_baseline.json) pins."""
    from explorer.engine.libraries import DEFAULT_MANIFEST, read_manifest
    from explorer.engine.quality import by_library, quality_dict

    specs = read_manifest(manifest or DEFAULT_MANIFEST)
    with loaded_libraries(specs, config, cache_dir, quiet=True) as libraries:
        results = by_library(libraries, config, ("validation",))
    return quality_dict(results, config)
