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


def test_scores_of_another_decision_agree_with_the_lookup_by_id(bow_index, tmp_path) -> None:
    """`scores_of` reads another decision's skills by position when both libraries are in
    the same order (the explorer's deltas after a save), and by id when they are not; both
    give what `scores(ids)` gives, NaN for a skill the scoring decision does not have."""
    from explorer.engine.index.snapshot import build_index
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.inference.models import assemble_models
    from tests.conftest import LIBRARY, write_skill

    before = decide("merge two pdf files into one", bow_index, CONFIG).rows
    now = decide("merge the pdf reports", bow_index, CONFIG).rows
    by_position = before.scores_of(now)
    assert np.array_equal(by_position, before.scores(now.ids))
    assert sorted(by_position.tolist()) != sorted(now.column("score").tolist())  # another prompt
    assert [now.id_at(row) for row in range(len(now))] == list(now.ids)

    root = tmp_path / "grown"
    for name, description in {**LIBRARY, "aaa-first": "Convert audio files."}.items():
        write_skill(root, name, description)
    grown = build_index([root], Config(), assemble_models(BowEmbedder()))
    assert grown.ids != bow_index.ids  # another order: one more skill, sorted first
    later = decide("merge two pdf files into one", grown, CONFIG).rows
    by_id = before.scores_of(later)
    assert np.array_equal(by_id, before.scores(later.ids), equal_nan=True)
    assert np.isnan(by_id[later.index_of("aaa-first")])
    assert by_id[later.index_of("pdf")] == before.by_id("pdf").score


def test_a_rows_matches_are_made_for_that_row_alone(tmp_path) -> None:
    """Each row's matches are found for its own skill when the row is made (`Hits.at`):
    keywords by token (a name's word or a listed keyword), then phrases; none for a skill
    without a hit. `by_position` lists the same for every skill with a hit."""
    from explorer.engine.index.snapshot import build_index
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.inference.models import assemble_models
    from tests.conftest import LIBRARY, write_skill

    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    write_skill(root, "pdf-tools", 'PDF tools. Triggers: "merge the pdf".', keywords="pdf, merge")
    index = build_index([root], Config(), assemble_models(BowEmbedder()))
    decision = decide("pdf and xlsx: merge the pdf, then a spreadsheet", index, CONFIG)
    labels = {row.id: [f"{m.label()} {m.added()}" for m in row.matches] for row in decision.rows}
    assert labels == {
        "pdf-tools": [
            'kw: "merge" (keyword) +0.15',
            'kw: "pdf" (name) +0.15',
            'ph: "merge pdf" +0.20',
        ],
        "pdf": ['kw: "pdf" (name) +0.15'],
        "xlsx": ['kw: "xlsx" (name) +0.15'],
        "changelog-generator": [],
        "docker-helper": [],
        "git-commit-writer": [],
    }
    everything = decision.hits.by_position(index.ids)
    assert {index.ids[position] for position in everything} == {"pdf-tools", "pdf", "xlsx"}
    assert everything[index.positions["pdf-tools"]] == decision.row("pdf-tools").matches
