"""Builders for tiny but real ONNX models and tokenizers, used only by tests.

Why: the engine loads rerankers/embedders with onnxruntime and ``tokenizers`` exactly as it would
load real sentence-transformers / cross-encoder exports. Building miniature models in-process lets
tests exercise that real loading and inference path without downloads or network access, while the
models' behaviour stays simple enough to assert on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordLevel

__all__ = [
    "CLS_ID",
    "PAD_ID",
    "SEP_ID",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "build_tiny_cross_encoder",
    "build_tiny_embedder",
    "build_wordlevel_tokenizer",
]

SPECIAL_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
PAD_ID, UNK_ID, CLS_ID, SEP_ID = 0, 1, 2, 3

_MIN_OPSET = 13  # ReduceSum/Unsqueeze take axes as inputs from opset 13 on.
_DYNAMIC_2D: list[str | int] = ["batch", "sequence"]


def _vocab_map(vocab: Sequence[str]) -> dict[str, int]:
    """Map token -> id: specials first, then lower-cased vocab words (deduplicated, in order).

    Why: WordLevel needs a unique id per token, and the Lowercase normalizer means only
    lower-case entries can ever be matched.
    """
    mapping = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    for word in vocab:
        lowered = word.lower()
        if lowered and lowered not in mapping:
            mapping[lowered] = len(mapping)
    return mapping


def build_wordlevel_tokenizer(vocab: Sequence[str], path: Path) -> Path:
    """Write a BERT-style WordLevel ``tokenizer.json`` to ``path`` and return ``path``.

    Why: a real ``tokenizers`` file (rather than a fake) lets the engine use
    ``Tokenizer.from_file`` unchanged. Pairs get type id 0 for the query segment and 1 for the
    document segment, like BERT cross-encoders. Padding and truncation are left off on purpose:
    the engine configures them itself.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(WordLevel(vocab=_vocab_map(vocab), unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", CLS_ID), ("[SEP]", SEP_ID)],
    )
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer.save(str(path))
    return path


def _input_infos(with_token_type_ids: bool) -> list[onnx.ValueInfoProto]:
    """Graph inputs named and shaped like a HuggingFace BERT export (dynamic batch/sequence)."""
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if with_token_type_ids else [])
    return [helper.make_tensor_value_info(n, TensorProto.INT64, _DYNAMIC_2D) for n in names]


def _finish_model(graph: onnx.GraphProto, opset: int, path: Path) -> Path:
    """Wrap ``graph`` in a model with the lowest IR version for ``opset``, check it, and save it.

    Why: the installed onnx may default to a newer IR version than onnxruntime accepts; pinning
    the minimum IR for the opset keeps the file loadable by older runtimes too.
    """
    opset_id = helper.make_opsetid("", opset)
    model = helper.make_model(
        graph,
        opset_imports=[opset_id],
        producer_name="skill-explorer-tests",
        ir_version=helper.find_min_ir_version_for([opset_id]),
    )
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def _check_opset(opset: int) -> None:
    """Reject opsets the graph cannot be expressed in, with a clear message instead of a crash."""
    latest = onnx.defs.onnx_opset_version()
    if not _MIN_OPSET <= opset <= latest:
        raise ValueError(f"opset must be between {_MIN_OPSET} and {latest}, got {opset}")


