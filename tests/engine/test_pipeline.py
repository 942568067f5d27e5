"""decide(): stage-1 channels, every gate in §5's order, verdicts, and the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.route.decision import SCHEMA, GateName, Stage, Verdict
from explorer.engine.route.pipeline import cosine_confidence, decide, file_families, invoked_names
from tests.conftest import write_skill


def test_every_skill_gets_a_row_and_a_verdict(bow_index) -> None:
    decision = decide("merge two pdf files into one", bow_index, Config(preset="reference"))
    assert decision.stage is Stage.COSINE
    assert decision.injected_ids == ("pdf",)
    assert {row.id for row in decision.rows} == set(bow_index.ids)
    assert decision.rows[0].id == "pdf" and decision.rows[0].verdict is Verdict.INJECT
    assert all(row.verdict is not Verdict.INJECT for row in decision.rows[1:])
    assert [row.rank for row in decision.rows] == sorted(row.rank for row in decision.rows)


def test_hybrid_score_is_the_sum_of_channels(bow_index) -> None:
    decision = decide("pdf: merge report.pdf files", bow_index, Config(preset="reference"))
    row = decision.row("pdf")
    assert row.keyword == pytest.approx(0.15)  # the name token "pdf" (§3.2)
    assert row.file == pytest.approx(0.3)  # report.pdf (§3.4)
    assert row.score == pytest.approx(row.cosine + row.keyword + row.phrase + row.file)


def test_phrase_channel_needs_every_token(tmp_path: Path) -> None:
    write_skill(tmp_path, "k8s", 'Debug pods. Use when the user says "pod keeps crashing".')
    write_skill(tmp_path, "other", "Something else entirely about gardening.")
    index = build_index([tmp_path], Config(preset="reference"), assemble_models(BowEmbedder()))
    assert decide("my pods keep crashing", index, Config(preset="reference")).row(
        "k8s"
    ).phrase == pytest.approx(0.2)
    assert (
        decide("my pod keeps running", index, Config(preset="reference")).row("k8s").phrase == 0.0
    )


def test_ties_are_broken_by_id(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid"):
        write_skill(tmp_path, name, "Identical description for every skill here.")
    index = build_index([tmp_path], Config(preset="reference"), assemble_models(BowEmbedder()))
    decision = decide("unrelated words", index, Config(preset="reference"))
    assert [row.id for row in decision.rows] == ["alpha", "mid", "zeta"]


def test_gates_come_in_cascade_order(bow_index) -> None:
    names = [
        gate.name for gate in decide("merge pdf files", bow_index, Config(preset="reference")).gates
    ]
    assert names == [
        "confident_winner",
        "lexical_dominance",
        "recall_floor",
        "reranker",
        "min_similarity",
        "score_margin",
        "force",
        "invoked",
        "deny",
        "max_skills",
        "body_inject",
        "char_budget",
    ]


def test_confident_winner_skips_the_lexical_path(bow_index) -> None:
    config = Config(preset="reference", high_conf=0.3, clear_gap=0.05, lexical_min=0.5)
    decision = decide("merge pdf files", bow_index, config)
    assert decision.gate(GateName.CONFIDENT_WINNER).passed
    lexical = decision.gate(GateName.LEXICAL_DOMINANCE)
    assert lexical.skipped and lexical.note == "confident winner"
    assert decision.gate(GateName.RERANKER).inputs["ambiguous"] is False


def test_lexical_fast_path_fires_with_two_shared_terms(bow_index) -> None:
    config = Config(preset="reference", lexical_min=1.0, lexical_margin=0.5)
    decision = decide("merge and split documents", bow_index, config)
    assert decision.stage is Stage.LEXICAL
    assert decision.injected_ids == ("pdf",)
    assert decision.injected[0].confidence == 0.90
    gate = decision.gate(GateName.LEXICAL_DOMINANCE)
    assert gate.passed and gate.inputs["shared_terms"] >= 2
    assert decision.row("xlsx").verdict is Verdict.LEXICAL_DOMINANCE
    # One shared term is not enough, however dominant the score (§5.2).
    single = decide("merge", bow_index, config)
    assert single.stage is not Stage.LEXICAL
    assert single.gate(GateName.LEXICAL_DOMINANCE).passed is False


def test_recall_floor_means_nothing_is_relevant(bow_index) -> None:
    decision = decide("banana bread recipe with walnuts", bow_index, Config(preset="reference"))
    assert decision.injected_ids == ()
    assert decision.gate(GateName.RECALL_FLOOR).passed is False
    assert {row.verdict for row in decision.rows} == {"min_similarity"}


def test_score_margin_drops_runners_up(bow_index) -> None:
    config = Config(preset="reference", min_similarity=0.05, score_margin=0.01, max_skills=5)
    decision = decide("git commit history release notes", bow_index, config)
    kept = decision.injected_ids
    assert len(kept) == 1
    assert any(row.verdict is Verdict.SCORE_MARGIN for row in decision.rows)


def test_force_deny_invoked_and_cap(bow_index) -> None:
    loose = Config(preset="reference", min_similarity=0.0, score_margin=10.0, max_skills=10)
    everything = decide("git pdf xlsx docker changelog", bow_index, loose)
    assert len(everything.injected_ids) == 5
    denied = decide("git pdf xlsx docker changelog", bow_index, loose.replace(deny=["pdf"]))
    assert "pdf" not in denied.injected_ids and denied.row("pdf").verdict is Verdict.DENY
    invoked = decide("/pdf merge these xlsx files", bow_index, loose)
    assert "pdf" not in invoked.injected_ids and invoked.row("pdf").verdict is Verdict.INVOKED
    capped = decide("git pdf xlsx docker changelog", bow_index, loose.replace(max_skills=2))
    assert len(capped.injected_ids) == 2
    assert sum(row.verdict is Verdict.MAX_SKILLS for row in capped.rows) == 3
    forced = decide(
        "pdf", bow_index, Config(preset="reference", min_similarity=0.99, force=["pdf"])
    )
    assert forced.injected_ids == ("pdf",)
    assert forced.gate(GateName.FORCE).inputs["forced"] == ["pdf"]


def test_confidence_and_body_injection(bow_index) -> None:
    assert cosine_confidence(0.64, 0.64) == 0.5
    assert cosine_confidence(2.0, 0.64) == 0.97
    assert cosine_confidence(0.0, 0.64) == 0.5
    lone = decide("merge pdf files", bow_index, Config(preset="reference", min_similarity=0.05))
    assert lone.injected[0].mode == "body"  # a lone pick at >= 0.92 injects its body (§5.7)
    assert "Steps for pdf." in lone.text
    shy = decide(
        "merge pdf files",
        bow_index,
        Config(preset="reference", min_similarity=0.05, body_inject_min=1.0),
    )
    assert shy.injected[0].mode == "description" and "Extract text and tables" in shy.text


def test_a_skill_with_no_body_is_injected_by_its_description(tmp_path: Path) -> None:
    """A frontmatter never closed reads to the end of the file: no body. "Its instructions
    follow" with nothing after it would point the model at nothing; the reference's
    format keeps the reference's empty block."""
    (tmp_path / "helm").mkdir()
    (tmp_path / "helm" / "SKILL.md").write_text(
        "---\nname: helm\ndescription: Scaffold helm charts for kubernetes services.\n",
        encoding="utf-8",
    )
    write_skill(tmp_path, "pdf", "Merge and split PDF documents.")
    config = Config(preset="reference", min_similarity=0.05)
    index = build_index([tmp_path], config, assemble_models(BowEmbedder()))
    own = decide("scaffold a helm chart", index, config)
    assert own.injected_ids == ("helm",) and own.injected[0].mode == "description"
    assert "Scaffold helm charts" in own.text and "instructions follow" not in own.text
    reference = config.replace(inject_format="reference")
    assert decide("scaffold a helm chart", index, reference).injected[0].mode == "body"


