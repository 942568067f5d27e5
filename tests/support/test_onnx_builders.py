"""Prove the test builders emit models that onnxruntime + tokenizers really load and run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from tests.support.onnx_builders import (
    CLS_ID,
    PAD_ID,
    SEP_ID,
    build_tiny_cross_encoder,
    build_tiny_embedder,
    build_wordlevel_tokenizer,
)

VOCAB = ["git", "commit", "rebase", "docker", "build", "image", "python", "test", "deploy", "magic"]


def _feeds(
    tokenizer_path: Path,
    session: ort.InferenceSession,
    texts: Sequence[str | tuple[str, str]],
) -> dict[str, np.ndarray]:
    """Tokenise with padding the way the engine does and keep only inputs the model declares."""
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_padding(pad_id=PAD_ID, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(list(texts))
    arrays = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    return {i.name: arrays[i.name] for i in session.get_inputs()}


def _score(directory: Path, pairs: list[tuple[str, str]], **kwargs: Any) -> np.ndarray:
    model_path, tokenizer_path = build_tiny_cross_encoder(directory, VOCAB, **kwargs)
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, _feeds(tokenizer_path, session, pairs))
    return logits


PAIRS = [
    ("git commit rebase", "How to rebase: git commit, then git rebase -i."),
    ("git commit rebase", "Build a docker image."),
    ("git commit rebase", "python test deploy magic words here"),
]


def test_tokenizer_lowercases_and_splits_punctuation(tmp_path: Path) -> None:
    tokenizer = Tokenizer.from_file(str(build_wordlevel_tokenizer(VOCAB, tmp_path / "t.json")))
    encoding = tokenizer.encode("Docker, BUILD!")
    assert encoding.tokens == ["[CLS]", "docker", "[UNK]", "build", "[UNK]", "[SEP]"]


def test_tokenizer_pair_layout(tmp_path: Path) -> None:
    tokenizer = Tokenizer.from_file(str(build_wordlevel_tokenizer(VOCAB, tmp_path / "t.json")))
    encoding = tokenizer.encode("Git commit", "Docker build")
    assert encoding.ids[0] == CLS_ID and encoding.ids[3] == SEP_ID and encoding.ids[-1] == SEP_ID
    assert encoding.tokens == ["[CLS]", "git", "commit", "[SEP]", "docker", "build", "[SEP]"]
    assert encoding.type_ids == [0, 0, 0, 0, 1, 1, 1]
    assert tokenizer.padding is None and tokenizer.truncation is None


def test_cross_encoder_ranks_matching_doc_first(tmp_path: Path) -> None:
    logits = _score(tmp_path, PAIRS)
    assert logits.shape == (3, 1) and logits.dtype == np.float32
    # Full overlap: 4 * 3/3 - 2 = 2; none: -2.
    np.testing.assert_allclose(logits[:, 0], [2.0, -2.0, -2.0], atol=1e-6)
    assert logits[0, 0] > logits[1, 0]


def test_cross_encoder_token_bias_wins(tmp_path: Path) -> None:
    logits = _score(tmp_path, PAIRS, token_bias={"Magic": 10.0})
    assert int(np.argmax(logits[:, 0])) == 2
    # Bias counts only in the document segment: a query word with bias changes nothing.
    plain = _score(tmp_path / "q", [("magic git", "docker")], token_bias={"magic": 10.0})
    np.testing.assert_allclose(plain[:, 0], [-2.0], atol=1e-6)


def test_cross_encoder_without_token_type_ids_matches(tmp_path: Path) -> None:
    with_ids = _score(tmp_path / "a", PAIRS, token_bias={"docker": 1.5})
    without = _score(tmp_path / "b", PAIRS, token_bias={"docker": 1.5}, with_token_type_ids=False)
    model_path = tmp_path / "b" / "model.onnx"
    names = [i.name for i in ort.InferenceSession(str(model_path)).get_inputs()]
    assert names == ["input_ids", "attention_mask"]
    np.testing.assert_allclose(with_ids, without, atol=1e-6)


def test_cross_encoder_custom_output_name_and_opset(tmp_path: Path) -> None:
    model_path, _ = build_tiny_cross_encoder(tmp_path, VOCAB, output_name="scores", opset=13)
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["scores"]
    with pytest.raises(ValueError):
        build_tiny_cross_encoder(tmp_path, VOCAB, opset=11)
    with pytest.raises(ValueError):
        build_tiny_cross_encoder(tmp_path, VOCAB, token_bias={"nope": 1.0})


@pytest.mark.parametrize("with_token_type_ids", [True, False])
def test_embedder_outputs_token_vectors(tmp_path: Path, with_token_type_ids: bool) -> None:
    model_path, tokenizer_path = build_tiny_embedder(
        tmp_path, VOCAB, dim=8, with_token_type_ids=with_token_type_ids
    )
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    texts = ["git commit git", "docker"]
    feeds = _feeds(tokenizer_path, session, texts)
    (hidden,) = session.run(None, feeds)
    assert session.get_outputs()[0].name == "last_hidden_state"
    assert hidden.shape == (2, feeds["input_ids"].shape[1], 8) and hidden.dtype == np.float32
    np.testing.assert_array_equal(hidden[0, 1], hidden[0, 3])  # "git" twice
    np.testing.assert_array_equal(hidden[0, 0], hidden[1, 0])  # [CLS] in both rows
    assert not np.allclose(hidden[0, 1], hidden[0, 2])  # different tokens differ
    # Same seed -> same table; different seed -> different vectors.
    build_tiny_embedder(tmp_path / "other", VOCAB, dim=8, seed=1)
    other = ort.InferenceSession(str(tmp_path / "other" / "model.onnx"))
    (hidden_other,) = other.run(None, _feeds(tokenizer_path, other, texts))
    assert not np.allclose(hidden, hidden_other)
