"""The relevance trainer routes each sample twice: under the learned preset, with its own
dense model, and under the previous default it is compared with (*before*), with that
preset's. A *before* routed with the learned preset's encoder would be neither."""

from __future__ import annotations

from pathlib import Path

from explorer.engine.base.config import dense_model
from explorer.training.relevance import BASELINE, TRAINING, Router


def test_each_preset_is_routed_with_its_own_dense_model(tmp_path: Path) -> None:
    router = Router.open(TRAINING, str(tmp_path))
    assert router.models.status.dense == dense_model(TRAINING) == "skill-encoder"
    assert router.baseline_models.status.dense == dense_model(BASELINE) == "minilm"
    assert router.baseline_models.reranker is router.models.reranker  # one set of logits
