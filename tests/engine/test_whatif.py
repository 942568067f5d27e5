"""What-if for a description (explorer/engine/author/whatif.py): what the editor shows before a
save is what the explorer decides after it, and the live snapshot is never touched.

Real model (the packaged MiniLM), real files: a copy of sample_skills in a tmp dir.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.engine.author.rewrite import read_skill_text, save
from explorer.engine.author.whatif import standing, what_if, with_cases
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.models import Models
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.decision import Decision, Verdict
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS

CONFIG = Config(preset="reference", reranker="off")
SKILL = "productivity-helper"
PROMPT = "help me prioritise my to-do list for this week, i have way too much on my plate"
BETTER = (
    "Plans the week: turns a long to-do list into prioritised next actions. Use when the "
    "user has too much on their plate, needs to prioritise tasks, or wants a plan for today "
    "or this week."
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only for every test but the one that saves, which copies it again."""
    root = tmp_path_factory.mktemp("whatif") / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    return root


@pytest.fixture(scope="module")
def index(library: Path, minilm_models: Models, warm_cache_dir: Path) -> Index:
    return build_index([library], CONFIG, minilm_models, EmbeddingCache(warm_cache_dir))


def _answer(decision: Decision) -> dict[str, Any]:
    data = decision.to_dict()
    data.pop("timings_ms")
    data.pop("index_version")
    for row in data["skills"]:
        row.pop("path")
    return data


@pytest.mark.slow
def test_the_what_if_is_the_decision_after_saving(tmp_path: Path, minilm_models: Models) -> None:
    library = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, library)
    index = build_index([library], CONFIG, minilm_models)
    path = library / SKILL / "SKILL.md"
    original = read_skill_text(str(path))
    before = decide(PROMPT, index, CONFIG)
    result = what_if(index, CONFIG, SKILL, BETTER, PROMPT, original=original)
    assert result.edit.ok and result.decision is not None
    # The live snapshot is untouched: the same answer as before, same vectors.
    assert _answer(decide(PROMPT, index, CONFIG)) == _answer(before)
    assert index.skills[index.positions[SKILL]].description.startswith("Helps with various")
    save(result.edit)
    rebuilt = build_index([library], CONFIG, index.models)
    after = decide(PROMPT, rebuilt, CONFIG)
    assert _answer(result.decision) == _answer(after)
    assert result.patched is not None and rebuilt.vectors is not None
    assert np.allclose(result.patched.vectors, rebuilt.vectors, atol=1e-6)


def test_a_better_description_moves_the_skill_over_the_floor(index: Index, library: Path) -> None:
    original = read_skill_text(str(library / SKILL / "SKILL.md"))
    result = what_if(index, CONFIG, SKILL, BETTER, PROMPT, original=original)
    assert result.before is not None and result.after is not None
    assert result.before.verdict is Verdict.MIN_SIMILARITY
    assert result.before.missing is not None
    floor = result.before.hybrid + result.before.missing
    assert result.before.reason == f"{result.before.hybrid:.3f} < floor {floor:.3f}"
    assert result.after.verdict is Verdict.INJECT and result.after.missing is None
    assert result.after.cosine > result.before.cosine + 0.2
    assert result.after.bm25 > result.before.bm25
    # The unchanged description scores exactly as the snapshot does.
    same = what_if(
        index,
        CONFIG,
        SKILL,
        index.skills[index.positions[SKILL]].description,
        PROMPT,
        original=original,
    )
    assert same.after is not None and same.before is not None
    assert same.after.verdict == same.before.verdict
    assert same.after.cosine == pytest.approx(same.before.cosine, abs=1e-6)
    assert same.after.bm25 == pytest.approx(same.before.bm25)


