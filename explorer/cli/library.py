"""Opening a library for a command: config roots, cache, models and index, with messages."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from explorer.cli.base import EXIT_FAILED, EXIT_USAGE, say
from explorer.cli.roots import command_roots
from explorer.engine.config import MODEL_FIELDS, Config, LoadedConfig

if TYPE_CHECKING:  # the engine loads lazily: parsing a command line never pays for it
    from explorer.engine.cache import EmbeddingCache
    from explorer.engine.cases import CaseSet
    from explorer.engine.models import Models
    from explorer.engine.snapshot import Index


@dataclass
class Engine:
    loaded: LoadedConfig
    cache: EmbeddingCache
    models: Models
    index: Index


def open_engine(roots: Sequence[str], args: argparse.Namespace, loaded: LoadedConfig) -> Engine:
    from explorer.engine.cache import EmbeddingCache
    from explorer.engine.models import load_models
    from explorer.engine.snapshot import build_index

    config = loaded.config
    cache = EmbeddingCache(args.cache_dir or config.cache_dir or None)
    models = load_models(config, cache)
    for warning in (*cache.warnings, *models.warnings):
        say(f"warning: {warning}")
    index = build_index(roots, config, models, cache)
    return Engine(loaded, cache, models, index)


def report_library(engine: Engine) -> bool:
    """Say what was rejected or warned about; False when there is nothing to route over."""
    for problem in engine.index.rejected:
        say(f"skipped {problem}")
    for problem in engine.index.warnings:
        say(f"warning: {problem}")
    if not len(engine.index):
        say(f"no valid skills under {', '.join(engine.index.roots)}")
        return False
    return True


def library_engine(args: argparse.Namespace, loaded: LoadedConfig) -> Engine | int:
    """The engine over the roots, or the exit code that says why there is none."""
    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    engine = open_engine(roots, args, loaded)
    return engine if report_library(engine) else EXIT_FAILED


class Engines:
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
                say(f"warning: {warning}")
        key = tuple(getattr(config, name) for name in MODEL_FIELDS)
        models = self._models.get(key)
        if models is None:
            models = self._models[key] = load_models(config, self._cache)
            for warning in models.warnings:
                say(f"warning: {warning}")
        index = build_index(roots, config, models, self._cache)
        if not quiet:
            for problem in index.rejected:
                say(f"skipped {problem}")
            for problem in index.warnings:
                say(f"warning: {problem}")
        return index


def load_case_set(path: str, skill: str | None = None) -> CaseSet | None:
    """The cases file (a trigger eval set needs the skill it is about), or None after
    saying what is wrong with it."""
    from explorer.engine.cases import CaseError, load_cases

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
