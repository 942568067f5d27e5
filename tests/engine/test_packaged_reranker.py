"""The cross-encoders shipped inside the package (explorer/models/reranker, the calibrated
preset's, and explorer/models/reranker-wild, the learned preset's), through onnxruntime for
real: each loads from the installed package, is the one released (sha256), scores
finitely, ranks the obvious skill first, and `reranker = "auto"` falls back to the
preset's own."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import explorer.engine.inference.models as models_module
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import (
    PACKAGED_RERANKER,
    PACKAGED_RERANKER_DIR,
    PACKAGED_RERANKER_SHA256,
    RERANK_CALIBRATION,
    WILD_RERANKER,
    WILD_RERANKER_DIR,
    WILD_RERANKER_SHA256,
    assemble_models,
    find_reranker,
    load_models,
)
from explorer.engine.inference.rerank import rerank_document
from explorer.engine.route.pipeline import decide
from explorer.report import decision_summary
from tests.conftest import write_skill

PDF = rerank_document(
    "Merge, split, rotate and fill PDF documents; extract text and tables from PDF files.",
    "PDF toolkit. Use when the user works with .pdf files.",
)
BREAD = rerank_document(
    "Sourdough bread baking: starter feeding schedules, hydration ratios and oven timings.",
    "",
)


CALIBRATED = Config(preset="calibrated", model="bow", reranker="packaged")
LEARNED = Config(preset="learned", model="bow", reranker="packaged")


@pytest.fixture(scope="module")
def packaged():
    """The calibrated preset's model through the loader users get."""
    models = load_models(CALIBRATED)
    assert models.reranker is not None, models.status.reranker_note
    return models


@pytest.mark.parametrize(
    ("folder", "pins"),
    [(PACKAGED_RERANKER_DIR, PACKAGED_RERANKER_SHA256), (WILD_RERANKER_DIR, WILD_RERANKER_SHA256)],
)
def test_the_package_ships_the_released_files(folder: Path, pins: dict[str, str]) -> None:
    import explorer

    # The model lives inside the installed package, not in a checkout-only folder.
    package = Path(explorer.__file__).resolve().parent
    assert folder.parent == package / "models"
    for name, expected in pins.items():
        path = folder / name
        assert path.is_file(), path
        assert len(expected) == 64
        assert models_module.file_sha256(path) == expected
    assert (folder / "MODEL_CARD.md").is_file()
    assert (folder / "model.onnx").stat().st_size <= 25 * 1024 * 1024


@pytest.mark.parametrize(
    ("config", "name"), [(CALIBRATED, PACKAGED_RERANKER), (LEARNED, WILD_RERANKER)]
)
def test_each_preset_loads_its_own_packaged_reranker(config: Config, name: str) -> None:
    models = load_models(config)
    assert models.reranker is not None and models.reranker.name == name
    assert models.status.rerank_calibration == RERANK_CALIBRATION[name]


@pytest.mark.parametrize("config", [CALIBRATED, LEARNED])
def test_packaged_reranker_gives_finite_logits_and_ranks_the_obvious_skill_first(
    config: Config,
) -> None:
    encoder = load_models(config).reranker
    assert encoder is not None
    logits = encoder.score("merge these two pdf files into one document", [BREAD, PDF])
    assert logits.shape == (2,) and np.isfinite(logits).all()
    # Far apart and on either side of its own rerank_min: the agreement gate keeps the pdf
    # skill and rejects the bread one. A model exported with a broken graph or tokenizer, or
    # the undertrained first release (logits within a few tenths of 0), fails this.
    own = RERANK_CALIBRATION[encoder.name].rerank_min
    assert logits[1] > own > logits[0] and logits[1] - logits[0] > 5.0
    # A request no skill serves: nothing passes its gate.
    assert (encoder.score("what is the capital of france", [BREAD, PDF]) < own).all()


def test_packaged_reranker_reads_its_own_max_length(packaged) -> None:
    long_doc = "pdf " * 1000
    ids = packaged.reranker.tokenizer.encode("merge pdf", long_doc).ids
    assert len(ids) == 64  # reranker.json beside the model, not the 512 of other exports


def test_auto_falls_back_to_the_packaged_reranker_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_IN_AUTO", True)
    for preset, folder, name in (
        ("calibrated", PACKAGED_RERANKER_DIR, PACKAGED_RERANKER),
        ("learned", WILD_RERANKER_DIR, WILD_RERANKER),
    ):
        pair, note = find_reranker(Config(preset=preset, ski_models_dir=str(tmp_path / "none")))
        assert pair is not None and pair[0].parent == folder
        assert "packaged" in note and name in note and str(tmp_path) in note


