"""Opening a library for a command: config roots, cache, models and index, with messages."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.cli.base import EXIT_FAILED, EXIT_USAGE, say
from explorer.cli.roots import command_roots
from explorer.engine import Config, LoadedConfig
from explorer.engine.base import did_you_mean, model_key

if TYPE_CHECKING:  # the engine loads lazily: parsing a command line never pays for it
    from explorer.engine import Index
    from explorer.engine.index import Engine
    from explorer.engine.inference import EmbeddingCache
    from explorer.engine.qa import CaseSet


def engine_for(args: argparse.Namespace, config: Config) -> Engine:
    """The cache (--cache-dir first) and the models, after saying what degraded."""
    from explorer.engine import open_engine

    engine = open_engine(config, args.cache_dir)
    for warning in engine.warnings:
        say(f"warning: {warning}")
    return engine


# Up to this many problems are each said on their own line; past it, one line counts them
# (a real 2,289-skill library has ~280 duplicate names: 280 lines on every call said nothing).
LIST_UP_TO = 3
DUPLICATE_MARK = "duplicate skill id"


def problem_lines(index: Index, *, verbose: bool = False) -> list[str]:
    """What was skipped or warned about: every problem (verbose, or only a few), else one
    line that counts them by kind and says where the full list is."""
    rejected, warnings = list(index.rejected), list(index.warnings)
    notes = [f"warning: {note}" for note in index.notes]  # a rebuilt store, a cut-short embed
    if verbose or len(rejected) + len(warnings) <= LIST_UP_TO:
        return (
            notes
            + [f"skipped {problem}" for problem in rejected]
            + [f"warning: {problem}" for problem in warnings]
        )
    duplicates = sum(DUPLICATE_MARK in problem.message for problem in rejected)
    counts = [
        _count(duplicates, "duplicate name"),
        _count(len(rejected) - duplicates, "broken file"),
        _count(len(warnings), "parse warning"),
    ]
    said = [count for count in counts if count]
    listed = ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
    return [*notes, f"skipped {listed}; run `skill-explorer lint` (or add -v) to list them"]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}" if number else ""


def report_library(index: Index, *, verbose: bool = False) -> bool:
    """Say what was rejected or warned about; False when there is nothing to route over."""
    for line in problem_lines(index, verbose=verbose):
        say(line)
    if not len(index):
        say(f"no valid skills under {', '.join(index.roots)}")
        return False
    return True


def library_index(args: argparse.Namespace, loaded: LoadedConfig) -> Index | int:
    """The index over the command's roots, or the exit code that says why there is none."""
    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    from explorer.engine import open_library

    # The persisted index (engine/index/store.py): validated by stat, mapped, rebuilt on change.
    engine = engine_for(args, loaded.config)
    index = open_library(roots, loaded.config, engine=engine, persisted=True)
    verbose = bool(getattr(args, "verbose", False))
    return index if report_library(index, verbose=verbose) else EXIT_FAILED


class Engines:
    """Builds indexes for one command, sharing the cache and models between configs."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._cache: EmbeddingCache | None = None
        self._engines: dict[tuple[Any, ...], Engine] = {}

    def index(self, roots: Sequence[str], config: Config, *, quiet: bool = False) -> Index:
        from explorer.engine import open_engine, open_library
        from explorer.engine.index import open_cache

        key = model_key(config)
        engine = self._engines.get(key)
        if engine is None:
            if self._cache is None:
                self._cache = open_cache(config, self.args.cache_dir)
            engine = self._engines[key] = open_engine(config, cache=self._cache)
            for warning in engine.warnings:
                say(f"warning: {warning}")
        index = open_library(roots, config, engine=engine)
        if not quiet:
            for line in problem_lines(index, verbose=bool(getattr(self.args, "verbose", False))):
                say(line)
        return index


def load_case_set(path: str, skill: str | None = None) -> CaseSet | None:
    """The cases file (a trigger eval set needs the skill it is about), or None after
    saying what is wrong with it."""
    from explorer.engine.qa import CaseError, load_cases

    try:
        cases = load_cases(path, skill=skill)
    except CaseError as error:
        say(str(error))
        return None
    for warning in cases.warnings:
        say(f"warning: {warning}")
    if not cases.cases:
        say(f"{path}: no cases")
        return None
    return cases


def roots_and_cases(
    args: argparse.Namespace, loaded: LoadedConfig
) -> tuple[list[str], CaseSet] | None:
    """Both inputs of eval and calibrate, or None after saying what is wrong."""
    roots = command_roots(args, loaded)
    skill = getattr(args, "skill", None)
    cases = load_case_set(args.cases, skill) if roots is not None else None
    return None if roots is None or cases is None else (roots, cases)


def run_label(roots: Sequence[str], config_file: str | None) -> str:
    """How a run is named in eval's report: its roots and config file."""
    label = f"skills {', '.join(roots)}"
    return label + (f", config {config_file}" if config_file else "")


def unknown_skill(index: Index, skill_id: str | None) -> bool:
    """Whether `--skill` names no skill of the library, after saying so with the nearest
    ids: the command then exits 2, rather than routing cases that can never pass."""
    if skill_id is None or skill_id in index.positions:
        return False
    skipped = next(
        (problem for problem in index.rejected if Path(problem.path).parent.name == skill_id),
        None,
    )
    if skipped is not None:  # its folder is there, but the file was not read as a skill
        say(f"skill {skill_id!r} is not routed: its file was skipped: {skipped}")
        return True
    hint = did_you_mean(skill_id, index.ids)
    say(f"no skill {skill_id!r} in {', '.join(index.roots)}{hint}")
    return True
