"""The live index reports the embedding of its builds: the explorer's progress on a cold
start comes from here (cache.embed_with_cache's chunks), not from a timer."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.live import LiveIndex
from explorer.engine.index.opening import open_cache
from explorer.engine.inference import cache as cache_module
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import write_skill


def test_a_cold_first_build_reports_each_chunk_and_a_warm_one_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "skills"
    for number in range(5):
        write_skill(root, f"skill-{number}", f"Describe thing number {number} for tests.")
    monkeypatch.setattr(cache_module, "CHUNK_TEXTS", 2)
    models = assemble_models(BowEmbedder())
    heard: list[tuple[int, int]] = []
    cache = open_cache(Config(model="bow"), str(tmp_path / "cache"))
    LiveIndex([root], Config(model="bow"), models, cache, progress=lambda *p: heard.append(p))
    assert heard == [(0, 5), (2, 5), (4, 5), (5, 5)]
    heard.clear()
    LiveIndex([root], Config(model="bow"), models, cache, progress=lambda *p: heard.append(p))
    assert heard == []  # every vector from the cache


def test_progress_moves_within_a_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """235 descriptions were one chunk of 256: "embedding 0/235" did not move for the
    seconds it took, then jumped to the end. Progress is said every PROGRESS_TEXTS."""
    root = tmp_path / "skills"
    for number in range(7):
        write_skill(root, f"skill-{number}", f"Describe thing number {number} for tests.")
    monkeypatch.setattr(cache_module, "PROGRESS_TEXTS", 3)
    models = assemble_models(BowEmbedder())
    heard: list[tuple[int, int]] = []
    cache = open_cache(Config(model="bow"), str(tmp_path / "cache"))
    LiveIndex([root], Config(model="bow"), models, cache, progress=lambda *p: heard.append(p))
    assert heard == [(0, 7), (3, 7), (6, 7), (7, 7)]
