"""Parity of defaults and model choice with the reference router (spec §4, §5.2, §6).

Behaviour read from the reference's source (skill-inject 0.9.0), cited per case; it is
AGPL, so nothing here is copied from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.config import Config
from explorer.engine.embed import BowEmbedder
from explorer.engine.models import CALIBRATION, load_models


def test_lexical_margin_defaults_to_zero() -> None:
    """reference: src/config.rs base(): lexical_min 0.0 (off) and lexical_margin 0.0."""
    assert (Config().lexical_min, Config().lexical_margin) == (0.0, 0.0)


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-q"])
def test_minilm_by_its_reference_name_keeps_the_reference_calibration(name: str) -> None:
    """reference: src/embed/fast.rs gives every dense model it knows (bge-small, bge-base,
    all-MiniLM-L6-v2 and its quantised -q) min_similarity 0.64 and score_margin 0.12."""
    calibration = CALIBRATION[name]
    assert (calibration.min_similarity, calibration.score_margin) == (0.64, 0.12)


def test_the_packaged_minilm_keeps_its_own_measured_knee() -> None:
    """Ours, not the reference's: the packaged int8 MiniLM has its knee measured (README)."""
    calibration = CALIBRATION["minilm"]
    assert (calibration.min_similarity, calibration.score_margin) == (0.52, 0.12)


def test_an_unknown_model_id_falls_back_to_bag_of_words_with_a_warning(tmp_path: Path) -> None:
    """reference: src/embed/mod.rs build() uses the bag-of-words embedder for any model id
    it does not recognise (with the bag-of-words calibration, 0.30 / 0.15)."""
    models = load_models(Config(model="e5-large-v2", reranker="off"))
    assert isinstance(models.embedder, BowEmbedder)
    assert models.status.dense == "bow"
    calibration = models.status.calibration
    assert (calibration.min_similarity, calibration.score_margin) == (0.30, 0.15)
    assert any(
        "e5-large-v2" in warning and "bag-of-words" in warning for warning in models.warnings
    )


def test_a_known_model_that_is_missing_still_says_where_it_looked(tmp_path: Path) -> None:
    """Differs on purpose: the reference would download bge-small; we never reach the
    network, so a known model that is not on disk turns the cosine channel off instead."""
    models = load_models(Config(model="bge-small-en-v1.5", ski_models_dir=str(tmp_path)))
    assert models.embedder is None and str(tmp_path) in (models.status.dense_error or "")
