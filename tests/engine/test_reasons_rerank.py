"""engine/route/reasons.py for the rerank stage and the lexical fast path: the sentence of each
verdict those stages give, with the numbers read off the decision's gates. Decided for
real, with the tiny cross-encoder built in tests/engine/test_rerank.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.route.decision import GateName, Stage, Verdict
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import LOGIT, reason
from tests.engine.test_rerank import _encoder, _index

PROMPT = "merge pdf files and extract tables"
RERANKED = Config(preset="reference", recall_floor=0.1, min_similarity=0.2)


def _decide(tmp_path: Path, config: Config, prompt: str = PROMPT, **encoder: object):
    index = _index(tmp_path, _encoder(tmp_path / "m", **encoder), config)
    decision = decide(prompt, index, config)
    assert decision.stage is Stage.RERANK
    return decision


def test_under_the_agreement_floor(tmp_path: Path) -> None:
    decision = _decide(tmp_path, RERANKED.replace(min_similarity=5.0))
    floor = float(decision.gate(GateName.AGREEMENT_FLOOR).thresholds["floor"])
    for row in decision.rows:
        assert row.verdict is Verdict.AGREEMENT_FLOOR
        why = reason(decision, row)
        assert why.text == f"{row.score:.3f} < agreement floor {floor:.3f}"
        assert why.missing == pytest.approx(floor - row.score)


def test_under_rerank_min_says_the_logit(tmp_path: Path) -> None:
    decision = _decide(tmp_path, RERANKED.replace(rerank_min=50.0), "merge pdf files")
    rows = [row for row in decision.rows if row.verdict is Verdict.RERANK_MIN]
    assert rows
    for row in rows:
        why = reason(decision, row)
        assert row.rerank is not None
        assert why.text == f"logit {row.rerank:.2f} < rerank_min 50.00"
        assert why.missing == pytest.approx(50.0 - row.rerank)
        assert why.delta_text().endswith(LOGIT)


def test_under_the_rerank_margin_names_the_best_logit(tmp_path: Path) -> None:
    decision = _decide(tmp_path, RERANKED.replace(max_skills=3), token_bias={"invoices": 12.0})
    assert decision.injected_ids == ("invoices",)
    row = decision.row("pdf")
    assert row.verdict is Verdict.RERANK_MARGIN and row.rerank is not None
    best = float(decision.gate(GateName.RERANK_MARGIN).inputs["best"])
    margin = float(decision.gate(GateName.RERANK_MARGIN).thresholds["rerank_margin"])
    why = reason(decision, row)
    cutoff = best - margin
    assert why.text == (
        f"logit {row.rerank:.2f} < cut-off {cutoff:.2f} = best {best:.2f} - {margin:.2f}"
    )
    assert why.missing == pytest.approx(cutoff - row.rerank)


def test_not_among_the_reranked_names_where_the_top_k_end(tmp_path: Path) -> None:
    decision = _decide(tmp_path, RERANKED.replace(rerank_top_k=1))
    (sent,) = decision.injected_ids
    bar = decision.row(sent).score
    left = [row for row in decision.rows if row.verdict is Verdict.RERANK_TOP_K]
    assert len(left) == 2
    for row in left:
        why = reason(decision, row)
        assert why.text == (
            f"{row.score:.3f} < {bar:.3f}, where the top 1 by hybrid score end (rerank_top_k)"
        )
        assert why.missing == pytest.approx(bar - row.score)


def test_the_lexical_fast_path_names_its_winner(tmp_path: Path) -> None:
    config = Config(min_similarity=0.2, lexical_min=1.0, lexical_margin=0.1)
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    decision = decide("pdf invoices totals csv", index, config)
    assert decision.stage is Stage.LEXICAL
    (winner,) = decision.injected_ids
    top = float(decision.gate(GateName.LEXICAL_DOMINANCE).inputs["top_bm25"])
    others = [row for row in decision.rows if row.verdict is Verdict.LEXICAL_DOMINANCE]
    assert others
    for row in others:
        assert reason(decision, row).text == (
            f"bm25 {row.bm25:.2f} < {top:.2f}: lexical fast path took {winner}"
        )
        assert reason(decision, row).column == "bm25"  # the column the table keeps whole
