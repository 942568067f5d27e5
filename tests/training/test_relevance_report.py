"""The leave-library-out report's threshold sweep, on a synthetic set of routed prompts."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from explorer.engine.route.relevance import FEATURES, RelevanceModel
from explorer.training import relevance
from explorer.training.relevance import (
    Learner,
    Outcome,
    Sample,
    _out_of_fold,
    choose_thresholds,
    fold_models,
    leave_library_out,
    route,
    summary_rows,
    target_rows,
    threshold_rows,
    threshold_sweep,
    train_model,
)

COSINE = FEATURES.index("cosine")


@pytest.fixture
def few_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 trees on 16 bins a feature instead of 200 on 255: what these tests check holds
    for any number, in a fraction of the time (weighted binning costs a percentile a bin)."""
    monkeypatch.setitem(relevance.TREE_SETTINGS, "max_iter", 20)
    monkeypatch.setitem(relevance.TREE_SETTINGS, "max_bins", 16)


def _samples() -> list[Sample]:
    """Three libraries; in each, the right skill's cosine leads by a margin that varies, and
    a third of the prompts are served by no skill (every cosine low)."""
    rng = np.random.default_rng(7)
    samples = []
    for library in ("a", "b", "c"):
        skills = tuple(f"{library}-{n}" for n in range(4))
        for number in range(60):
            matrix = rng.normal(0.0, 0.05, (4, len(FEATURES)))
            matrix[:, COSINE] = rng.uniform(0.0, 0.3, 4)
            served = number % 3 != 0
            if served:
                matrix[number % 4, COSINE] += rng.uniform(0.0, 0.6)
            samples.append(
                Sample(
                    library=library,
                    fold=library,
                    size=20,
                    kind="direct" if served else "negative",
                    prompt=f"prompt {number}",
                    expect=frozenset({skills[number % 4]}) if served else frozenset(),
                    reject=frozenset(),
                    candidates=skills,
                    matrix=matrix,
                )
            )
    return samples


def test_a_pinned_threshold_trades_recall_for_false_injections() -> None:
    samples = _samples()
    models = fold_models(samples, lambda line: None, Learner.CHOICE)
    sweep = threshold_sweep(samples, models, (0.0, 0.3, 0.6, 1.0))
    assert set(sweep) == {0.0, 0.3, 0.6, 1.0}
    injected = {
        bar: sum(bool(o.injected) for o in routed.values()) for bar, routed in sweep.items()
    }
    assert injected[0.0] == len(samples)  # every prompt clears a bar of 0
    assert injected[1.0] == 0  # no choice reaches p = 1
    assert injected[0.0] > injected[0.3] > injected[0.6] > 0
    rows = threshold_rows(samples, sweep, [("all", lambda sample: True)])
    assert rows[2].startswith("| 0.00 | ") and rows[-1].startswith("| 1.00 | 0.000 (0/")


def test_each_fold_is_routed_by_a_model_that_never_saw_it() -> None:
    """leave_library_out routes a fold's prompts by the model fitted without that fold."""
    samples = _samples()
    models = fold_models(samples, lambda line: None, Learner.CHOICE)
    plain = leave_library_out(samples, models)
    assert set(plain) == set(range(len(samples)))
    for fold, model in models:
        assert model.name == f"without {fold}"
        for position, sample in enumerate(samples):
            if sample.fold == fold:
                assert plain[position] == route(model, sample)


@pytest.mark.slow  # fits boosters; tests/engine/test_relevance.py holds the packaged model's trees
@pytest.mark.usefixtures("few_trees")
def test_the_fitted_trees_are_the_booster_s_own_log_odds_and_monotone() -> None:
    """export_trees reproduces scikit-learn's log-odds through the engine's reader, and
    more cosine never lowers a candidate's score (MONOTONE)."""
    samples = _samples()
    model = train_model(samples, "trees", Learner.TREES)
    assert model.trees is not None and 0.0 < model.threshold < 1.0
    read = RelevanceModel.from_dict(json.loads(json.dumps(model.to_dict())))
    rows = np.vstack([sample.matrix for sample in samples])
    assert np.allclose(read.log_odds(rows), model.log_odds(rows))
    grid = np.repeat(rows[:50], 21, axis=0)
    grid[:, COSINE] = np.tile(np.linspace(-0.2, 1.2, 21), 50)
    scores = read.log_odds(grid).reshape(50, 21)
    assert (np.diff(scores, axis=1) >= -1e-12).all()
    assert (scores[:, -1] > scores[:, 0]).all()  # and it does count


