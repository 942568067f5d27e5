"""Snapshots after saves share what did not change, and still score as a fresh build.

The live index keeps several snapshots alive at once (the live one, the one compare and
what-if keep, the one a running lint reads). Each one owning the vector matrix and the
BM25 postings made the explorer's memory grow by the library's size per save; a patched
snapshot now shares the vector blocks (`index/rows.py`) and the BM25 base postings
(`LexicalIndex`'s overlay) it did not change.
"""

from __future__ import annotations

import random
import shutil
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from explorer.bench.synthetic import generate_library
from explorer.engine.base.config import Config
from explorer.engine.index import rows
from explorer.engine.index.lexical import LexicalIndex
from explorer.engine.index.live import LiveIndex
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import SAMPLE_SKILLS
from tests.engine.test_incremental import PROMPTS, _edit, _same, _shuffle_library

MODELS = assemble_models(BowEmbedder())


def _every_score_equal(live: Index, fresh: Index) -> None:
    """Every description as a BM25 query, its explanation, every term's df, and the
    cosine of every skill to several prompts: equal bit for bit."""
    live_lexical, fresh_lexical = live.lexical, fresh.lexical
    for skill in fresh.skills:
        got = live_lexical.score(skill.description)
        want = fresh_lexical.score(skill.description)
        assert np.array_equal(got.raw, want.raw), skill.id
        assert np.array_equal(got.matched_terms, want.matched_terms), skill.id
        assert np.array_equal(got.jaccard, want.jaccard), skill.id
        assert got.idf_sum == want.idf_sum
        for term in skill.description_tokens:
            assert live_lexical.df(term) == fresh_lexical.df(term), term
    positions = list(range(len(fresh)))
    assert live_lexical.explain_many(PROMPTS[0], positions) == fresh_lexical.explain_many(
        PROMPTS[0], positions
    )
    embedder = MODELS.embedder
    assert embedder is not None and live.vectors is not None and fresh.vectors is not None
    for prompt in PROMPTS:
        query = embedder.embed_query(prompt)
        assert np.array_equal(live.vectors @ query, fresh.vectors @ query), prompt


@pytest.mark.parametrize("seed", [7, pytest.param(8, marks=pytest.mark.slow)])
def test_many_saves_of_edits_adds_and_removes_score_as_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Small vector blocks and a small overlay bound, so that the saves share blocks,
    rebuild the blocks after an insert, grow the BM25 overlay and merge it, many times."""
    monkeypatch.setattr(rows, "BLOCK_ROWS", 4)
    monkeypatch.setattr(LexicalIndex, "OVERLAY_DOCS", 6)
    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    config = Config(bm25_index_name_keywords=seed == 8)
    rng = random.Random(seed)
    live = LiveIndex([root], config, MODELS)
    pool: list[Path] = []
    overlaid = merged = 0
    for number in range(36):
        if number % 4 == 3:
            touched = _shuffle_library(root, rng, number, pool)
        else:
            touched = rng.sample(sorted(root.glob("*/SKILL.md")), rng.randint(1, 2))
            for path in touched:
                _edit(path, rng, number)
        before = live.snapshot
        live._reindex(full=False, touched=[str(path) for path in touched])
        after = live.snapshot
        assert "parse" in after.timings_ms and after.lexical is not before.lexical
        overlaid += after.lexical._over is not None
        merged += after.lexical._over is None
        if number % 6 == 5 or number == 35:
            fresh = build_index([root], config, MODELS)
            _same(after, fresh, config)
            _every_score_equal(after, fresh)
    assert overlaid >= 10 and merged >= 2  # both representations were compared


def _held_bytes(snapshots: list[Index]) -> int:
    """Bytes of the arrays the snapshots hold, each buffer counted once however many
    snapshots share it: the vector blocks and every BM25 array."""
    owners: dict[int, int] = {}

    def add(array: object) -> None:
        if isinstance(array, np.ndarray):
            owner = array
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            owners[id(owner)] = owner.nbytes

    for index in snapshots:
        assert isinstance(index.vectors, rows.DenseRows)
        for block in index.vectors.blocks:
            add(block)
        lexical = index.lexical
        for value in vars(lexical).values():
            add(value)
        if lexical._over is not None:
            for value in lexical._over[1:4]:
                add(value)
        add(index.id_rank)
    return sum(owners.values())


def test_snapshots_after_saves_share_what_did_not_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 saves, three snapshots held at a time as the explorer holds them: the arrays
    they hold together stay within 25 % of one snapshot's (one owning its own matrix and
    postings: three times). Blocks of 24 rows make 600 skills as many blocks as 26,000
    make of the real size."""
    monkeypatch.setattr(rows, "BLOCK_ROWS", 24)
    root = generate_library(tmp_path / "skills", 600, seed=3)
    live = LiveIndex([root], Config(), MODELS)
    paths = sorted(root.glob("*/SKILL.md"))
    one = _held_bytes([live.snapshot])
    held: deque[Index] = deque([live.snapshot], maxlen=3)
    rng = random.Random(3)
    sizes = []
    for number in range(40):
        path = rng.choice(paths)
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text.replace("description: ", f"description: Saved edit {number} of pdf decks. ", 1),
            encoding="utf-8",
        )
        live._reindex(full=False, touched=[str(path)])
        held.append(live.snapshot)
        sizes.append(_held_bytes(list(held)))
    assert max(sizes) <= 1.25 * one, (one, sizes[0], sizes[-1])
    # From the first save with three snapshots held to the last: within 10 %.
    assert sizes[-1] <= 1.10 * sizes[1], (sizes[1], sizes[-1])
    assert live.snapshot.lexical._over is not None  # patched, not rebuilt
