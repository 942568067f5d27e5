"""Stage 2 through its one interface (`rerank.Reranker`), with the packaged cross-encoder:
the agreement gate deciding on the reranker's logits, a reranker's own floor (§9.10), and
`calibrate --reranker`'s sweep of that gate checked against decide()."""

from __future__ import annotations

import dataclasses

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.models import Models, RerankCalibration, load_models
from explorer.engine.route.decision import GateName, Stage, Verdict
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS

PDF_PROMPT = "merge these two pdf files into one document"


@pytest.fixture(scope="module")
def packaged() -> Models:
    models = load_models(Config(model="bow", reranker="packaged"))
    assert models.reranker is not None, models.status.reranker_note
    return models


@pytest.fixture(scope="module")
def sample_index(packaged: Models) -> Index:
    return build_index([SAMPLE_SKILLS], Config(), packaged)


def _with_gate(index: Index, gate: RerankCalibration) -> Index:
    status = dataclasses.replace(index.models.status, rerank_calibration=gate)
    return dataclasses.replace(index, models=dataclasses.replace(index.models, status=status))


def test_the_gate_decides_on_the_rerankers_logits(sample_index: Index) -> None:
    calibrated = Config(preset="calibrated", lexical_min=0.0)  # the fast path off: stage 2
    decision = decide(PDF_PROMPT, sample_index, calibrated.replace(rerank_min=1e6))
    assert decision.stage is Stage.RERANK and decision.injected_ids == ()
    assert decision.row("pdf").verdict is Verdict.RERANK_MIN
    assert decision.gate(GateName.RERANK_MIN).thresholds["rerank_min"] == 1e6
    # a margin of 0 keeps only the best logit
    wide = calibrated.replace(rerank_min=-1e6, rerank_margin=0.0)
    decision = decide(PDF_PROMPT, sample_index, wide)
    assert decision.injected_ids == ("pdf",)


def test_its_own_floor_reaches_below_the_recall_floor(sample_index: Index) -> None:
    index = _with_gate(sample_index, RerankCalibration(-1e6, 1e6, "test", floor=-1.0))
    prompt = "why is my sourdough so dense"
    decision = decide(prompt, index, Config(preset="calibrated"))
    assert decision.stage is Stage.RERANK  # the top score is below recall_floor 0.5
    assert decision.gate(GateName.AGREEMENT_FLOOR).thresholds["floor"] == -1.0
    # the reference preset keeps §5.4's floor and §5.3's recall floor
    reference = decide(prompt, index, Config(preset="reference"))
    assert reference.stage is Stage.COSINE


def _library(train_only: bool):
    from explorer.engine.qa.cases import load_cases
    from explorer.engine.qa.libraries import LibraryCases, LibrarySpec

    cases = load_cases(str(SAMPLE_SKILLS / "cases.toml")).cases
    if train_only:
        train = tuple(case for case in cases if case.split == "train")
        validation = tuple(case for case in cases if case.split == "validation")
    else:
        train, validation = tuple(cases), ()
    return LibraryCases(
        LibrarySpec("sample", (str(SAMPLE_SKILLS),)), train, validation, (), "cases file"
    )


@pytest.mark.slow
def test_gate_calibration_keeps_the_budget_and_agrees_with_decide(sample_index: Index) -> None:
    from explorer.engine.qa.rerankcal import GateGrid, calibrate_reranker

    grid = GateGrid(floors=(None, 0.45, 0.3), mins=(-1.0, 0.25, 2.0), margins=(0.5, 3.0))
    report = calibrate_reranker([(_library(True), sample_index)], Config(), grid=grid)
    assert report.verified, report.verify_note
    assert report.grid_size == 2 * 3 * 3 * 2
    (result,) = report.libraries
    # never more train false injections than the same config without the reranker
    assert result.train["with"].false_injects <= result.train["without"].false_injects
    assert result.train["with"].hits >= result.train["without"].hits
    assert set(report.recommended) == {"floor", "rerank_min", "rerank_margin", "fast_path"}


@pytest.mark.slow
def test_gate_calibration_with_section_floor_agrees_with_decide(sample_index: Index) -> None:
    """A grid point without the reranker's own floor keeps §5.3's recall floor, as decide()
    does: stage 2 is not run for a prompt whose top score is under it."""
    from explorer.engine.qa.rerankcal import GateGrid, calibrate_reranker

    grid = GateGrid(floors=(None,), mins=(-3.0,), margins=(5.0,), fast_paths=(False,))
    report = calibrate_reranker([(_library(False), sample_index)], Config(), grid=grid)
    assert report.recommended["floor"] is None
    assert report.verified, report.verify_note


def test_gate_objective_counts_hits_over_all_libraries() -> None:
    """The chosen point wins on hits pooled over libraries, the count the shipping comparison
    makes, not on recall averaged per library, and never spends one library's false-inject
    budget to buy another's hits."""
    from explorer.engine.qa.rerankcal import Figures, best_point

    points = [(True, None, 0.0, 1.0), (True, None, 1.0, 1.0), (True, None, -1.0, 1.0)]
    baselines = [Figures(10, 4, 10, 1), Figures(100, 40, 50, 5)]
    outcomes = [
        [Figures(10, 5, 10, 1), Figures(100, 50, 50, 5)],  # 55 hits, mean recall 0.5
        [Figures(10, 7, 10, 1), Figures(100, 45, 50, 5)],  # 52 hits, mean recall 0.575
        [Figures(10, 9, 10, 2), Figures(100, 60, 50, 3)],  # most hits, library 1 over budget
    ]
    assert best_point(points, outcomes, baselines) == points[0]


def test_every_reranker_is_used_through_one_interface(packaged: Models) -> None:
    """No caller asks which kind of reranker it holds: stage 2 is `rerank.Reranker`."""
    import re
    from pathlib import Path

    from explorer.engine.inference.rerank import Reranker

    reranker: Reranker | None = packaged.reranker  # the loader's type is the interface
    assert reranker is not None and reranker.score("a pdf", ["merge pdf files"]).shape == (1,)
    root = Path(__file__).resolve().parents[2] / "explorer"
    asks = re.compile(r"isinstance\([^)]*(Reranker|CrossEncoder)")
    found = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if asks.search(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"branches on the kind of reranker: {found}"
