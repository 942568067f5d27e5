"""Cold build: chunked embedding that survives an interruption, with progress."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.inference import cache as cache_module
from explorer.engine.inference.cache import EmbeddingCache, embed_with_cache
from explorer.engine.inference.embed import BowEmbedder


class _Interrupted(BowEmbedder):
    """Bag of words that is 'Ctrl-C'ed on its third call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 3:
            raise KeyboardInterrupt
        return super().embed_documents(texts)


def test_an_interrupted_build_keeps_what_it_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "CHUNK_TEXTS", 10)
    texts = [f"Skill number {i} does task {i * 7} with tool {i % 5}." for i in range(45)]
    cache = EmbeddingCache(tmp_path)
    embedder = _Interrupted()
    with pytest.raises(KeyboardInterrupt):
        embed_with_cache(embedder, texts, cache)
    assert cache.count(embedder.identity) == 20  # two chunks were written before the stop
    seen: list[tuple[int, int]] = []
    vectors, computed = embed_with_cache(
        BowEmbedder(), texts, cache, progress=lambda done, total: seen.append((done, total))
    )
    assert computed == 25  # the resumed build embeds only the rest
    assert seen == [(0, 25), (10, 25), (20, 25), (25, 25)]
    assert np.allclose(vectors, BowEmbedder().embed_documents(texts))
