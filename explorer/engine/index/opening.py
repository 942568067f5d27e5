"""Opening a library: cache, then models, then index, the sequence every entry point runs.

The route/why/eval commands, the hook, `watch` and the explorer all need the same three
steps with the same precedence for the cache directory; doing them here keeps that
precedence (and what is reported about it) in one place.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.cache import EmbeddingCache, Progress
from explorer.engine.inference.models import Models, load_models

if TYPE_CHECKING:
    from explorer.engine.index.store import PendingStore


@dataclass(frozen=True)
class Engine:
    """The models and the cache their vectors go through, shared by every index built on them.

    `models.warnings` also holds what opening the cache warned about, so one list says
    everything that loading degraded.
    """

    cache: EmbeddingCache
    models: Models

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.models.warnings)


def open_cache(config: Config, cache_dir: str | os.PathLike[str] | None = None) -> EmbeddingCache:
    """The embedding cache: `cache_dir` (--cache-dir), else the config's, else the default."""
    return EmbeddingCache(cache_dir or config.cache_dir or None)


def open_engine(
    config: Config,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    cache: EmbeddingCache | None = None,
) -> Engine:
    """Open the cache (unless given one) and load the models the config names."""
    cache = cache if cache is not None else open_cache(config, cache_dir)
    models = load_models(config, cache)
    models.warnings[:0] = cache.warnings
    return Engine(cache, models)


def open_library(
    roots: Sequence[str | os.PathLike[str]],
    config: Config,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    engine: Engine | None = None,
    persisted: bool = False,
    progress: Progress | None = None,
    pending: PendingStore | None = None,
    deadline: float | None = None,
    bodies_on_disk: bool = False,
) -> Index:
    """The index of the skills under `roots`, on `engine` or on one opened for `config`.

    Problems are data, never exceptions: rejected skills are in `index.rejected`, parse
    warnings in `index.warnings`, degraded models in `index.models.warnings`.
    `persisted`: open the library's persisted index (store.py: validated by stat, mapped,
    skills made on demand) instead of building one; what the hook, route and why use.
    `deadline` (time.monotonic()): the hook's time budget for embedding new descriptions;
    past it the index has the lexical channels alone, with a note (snapshot.index_skills).
    `bodies_on_disk`: a built index's skills read their bodies from their files when asked
    (discovery/bodies.py), as the persisted store's and the live index's do.
    """
    engine = engine if engine is not None else open_engine(config, cache_dir)
    if persisted:
        from explorer.engine.index.store import open_index

        return open_index(
            roots,
            config,
            engine.models,
            engine.cache,
            progress=progress,
            pending=pending,
            deadline=deadline,
        ).index
    return build_index(
        roots,
        config,
        engine.models,
        engine.cache,
        progress=progress,
        deadline=deadline,
        bodies_on_disk=bodies_on_disk,
    )
