"""Incremental re-indexing (explorer/engine/incremental.py) answers as a full rebuild does."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.config import Config
from explorer.engine.embed import BowEmbedder
from explorer.engine.live import LiveIndex
from explorer.engine.models import assemble_models
from explorer.engine.pipeline import decide
from explorer.engine.snapshot import Index, build_index
from tests.conftest import SAMPLE_SKILLS

MODELS = assemble_models(BowEmbedder())
PROMPTS = (
    "merge two report.pdf files into one",
    "my pod keeps crashing and kubectl logs shows nothing",
    "write release notes from the last 20 commits",
    "bake sourdough bread with a starter",
    "clean the csv export and build a pivot table in budget.xlsx",
    "summarise this meeting transcript",
)
WORDS = "pdf merge sourdough bread docker image kubectl commit csv table notes meeting".split()


def _answer(index: Index, prompt: str, config: Config) -> dict:
    data = decide(prompt, index, config).to_dict()
    data.pop("timings_ms")
    data.pop("index_version")
    return data


def _same(live: Index, fresh: Index, config: Config) -> None:
    assert [s.id for s in live.skills] == [s.id for s in fresh.skills]
    assert live.lexical.avgdl == fresh.lexical.avgdl
    assert np.array_equal(live.lexical.dl, fresh.lexical.dl)
    for prompt in PROMPTS:
        assert _answer(live, prompt, config) == _answer(fresh, prompt, config), prompt
    assert live.vectors is not None and fresh.vectors is not None
    assert np.array_equal(live.vectors, fresh.vectors)
    assert {k: list(v) for k, v in live.keyword_postings.items()} == {
        k: list(v) for k, v in fresh.keyword_postings.items()
    }
    assert dict(live.phrase_table) == dict(fresh.phrase_table)
    assert {k: list(v) for k, v in live.ecosystem_postings.items()} == {
        k: list(v) for k, v in fresh.ecosystem_postings.items()
    }
    assert list(live.id_rank) == list(fresh.id_rank)


def _edit(path: Path, rng: random.Random, number: int) -> None:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
    name = path.parent.name if rng.random() < 0.8 else f"{path.parent.name}-v{number}"
    keywords = ", ".join(rng.sample(WORDS, rng.randint(0, 3)))
    phrase = f" Use for '{rng.choice(WORDS)} {rng.choice(WORDS)}'." if rng.random() < 0.5 else ""
    path.write_text(
        f'---\nname: {name}\ndescription: "Edit {number}: {words}.{phrase}"\n'
        f"keywords: [{keywords}]\n---\n# Body {number}\n",
        encoding="utf-8",
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edits_patch_to_exactly_a_full_rebuild(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    config = Config(bm25_index_name_keywords=seed == 2)
    rng = random.Random(seed)
    live = LiveIndex([root], config, MODELS)
    paths = sorted(root.glob("*/SKILL.md"))
    patched = compared = 0
    broken: list[Path] = []
    for number in range(12):
        touched = [*broken, *rng.sample(paths, rng.randint(1, 3))]
        broken = []
        for path in dict.fromkeys(touched):
            if rng.random() < 0.1:
                path.write_text("---\nname: [broken\n", encoding="utf-8")  # stale last-good
                broken.append(path)
            else:
                _edit(path, rng, number)
        before = live.snapshot
        live._reindex(full=False, touched=[str(path) for path in touched])
        after = live.snapshot
        patched += after.lexical is not before.lexical and "parse" in after.timings_ms
        if any(skill.stale for skill in after.skills):
            continue  # a broken file keeps its last good version: a fresh build rejects it
        _same(after, build_index([root], config, MODELS), config)
        compared += 1
    assert patched >= 4  # the patch path really ran
    assert compared >= 4


def test_a_patched_index_leaves_the_previous_snapshot_untouched(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    live = LiveIndex([root], Config(), MODELS)
    before = live.snapshot
    vectors = before.vectors.copy() if before.vectors is not None else None
    answer = _answer(before, PROMPTS[0], Config())
    _edit(root / "pdf" / "SKILL.md", random.Random(0), 99)
    live._reindex(full=False, touched=[str(root / "pdf" / "SKILL.md")])
    assert live.snapshot is not before
    assert _answer(before, PROMPTS[0], Config()) == answer
    assert vectors is not None and np.array_equal(before.vectors, vectors)
