"""The relevance trainer routes each sample twice: under the learned preset, with its own
dense model, and under the previous default it is compared with (*before*), with that
preset's. A *before* routed with the learned preset's encoder would be neither."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import dense_model
from explorer.engine.inference.models import PACKAGED_ENCODER_SHA256, packaged_minilm
from explorer.training.relevance import (
    BASELINE,
    ENCODER_FOLDS,
    TRAINING,
    WILD_FOLDS,
    FoldEncoders,
    Router,
)


def test_each_preset_is_routed_with_its_own_dense_model(tmp_path: Path) -> None:
    router = Router.open(TRAINING, str(tmp_path))
    assert router.models.status.dense == dense_model(TRAINING) == "skill-encoder"
    assert router.baseline_models.status.dense == dense_model(BASELINE) == "minilm"
    assert router.baseline_models.reranker is router.models.reranker  # one set of logits


def test_a_fold_encoder_routes_in_the_skill_encoders_place_with_its_own_weights(
    tmp_path: Path,
) -> None:
    # Any weights of the encoder's shape will do: MiniLM's stand in for a fold encoder.
    minilm, _ = packaged_minilm()
    packaged = Router.open(TRAINING, str(tmp_path))
    fold = Router.open(TRAINING, str(tmp_path), dense=minilm)
    embedder, shipped = fold.models.embedder, packaged.models.embedder
    minilm_embedder = fold.baseline_models.embedder
    assert embedder is not None and shipped is not None and minilm_embedder is not None
    # The relevance model takes its cosines (the name is the encoder's) ...
    assert fold.models.status.dense == "skill-encoder"
    assert fold.models.status.dense_path == str(minilm)
    # ... which are the other weights', cached apart from the packaged encoder's.
    assert embedder.identity != shipped.identity
    text = "plot my csv as a bar chart"
    assert np.allclose(embedder.embed_query(text), minilm_embedder.embed_query(text))
    assert not np.allclose(embedder.embed_query(text), shipped.embed_query(text))


def test_fold_encoders_come_from_the_run_that_made_the_packaged_encoder(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no encoder training run"):
        FoldEncoders.open(tmp_path)
    summary = tmp_path / "training.json"
    summary.write_text(json.dumps({"model_sha256": "0" * 64}), "utf-8")
    with pytest.raises(SystemExit, match="did not make the packaged skill encoder"):
        FoldEncoders.open(tmp_path)
    summary.write_text(json.dumps({"model_sha256": PACKAGED_ENCODER_SHA256}), "utf-8")
    with pytest.raises(SystemExit, match=r"wild-0/model\.onnx is missing"):
        FoldEncoders.open(tmp_path)
    for number in range(WILD_FOLDS):
        (tmp_path / ENCODER_FOLDS / f"wild-{number}").mkdir(parents=True)
        (tmp_path / ENCODER_FOLDS / f"wild-{number}" / "model.onnx").write_bytes(b"")
    assert FoldEncoders.open(tmp_path).model("wild-3").parent.name == "wild-3"
