"""The budget checks of the multi-library sweep, prepared once per sweep (multical.Tally),
decide exactly what the per-point formula decides, and the report is the one the sweep
gave before they were: tests/data/multical-small.json was written by the code that summed
the whole grid on every check (the parent of the commit that added it), on
test_multical's libraries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.qa.evaluate import HEADLINE_FIELDS, LIBRARY_FIELDS, Rates, evaluate
from explorer.engine.qa.multical import Budget, Tally, calibrate_libraries
from explorer.engine.qa.quality import by_library
from tests.engine.test_multical import CONFIG, GRID, libraries  # noqa: F401 (fixture)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "multical-small.json"
BASELINE = Path(__file__).resolve().parents[2] / "benchmarks" / "quality_baseline.json"


def _naive(budget: Budget, fis, near_fis, plain, near) -> np.ndarray:
    """The rule as the docstring states it, computed from scratch at every point."""
    if budget.scope == "library":
        ok_plain = fis <= budget.negatives * plain + 1e-9
        ok_near = near_fis <= budget.near_misses * near + 1e-9
        return (ok_plain & ok_near).all(axis=-1)
    ok_plain = fis.sum(axis=-1) <= budget.negatives * plain.sum() + 1e-9
    ok_near = near_fis.sum(axis=-1) <= budget.near_misses * near.sum() + 1e-9
    return ok_plain & ok_near


@pytest.mark.parametrize("scope", ["pooled", "library"])
def test_prepared_tally_decides_as_the_formula(scope: str) -> None:
    rng = np.random.default_rng(7)
    shape = (3, 4, 5, 6)
    plain = np.array([20, 0, 7, 13, 40, 1])  # a library with no plain negative
    near = np.array([15, 3, 0, 9, 30, 2])
    fis = rng.binomial(plain, 0.04, size=shape).astype(np.int32)
    near_fis = rng.binomial(near, 0.2, size=shape).astype(np.int32)
    tally = Tally.of(fis, near_fis, plain, near, scope)
    mixed = 0
    for negatives in (0.0, 0.05, 0.1, 0.3, 1.0):
        for near_misses in (0.0, 0.3, 0.45, 1.0):
            budget = Budget(negatives, near_misses, scope)
            expected = _naive(budget, fis, near_fis, plain, near)
            mixed += 0 < expected.sum() < expected.size
            assert np.array_equal(budget.within(fis, near_fis, plain, near), expected)
            prepared = budget.plain_ok(tally) & budget.near_ok(tally)
            assert np.array_equal(prepared, expected)
    assert mixed >= 3  # the limits cut through the points, not around them


@pytest.mark.parametrize("scope", ["pooled", "library"])
def test_the_calibration_report_is_the_one_before(libraries, scope: str) -> None:  # noqa: F811
    report = calibrate_libraries(libraries, CONFIG, grid=GRID, budget=Budget(scope=scope))
    got = report.to_dict()
    got.pop("seconds")
    assert json.loads(json.dumps(got)) == json.loads(GOLDEN.read_text(encoding="utf-8"))[scope]


def test_one_rates_type_writes_each_consumers_fields(libraries) -> None:  # noqa: F811
    cases, index = libraries[0]
    report = evaluate(cases.train, index, CONFIG)
    assert tuple(report.to_dict()["metrics"])[: len(HEADLINE_FIELDS)] == HEADLINE_FIELDS
    rates = Rates.from_report(report)
    assert rates.headline() == {name: getattr(report.rates, name) for name in HEADLINE_FIELDS}
    assert (rates.top1, rates.recall_at_k) == (report.top1, report.recall_at_k)
    assert rates.near_misses == sum(case.near_miss for case in cases.train)
    row = by_library(libraries, CONFIG, ("train",))[0].to_dict()
    committed = json.loads(BASELINE.read_text(encoding="utf-8"))["libraries"][0]
    assert list(row) == list(committed)  # the committed baseline's shape
    assert tuple(rates.by_library()) == LIBRARY_FIELDS