def test_char_budget_limits_the_text(bow_index) -> None:
    loose = Config(
        preset="reference", min_similarity=0.0, score_margin=10.0, max_skills=5, body_inject_min=1.0
    )
    tight = decide("git pdf xlsx docker changelog", bow_index, loose.replace(char_budget=320))
    assert len(tight.text) <= 320
    assert tight.gate(GateName.CHAR_BUDGET).inputs["dropped"]
    assert any(row.verdict is Verdict.CHAR_BUDGET for row in tight.rows)


def test_blank_prompt_and_empty_library(bow_index, tmp_path: Path) -> None:
    blank = decide("   ", bow_index, Config(preset="reference"))
    assert blank.stage is Stage.BLANK and blank.injected_ids == () and blank.text == ""
    (tmp_path / "empty").mkdir()
    empty = build_index(
        [tmp_path / "empty"], Config(preset="reference"), assemble_models(BowEmbedder())
    )
    assert decide("merge pdf", empty, Config(preset="reference")).stage is Stage.EMPTY


def test_no_dense_model_degrades_to_the_other_channels(make_library) -> None:
    root = make_library({"pdf": "Merge pdf files.", "xlsx": "Spreadsheet formulas."})
    models = assemble_models(None, dense_error="model missing")
    index = build_index([root], Config(preset="reference"), models)
    decision = decide("merge report.pdf", index, Config(preset="reference", min_similarity=0.2))
    assert decision.row("pdf").cosine == 0.0
    assert decision.injected_ids == ("pdf",)  # keyword + file channels still route
    assert decision.models["dense_error"] == "model missing"


