"""The training's small libraries: several draws, the first the same whatever their number,
and all of them together weighing in the fit what one would."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from explorer.engine.route.relevance import FEATURES
from explorer.training import relevance
from explorer.training.relevance import (
    SEED,
    SMALL_SUFFIX,
    WILD,
    WILD_FOLDS,
    WILD_WHOLE,
    Sample,
    Unit,
    plan_units,
    row_weights,
)

needs_wild = pytest.mark.skipif(not WILD.is_dir(), reason="no wild corpus in this checkout")


def _plans(monkeypatch: pytest.MonkeyPatch, draws: int) -> list[Unit]:
    monkeypatch.setattr(relevance, "SMALL_DRAWS", draws)
    return plan_units(WILD, random.Random(SEED))


@needs_wild
def test_more_draws_add_small_libraries_after_the_first_draw_and_leave_it_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one = _plans(monkeypatch, 1)
    three = _plans(monkeypatch, 3)
    assert three[: len(one)] == one
    later = [plan for unit in three[len(one) :] for plan in unit.plans]
    assert {plan.draw for plan in later} == {1, 2}
    assert all(plan.library.endswith("(small)") and plan.keep for plan in later)
    assert {plan.draw for unit in one for plan in unit.plans} == {0}


@needs_wild
def test_each_draw_samples_every_fold_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    plans = [plan for unit in _plans(monkeypatch, 3) for plan in unit.plans if plan.keep]
    small = [plan for plan in plans if plan.library.endswith("(small)")]
    per_draw = Counter((plan.library, plan.draw) for plan in small)
    libraries = {plan.library for plan in small}
    # Every library's small libraries are drawn in every draw, as many each time.
    assert all(
        per_draw[library, 0] == per_draw[library, d] for library in libraries for d in (1, 2)
    )
    kept = {d: {plan.keep for plan in small if plan.draw == d} for d in range(3)}
    assert not kept[0] & kept[1] and not kept[1] & kept[2]


@needs_wild
def test_a_wild_units_prompts_are_all_of_the_fold_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    units = _plans(monkeypatch, 2)
    wild = [unit for unit in units if unit.library == WILD_WHOLE]
    assert all(unit.wild_fold is None for unit in units if unit not in wild)
    assert {unit.wild_fold for unit in wild} == {f"wild-{n}" for n in range(WILD_FOLDS)}
    for unit in wild:
        # A fold's own reranker (FoldRerankers) never saw any prompt the unit routes.
        folds = {labelled.fold for plan in unit.plans for labelled in plan.prompts}
        assert folds == {unit.wild_fold}
    whole = [unit for unit in wild if unit.plans[0].keep is None]
    assert len(whole) == WILD_FOLDS  # the corpus whole, once a fold, among all its skills


def test_the_draws_together_weigh_what_one_draw_would_in_the_fit() -> None:
    matrix = np.zeros((4, len(FEATURES)))

    def sample(library: str, draw: int) -> Sample:
        return Sample(
            library, "f", 10, "direct", "p", frozenset(), frozenset(), ("a",) * 4, matrix, draw=draw
        )

    whole = [sample("lib", 0)]
    weights = row_weights(whole + [sample(f"lib{SMALL_SUFFIX}", draw) for draw in range(3)])
    # Each prompt's rows together, and the three draws' prompts together, weigh as the
    # whole library's one prompt; the weights average 1 a prompt.
    assert weights[:4].sum() == pytest.approx(weights[4:].sum())
    assert weights[4:8].sum() == pytest.approx(weights[8:12].sum())
    assert weights.sum() == pytest.approx(4.0)
