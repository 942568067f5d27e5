"""The relevance trainer routes each sample twice: under the learned preset, with its own
dense model, and under the previous default it is compared with (*before*), with that
preset's. A *before* routed with the learned preset's encoder would be neither."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from explorer.engine.base.config import dense_model
from explorer.engine.inference.models import (
    PACKAGED_RERANKER,
    WILD_RERANKER,
    WILD_RERANKER_DIR,
)
from explorer.training.relevance import BASELINE, TRAINING, WILD_FOLDS, FoldRerankers, Router


def test_each_preset_is_routed_with_its_own_dense_model(tmp_path: Path) -> None:
    router = Router.open(TRAINING, str(tmp_path))
    assert router.models.status.dense == dense_model(TRAINING) == "skill-encoder"
    assert router.baseline_models.status.dense == dense_model(BASELINE) == "minilm"
    # ... and each its own packaged cross-encoder: the one its decisions were fitted on.
    assert router.models.status.reranker == WILD_RERANKER
    assert router.baseline_models.status.reranker == PACKAGED_RERANKER


def test_a_fold_reranker_routes_the_learned_preset_and_before_keeps_the_packaged_one(
    tmp_path: Path,
) -> None:
    # The packaged files, copied out of the package, stand in for a fold's cross-encoder.
    fold = tmp_path / "folds" / "wild-2"
    shutil.copytree(WILD_RERANKER_DIR, fold)
    packaged = Router.open(TRAINING, str(tmp_path / "cache"))
    router = Router.open(TRAINING, str(tmp_path / "cache"), fold)
    assert router.models.reranker is not None and packaged.models.reranker is not None
    assert router.models.reranker is not router.baseline_models.reranker
    assert router.baseline_models.status.dense == "minilm"
    pair = ("plot my csv as a bar chart", ["Create charts from tabular data."])
    # Same files, so the same logit; read from the fold's copy, not the package.
    assert list(router.models.reranker.score(*pair)) == list(packaged.models.reranker.score(*pair))


def test_fold_rerankers_need_one_per_wild_fold_and_one_from_all(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"wild-0/model\.onnx is missing"):
        FoldRerankers.open(tmp_path)
    for number in range(WILD_FOLDS):
        (tmp_path / "folds" / f"wild-{number}").mkdir(parents=True)
        (tmp_path / "folds" / f"wild-{number}" / "model.onnx").write_bytes(b"")
    with pytest.raises(SystemExit, match=r"all/model\.onnx is missing"):
        FoldRerankers.open(tmp_path)
    (tmp_path / "folds" / "all").mkdir()
    (tmp_path / "folds" / "all" / "model.onnx").write_bytes(b"")
    rerankers = FoldRerankers.open(tmp_path)
    assert rerankers.model("wild-3") == tmp_path / "folds" / "wild-3"
    assert rerankers.model(None) == tmp_path / "folds" / "all"  # every other library's
