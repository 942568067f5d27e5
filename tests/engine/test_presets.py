"""Presets and the §9 departures: the fused BM25 channel, the ln N floor and the guards."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config, ConfigError, load_config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.route.decision import GateName, Stage
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import (
    FLOOR_REFERENCE_N,
    PRESETS,
    floor_for,
    generic_word,
    resolve,
)
from tests.conftest import write_skill

REFERENCE = Config(preset="reference")


def test_reference_preset_changes_nothing(bow_index) -> None:
    tuning = resolve(REFERENCE, bow_index.models.status, len(bow_index))
    assert tuning.bm25_weight == 0.0 and tuning.floor_log_slope == 0.0
    assert not tuning.keyword_generic_guard
    assert tuning.keyword_min_cosine == 0.0 and tuning.lexical_min_cosine == 0.0
    assert tuning.lexical_min == 0.0 and tuning.lexical_margin == 0.0  # §5.2: off
    decision = decide("merge two pdf files into one", bow_index, REFERENCE)
    for row in decision.rows:
        assert row.bm25_fused == 0.0
        assert row.score == row.cosine + row.keyword + row.phrase + row.file  # exactly §3.6
    assert "keyword_guard" not in [gate.name for gate in decision.gates]


def test_fused_channel_adds_weight_times_bm25_norm(bow_index) -> None:
    config = REFERENCE.replace(bm25_weight=0.5)
    decision = decide("merge two pdf files into one", bow_index, config)
    row = decision.row("pdf")
    assert row.bm25_norm > 0
    assert row.bm25_fused == pytest.approx(0.5 * row.bm25_norm)
    assert row.score == pytest.approx(
        row.cosine + row.keyword + row.phrase + row.file + row.bm25_fused
    )
    data = decision.to_dict()
    assert data["tuning"]["bm25_weight"] == 0.5
    assert {"bm25_fused", "bm25_norm", "score"} <= set(data["skills"][0])
    # the fused channel can change the order: the hybrid order follows the fused score
    scores = [
        decision.row(skill_id).score
        for skill_id in np.array(decision.channels.ids)[decision.channels.hybrid_order]
    ]
    assert scores == sorted(scores, reverse=True)


def test_floor_follows_ln_n() -> None:
    assert floor_for(0.5, 0.0, 5000) == 0.5
    assert floor_for(0.5, 0.02, FLOOR_REFERENCE_N) == pytest.approx(0.5)
    assert floor_for(0.5, 0.02, 2000) == pytest.approx(0.5 + 0.02 * math.log(10))
    assert floor_for(0.5, 0.02, 20) < 0.5


def test_the_floor_rule_is_not_extrapolated_beyond_the_sizes_it_was_measured_on(
    bow_index,
) -> None:
    assert floor_for(0.5, 0.02, 20, (130, 2018)) == floor_for(0.5, 0.02, 130)
    assert floor_for(0.5, 0.02, 26_000, (130, 2018)) == floor_for(0.5, 0.02, 2018)
    assert floor_for(0.5, 0.02, 500, (130, 2018)) == floor_for(0.5, 0.02, 500)
    calibrated = PRESETS["calibrated"]
    low, high = calibrated.floor_sizes
    status = bow_index.models.status
    at = {n: resolve(Config(), status, n).min_similarity for n in (12, low, 800, high, 26_000)}
    assert at[12] == at[low] < at[800] < at[high] == at[26_000]
    assert resolve(Config(), status, 12).floor_n == low
    assert resolve(Config(), status, 800).floor_n == 800


def test_pinned_values_beat_the_preset(bow_index) -> None:
    status = bow_index.models.status
    tuning = resolve(Config(preset="calibrated", bm25_weight=0.25, min_similarity=0.4), status, 200)
    assert tuning.bm25_weight == 0.25 and tuning.min_similarity == pytest.approx(0.4 + 0.0 * 0)
    calibrated = PRESETS["calibrated"]
    tuning = resolve(
        Config(preset="calibrated", floor_log_slope=0.0, min_similarity=0.4), status, 5000
    )
    assert tuning.min_similarity == 0.4
    assert resolve(Config(preset="calibrated"), status, 200).bm25_weight == calibrated.bm25_weight


def test_generic_name_token_earns_no_keyword(tmp_path: Path) -> None:
    write_skill(tmp_path, "set-reminder", "Schedule a reminder notification at a given time.")
    write_skill(tmp_path, "before-you-build", "Checklist of questions before writing new code.")
    write_skill(tmp_path, "gardening", "Plan a vegetable garden and its watering.")
    index = build_index([tmp_path], REFERENCE, assemble_models(BowEmbedder()))
    prompt = "can you set the table for dinner"
    plain = decide(prompt, index, REFERENCE)
    assert plain.row("set-reminder").keyword == pytest.approx(0.15)  # reference: "set"
    assert plain.row("before-you-build").keyword == pytest.approx(0.15)  # reference: "you"
    guarded = decide(prompt, index, REFERENCE.replace(keyword_generic_guard=True))
    assert guarded.row("set-reminder").keyword == 0.0
    assert guarded.row("before-you-build").keyword == 0.0
    gate = guarded.gate(GateName.KEYWORD_GUARD)
    assert gate.inputs["generic_tokens"] == ["set", "you"] and not gate.passed
    # a domain token of the same name still counts
    reminder = decide("a reminder please", index, REFERENCE.replace(keyword_generic_guard=True))
    assert reminder.row("set-reminder").keyword == pytest.approx(0.15)
    assert generic_word("you") and generic_word("set") and not generic_word("reminder")


def test_keyword_needs_cosine_floor(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf", "Read, merge and split PDF documents.")
    write_skill(tmp_path, "weather", "Forecasts for a city: rain, wind and temperature.")
    index = build_index([tmp_path], REFERENCE, assemble_models(BowEmbedder()))
    prompt = "history of the pdf format"
    plain = decide(prompt, index, REFERENCE).row("pdf")
    assert plain.keyword == pytest.approx(0.15)
    high = plain.cosine + 0.01
    guarded = decide(prompt, index, REFERENCE.replace(keyword_min_cosine=high))
    assert guarded.row("pdf").keyword == 0.0
    assert guarded.gate(GateName.KEYWORD_GUARD).inputs["below_cosine"] == ["pdf"]
    kept = decide(prompt, index, REFERENCE.replace(keyword_min_cosine=plain.cosine - 0.01))
    assert kept.row("pdf").keyword == pytest.approx(0.15)


def test_lexical_fast_path_needs_cosine_floor(tmp_path: Path) -> None:
    write_skill(
        tmp_path, "changelog", "Write a changelog: what changed, what it looks like, release notes."
    )
    write_skill(tmp_path, "other", "Plan a vegetable garden.")
    write_skill(tmp_path, "third", "Tune a database index.")
    index = build_index([tmp_path], REFERENCE, assemble_models(BowEmbedder()))
    config = REFERENCE.replace(lexical_min=0.5, lexical_margin=0.1)
    prompt = "what changed and what does it looks like outside"
    fired = decide(prompt, index, config)
    assert fired.stage is Stage.LEXICAL
    cosine = fired.row("changelog").cosine
    guarded = decide(prompt, index, config.replace(lexical_min_cosine=cosine + 0.01))
    assert guarded.stage is not Stage.LEXICAL
    gate = guarded.gate(GateName.LEXICAL_DOMINANCE)
    assert gate.inputs["top_cosine"] == pytest.approx(cosine) and not gate.passed
    looser = config.replace(lexical_min_cosine=cosine - 0.01)
    assert decide(prompt, index, looser).stage is Stage.LEXICAL


def test_preset_is_a_checked_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(assignments=["preset=reference"]).config.preset == "reference"
    with pytest.raises(ConfigError, match="preset"):
        load_config(assignments=["preset=fancy"])


def _with_reranker(status, gate):
    import dataclasses

    return dataclasses.replace(status, reranker="some-reranker", rerank_calibration=gate)


def test_the_rerank_gate_is_resolved_with_the_rest(bow_index) -> None:
    """One resolver: §5.3-§5.4's values come from `resolve` too (a pinned value wins, else
    the reranker's own), and the reranker's own floor and fast-path switch depart from the
    reference only outside the reference preset."""
    from explorer.engine.inference.models import RerankCalibration

    gate = RerankCalibration(1.25, 2.0, "its own gate", floor=0.2, fast_path=False)
    status = _with_reranker(bow_index.models.status, gate)
    tuning = resolve(Config(preset="calibrated"), status, 200)
    assert (tuning.rerank_min, tuning.rerank_margin) == (1.25, 2.0)
    assert tuning.rerank_source == "its own gate"
    assert tuning.rerank_floor == 0.2 and tuning.agreement_floor == 0.2
    assert tuning.recall_floor == 0.2  # min(recall_floor 0.5, its floor)
    assert tuning.fast_path_off == "its own gate"
    pinned = resolve(Config(preset="calibrated", rerank_min=0.5, rerank_margin=1.0), status, 200)
    assert (pinned.rerank_min, pinned.rerank_margin) == (0.5, 1.0)
    assert pinned.rerank_source == "pinned in config"
    reference = resolve(REFERENCE, status, 200)
    assert reference.rerank_floor is None and reference.fast_path_off == ""
    assert reference.recall_floor == REFERENCE.recall_floor
    assert reference.agreement_floor == pytest.approx(reference.min_similarity - 0.03)
    # Without a reranker, the reference gate and nothing departs.
    bare = resolve(Config(preset="calibrated"), bow_index.models.status, 200)
    assert bare.rerank_floor is None and bare.fast_path_off == "" and bare.recall_floor == 0.5


def test_decide_reports_the_thresholds_the_resolver_gives(bow_index) -> None:
    for config in (Config(), REFERENCE, Config(rerank_min=-1.0, min_similarity=0.3)):
        tuning = resolve(config, bow_index.models.status, len(bow_index))
        decision = decide("merge two pdf files into one", bow_index, config)
        assert decision.thresholds == {
            "min_similarity": tuning.min_similarity,
            "score_margin": tuning.score_margin,
            "rerank_min": tuning.rerank_min,
            "rerank_margin": tuning.rerank_margin,
        }
        assert decision.tuning == tuning.as_dict()


def test_only_the_resolver_reads_a_threshold_from_config_or_a_model() -> None:
    """No second resolver: the fields `resolve` works out from a config, a preset or a
    model's calibration are read from them in presets.py alone; everyone else reads the
    Tuning (decide, why, doctor, lint, calibration, the F2 editor)."""
    import re

    root = Path(__file__).resolve().parents[2] / "explorer"
    fields = (
        "min_similarity|score_margin|rerank_min|rerank_margin|recall_floor|lexical_min|"
        "lexical_margin|bm25_weight|floor_log_slope|keyword_min_cosine|lexical_min_cosine|"
        "keyword_generic_guard"
    )
    read = re.compile(
        rf"\bconfig\.({fields})\b|rerank_calibration\.(rerank_min|rerank_margin|floor|fast_path)\b"
    )
    found = [
        f"{path.relative_to(root)}: {match.group(0)}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "presets.py" and "training" not in path.parts
        for match in read.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"thresholds read outside presets.resolve: {found}"
