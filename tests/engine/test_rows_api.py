"""Decision.rows, the lazy sequence (explorer/engine/route/decision.py): what the explorer's
table, the evaluator and the reasons read, checked against the rows made one by one."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.route.pipeline import decide

CONFIG = Config(min_similarity=0.2, preset="reference", max_skills=2)


def test_slices_iteration_and_equality_agree(bow_index) -> None:
    decision = decide("merge two pdf files into one", bow_index, CONFIG)
    rows = decision.rows
    made = [rows[i] for i in range(len(rows))]
    assert list(rows) == made and rows == made and rows == tuple(made)
    assert rows[1:3] == tuple(made[1:3])
    assert rows != made[:-1]  # another length
    assert rows != "pdf"  # a string is not a sequence of rows
    assert (rows == 3) is False  # not comparable: NotImplemented, then identity


def test_columns_are_the_rows_fields_in_row_order(bow_index) -> None:
    decision = decide("merge two pdf files into one", bow_index, CONFIG)
    rows = list(decision.rows)
    assert decision.rows.column("rank").tolist() == [row.rank for row in rows]
    assert decision.rows.column("score").tolist() == pytest.approx([row.score for row in rows])
    reranked = decision.rows.column("rerank")  # no reranker: NaN everywhere
    assert len(reranked) == len(rows) and all(math.isnan(value) for value in reranked)
    with pytest.raises(KeyError):
        decision.rows.column("no_such_field")
    scores = decision.rows.scores(["pdf", "not-a-skill"])
    assert scores[0] == pytest.approx(decision.row("pdf").score) and np.isnan(scores[1])


def test_rows_by_id_is_a_mapping_made_on_lookup(bow_index) -> None:
    decision = decide("merge two pdf files into one", bow_index, CONFIG)
    by_id = decision.rows.mapping()
    assert len(by_id) == len(decision.rows)
    assert set(by_id) == {row.id for row in decision.rows}
    assert by_id["pdf"] == decision.row("pdf")
    assert by_id.get("not-a-skill") is None and by_id.get("not-a-skill", 0) == 0
    assert decision.rows.verdicts() == {row.verdict for row in decision.rows}


def test_json_default_turns_numpy_and_tuples_into_json_and_refuses_the_rest() -> None:
    from explorer.engine.route.decision import json_default

    assert json_default(np.float32(0.5)) == 0.5 and isinstance(json_default(np.int64(3)), int)
    assert json_default(("a", "b")) == ["a", "b"] and json_default(frozenset({1})) == [1]
    with pytest.raises(TypeError, match="cannot serialise object"):
        json_default(object())


def test_whole_columns_equal_the_rows_made_one_by_one(bow_index) -> None:
    """`ids`, `scores` and the rerank column are read vectorised (the explorer reads them at
    every repaint); each must equal what the rows say, in row order, with a reranked few."""
    order = decide("merge two pdf files into one", bow_index, CONFIG).rows.order.tolist()
    decision = decide("merge two pdf files into one", bow_index, CONFIG)
    # Logits for three skills that are not in row order (the last, first and a middle one),
    # set before the rows are first read.
    decision._rerank = {order[-1]: -1.5, order[0]: 2.25, order[len(order) // 2]: 0.5}
    rows = list(decision.rows)
    assert decision.rows.ids == tuple(row.id for row in rows)
    logits = decision.rows.column("rerank")
    expected = [np.nan if row.rerank is None else row.rerank for row in rows]
    assert np.array_equal(logits, np.array(expected), equal_nan=True)
    assert sum(not math.isnan(value) for value in logits) == 3
    wanted = [rows[-1].id, "not-a-skill", rows[0].id]
    scores = decision.rows.scores(wanted)
    assert scores[0] == rows[-1].score and np.isnan(scores[1]) and scores[2] == rows[0].score
    assert decision.rows.scores([]).shape == (0,)


def test_a_decision_whose_rows_were_read_is_freed_without_the_collector(bow_index) -> None:
    """Reference counting alone frees a decision and its arrays: its rows keep what they
    are made of, not the decision. A cycle would wait for a full collection, which the
    explorer defers while background work runs. Rows kept alone still make rows."""
    decision = decide("merge two pdf files into one", bow_index, CONFIG)
    first = decision.rows[0]
    assert decision.row(first.id) is first and decision.rows.column("rerank").size
    kept = decision.rows.mapping()
    gone = weakref.ref(decision)
    gc.disable()
    try:
        del decision
        assert gone() is None
    finally:
        gc.enable()
    assert kept[first.id] == first and kept[first.id].matches == first.matches
