"""The live index reports the embedding of its builds: the explorer's progress on a cold
start comes from here (cache.embed_with_cache's chunks), not from a timer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.live import LiveIndex
from explorer.engine.index.opening import open_cache
from explorer.engine.inference import cache as cache_module
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import write_skill


def _heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skills: int, **settings: int
) -> tuple[list[tuple[int, int]], Callable[[], LiveIndex]]:
    """What a first build of `skills` skills reports, with cache.py's sizes as `settings`
    say; and a second build over the same cache, for what it reports in turn."""
    root = tmp_path / "skills"
    for number in range(skills):
        write_skill(root, f"skill-{number}", f"Describe thing number {number} for tests.")
    for name, value in settings.items():
        monkeypatch.setattr(cache_module, name, value)
    models = assemble_models(BowEmbedder())
    heard: list[tuple[int, int]] = []
    cache = open_cache(Config(model="bow"), str(tmp_path / "cache"))

    def build() -> LiveIndex:
        return LiveIndex(
            [root], Config(model="bow"), models, cache, progress=lambda *p: heard.append(p)
        )

    build()
    return heard, build


def test_a_cold_first_build_reports_each_chunk_and_a_warm_one_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard, build = _heard(tmp_path, monkeypatch, 5, CHUNK_TEXTS=2)
    assert heard == [(0, 5), (2, 5), (4, 5), (5, 5)]
    heard.clear()
    build()
    assert heard == []  # every vector from the cache


def test_progress_moves_within_a_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """235 descriptions were one chunk of 256: "embedding 0/235" did not move for the
    seconds it took, then jumped to the end. Progress is said every PROGRESS_TEXTS."""
    heard, _ = _heard(tmp_path, monkeypatch, 7, PROGRESS_TEXTS=3)
    assert heard == [(0, 7), (3, 7), (6, 7), (7, 7)]
