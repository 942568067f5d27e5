"""Stage 2 (spec §5.4): a single-logit ONNX cross-encoder and the agreement gate."""

from __future__ import annotations

import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from explorer.engine.base.text import scrub_surrogates
from explorer.engine.base.threads import batch_workers, kept_pool
from explorer.engine.inference.embed import onnx_session, pad_batch, readable_chars
from explorer.engine.inference.native import native_call

if TYPE_CHECKING:
    from tokenizers import Encoding

AGREEMENT_SLACK = 0.03  # §5.4: floor = min_similarity - 0.03
MAX_PAIR_TOKENS = 512  # §6: the reference reranker's maximum length
# Texts whose word pieces a cross-encoder keeps (`OnnxCrossEncoder._pieces`), up to about
# 6 KB each: a tune run reads some 220 texts again and again, a keystroke a dozen or two,
# and an explorer kept open all afternoon should not hold more.
PIECES_KEPT = 256


class Reranker(Protocol):
    """What stage 2 (§5.4) needs from a reranker: one logit per (prompt, document), higher
    for a better fit, on a scale its own gate (models.RERANK_CALIBRATION) was chosen for."""

    name: str  # shown to people; the key of its gate
    model_path: str

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """[len(documents)] float logits."""
        ...


@runtime_checkable
class ReadWindow(Protocol):
    """A reranker that can say how much of a document it reads beside a prompt."""

    def read_chars(self, query: str, document: str) -> int | None:
        """Characters of `document` the model reads beside `query` (None: all of them, as
        nothing was cut)."""
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
        self.tokenizer.no_truncation()  # a tokenizer.json may bring its own
        self._max_length = max_length
        self._joins = self._joins_pairs()
        self._truncate_pairs()
        self._kept: OrderedDict[str, _Pieces] = OrderedDict()
        # The tokenizer and the kept pieces: single texts are split with the truncation
        # off (one tokenizer, not two: loading one costs the hook 30 ms).
        self._lock = threading.Lock()
        self.max_chars = readable_chars(max_length)
        self.session = onnx_session(self.model_path, threads, optimized_dir)
        self._inputs = {item.name for item in self.session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise CrossEncoderError(f"{self.model_path}: the model has no 'input_ids' input")
        self._output = self.session.get_outputs()[0].name

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
        query = scrub_surrogates(query[: self.max_chars])
        documents = [scrub_surrogates(doc[: self.max_chars]) for doc in documents]
        encodings = self._encode_pairs(query, documents)
        logits = np.empty(len(documents), dtype=np.float64)

        def run(positions: range) -> None:
            for position in positions:
                logits[position] = self._run([encodings[position]])[0]

        # onnxruntime's `run` releases the GIL and is safe from several threads; a pair's
        # logit does not depend on the thread it ran on.
        workers = min(batch_workers(), len(encodings))
        if workers > 1:
            shares = [range(first, len(encodings), workers) for first in range(workers)]
            list(kept_pool("rerank").map(run, shares))
        else:
            run(range(len(encodings)))
        return logits

    def _encode_pairs(self, query: str, documents: Sequence[str]) -> list[Encoding]:
        """The pairs with the ids, type ids and attention mask the tokenizer's `encode`
        gives them (not its `overflowing`: `read_chars` encodes whole), from each text's
        word pieces.

        Tokenising a pair cost about as much as running it (1.7 ms against 2.7 ms for a
        Korean skill's description and body head), and the same texts come back: a
        keystroke pairs a new prompt with the documents of the last one, the tuner a new
        description with the same prompts. So each text is split once (`_pieces`) and a
        pair is joined by the tokenizer's own truncation and template (`post_process`,
        what `encode` does after splitting its two texts). The longest-first truncation
        depends on which side is longer, so where a side's kept opening would turn that
        around, the pair is encoded whole; so is every pair of a tokenizer whose template
        does not join two texts as `encode` does (`_joins_pairs`)."""
        if not self._joins:
            with self._lock, native_call():
                return list(self.tokenizer.encode_batch([(query, doc) for doc in documents]))
        with self._lock:
            pieces = self._pieces([query, *documents])
            first, pairs = pieces[0], []
            for document, second in zip(documents, pieces[1:], strict=True):
                kept = len(first.encoding.ids) - len(second.encoding.ids)
                whole = first.length - second.length
                if (kept > 0, kept < 0) == (whole > 0, whole < 0):
                    pairs.append(self.tokenizer.post_process(first.encoding, second.encoding))
                else:
                    pairs.append(self.tokenizer.encode(query, document))
        return pairs

    def _joins_pairs(self) -> bool:
        """Whether `post_process` of two texts' pieces gives what `encode` gives the pair
        (checked once, before the truncation is set): a tokenizer without a template
        leaves the second text's type ids at 0, where `encode` sets 1."""
        query, document = "which tool fits this request", "a tool for requests"
        sides = self.tokenizer.encode_batch([query, document], add_special_tokens=False)
        joined = self.tokenizer.post_process(sides[0], sides[1])
        whole = self.tokenizer.encode(query, document)
        return (joined.ids, joined.type_ids, joined.attention_mask) == (
            whole.ids,
            whole.type_ids,
            whole.attention_mask,
        )

    def _truncate_pairs(self) -> None:
        self.tokenizer.enable_truncation(max_length=self._max_length, strategy="longest_first")

    def _pieces(self, texts: Sequence[str]) -> list[_Pieces]:
        """Each text's word pieces, the last `PIECES_KEPT` texts remembered (the caller
        holds `_lock`)."""
        known = {text: self._kept[text] for text in texts if text in self._kept}
        for text in known:
            self._kept.move_to_end(text)
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            try:
                self.tokenizer.no_truncation()
                with native_call():  # tokenizers gives the GIL up while it encodes a batch
                    encodings = self.tokenizer.encode_batch(missing, add_special_tokens=False)
                for text, encoding in zip(missing, encodings, strict=True):
                    opening = self._opening(text, encoding)
                    if opening is None:  # serves this call only
                        known[text] = _Pieces(encoding, len(encoding.ids))
                    else:
                        known[text] = self._kept[text] = opening
            finally:
                self._truncate_pairs()
            while len(self._kept) > PIECES_KEPT:
                self._kept.popitem(last=False)
        return [known[text] for text in texts]

    def _opening(self, text: str, encoding: Encoding) -> _Pieces | None:
        """A long text's pieces as far as a pair can read them and one more, so a kept
        description costs a few kilobytes, not its whole body head's. The text is cut
        where the word after them begins (where the next piece begins, if no word does)
        and split again. None when the cut text splits otherwise (a normaliser that reads
        ahead, a word cut in two): such a text is not kept."""
        length, readable = len(encoding.ids), self._max_length + 1
        if length <= readable:
            return _Pieces(encoding, length)
        words, after = encoding.word_ids, readable
        if words[readable - 1] is not None:
            after = next(
                (i for i in range(readable, length) if words[i] != words[readable - 1]), after
            )
        cut = self.tokenizer.encode(text[: encoding.offsets[after][0]], add_special_tokens=False)
        if len(cut.ids) < readable or cut.ids[:readable] != encoding.ids[:readable]:
            return None
        return _Pieces(cut, length)

    def read_chars(self, query: str, document: str) -> int | None:
        """The pair is cut to `max_length` word pieces, the longer side first, so a long
        description's end may never reach the model: where its last piece read ends (None:
        nothing was cut; a trailing character the tokenizer drops is not a cut)."""
        query = scrub_surrogates(query[: self.max_chars])
        document = scrub_surrogates(document[: self.max_chars])
        with self._lock:
            encoding = self.tokenizer.encode(query, document)
        if not encoding.overflowing:
            return None
        pieces = zip(encoding.offsets, encoding.sequence_ids, strict=True)
        return max((end for (_, end), side in pieces if side == 1), default=0)

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


@dataclass(frozen=True)
class _Pieces:
    """One side of a pair: the word pieces of a text, or of its opening when the text has
    more than a pair can read (`OnnxCrossEncoder._opening`), and the whole text's count."""

    encoding: Encoding
    length: int


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
    work: the tuner between two candidate descriptions and the what-if screen between two
    keystrokes (only the edited skill's document changes), training between a library and
    its sampled small libraries.

    Kept by document, then prompt: each document's text is held once however many prompts
    it was scored against. With `limit`, more pairs than that forget the documents scored
    first, which bounds a long what-if session's memory (each keystroke brings a new
    document)."""

    def __init__(self, inner: Reranker, limit: int | None = None) -> None:
        self.inner = inner
        self.name, self.model_path = inner.name, inner.model_path
        self._limit = limit
        self._pairs = 0
        self._memo: dict[str, dict[str, float]] = {}
        self._lock = threading.Lock()  # the what-if screen's runs may overlap a moment

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        with self._lock:
            known = {
                doc: logits[query]
                for doc in documents
                if (logits := self._memo.get(doc)) is not None and query in logits
            }
        missing = [doc for doc in dict.fromkeys(documents) if doc not in known]
        if missing:
            known.update(zip(missing, map(float, self.inner.score(query, missing)), strict=True))
            with self._lock:
                for doc in missing:
                    prompts = self._memo.setdefault(doc, {})
                    if query not in prompts:  # another thread may have stored it
                        prompts[query] = known[doc]
                        self._pairs += 1
                self._forget_oldest()
        return np.array([known[doc] for doc in documents], dtype=np.float64)

    @property
    def pairs(self) -> int:
        return self._pairs

    def _forget_oldest(self) -> None:
        """Past `limit` pairs, the documents first scored go until half of it is left: a
        what-if session's early edits before the library's own documents, which its next
        run scores again."""
        if self._limit is None or self._pairs <= self._limit:
            return
        while self._memo and self._pairs > self._limit // 2:
            self._pairs -= len(self._memo.pop(next(iter(self._memo))))

    def read_chars(self, query: str, document: str) -> int | None:
        inner = self.inner
        return inner.read_chars(query, document) if isinstance(inner, ReadWindow) else None


def rerank_document(description: str, body_head: str) -> str:
    """§5.4: what the cross-encoder reads for a skill."""
    return description + "\n" + body_head


SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def sentences(description: str) -> list[str]:
    """A description's sentences, as its author punctuated them."""
    return [part.strip() for part in SENTENCE_END.split(description) if part.strip()]


class Reading(Enum):
    """How much of a sentence the cross-encoder reads beside the prompt."""

    WHOLE = "whole"
    PART = "part"  # the window ends inside it
    UNREAD = "unread"  # past the window: nothing it says reaches the model


@dataclass(frozen=True)
class SentenceEffect:
    text: str
    delta: float  # the logit lost when the sentence is left out
    reading: Reading

    def number(self) -> str:
        """Its column: the delta, or `unread` (leaving it out changes nothing)."""
        return "unread" if self.reading is Reading.UNREAD else f"{self.delta:+6.2f}"

    def remark(self) -> str:
        """After the sentence: where the window ends inside it."""
        return "  (the window ends inside it)" if self.reading is Reading.PART else ""


UNREAD_LISTED = 3  # sentences past the window listed by name; the rest are counted


@dataclass(frozen=True)
class Attribution:
    """What each sentence of a description does to the cross-encoder's logit for a prompt:
    `logit` with the whole description, and per sentence the logit lost when it is left
    out (positive: the sentence helped the skill; negative: it held it back).

    The pair is cut to the model's window, so a sentence past it changes nothing, and
    leaving an earlier one out lets later text in: its number then carries what that text
    does too. `read_chars` says where the window ends in the description (None: it reads
    all of it, or the reranker cannot say), so an author adding words at the end learns
    that the cross-encoder will not see them."""

    logit: float
    sentences: tuple[SentenceEffect, ...]
    description_chars: int
    read_chars: int | None = None
    # False: the decision did not rerank this skill (not one of its candidates), so the
    # logit is the one it would get; the caller who holds the decision says so.
    reranked: bool = True

    @property
    def listed(self) -> tuple[SentenceEffect, ...]:
        """The sentences worth a line: every one the model reads, and the first
        UNREAD_LISTED past the window, which show where it ends; `unlisted` counts the rest
        (a description of thousands of sentences is not thousands of lines)."""
        unread = [e for e in self.sentences if e.reading is Reading.UNREAD]
        read = [e for e in self.sentences if e.reading is not Reading.UNREAD]
        return (*read, *unread[:UNREAD_LISTED])

    @property
    def unlisted(self) -> int:
        return len(self.sentences) - len(self.listed)

    def notes(self) -> list[str]:
        """What an author needs to read the numbers right: whether the decision reranked
        the skill at all, and where the window ends when it cuts the description."""
        notes = [] if self.reranked else ["not a candidate for this prompt: the logit it would get"]
        if self.read_chars is not None:
            notes.append(
                f"it reads the first {self.read_chars:,} of the description's "
                f"{self.description_chars:,} characters beside this prompt, its window "
                "counting the prompt's word pieces too; a sentence past it changes nothing, "
                "and leaving an earlier one out lets later text in"
            )
        return notes


def _reading(start: int, end: int, read: int | None) -> Reading:
    if read is None or end <= read:
        return Reading.WHOLE
    return Reading.PART if start < read else Reading.UNREAD


def sentence_attribution(
    reranker: Reranker | None, prompt: str, description: str, body_head: str
) -> Attribution | None:
    """Score the description whole and once without each sentence the model reads (one
    pair each, as the cascade scores them: rerank_document). A sentence past the window is
    not scored: the model reads the same text without it, so it changes nothing, and a
    description of thousands of sentences costs a pair per sentence in the window only.
    None without a reranker, or a prompt."""
    if reranker is None or not prompt.strip():
        return None
    parts = sentences(description)
    whole_document = rerank_document(description, body_head)
    read = reranker.read_chars(prompt, whole_document) if isinstance(reranker, ReadWindow) else None
    if read is not None and read >= len(description.rstrip()):
        read = None  # the whole description is read
    readings, cursor = [], 0
    for part in parts:
        start = max(description.find(part, cursor), cursor)
        cursor = start + len(part)
        readings.append(_reading(start, cursor, read))
    scored = [i for i, reading in enumerate(readings) if reading is not Reading.UNREAD]
    documents = [whole_document] + [
        rerank_document(" ".join(parts[:i] + parts[i + 1 :]), body_head) for i in scored
    ]
    logits = reranker.score(prompt, documents)
    whole = float(logits[0])
    without = dict(zip(scored, map(float, logits[1:]), strict=True))
    effects = tuple(
        SentenceEffect(part, whole - without.get(i, whole), reading)
        for i, (part, reading) in enumerate(zip(parts, readings, strict=True))
    )
    return Attribution(whole, effects, len(description), read)


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
