"""The persisted index's lookup tables (explorer/engine/index/store.py) read as the built ones:
keyword and ecosystem postings, the phrase table and the BM25 term spans, through every
Mapping operation the pipeline and the explorer use."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.index.store import open_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import SAMPLE_SKILLS

CONFIG = Config(model="bow", reranker="off")


@pytest.fixture(scope="module")
def built_and_stored(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    models = assemble_models(BowEmbedder())
    cache = EmbeddingCache(tmp_path_factory.mktemp("store-tables"))
    fresh = build_index([SAMPLE_SKILLS], CONFIG, models, cache)
    open_index([SAMPLE_SKILLS], CONFIG, models, cache)  # written
    stored = open_index([SAMPLE_SKILLS], CONFIG, models, cache)
    assert stored.source == "store"
    return fresh, stored.index


@pytest.mark.parametrize("table", ["keyword_postings", "ecosystem_postings"])
def test_postings_read_as_built(built_and_stored, table: str) -> None:
    fresh, stored = built_and_stored
    built, read = getattr(fresh, table), getattr(stored, table)
    assert len(read) == len(built) and set(read) == set(built)
    for key, positions in built.items():
        assert np.array_equal(read[key], positions) and np.array_equal(read.get(key), positions)
    assert read.get("no-such-keyword") is None and read.get("no-such-keyword", ()) == ()
    with pytest.raises(KeyError):
        read["no-such-keyword"]


def test_the_phrase_table_reads_as_built(built_and_stored) -> None:
    fresh, stored = built_and_stored
    built, read = fresh.phrase_table, stored.phrase_table
    assert built and len(read) == len(built) and set(read) == set(built)
    for token, entries in built.items():
        assert read[token] == entries and read.get(token) == entries
    assert read.get("zzz-no-token") is None
    with pytest.raises(KeyError):
        read["zzz-no-token"]


def test_term_spans_find_every_term_and_only_those(built_and_stored) -> None:
    fresh, stored = built_and_stored
    built, read = fresh.lexical._spans, stored.lexical._spans
    terms = list(read)
    assert len(read) == len(terms) > 0 and terms == sorted(terms, key=str.encode)
    for term in terms:  # each span covers the term's postings: as many as the build's
        start, end = read.get(term)
        built_start, built_end = built.get(term)
        assert term in read and end - start == built_end - built_start > 0
    assert "zzz-not-a-term" not in read and read.get("zzz-not-a-term") is None
    assert 42 not in read  # only strings are terms