@pytest.mark.slow
def test_the_cases_that_would_flip_are_named(index: Index, library: Path) -> None:
    cases = load_cases(library / "cases.toml").cases
    original = read_skill_text(str(library / SKILL / "SKILL.md"))
    result = with_cases(
        what_if(index, CONFIG, SKILL, BETTER, PROMPT, original=original), index, CONFIG, cases
    )
    assert result.comparison is not None
    fixed = {flip.prompt for flip in result.comparison.fixes}
    assert PROMPT in fixed
    assert all(SKILL in flip.injected_b for flip in result.comparison.fixes)
    # Unchanged description: nothing flips.
    same = with_cases(
        what_if(
            index,
            CONFIG,
            SKILL,
            index.skills[index.positions[SKILL]].description,
            PROMPT,
            original=original,
        ),
        index,
        CONFIG,
        cases,
        result.cases_before,
    )
    assert same.comparison is not None and same.comparison.flipped == ()


def test_the_cases_an_edit_cannot_reach_keep_their_result(index: Index, library: Path) -> None:
    """With the run before it, the edited library decides again only the cases the edit
    reaches (reach.py); the rest keep their result, and the report is the one routing
    every case gives."""
    from explorer.engine.qa.evaluate import evaluate

    cases = load_cases(library / "cases.toml").cases
    before = evaluate(cases, index, CONFIG)
    original = read_skill_text(str(library / SKILL / "SKILL.md"))
    result = what_if(
        index, CONFIG, SKILL, BETTER, PROMPT, original=original, cases=cases, cases_before=before
    )
    assert result.cases_after is not None and result.patched is not None
    kept = [a is b for a, b in zip(result.cases_after.results, before.results, strict=True)]
    assert 0 < sum(kept) < len(cases)  # some decided again, some kept
    every = evaluate(cases, result.patched, CONFIG)
    assert [r.injected for r in result.cases_after.results] == [r.injected for r in every.results]
    assert result.cases_after.rates == every.rates


def test_an_edit_that_cannot_be_saved_scores_nothing(index: Index, library: Path) -> None:
    original = read_skill_text(str(library / SKILL / "SKILL.md"))
    result = what_if(index, CONFIG, SKILL, "   ", PROMPT, original=original)
    assert result.after is None and result.decision is None
    assert result.edit.problem is not None and "empty" in result.edit.problem
    assert result.before is not None and result.before.skill_id == SKILL


def test_standing_reads_the_row_the_table_shows(index: Index) -> None:
    decision = decide("merge two pdf files", index, CONFIG)
    first = standing(decision, decision.rows.ids[0])
    assert decision.rows.made == 1  # one row made, not the library's
    assert first is not None and first.rank == 1
    assert standing(decision, "no-such-skill") is None
    with pytest.raises(KeyError):
        what_if(index, CONFIG, "no-such-skill", "x", "p", original="")


@pytest.mark.slow
def test_with_the_packaged_reranker_the_logit_is_previewed_and_diffed(tmp_path: Path) -> None:
    """The reranker reads the description too: its logit in the preview is the one the
    saved file gets, and the ranking diff carries its delta."""
    from explorer.engine.author.compare import ranking_diff
    from explorer.engine.inference.models import load_models

    config = Config(reranker="packaged", preset="reference")
    models = load_models(config)
    assert models.reranker is not None, models.status.reranker_note
    library = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, library)
    index = build_index([library], config, models)
    prompt = "write release notes from the last 20 commits"
    skill = "changelog-generator"
    path = library / skill / "SKILL.md"
    edited = "Writes release notes from the commits since the last tag, grouped by kind."
    before = decide(prompt, index, config)
    result = what_if(index, config, skill, edited, prompt, original=read_skill_text(str(path)))
    assert result.before is not None and result.after is not None and result.decision
    assert result.before.rerank is not None and result.after.rerank is not None
    assert result.after.rerank != pytest.approx(result.before.rerank)
    diff = ranking_diff(before, result.decision)
    entry = next(e for e in diff.entries if e.skill_id == skill)
    assert entry.rerank.delta == pytest.approx(result.after.rerank - result.before.rerank)
    save(result.edit)
    after = decide(prompt, build_index([library], config, models), config)
    assert _answer(result.decision) == _answer(after)