def test_helpers_for_file_and_invoked_channels() -> None:
    assert file_families("open Q3.XLSX and notes.docx, then deck.key") == ["xlsx", "docx", "pptx"]
    assert file_families("a pdf about pdfs") == []
    assert invoked_names("/pdf please and /Git-commit now; not a/path") == {"pdf"}  # leading only


def test_json_contract_keys_are_stable(bow_index) -> None:
    data = json.loads(
        decide(
            "merge pdf files", bow_index, Config(preset="reference", min_similarity=0.1)
        ).to_json()
    )
    assert data["schema"] == SCHEMA
    for key in (
        "prompt",
        "stage",
        "injected",
        "text",
        "skills",
        "gates",
        "timings_ms",
        "thresholds",
        "models",
        "query_terms",
    ):
        assert key in data
    assert set(data["injected"][0]) >= {"id", "confidence", "band", "mode"}
    assert set(data["skills"][0]) >= {
        "id",
        "rank",
        "cosine",
        "keyword",
        "phrase",
        "file",
        "score",
        "bm25",
        "bm25_norm",
        "bm25_rank",
        "rerank",
        "rerank_prob",
        "pool",
        "overlap",
        "verdict",
    }
    assert set(data["skills"][0]["overlap"]) == {"matched", "query_terms", "jaccard"}
    assert data["skills"][0]["rerank"] is None
    assert set(data["gates"][0]) >= {"name", "passed", "skipped", "inputs", "thresholds"}
    assert {"embed", "dense", "lexical", "gates", "total"} <= set(data["timings_ms"])


def test_rows_match_the_lexical_index(bow_index) -> None:
    prompt = "split pdf documents and clean csv"
    decision = decide(prompt, bow_index, Config(preset="reference"))
    for row in decision.rows:
        explain = bow_index.lexical.explain(prompt, bow_index.positions[row.id])
        assert row.bm25 == explain.score
        assert row.matched_terms == len(explain.matched)
    ranked = sorted((row for row in decision.rows if row.bm25_rank), key=lambda r: r.bm25_rank)
    assert [row.bm25 for row in ranked] == sorted((row.bm25 for row in ranked), reverse=True)
    assert np.all(np.diff([row.score for row in decision.rows[1:]]) <= 0)


def test_nothing_injected_counts_no_characters(bow_index) -> None:
    """`why` gave char_budget chars=94 (the header's) beside an empty text."""
    decision = decide("zzqx wvyk", bow_index, Config(model="bow", reranker="off"))
    assert decision.text == ""
    assert decision.gate(GateName.CHAR_BUDGET).inputs["chars"] == 0
