"""The second check of numeric config values (explorer/engine/base/ranges.py): right type,
unusable value. The threshold editor and `lint` show these messages as they are."""

from __future__ import annotations

import math

import pytest

from explorer.engine.base.config import Config
from explorer.engine.base.ranges import RANGES, range_error


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("bm25_b", 5, "bm25_b = 5 is out of range: 0 to 1"),
        ("max_skills", 0, "max_skills = 0 is out of range: 1 to 100"),
        ("min_similarity", 2.5, "min_similarity = 2.5 is out of range: -1 to 2"),
        ("body_inject_min", -0.1, "body_inject_min = -0.1 is out of range: 0 to 1"),
        ("high_conf", -1, "high_conf = -1 is out of range: at least 0"),  # no upper bound
        ("recall_floor", -1.5, "recall_floor = -1.5 is out of range: at least -1"),
        ("rerank_min", math.nan, "rerank_min = nan is not a finite number"),
        ("score_margin", math.inf, "score_margin = inf is not a finite number"),
        ("context_depth", -1, "context_depth = -1 is out of range: 0 to 1000"),
    ],
)
def test_an_unusable_value_is_named_with_its_range(name: str, value: float, message: str) -> None:
    assert range_error(name, value) == message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("bm25_b", 0.0),  # both bounds are inclusive
        ("bm25_b", 1.0),
        ("max_skills", 100),
        ("rerank_min", -1e9),  # unbounded both ways
        ("min_similarity", None),  # None: follow the model's calibration
        ("max_skills", True),  # a bool is a type error, config.coerce says so
        ("bm25_b", "0.5"),  # a string likewise
        ("no_such_field", 1e9),  # a field without a range
    ],
)
def test_usable_or_unchecked_values_pass(name: str, value: object) -> None:
    assert range_error(name, value) is None


def test_at_most_for_a_field_with_only_an_upper_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RANGES, "rerank_min", (-math.inf, 5.0))
    assert range_error("rerank_min", 6) == "rerank_min = 6 is out of range: at most 5"


def test_every_number_of_the_config_has_a_range() -> None:
    """A numeric field left out took any value (`context_depth = -1` was accepted)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(Config)
    numeric = {
        field.name
        for field in dataclasses.fields(Config)
        if {int, float} & set(typing.get_args(hints[field.name]) or (hints[field.name],))
    }
    assert numeric - set(RANGES) == set()


def test_every_default_is_in_range() -> None:
    config = Config()
    for name in RANGES:
        assert range_error(name, getattr(config, name)) is None, name