def test_an_edit_past_the_cross_encoders_window_says_its_logit_cannot_move(
    tmp_path: Path,
) -> None:
    """A sentence appended to a long description falls past the few dozen word pieces the
    cross-encoder reads beside the prompt: the logit holds, and the what-if says why."""
    from explorer.engine.inference.models import load_models

    config = Config(reranker="packaged", preset="reference")
    models = load_models(config)
    library = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, library)
    index = build_index([library], config, models)
    prompt, skill = "write release notes from the last 20 commits", "changelog-generator"
    original = read_skill_text(str(library / skill / "SKILL.md"))
    description = index.skills[index.positions[skill]].description
    appended = what_if(
        index, config, skill, description + " Also drafts tweets.", prompt, original=original
    )
    assert appended.unread_past is not None and appended.unread_past < len(description)
    assert appended.after is not None and appended.before is not None
    assert appended.after.rerank == pytest.approx(appended.before.rerank)
    from explorer.tui.whatif import scores_text  # the what-if screen says it

    shown = " ".join(scores_text(appended).plain.split())
    assert f"reads the first {appended.unread_past:,} characters" in shown
    assert "the edit starts past them, so its logit cannot move" in shown
    leading = what_if(
        index, config, skill, "Drafts tweets. " + description, prompt, original=original
    )
    assert leading.unread_past is None  # the start is read: its logit may move


class _CountedPairs:
    """A reranker that counts the pairs it scores, passing each to the real one."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.model_path = inner, inner.name, inner.model_path
        self.pairs = 0

    def score(self, query: str, documents: Any) -> np.ndarray:
        self.pairs += len(documents)
        result: np.ndarray = self.inner.score(query, documents)
        return result


@pytest.mark.slow  # the packaged cross-encoder, on every case an edit reaches
def test_a_memo_carries_reaches_and_logits_from_one_keystroke_to_the_next(
    library: Path, minilm_models: Models, warm_cache_dir: Path
) -> None:
    """The what-if screen's runs share a WhatIfMemo: the second edit scores only the
    pairs that hold the edited document, and decides every case as a run without it."""
    import dataclasses

    from explorer.engine.author.whatif import WhatIfMemo
    from explorer.engine.inference.models import load_models
    from explorer.engine.qa.evaluate import evaluate

    config = Config(reranker="packaged", preset="reference")
    packaged = load_models(config).reranker
    assert packaged is not None
    counted = _CountedPairs(packaged)
    models = dataclasses.replace(minilm_models, reranker=counted)
    index = build_index([library], config, models, EmbeddingCache(warm_cache_dir))
    cases = load_cases(library / "cases.toml").cases
    before = evaluate(cases, index, config)
    original = read_skill_text(str(library / SKILL / "SKILL.md"))
    memo = WhatIfMemo(index, config)

    def run(description: str, memo: WhatIfMemo | None) -> tuple[Any, int]:
        counted.pairs = 0
        result = what_if(
            index, config, SKILL, description, PROMPT, original=original, cases=cases,
            cases_before=before, memo=memo,
        )  # fmt: skip
        assert result.cases_after is not None
        return result, counted.pairs

    run(BETTER, memo)
    second, with_memo = run(f"{BETTER} Also for weekly reviews.", memo)
    alone, without = run(f"{BETTER} Also for weekly reviews.", None)
    outcomes = [
        [(r.injected, r.stage, r.passed) for r in result.cases_after.results]
        for result in (second, alone)
    ]
    assert outcomes[0] == outcomes[1] and second.comparison == alone.comparison
    assert second.decision is not None and alone.decision is not None
    assert _answer(second.decision) == _answer(alone.decision)
    assert 0 < with_memo < without / 3, (with_memo, without)
    # Without the explorer's run (a save's run still going), the memo runs the cases on
    # the unedited library once, for every keystroke after.
    counted.pairs = 0
    fresh = WhatIfMemo(index, config)
    first = what_if(
        index, config, SKILL, BETTER, PROMPT, original=original, cases=cases, memo=fresh
    )
    unedited_run = counted.pairs
    again = what_if(
        index, config, SKILL, f"{BETTER} Weekly.", PROMPT, original=original, cases=cases,
        memo=fresh,
    )  # fmt: skip
    assert first.cases_before is again.cases_before is fresh.before(cases, None)
    assert counted.pairs - unedited_run < unedited_run / 3
