"""The dense encoder shipped inside the package (explorer/models/encoder), through
onnxruntime for real: it is the released file, the learned preset loads it and its relevance
model was fitted to it, and it reads requests sensibly with weights of its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import explorer.engine.inference.models as models_module
from explorer.engine.base.config import PRESET_MODEL, Config
from explorer.engine.inference.models import (
    PACKAGED_ENCODER,
    PACKAGED_ENCODER_MODEL,
    PACKAGED_ENCODER_SHA256,
    load_embedder,
)
from explorer.engine.route.relevance import load_relevance_model

POSTER = "Create visual art, posters and designs as PNG or PDF files from a short brief."
CLUSTER = "Diagnose failing workloads and crash loops in a container cluster."
SPREADSHEET = "Read, clean and chart spreadsheets: xlsx and csv files, formulas, pivot tables."


def test_the_package_ships_the_released_file() -> None:
    import explorer

    package = Path(explorer.__file__).resolve().parent
    assert package / "models" / "encoder" / "model.onnx" == PACKAGED_ENCODER_MODEL
    assert models_module.file_sha256(PACKAGED_ENCODER_MODEL) == PACKAGED_ENCODER_SHA256
    assert (PACKAGED_ENCODER_MODEL.parent / "MODEL_CARD.md").is_file()
    assert PACKAGED_ENCODER_MODEL.stat().st_size <= 25 * 1024 * 1024


def test_the_learned_preset_runs_it_and_its_relevance_model_was_fitted_to_it() -> None:
    assert Config().model is None and PRESET_MODEL["learned"] == PACKAGED_ENCODER
    assert load_embedder(Config()).name == PACKAGED_ENCODER
    relevance = load_relevance_model()
    # Fitted to these very weights: a retrained encoder keeps its name, not its cosines.
    assert relevance.dense == PACKAGED_ENCODER
    assert relevance.dense_sha256 == PACKAGED_ENCODER_SHA256


def test_it_puts_each_request_nearest_its_skill_with_weights_of_its_own() -> None:
    """Each request's own skill first; and its cosines are not MiniLM's, so the file holds
    the fine-tuned weights (how much better they rank is measured, not tested: routing.md
    §9.15)."""
    requests = ["make a poster for our jazz night", "my kubernetes pods keep crashing"]
    skills = [POSTER, CLUSTER, SPREADSHEET]
    cosines = {}
    for name in (PACKAGED_ENCODER, "minilm"):
        embedder = load_embedder(Config(model=name))
        queries = np.stack([embedder.embed_query(request) for request in requests])
        cosines[name] = queries @ embedder.embed_documents(skills).T
        assert np.isfinite(cosines[name]).all()
        assert list(cosines[name].argmax(axis=1)) == [0, 1], name
    assert np.abs(cosines[PACKAGED_ENCODER] - cosines["minilm"]).max() > 0.02
