"""Stage 2 (spec §5.4): a single-logit ONNX cross-encoder and the agreement gate."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from explorer.engine.base.threads import batch_workers
from explorer.engine.inference.embed import onnx_session, pad_batch, readable_chars
from explorer.engine.inference.native import native_call

if TYPE_CHECKING:
    from tokenizers import Encoding

AGREEMENT_SLACK = 0.03  # §5.4: floor = min_similarity - 0.03
MAX_PAIR_TOKENS = 512  # §6: the reference reranker's maximum length


class Reranker(Protocol):
    """What stage 2 (§5.4) needs from a reranker: one logit per (prompt, document), higher
    for a better fit, on a scale its own gate (models.RERANK_CALIBRATION) was chosen for."""

    name: str  # shown to people; the key of its gate
    model_path: str

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """[len(documents)] float logits."""
        ...


class CrossEncoderError(RuntimeError):
    """A model file that is not a usable single-logit cross-encoder."""


class OnnxCrossEncoder:
    """Any single-logit ONNX cross-encoder (jina-reranker, ms-marco exports) + tokenizer.json."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        name: str,
        max_length: int = MAX_PAIR_TOKENS,
        threads: int | None = None,
        optimized_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self.model_path, self.tokenizer_path = str(model_path), str(tokenizer_path)
        self.tokenizer = Tokenizer.from_file(self.tokenizer_path)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        self.max_chars = readable_chars(max_length)
        self.session = onnx_session(self.model_path, threads, optimized_dir)
        self._inputs = {item.name for item in self.session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise CrossEncoderError(f"{self.model_path}: the model has no 'input_ids' input")
        self._output = self.session.get_outputs()[0].name
        self._executor: ThreadPoolExecutor | None = None
        self._executor_key = (0, 0)  # (process id, workers) it was made for

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """Raw logits, one per (query, document) pair, in input order.

        Each pair runs alone, unpadded: a dynamically quantised (int8) model scales its
        activations per batch, so a pair scored beside others, or padded to a longer
        neighbour, got a logit that moved with them (up to 0.8 on the packaged model).
        A logit is a property of its pair (docs/routing.md, "§5.4 Rerank and the agreement
        gate"); alone, 12 pairs of the packaged model cost what one batch of 12 did. The
        pairs run on every core (`batch_workers`), each still alone: at 26,000 skills a
        decision's reranking fell from 64-69 to 41 ms on 2 cores (one run, idle).
        """
        query, documents = query[: self.max_chars], [doc[: self.max_chars] for doc in documents]
        with native_call():  # tokenizers gives the GIL up while it encodes a batch
            encodings = self.tokenizer.encode_batch([(query, doc) for doc in documents])
        logits = np.empty(len(documents), dtype=np.float64)

        def run(positions: range) -> None:
            for position in positions:
                logits[position] = self._run([encodings[position]])[0]

        # onnxruntime's `run` releases the GIL and is safe from several threads; a pair's
        # logit does not depend on the thread it ran on.
        workers = min(batch_workers(), len(encodings))
        if workers > 1:
            shares = [range(first, len(encodings), workers) for first in range(workers)]
            list(self._pool(workers).map(run, shares))
        else:
            run(range(len(encodings)))
        return logits

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        """Threads kept for every call's pairs (each keystroke's decision scores a dozen
        or two); made anew for another number of workers, and in a forked child, which
        has the parent's executor but none of its threads."""
        key = (os.getpid(), workers)
        if self._executor is None or self._executor_key != key:
            if self._executor is not None and self._executor_key[0] == key[0]:
                self._executor.shutdown(wait=False)
            self._executor = ThreadPoolExecutor(workers, thread_name_prefix="rerank")
            self._executor_key = key
        return self._executor

    def _run(self, encodings: Sequence[Encoding]) -> np.ndarray:
        ids, mask, types = pad_batch(encodings)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        with native_call():
            output = np.asarray(self.session.run([self._output], feed)[0])
        if output.ndim == 2 and output.shape[1] == 1:
            output = output[:, 0]
        if output.ndim != 1:
            raise CrossEncoderError(
                f"{self.model_path}: expected one logit per pair, got output shape {output.shape}"
            )
        return output.astype(np.float64)


def sigmoid(logit: float) -> float:
    """§5.7: rerank confidence; stable for large |logit|."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    z = math.exp(logit)
    return z / (1.0 + z)


class RememberedLogits:
    """A reranker that scores each (prompt, document) pair once, for one run.

    A pair's logit does not depend on the other pairs of a call (`CrossEncoder.score` runs
    them one by one, unpadded), so a remembered one is the very logit `decide()` would
    compute. Runs that route the same pairs again and again save most of the reranker's
    work: the tuner between two candidate descriptions (only the edited skill's document
    changes), training between a library and its sampled small libraries."""

    def __init__(self, inner: Reranker) -> None:
        self._inner = inner
        self.name, self.model_path = inner.name, inner.model_path
        self._memo: dict[tuple[str, str], float] = {}

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        missing = [doc for doc in dict.fromkeys(documents) if (query, doc) not in self._memo]
        if missing:
            logits = self._inner.score(query, missing)
            self._memo.update(
                zip(((query, doc) for doc in missing), map(float, logits), strict=True)
            )
        return np.array([self._memo[(query, doc)] for doc in documents], dtype=np.float64)


def rerank_document(description: str, body_head: str) -> str:
    """§5.4: what the cross-encoder reads for a skill."""
    return description + "\n" + body_head


SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def sentences(description: str) -> list[str]:
    """A description's sentences, as its author punctuated them."""
    return [part.strip() for part in SENTENCE_END.split(description) if part.strip()]