@pytest.mark.slow  # fits boosters; the fold tests above hold leave-library-out without fitting
@pytest.mark.usefixtures("few_trees")
def test_a_model_s_thresholds_come_from_prompts_it_was_not_fitted_on() -> None:
    """With folds to leave out, the trees' thresholds are chosen on out-of-fold scores:
    each fold's prompts judged by a model fitted without that fold."""
    samples = _samples()
    judges = _out_of_fold(samples, "x", Learner.TREES)
    by_fold: dict[str, set[int]] = {}
    for sample, judge in zip(samples, judges, strict=True):
        by_fold.setdefault(sample.fold, set()).add(id(judge))
    assert all(len(ids) == 1 for ids in by_fold.values())
    assert len(set.union(*by_fold.values())) == 3  # a judge of its own for each fold
    assert (
        train_model(samples, "x", Learner.TREES).threshold == choose_thresholds(judges, samples)[0]
    )


def test_each_library_size_tier_gets_the_thresholds_of_its_own_prompts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Large libraries' prompts that no skill serves meet more near competitors (here: a
    higher best cosine), so the FI budget needs a higher bar there than in small ones; a
    tier with too few such prompts keeps the pooled bar."""
    samples = _samples()
    for sample in samples:
        if sample.library == "c":  # a large library, its negatives closer to some skill
            sample.size = 200
            if not sample.expect:
                sample.matrix[0, COSINE] += 0.35
    monkeypatch.setattr(relevance, "SIZE_TIERS", (50, None))
    monkeypatch.setattr(relevance, "MIN_TIER_NEGATIVES", 20)  # each library has 20
    model = train_model(samples, "x", Learner.CHOICE)
    small = [s for s in samples if s.size <= 50]
    large = [s for s in samples if s.size > 50]
    assert model.size_tiers[0].max_skills == 50 and model.size_tiers[-1].max_skills is None
    assert model.thresholds_for(20) == choose_thresholds([model] * len(small), small)
    assert model.thresholds_for(200) == choose_thresholds([model] * len(large), large)
    assert model.thresholds_for(200)[0] > model.thresholds_for(20)[0]
    # Each fold is routed at its own size's bar.
    position = next(i for i, s in enumerate(samples) if s.size == 200)
    pinned = route(model, samples[position], *model.thresholds_for(200))
    assert route(model, samples[position]) == pinned
    monkeypatch.setattr(relevance, "MIN_TIER_NEGATIVES", 21)
    pooled = train_model(samples, "x", Learner.CHOICE)
    assert pooled.thresholds_for(200) == (pooled.threshold, pooled.second_threshold)
    assert pooled.thresholds_for(20) == choose_thresholds([pooled] * len(small), small)


def test_an_author_s_own_skill_on_their_should_not_trigger_prompts_has_a_budget_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Authors write should-not-trigger prompts as near-misses of their own skill, so
    that skill's p on them is high; the threshold rises until at most AUTHOR_BUDGET of
    them get it, and another skill taking one costs nothing."""
    samples = _samples()
    rng = np.random.default_rng(11)
    for number in range(40):
        matrix = rng.normal(0.0, 0.05, (4, len(FEATURES)))
        matrix[:, COSINE] = rng.uniform(0.0, 0.3, 4)
        matrix[0, COSINE] += rng.uniform(0.2, 0.6)  # near the author's own skill, a-0
        samples.append(
            Sample(
                library="a",
                fold="a",
                size=20,
                kind="author-negative",
                prompt=f"not quite {number}",
                expect=frozenset(),
                reject=frozenset({"a-0"}),
                candidates=tuple(f"a-{n}" for n in range(4)),
                matrix=matrix,
            )
        )
    model = train_model(samples, "x", Learner.CHOICE)
    judges = [model] * len(samples)
    rejected = [s for s in samples if s.reject]

    def fired(threshold: float) -> float:
        hits = [route(model, s, threshold, 1.0).injected[:1] == ("a-0",) for s in rejected]
        return sum(hits) / len(hits)

    monkeypatch.setattr(relevance, "AUTHOR_BUDGET", 1.0)
    unbounded, _ = choose_thresholds(judges, samples)
    monkeypatch.setattr(relevance, "AUTHOR_BUDGET", 0.10)
    bounded, _ = choose_thresholds(judges, samples)
    assert fired(unbounded) > 0.10 >= fired(bounded) and bounded > unbounded
    assert fired(round(bounded - 0.01, 2)) > 0.10  # the lowest such threshold
    # The same prompts owned by no skill of the candidates: nothing of theirs to fire.
    for sample in rejected:
        sample.reject = frozenset({"elsewhere"})
    assert choose_thresholds(judges, samples)[0] == unbounded


