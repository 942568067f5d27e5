"""The leave-library-out report's threshold sweep, on a synthetic set of routed prompts."""

from __future__ import annotations

import numpy as np

from explorer.engine.route.relevance import FEATURES
from explorer.training.relevance import (
    Sample,
    fold_models,
    leave_library_out,
    route,
    threshold_rows,
    threshold_sweep,
)

COSINE = FEATURES.index("cosine")


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
    sweep = threshold_sweep(samples, lambda line: None, (0.0, 0.3, 0.6, 1.0))
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
    plain = leave_library_out(samples, lambda line: None)
    assert set(plain) == set(range(len(samples)))
    for fold, model in fold_models(samples, lambda line: None):
        assert model.name == f"without {fold}"
        for position, sample in enumerate(samples):
            if sample.fold == fold:
                assert plain[position] == route(model, sample)