@dataclass(frozen=True)
class Attribution:
    """What each sentence of a description does to the cross-encoder's logit for a prompt:
    `logit` with the whole description, and per sentence the logit lost when it is left
    out (positive: the sentence helped the skill; negative: it held it back)."""

    logit: float
    sentences: tuple[tuple[str, float], ...]


def sentence_attribution(
    reranker: Reranker | None, prompt: str, description: str, body_head: str
) -> Attribution | None:
    """Score the description whole and once without each sentence (one pair each, as the
    cascade scores them: rerank_document). None without a reranker, or a prompt."""
    if reranker is None or not prompt.strip():
        return None
    parts = sentences(description)
    documents = [rerank_document(description, body_head)] + [
        rerank_document(" ".join(parts[:i] + parts[i + 1 :]), body_head) for i in range(len(parts))
    ]
    logits = reranker.score(prompt, documents)
    whole = float(logits[0])
    return Attribution(
        whole, tuple((part, whole - float(logits[i + 1])) for i, part in enumerate(parts))
    )


@dataclass(frozen=True)
class Agreement:
    """§5.4's agreement gate over the reranked candidates, with every input kept."""

    floor: float
    eligible: tuple[int, ...]  # candidate skill indices with hybrid score >= floor
    best: float | None  # best eligible logit
    passed: tuple[int, ...]  # eligible, logit >= rerank_min and >= best - rerank_margin


def agreement_gate(
    candidates: Sequence[int],
    scores: np.ndarray,
    logits: dict[int, float],
    *,
    min_similarity: float,
    rerank_min: float,
    rerank_margin: float,
    floor: float | None = None,
) -> Agreement:
    """§5.4: candidates at or above the floor (min_similarity - 0.03, or a model's own
    calibrated `floor`, §9) whose logit clears rerank_min and is within rerank_margin of the
    best eligible logit."""
    if floor is None:
        floor = min_similarity - AGREEMENT_SLACK
    eligible = tuple(index for index in candidates if scores[index] >= floor)
    best = max((logits[index] for index in eligible), default=None)
    passed: tuple[int, ...] = ()
    if best is not None:
        passed = tuple(
            index
            for index in eligible
            if logits[index] >= rerank_min and logits[index] >= best - rerank_margin
        )
    return Agreement(floor, eligible, best, passed)
