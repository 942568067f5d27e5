"""The table's sort (explorer/tui/widgets/skills_table.py), done in numpy so a sorted table of
26,000 skills does not hold a keystroke up: the same order as Python's sort by (value, id)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from explorer.tui.widgets.skills_table import alphabetical_ranks, sort_view

# Few distinct values, so ties (which the ids break) and NaN (no such number) are common.
VALUES = st.sampled_from([0.5, 0.25, 0.0, -1.0, math.nan])


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[float], list[int]]:
    ids = draw(st.lists(st.text("abcAB-_", min_size=1, max_size=4), unique=True, max_size=30))
    values = draw(st.lists(VALUES, min_size=len(ids), max_size=len(ids)))
    view = draw(st.permutations(range(len(ids))))
    shown = draw(st.integers(0, len(ids)))  # a filter keeps some rows
    return ids, values, list(view[:shown])


@given(tables(), st.booleans())
def test_by_a_number_best_first_then_by_id(
    table: tuple[list[str], list[float], list[int]], reverse: bool
) -> None:
    ids, values, view = table

    def key(row: int) -> tuple[float, str]:
        value = -math.inf if math.isnan(values[row]) else values[row]
        return -value, ids[row]

    expected = sorted(view, key=key, reverse=reverse)
    got = sort_view(
        view, alphabetical_ranks(ids), np.array(values, dtype=np.float64), reverse=reverse
    )
    assert got == expected


@given(tables(), st.booleans())
def test_by_id(table: tuple[list[str], list[float], list[int]], reverse: bool) -> None:
    ids, _, view = table
    expected = sorted(view, key=lambda row: ids[row], reverse=reverse)
    assert sort_view(view, alphabetical_ranks(ids), None, reverse=reverse) == expected
