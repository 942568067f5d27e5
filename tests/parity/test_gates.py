"""Parity of the cascade's gates with the reference router (spec §5.4-§5.6).

Behaviour read from the reference's source (skill-inject 0.9.0), cited per case; it is
AGPL, so nothing here is copied from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.inference.rerank import OnnxCrossEncoder
from explorer.engine.route.pipeline import invoked_names
from tests.conftest import write_skill
from tests.parity.helpers import route
from tests.support.onnx_builders import build_tiny_cross_encoder

PDF = "Merge split and extract tables from pdf files and documents."
LIBRARY = {
    "pdf": PDF,
    "tmp": "Clean temporary scratch folders and caches.",
    "caveman-commit": "Write terse git commit messages in caveman style.",
}


@pytest.fixture
def index(tmp_path: Path) -> Index:
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    return build_index([root], Config(preset="reference"), assemble_models(BowEmbedder()))


@pytest.mark.parametrize(
    ("prompt", "invoked"),
    [
        ("/pdf", {"pdf"}),
        ("/pdf merge these", {"pdf"}),
        ("   /pdf merge these", {"pdf"}),  # leading whitespace is trimmed first
        ("/caveman:caveman-commit now", {"caveman-commit"}),  # /plugin:skill -> skill
        ("/a:b:pdf go", {"pdf"}),  # the last segment after ':'
        ("/ pdf", {"pdf"}),  # the first word after the slash, as the reference splits it
        ("merge /pdf and report.pdf", set()),  # not leading: not an invocation
        ("cd /tmp/x and clean it", set()),  # not leading
        ("/tmp/x is full", set()),  # '/' is not a command character: a path
        ("/etc/hosts is a path", set()),
        ("/", set()),
        ("/pdf.v2 go", set()),  # '.' is not a command character
        ("/PDF merge", {"PDF"}),  # kept as typed: matching is case-sensitive
    ],
)
def test_only_a_leading_slash_command_is_an_invocation(prompt: str, invoked: set[str]) -> None:
    """reference: src/hook.rs slash_command_id: trim the start, strip one '/', take the
    first whitespace-separated word; it must be all [A-Za-z0-9_:-], and `/plugin:skill`
    maps to its last ':' segment."""
    assert invoked_names(prompt) == invoked


def test_a_mid_prompt_slash_word_does_not_drop_a_skill(index: Index) -> None:
    decision = route("merge /pdf and " + PDF.lower(), index)
    assert "pdf" in decision.injected_ids
    assert decision.gate("invoked").skipped


def test_a_leading_invocation_drops_that_skill(index: Index) -> None:
    decision = route("/pdf " + PDF.lower(), index)
    assert "pdf" not in decision.injected_ids
    assert decision.row("pdf").verdict == "invoked"


def test_invocation_matching_is_case_sensitive(index: Index) -> None:
    """reference: src/hook.rs without_invoked compares the id as typed."""
    decision = route("/PDF " + PDF.lower(), index)
    assert "pdf" in decision.injected_ids


def _ce(directory: Path) -> OnnxCrossEncoder:
    vocab = "merge split pdf files documents tables extract temporary commit".split()
    model, tokenizer = build_tiny_cross_encoder(directory, vocab)
    return OnnxCrossEncoder(model, tokenizer, name="tiny-ce")


def _rerank_index(tmp_path: Path, encoder: OnnxCrossEncoder, config: Config) -> Index:
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    return build_index([root], config, assemble_models(BowEmbedder(), encoder, reranker_note="t"))


def test_a_failing_reranker_falls_back_to_the_cosine_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reference: src/rerank.rs returns no reranking when the model cannot score
    (`.ok()?`), and src/pipeline.rs then lets the stage-1 cosine result stand."""
    encoder = _ce(tmp_path / "ce")
    config = Config(preset="reference")
    index = _rerank_index(tmp_path, encoder, config)

    def broken(query: str, documents: list[str]) -> np.ndarray:
        raise RuntimeError("onnxruntime: out of memory")

    monkeypatch.setattr(encoder, "score", broken)
    decision = route(PDF.lower(), index, config)
    assert decision.stage == "cosine"
    assert decision.injected_ids == ("pdf",)
    gate = decision.gate("reranker")
    assert not gate.passed and "out of memory" in gate.note
    assert decision.gate("min_similarity").passed


def test_rerank_top_k_zero_means_the_cosine_stage(tmp_path: Path) -> None:
    """reference: src/rerank.rs returns no reranking for an empty candidate list, so
    `rerank_top_k = 0` leaves the decision to the cosine stage."""
    config = Config(preset="reference", rerank_top_k=0)
    index = _rerank_index(tmp_path, _ce(tmp_path / "ce"), config)
    decision = route(PDF.lower(), index, config)
    assert decision.stage == "cosine"
    assert decision.injected_ids == ("pdf",)
    assert "rerank_top_k = 0" in decision.gate("reranker").note
    union = Config(preset="reference", rerank_top_k=0, candidate_strategy="union")
    assert route(PDF.lower(), index, union).stage == "cosine"


def test_the_reranker_still_decides_when_it_works(tmp_path: Path) -> None:
    config = Config(preset="reference")
    index = _rerank_index(tmp_path, _ce(tmp_path / "ce"), config)
    assert route(PDF.lower(), index, config).stage == "rerank"