def test_the_summary_counts_an_author_s_skill_firing_on_their_should_not_trigger_prompts() -> None:
    """The headline table's third column: the figure an author running their own evals sees."""
    samples = _samples()[1:3]  # two served prompts; the second made an author negative
    samples[1].expect, samples[1].reject = frozenset(), frozenset({"a-0"})
    samples[1].library = "wild-trigger-evals"
    routed = {0: Outcome(("a-1",)), 1: Outcome(("a-0",))}
    rows = summary_rows(samples, routed, None)
    assert rows[0].endswith("| an author's skill on their should-not-trigger prompts |")
    assert rows[2].endswith("| 100.0 % (1 of 1) |")  # all held-out prompts
    routed[1] = Outcome(("a-2",))  # another skill may take it
    assert summary_rows(samples, routed, None)[2].endswith("| 0.0 % (0 of 1) |")


def test_the_targets_table_counts_each_group_the_targets_name_and_no_other() -> None:
    """The benchmark bands leave out the wild corpus's small libraries; the hindsight column
    takes the pinned bar with the most recall whose false-inject meets the target."""
    served, unserved = _samples()[1], _samples()[0]
    right = next(iter(served.expect))

    def copy(sample: Sample, library: str, size: int) -> Sample:
        return dataclasses.replace(sample, library=library, size=size)

    samples = [
        copy(served, "a", 20),
        copy(unserved, "a", 20),
        copy(served, "wild-trigger-evals (small)", 20),  # never in a benchmark band
        copy(served, "wild-trigger-evals", 188),
        *[copy(unserved, "wild-trigger-evals", 188) for _ in range(10)],
    ]
    hit, nothing, wrong = Outcome((right,)), Outcome(()), Outcome(("elsewhere",))
    shipped = {0: hit, 1: nothing, 2: nothing, 3: nothing, **{k: nothing for k in range(4, 14)}}
    # 0.3: the wild prompt found at one false injection in ten (within 0.10); 0.2: two.
    low = {**shipped, 3: hit, 4: wrong}
    lower = {**low, 5: wrong}
    rows = {
        row.split(" | ")[0][2:]: row
        for row in target_rows(samples, shipped, {0.2: lower, 0.3: low})
    }
    assert rows["benchmark libraries, 11–50"] == (  # both bars alike: the higher one
        "| benchmark libraries, 11–50 | 0.90 at ≤ 0.05 | 1.000 | 0.000 | yes "
        "| 0.30 | 1.000 | 0.000 |"
    )
    assert "benchmark libraries, ≤ 10" not in rows  # no prompts, no row
    assert rows["the wild corpus as one library"] == (
        "| the wild corpus as one library | 0.75 at ≤ 0.10 | 0.000 | 0.000 | no "
        "| 0.30 | 1.000 | 0.100 |"
    )
