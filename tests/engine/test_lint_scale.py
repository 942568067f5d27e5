"""Lint's near-duplicate pass at scale: blocked, and the same pairs as all pairs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from explorer.bench.synthetic import synthetic_descriptions
from explorer.engine.author import lint as lint_module
from explorer.engine.author.lint import NEAR_DUPLICATE_BM25, near_duplicate_pairs
from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Discovery, parse_skill
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models


def _library(tmp_path, size: int) -> Index:  # type: ignore[no-untyped-def]
    ids, descriptions = synthetic_descriptions(size - 60, seed=3)
    rng = random.Random(3)
    for number in range(60):  # planted near-duplicates: a copy with a word or two changed
        source = rng.randrange(len(descriptions))
        words = descriptions[source].split()
        words[rng.randrange(len(words))] = rng.choice(["quickly", "safely", "locally"])
        ids.append(f"copy-{number}")
        descriptions.append(" ".join(words))
    skills = []
    for skill_id, description in zip(ids, descriptions, strict=True):
        text = f'---\nname: {skill_id}\ndescription: "{description}"\n---\n# {skill_id}\n'
        skill = parse_skill(str(tmp_path / skill_id / "SKILL.md"), text.encode())
        assert not isinstance(skill, lint_module.Problem), skill
        skills.append(skill)
    return index_skills(
        Discovery(tuple(skills), ()), [str(tmp_path)], Config(), assemble_models(BowEmbedder())
    )


def _all_pairs(index: Index, threshold: float) -> set[tuple[int, int]]:
    """The O(n^2) reference: full cross-score and cosine matrices."""
    n = len(index)
    cross = np.stack([index.lexical.score(s.description).normalised for s in index.skills])
    assert index.vectors is not None
    cosine = index.vectors @ index.vectors.T
    both = np.minimum(cross, cross.T)
    hits = (cosine >= threshold) | (both >= NEAR_DUPLICATE_BM25)
    return {(i, j) for i, j in zip(*np.nonzero(np.triu(hits, 1)), strict=True) if i < j < n}


@pytest.mark.parametrize("size", [600, pytest.param(2300, marks=pytest.mark.slow)])
def test_blocked_near_duplicates_match_all_pairs(tmp_path, monkeypatch, size: int) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lint_module, "BLOCK_ROWS", 97)  # blocks that do not divide n
    index = _library(tmp_path, size)
    threshold = 0.85
    expected = _all_pairs(index, threshold)
    found = {(i, j) for i, j, *_ in near_duplicate_pairs(index, threshold=threshold)}
    assert len(expected) >= 50  # the planted copies, at least
    recall = len(found & expected) / len(expected)
    assert recall >= 0.99, (recall, sorted(expected - found)[:5])
    assert len(found - expected) <= 0.01 * len(expected)


@pytest.mark.slow
def test_capped_findings_still_flag_every_skill_with_a_near_duplicate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The per-skill cap drops messages, never skills: every skill in an all-pairs pair has
    a near-duplicate warning, and none has more than the cap (1 here) + one summary."""
    index = _library(tmp_path, 600)
    expected = _all_pairs(index, 0.85)
    in_pairs = {index.skills[k].path for pair in expected for k in pair}
    findings = lint_module.near_duplicate_findings(index, threshold=0.85, shown=1)
    warned = {f.path for f in findings if f.severity == lint_module.WARNING}
    assert len(in_pairs & warned) >= 0.99 * len(in_pairs)
    assert len(warned - in_pairs) <= 0.01 * len(in_pairs)
    per_path: dict[str, int] = {}
    for finding in findings:
        per_path[finding.path] = per_path.get(finding.path, 0) + 1
    assert max(per_path.values()) == 2  # some skill has more than one partner here