def build_tiny_cross_encoder(
    directory: Path,
    vocab: Sequence[str],
    *,
    token_bias: Mapping[str, float] | None = None,
    bias: float = -2.0,
    scale: float = 4.0,
    with_token_type_ids: bool = True,
    output_name: str = "logits",
    opset: int = 17,
) -> tuple[Path, Path]:
    """Write ``model.onnx`` + ``tokenizer.json`` for a single-logit reranker into ``directory``.

    Why: it behaves like a real query-document interaction model, so ranking tests are
    meaningful. With q/d the sets of vocab words in the query/document segments::

        logit = scale * |q & d| / max(1, |q|) + bias + sum(token_bias[t] for doc tokens t)

    A document holding more of the query's words scores higher, and a token with a large
    ``token_bias`` makes any document containing it win. Without ``token_type_ids`` the segment
    is derived from the first ``[SEP]`` (everything after it is the document), so both variants
    give identical logits. Output shape is ``[batch, 1]`` like ms-marco / jina rerankers.
    """
    _check_opset(opset)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab_map = _vocab_map(vocab)
    size = len(vocab_map)

    table = np.eye(size, dtype=np.float32)
    table[: len(SPECIAL_TOKENS)] = 0.0  # specials never count as words
    bias_vector = np.zeros(size, dtype=np.float32)
    for token, value in (token_bias or {}).items():
        if token.lower() not in vocab_map:
            raise ValueError(f"token_bias token {token!r} is not in the vocabulary")
        bias_vector[vocab_map[token.lower()]] = value

    def const(name: str, value: np.ndarray | float | int) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value), name=name)

    initializers = [
        const("embedding", table),
        const("token_bias", bias_vector),
        const("one", np.float32(1.0)),
        const("scale", np.float32(scale)),
        const("bias", np.float32(bias)),
        const("sep_id", np.int64(SEP_ID)),
        const("axis_seq", np.int64(1)),
        const("axes_seq", np.array([1], dtype=np.int64)),
        const("axes_vocab", np.array([2], dtype=np.int64)),
    ]
    nodes: list[onnx.NodeProto] = []
    if with_token_type_ids:
        nodes.append(
            helper.make_node("Cast", ["token_type_ids"], ["type_raw"], to=TensorProto.FLOAT)
        )
    else:
        # Exclusive CumSum of (id == [SEP]) is 0 up to and including the first [SEP], >= 1 after.
        nodes += [
            helper.make_node("Equal", ["input_ids", "sep_id"], ["is_sep"]),
            helper.make_node("Cast", ["is_sep"], ["is_sep_f"], to=TensorProto.FLOAT),
            helper.make_node("CumSum", ["is_sep_f", "axis_seq"], ["type_raw"], exclusive=1),
        ]
    nodes += [
        helper.make_node("Min", ["type_raw", "one"], ["doc_type"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["mask", "doc_type"], ["doc_w"]),
        helper.make_node("Sub", ["one", "doc_type"], ["query_type"]),
        helper.make_node("Mul", ["mask", "query_type"], ["query_w"]),
        # Bag-of-words per segment: [B,1,S] @ [B,S,V] -> [B,1,V], clamped to set indicators.
        helper.make_node("Gather", ["embedding", "input_ids"], ["emb"], axis=0),
        helper.make_node("Unsqueeze", ["query_w", "axes_seq"], ["query_w3"]),
        helper.make_node("Unsqueeze", ["doc_w", "axes_seq"], ["doc_w3"]),
        helper.make_node("MatMul", ["query_w3", "emb"], ["q_counts"]),
        helper.make_node("MatMul", ["doc_w3", "emb"], ["d_counts"]),
        helper.make_node("Min", ["q_counts", "one"], ["q_set"]),
        helper.make_node("Min", ["d_counts", "one"], ["d_set"]),
        helper.make_node("Mul", ["q_set", "d_set"], ["overlap_v"]),
        helper.make_node("ReduceSum", ["overlap_v", "axes_vocab"], ["overlap"], keepdims=0),
        helper.make_node("ReduceSum", ["q_set", "axes_vocab"], ["q_size"], keepdims=0),
        helper.make_node("Max", ["q_size", "one"], ["denominator"]),
        helper.make_node("Div", ["overlap", "denominator"], ["fraction"]),
        helper.make_node("Mul", ["fraction", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "bias"], ["base_logit"]),
        # Per-token bias summed over document positions only: [B,S] -> [B,1].
        helper.make_node("Gather", ["token_bias", "input_ids"], ["tok_bias"], axis=0),
        helper.make_node("Mul", ["tok_bias", "doc_w"], ["doc_tok_bias"]),
        helper.make_node("ReduceSum", ["doc_tok_bias", "axes_seq"], ["bias_sum"], keepdims=1),
        helper.make_node("Add", ["base_logit", "bias_sum"], [output_name]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        _input_infos(with_token_type_ids),
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["batch", 1])],
        initializer=initializers,
    )
    model_path = _finish_model(graph, opset, directory / "model.onnx")
    tokenizer_path = build_wordlevel_tokenizer(vocab, directory / "tokenizer.json")
    return model_path, tokenizer_path


def build_tiny_embedder(
    directory: Path,
    vocab: Sequence[str],
    *,
    dim: int = 16,
    seed: int = 0,
    output_name: str = "last_hidden_state",
    with_token_type_ids: bool = True,
) -> tuple[Path, Path]:
    """Write ``model.onnx`` + ``tokenizer.json`` for a token-embedding model into ``directory``.

    Why: mirrors a sentence-transformers transformer export whose output is per-token hidden
    states ``[batch, sequence, dim]``; pooling (mask-weighted mean or CLS) is the consumer's job,
    which is exactly what the engine must get right. Vectors come from a seeded random table, so
    identical tokens always get identical vectors and runs are reproducible.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    size = len(_vocab_map(vocab))
    table = np.random.default_rng(seed).standard_normal((size, dim)).astype(np.float32)
    # attention_mask / token_type_ids are accepted (like a real export) but do not change the
    # hidden states; consumers must apply the mask during pooling themselves.
    graph = helper.make_graph(
        [helper.make_node("Gather", ["embedding", "input_ids"], [output_name], axis=0)],
        "tiny_embedder",
        _input_infos(with_token_type_ids),
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [*_DYNAMIC_2D, dim])],
        initializer=[numpy_helper.from_array(table, name="embedding")],
    )
    model_path = _finish_model(graph, 17, directory / "model.onnx")
    tokenizer_path = build_wordlevel_tokenizer(vocab, directory / "tokenizer.json")
    return model_path, tokenizer_path