def test_auto_under_the_reference_preset_takes_only_the_references_models(
    tmp_path: Path,
) -> None:
    """The reference preset decides as the reference does, and the reference ships no
    cross-encoder: on a machine without one, auto leaves stage 2 off and says how to turn
    the packaged one on; named, the packaged one still loads."""
    pair, note = find_reranker(Config(preset="reference", ski_models_dir=str(tmp_path)))
    assert pair is None and "preset = 'reference'" in note and "'packaged'" in note
    assert find_reranker(Config(ski_models_dir=str(tmp_path)))[0] is not None
    pair, _ = find_reranker(Config(preset="reference", reranker="packaged"))
    assert pair is not None and pair[0].parent == PACKAGED_RERANKER_DIR


def test_a_users_own_reranker_comes_before_the_packaged_one(tmp_path: Path) -> None:
    from tests.support.onnx_builders import build_tiny_cross_encoder

    snapshot = tmp_path / "models--jinaai--jina-reranker-v1-turbo-en" / "snapshots" / "abc"
    build_tiny_cross_encoder(snapshot, ["merge", "pdf", "files"])
    models = load_models(Config(model="bow", ski_models_dir=str(tmp_path)))
    assert models.status.reranker == "jina-reranker-v1-turbo-en"
    assert "your jina-reranker-v1-turbo-en" in models.status.reranker_note
    # A model without a calibration of its own keeps the reference's gate.
    assert models.status.rerank_calibration.rerank_min == -2.5


def test_an_altered_packaged_model_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "reranker"
    shutil.copytree(PACKAGED_RERANKER_DIR, copy)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[-1] ^= 0xFF
    (copy / "model.onnx").write_bytes(bytes(data))
    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_DIR", copy.resolve())
    models = load_models(CALIBRATED)
    assert models.reranker is None
    assert "sha256" in models.status.reranker_note and "expected" in models.status.reranker_note
    assert any("sha256" in warning for warning in models.warnings)


def test_auto_without_the_default_points_at_the_packaged_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_IN_AUTO", False)
    pair, note = find_reranker(Config(ski_models_dir=str(tmp_path)))
    assert pair is None and "reranker = 'packaged'" in note and str(tmp_path) in note


def test_no_packaged_model_means_no_reranker_and_the_places_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_IN_AUTO", True)
    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_DIR", tmp_path / "gone")
    pair, note = find_reranker(Config(preset="calibrated", ski_models_dir=str(tmp_path)))
    assert pair is None and str(tmp_path / "gone") in note and str(tmp_path) in note


def test_the_gate_uses_the_packaged_models_calibration_and_a_pinned_value_wins(
    tmp_path: Path, packaged
) -> None:
    root = tmp_path / "skills"
    pdf = "Merge, split, rotate and fill PDF documents; extract text and tables from PDF files."
    write_skill(root, "pdf", pdf, "PDF toolkit. Use when the user works with .pdf files.")
    write_skill(root, "bread", "Sourdough bread baking: starter, hydration and oven timings.")
    write_skill(root, "xlsx", "Spreadsheet formulas, clean csv data and workbook reports.")
    models = assemble_models(BowEmbedder(), packaged.reranker, reranker_note="packaged")
    config = Config(recall_floor=0.05, min_similarity=0.05)
    index = build_index([root], config, models)
    prompt = "merge these two pdf files into one document"
    decision = decide(prompt, index, config)
    assert decision.stage == "rerank"
    assert decision.gate("reranker").inputs["model"] == PACKAGED_RERANKER
    own = RERANK_CALIBRATION[PACKAGED_RERANKER]
    assert decision.gate("rerank_min").thresholds["rerank_min"] == own.rerank_min
    assert decision.gate("rerank_min").note == f"gate: {own.source}"
    assert decision.injected_ids == ("pdf",)
    pinned = decide(prompt, index, config.replace(rerank_min=99.0))
    assert pinned.gate("rerank_min").thresholds["rerank_min"] == 99.0
    assert pinned.injected_ids == ()
    # The gate that emptied the pool failed; the one after it had nothing to judge.
    assert not pinned.gate("rerank_min").passed and not pinned.gate("rerank_min").skipped
    assert pinned.gate("rerank_margin").skipped
    assert "last failed gate: rerank_min" in decision_summary(pinned)


def test_the_runtime_never_imports_torch() -> None:
    code = (
        "import sys, explorer.engine.inference.models as m, explorer.engine.route.pipeline\n"
        "from explorer.engine.base.config import Config\n"
        "m.load_models(Config(model='bow', reranker='packaged'))\n"
        "print(sorted(k for k in ('torch', 'transformers', 'explorer.training') "
        "if k in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
