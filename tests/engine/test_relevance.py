"""§9.12: the relevance model's features, its arithmetic, and decisions it must get right."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.config import Config
from explorer.engine.decision import GateName, Stage, Verdict
from explorer.engine.library import open_library
from explorer.engine.pipeline import decide
from explorer.engine.reasons import reason
from explorer.engine.relevance import (
    FEATURES,
    RELEVANCE_MODEL,
    CandidateEvidence,
    RelevanceModel,
    excluded_terms,
    features,
    load_relevance_model,
    negated_terms,
    script_tokens,
)
from tests.conftest import write_skill

APACHE = Path(__file__).resolve().parents[2] / "benchmarks" / "libraries" / "anthropic-apache"


def test_a_description_s_exclusions_are_its_own_words() -> None:
    terms = excluded_terms(
        "Review Python code for style. Not for security audits or penetration tests. "
        "Works with pytest."
    )
    assert {"security", "audit", "penetration"} <= terms
    assert "pytest" not in terms and "style" not in terms
    assert "linter" in excluded_terms("Formats code. Does not cover the linter config.")
    assert excluded_terms("Formats Python code with black.") == frozenset()


def test_a_prompt_s_negations_stop_at_the_clause() -> None:
    terms = negated_terms("review this function, without running the linter. Then deploy")
    assert "linter" in terms and "running" in terms
    assert "deploy" not in terms and "review" not in terms


def test_script_tokens_read_any_script() -> None:
    assert "海报" in script_tokens("帮我做一张海报")  # Chinese: character bigrams
    assert "포스터를" in script_tokens("재즈 포스터를 만들어줘") or "포스" in script_tokens(
        "재즈 포스터를 만들어줘"
    )
    assert "привет" in script_tokens("Привет, мир")  # spaced scripts: words, case-folded
    assert script_tokens("plain ascii words") == frozenset()


def _evidence(**overrides: object) -> CandidateEvidence:
    values: dict[str, object] = {
        "cosine": np.array([0.6, 0.3]),
        "cosine_rank": np.array([1, 2]),
        "cosine_mean": 0.2,
        "cosine_std": 0.1,
        "bm25_norm": np.array([0.5, 0.0]),
        "bm25_rank": np.array([1, 0]),
        "overlap": np.array([0.2, 0.0]),
        "shared_terms": np.array([2.0, 0.0]),
        "keyword_hits": np.array([1.0, 0.0]),
        "phrase_hits": np.array([0.0, 0.0]),
        "file_hits": np.array([0.0, 0.0]),
        "logits": np.array([3.0, -4.0]),
        "descriptions": ["Lint python code. Not for security audits.", "Bake bread."],
        "texts": ["lint Lint python code.", "bread Bake bread."],
        "query_terms": ("lint", "security", "audit"),
        "idf": {"lint": 2.0, "security": 1.0, "audit": 1.0},
        "library_size": 2,
    }
    values.update(overrides)
    return CandidateEvidence(**values)  # type: ignore[arg-type]


def test_features_measure_each_candidate_against_the_others() -> None:
    matrix = features("lint this, without the security audit", _evidence())
    column = {name: i for i, name in enumerate(FEATURES)}
    assert matrix.shape == (2, len(FEATURES))
    assert matrix[0, column["cosine_lead"]] == pytest.approx(0.3)
    assert matrix[1, column["cosine_lead"]] == pytest.approx(-0.3)
    assert matrix[0, column["rerank_lead"]] == pytest.approx(7.0)
    assert matrix[0, column["excluded"]] == pytest.approx(0.5)  # security + audit of 4 idf
    assert matrix[0, column["library_size"]] == pytest.approx(np.log(2))
    without = features("lint this", _evidence(logits=None))
    assert without[:, column["rerank"]].tolist() == [0.0, 0.0]


def test_contributions_add_up_to_the_probability() -> None:
    model = load_relevance_model()
    matrix = features("lint this, without the security audit", _evidence())
    log_odds = model.contributions(matrix).sum(axis=1) + model.bias
    assert np.allclose(model.probability(matrix), 1 / (1 + np.exp(-log_odds)))


def test_a_broken_model_file_is_refused_with_its_reason(tmp_path: Path) -> None:
    data = json.loads(RELEVANCE_MODEL.read_text(encoding="utf-8"))
    RelevanceModel.from_dict(data)
    for key, value in (
        ("weights", [float("nan")] * len(FEATURES)),
        ("scale", [0.0] * len(FEATURES)),
    ):
        with pytest.raises(ValueError, match=key):
            RelevanceModel.from_dict({**data, key: value})
    with pytest.raises(ValueError, match="features"):
        RelevanceModel.from_dict({**data, "features": ["cosine"]})


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("apache") / "skills"
    shutil.copytree(APACHE, root)
    return root


def _route(prompt: str, root: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    config = Config()
    index = open_library([root], config, cache_dir=tmp_path / "cache")
    return decide(prompt, index, config)


def test_a_poster_request_injects_canvas_design(apache: Path, tmp_path: Path) -> None:
    """Its description says it is for posters; the cosine (0.13) alone fell under every floor."""
    decision = _route("make a poster for our jazz night", apache, tmp_path)
    assert decision.stage is Stage.RELEVANCE
    assert decision.injected_ids[:1] == ("canvas-design",)
    row = decision.row("canvas-design")
    assert row.verdict is Verdict.INJECT and row.relevance is not None
    assert reason(decision, row).text.startswith(f"p {row.relevance:.2f} ≥")
    data = decision.to_dict()["relevance"]
    contributions = data["candidates"]["canvas-design"]["contributions"]
    assert set(contributions) == set(FEATURES)


def test_a_clear_cosine_winner_is_not_vetoed_by_one_logit(apache: Path, tmp_path: Path) -> None:
    """Cosine 0.52, 0.43 ahead of the next skill: the reranker's logit alone (-7.4) vetoed it."""
    write_skill(
        apache,
        "cluster-doctor",
        "Diagnose failing workloads and crash loops in a container cluster.",
        keywords="[kubernetes, pods]",
    )
    try:
        decision = _route("my kubernetes pods keep crashing", apache, tmp_path)
    finally:
        shutil.rmtree(apache / "cluster-doctor")
    assert decision.injected_ids[:1] == ("cluster-doctor",)
    gate = decision.gate(GateName.RELEVANCE)
    assert gate.passed and gate.inputs["best"] == "cluster-doctor"
