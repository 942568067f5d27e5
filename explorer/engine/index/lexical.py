"""The BM25 channel over descriptions (spec §5.2, §9.2-§9.4), with a per-term explain.

Statistics are over the whole library (§9.2). Scoring is vectorised over an inverted
index; `explain` recomputes one skill's score term by term with the very same float
operations in the same order, so the contributions sum exactly to the ranked score.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from explorer.engine.base.text import match_tokens
from explorer.engine.discovery.skills import Skill

MIN_SHARED_TERMS = 2  # §5.2: the lexical winner must share this many distinct query terms


class TermExplain(NamedTuple):
    """One query term's part in one skill's BM25 score (Elasticsearch `_explain` style).

    A NamedTuple, not a dataclass: explaining ten skills builds a hundred of these per
    keystroke, and a tuple is several times cheaper to make.
    """

    term: str
    matched: bool
    tf: int
    df: int
    n: int
    idf: float
    dl: int
    avgdl: float
    k1: float
    b: float
    contribution: float


class Explain(NamedTuple):
    """One skill's BM25 score for one prompt, term by term (a NamedTuple for the reason
    `TermExplain` is one: a frozen dataclass costs several times more to make)."""

    skill_id: str
    terms: tuple[TermExplain, ...]
    score: float
    normalised: float
    matched: tuple[str, ...]
    missing: tuple[str, ...]


@dataclass(frozen=True)
class LexicalScores:
    """BM25 of every skill for one prompt, plus the overlap figures, as parallel arrays."""

    query_terms: tuple[str, ...]
    raw: np.ndarray  # float64 [N]
    normalised: np.ndarray  # raw / Σ idf(query terms)
    matched_terms: np.ndarray  # int32 [N]: distinct query terms found in the description
    jaccard: np.ndarray  # float64 [N], §9.4
    idf_sum: float


def indexed_text_tokens(skill: Skill, include_name_keywords: bool) -> list[str]:
    """§9.3: the description, optionally with the name and keywords; never the body."""
    tokens = list(skill.description_tokens)
    if include_name_keywords:
        tokens += match_tokens(skill.name.replace("-", " ").replace("_", " "))
        tokens += match_tokens(" ".join(skill.keywords))
    return tokens


def _posting_weights(
    tf: np.ndarray, docs: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float
) -> np.ndarray:
    """BM25's per-posting factor tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)).

    One function for the build and the patch, so both compute the same floats.
    """
    weights: np.ndarray = tf * (k1 + 1.0) / (tf + _length_norm(dl, avgdl, k1, b)[docs])
    return weights


def _length_norm(dl: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """Each document's k1 (1 - b + b dl / avgdl), the part of BM25's weight it brings."""
    norm: np.ndarray = k1 * (1.0 - b + b * dl / avgdl)
    return norm


def _idf(n: int, df: int) -> float:
    """§5.2: Lucene idf, ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class _Overlay(NamedTuple):
    """The postings of the documents a patch added or changed: a CSR over overlay
    documents (0, 1, ...), each at position `at[d]`, with the tokens it was made from."""

    spans: dict[str, tuple[int, int]]
    docs: np.ndarray
    tf: np.ndarray
    at: np.ndarray
    tokens: tuple[Sequence[str], ...]

    @classmethod
    def of(cls, documents: Sequence[tuple[int, Sequence[str]]]) -> _Overlay:
        vocabulary: dict[str, int] = {}
        terms: list[int] = []
        owners: list[int] = []
        for number, (_, tokens) in enumerate(documents):
            terms += [vocabulary.setdefault(term, len(vocabulary)) for term in tokens]
            owners += [number] * len(tokens)
        width = max(len(documents), 1)
        pairs, tf = np.unique(
            np.array(terms, dtype=np.int64) * width + np.array(owners, dtype=np.int64),
            return_counts=True,
        )
        terms_of_pair, docs = np.divmod(pairs, width)
        bounds = np.searchsorted(terms_of_pair, np.arange(len(vocabulary) + 1)).tolist()
        return cls(
            {term: (bounds[t], bounds[t + 1]) for term, t in vocabulary.items()},
            docs,
            tf.astype(np.float64),
            np.array([position for position, _ in documents], dtype=np.int64),
            tuple(tokens for _, tokens in documents),
        )


class TermSpans:
    """term -> (start, end) of its postings, from term ids and CSR bounds."""

    def __init__(self, vocabulary: dict[str, int], bounds: np.ndarray) -> None:
        self._vocabulary, self.bounds = vocabulary, bounds

    def get(self, term: str, default: Any = None) -> Any:
        ordinal = self._vocabulary.get(term)
        if ordinal is None:
            return default
        return int(self.bounds[ordinal]), int(self.bounds[ordinal + 1])

    def __iter__(self) -> Iterator[str]:
        return iter(self._vocabulary)

    def __len__(self) -> int:
        return len(self._vocabulary)


class LexicalIndex:
    """An inverted BM25 index.

    Postings are in CSR form. An index built from documents (or read from a store) is
    one CSR whose documents are positions. An index patched after a save shares that CSR
    (the base) with the index it came from and adds an overlay: the postings of the
    documents added or changed since, in a small CSR of its own, and where each base and
    overlay document sits now (-1: removed or replaced). Nothing of the library's size is
    copied per save but the per-document arrays (dl, distinct terms, BM25's length norm,
    where each document sits); once the overlay outgrows `OVERLAY_DOCS` the two are
    merged into one CSR again.

    Every BM25 weight follows from its posting's tf and its document's length norm
    (`_posting_weights`, the same float operations wherever it is computed), so a score
    is the same bit for bit whether the postings come from one CSR or from base and
    overlay: each document still gets one addition per query term, in query order.
    """

    OVERLAY_DOCS = 512  # overlay documents past which a patch merges base and overlay

    def __init__(
        self,
        documents: Sequence[Sequence[str]],
        ids: Sequence[str],
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.ids = tuple(ids)
        self.k1, self.b = k1, b
        self.n = len(documents)
        self.dl = np.array([len(doc) for doc in documents], dtype=np.int64)
        self.avgdl = max(1.0, float(self.dl.mean())) if self.n else 1.0
        # Postings in CSR form: for term t, documents _docs[start:end] (ascending) with
        # their tf, where (start, end) = _spans[t].
        vocabulary: dict[str, int] = {}
        # Each token as one number, term * n + document, made in one array in place: a
        # list of term numbers and two more arrays of its size (5.4 MB each at 26,000
        # skills) fewer at the first build's peak of memory.
        codes = np.fromiter(
            (vocabulary.setdefault(term, len(vocabulary)) for doc in documents for term in doc),
            dtype=np.int64,
            count=int(self.dl.sum()),
        )
        codes *= max(self.n, 1)
        codes += np.repeat(np.arange(self.n, dtype=np.int64), self.dl)
        pairs, tf = np.unique(codes, return_counts=True)
        del codes
        terms_of_pair, docs = np.divmod(pairs, max(self.n, 1))
        bounds = np.searchsorted(terms_of_pair, np.arange(len(vocabulary) + 1))
        self._flat(vocabulary, TermSpans(vocabulary, bounds), docs, tf.astype(np.float64), None)
        self._unique = np.bincount(docs, minlength=self.n).astype(np.int64)
        self._norm = _length_norm(self.dl, self.avgdl, k1, b)

    def _flat(
        self,
        vocabulary: dict[str, int] | None,
        spans: Any,
        docs: np.ndarray,
        tf: np.ndarray,
        weights: np.ndarray | None,
    ) -> None:
        """One CSR whose documents are positions, and no overlay."""
        for array in (docs, tf, weights):
            if array is not None and array.flags.writeable:
                array.flags.writeable = False  # shared by every patch made from this one
        self._vocabulary, self._spans = vocabulary, spans
        self._docs, self._tf, self._weights = docs, tf, weights
        self._base_at: np.ndarray | None = None  # base document -> position; None: itself
        self._over: _Overlay | None = None

    def patched(self, changes: Mapping[int, Sequence[str]]) -> LexicalIndex:
        """A new index in which the documents at the given positions have new tokens.

        The library's statistics (dl, avgdl, df) follow, so scores equal those of a full
        rebuild bit for bit; the postings of the other documents are shared with this
        index, not copied. `self` is not modified: a snapshot in use keeps its index.
        """
        old_to_new = np.arange(self.n, dtype=np.int64)
        old_to_new[np.fromiter(changes, dtype=np.int64, count=len(changes))] = -1
        return self.remapped(old_to_new, self.n, changes, self.ids)

    def remapped(
        self,
        old_to_new: np.ndarray,
        n: int,
        changes: Mapping[int, Sequence[str]],
        ids: Sequence[str],
    ) -> LexicalIndex:
        """A new index over `n` documents: document i of this one becomes document
        `old_to_new[i]` (-1: dropped, removed or re-tokenised), and `changes` gives the
        tokens of every new position that did not come from here (added or changed).

        Skills added or removed shift every later position; the base's postings stay
        where they are and only the map from base document to position is redone. The
        overlay takes the changed documents; dl, avgdl and each document's length norm
        are recomputed with the same float operations as a build.
        """
        if self._vocabulary is None:
            raise ValueError("only an index built in memory can be patched")
        kept_old = np.flatnonzero(old_to_new >= 0)
        if np.any(np.diff(old_to_new[kept_old]) <= 0):
            raise ValueError("a remap must keep the documents' order")
        # A position both kept and changed would hold two documents' postings, and
        # `score_terms` would add both.
        if changes and np.isin(np.fromiter(changes, np.int64), old_to_new[kept_old]).any():
            raise ValueError("a changed position must not also take a kept document")
        index = LexicalIndex.__new__(LexicalIndex)
        index.ids, index.k1, index.b, index.n = tuple(ids), self.k1, self.b, n
        dl = np.zeros(n, dtype=np.int64)
        dl[old_to_new[kept_old]] = self.dl[kept_old]
        unique = np.zeros(n, dtype=np.int64)
        unique[old_to_new[kept_old]] = self._unique[kept_old]
        for position, tokens in changes.items():
            dl[position] = len(tokens)
            unique[position] = len(set(tokens))
        index.dl, index._unique = dl, unique
        index.avgdl = max(1.0, float(dl.mean())) if n else 1.0
        index._norm = _length_norm(dl, index.avgdl, self.k1, self.b)

        def moved(positions: np.ndarray) -> np.ndarray:
            out = np.full(len(positions), -1, dtype=np.int64)
            alive = positions >= 0
            out[alive] = old_to_new[positions[alive]]
            return out

        base_at = np.arange(self.n, dtype=np.int64) if self._base_at is None else self._base_at
        documents: list[tuple[int, Sequence[str]]] = []
        if self._over is not None:
            now = moved(self._over.at)
            documents = [
                (int(position), tokens)
                for position, tokens in zip(now.tolist(), self._over.tokens, strict=True)
                if position >= 0
            ]
        documents += list(changes.items())
        index._vocabulary, index._spans = self._vocabulary, self._spans
        index._docs, index._tf, index._weights = self._docs, self._tf, None
        index._base_at = moved(base_at)
        index._over = _Overlay.of(documents) if documents else None
        if len(documents) > self.OVERLAY_DOCS:
            index._merge()
        return index

    def _merge(self) -> None:
        """Base and overlay as one CSR over positions again (a copy of the postings, once
        per `OVERLAY_DOCS` patched documents)."""
        assert self._vocabulary is not None and self._base_at is not None
        width = max(self.n, 1)
        vocabulary = dict(self._vocabulary)
        bounds = self._spans.bounds
        terms = np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))
        at = self._base_at[self._docs] if len(self._docs) else self._docs
        keep = at >= 0
        # Still sorted by (term, document): positions keep the base documents' order.
        keys = terms[keep] * width + at[keep]
        tf = self._tf[keep]
        new_terms: list[int] = []
        new_docs: list[int] = []
        if self._over is not None:
            for position, tokens in zip(self._over.at.tolist(), self._over.tokens, strict=True):
                new_terms += [vocabulary.setdefault(term, len(vocabulary)) for term in tokens]
                new_docs += [position] * len(tokens)
        added, added_tf = np.unique(
            np.array(new_terms, dtype=np.int64) * width + np.array(new_docs, dtype=np.int64),
            return_counts=True,
        )
        where = np.searchsorted(keys, added)
        keys = np.insert(keys, where, added)
        tf = np.insert(tf, where, added_tf.astype(np.float64))
        terms_of_pair, docs = np.divmod(keys, width)
        spans = TermSpans(
            vocabulary, np.searchsorted(terms_of_pair, np.arange(len(vocabulary) + 1))
        )
        self._flat(vocabulary, spans, docs, tf, None)

    @property
    def _one_csr(self) -> bool:
        """Base postings only, over positions: no patch since the last merge (`_merge`)."""
        return self._base_at is None and self._over is None

    def compacted(self) -> LexicalIndex:
        """This index as one CSR over positions (itself when it is one already): for the
        readers that walk every posting (the store's writer, lint's cross-scores)."""
        if self._one_csr:
            return self
        index = copy.copy(self)
        index._merge()
        return index

    def weights(self) -> np.ndarray:
        """Every posting's BM25 weight, in CSR order (of `compacted()`)."""
        flat = self.compacted()
        if flat._weights is not None:
            return flat._weights
        return _posting_weights(flat._tf, flat._docs, flat.dl, flat.avgdl, flat.k1, flat.b)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(positions, tf, BM25 weight) of the documents holding `term`, or None for a
        term no document of this index's base or overlay ever held. Positions ascend in
        a flat index; in a patched one, the base's come first, then the overlay's."""
        span = self._spans.get(term)
        if span is not None and self._weights is not None and self._base_at is None:
            start, end = span
            return self._docs[start:end], self._tf[start:end], self._weights[start:end]
        found = self._term_frequencies(term)
        if found is None:
            return None
        docs, tf = found
        weights: np.ndarray = tf * (self.k1 + 1.0) / (tf + self._norm[docs])
        return docs, tf, weights

    def _term_frequencies(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """`postings` without the weights, which an explain computes for its skills only."""
        span = self._spans.get(term)
        extra = self._over.spans.get(term) if self._over is not None else None
        if span is None and extra is None:
            return None
        start, end = span if span is not None else (0, 0)
        docs, tf = self._docs[start:end], self._tf[start:end]
        if self._base_at is not None:
            docs = self._base_at[docs]
            alive = docs >= 0
            if not alive.all():
                docs, tf = docs[alive], tf[alive]
        if extra is not None and self._over is not None:
            over_start, over_end = extra
            docs = np.concatenate([docs, self._over.at[self._over.docs[over_start:over_end]]])
            tf = np.concatenate([tf, self._over.tf[over_start:over_end]])
        return docs, tf

    def with_ids(self, ids: Sequence[str]) -> LexicalIndex:
        """The same index under other ids (a skill renamed in place)."""
        index = copy.copy(self)
        index.ids = tuple(ids)
        return index

    @classmethod
    def from_arrays(
        cls,
        ids: Sequence[str],
        *,
        k1: float,
        b: float,
        dl: np.ndarray,
        avgdl: float,
        docs: np.ndarray,
        tf: np.ndarray,
        weights: np.ndarray,
        spans: Any,
        unique: np.ndarray,
    ) -> LexicalIndex:
        """An index over arrays built earlier (the persisted store maps them from a file).

        `spans` is anything with `get(term, default)` -> (start, end) and `bounds`, the
        CSR bounds in term order (`TermSpans`): the store's binary search over sorted
        terms, so no vocabulary is decoded up front.
        """
        index = cls.__new__(cls)
        index.ids = tuple(ids)
        index.k1, index.b = k1, b
        index.n = len(index.ids)
        index.dl, index.avgdl = dl, avgdl
        index._flat(None, spans, docs, tf, weights)
        index._unique = unique
        index._norm = _length_norm(dl, avgdl, k1, b)
        return index

    def df(self, term: str) -> int:
        if self._one_csr:
            start, end = self._spans.get(term, (0, 0))
            return int(end - start)
        found = self.postings(term)
        return 0 if found is None else len(found[0])

    def idf(self, term: str) -> float:
        """§5.2: Lucene idf, ln(1 + (N - df + 0.5) / (df + 0.5))."""
        return _idf(self.n, self.df(term))

    @staticmethod
    def query_terms(prompt: str) -> tuple[str, ...]:
        """§5.2: the prompt's match tokens, de-duplicated, first occurrence order."""
        return tuple(dict.fromkeys(match_tokens(prompt)))

    def score(self, prompt: str) -> LexicalScores:
        return self.score_terms(self.query_terms(prompt))

    def score_terms(self, terms: tuple[str, ...]) -> LexicalScores:
        """`score` for query terms already read from the prompt (the router's parsed query)."""
        docs: list[np.ndarray] = []
        products: list[np.ndarray] = []
        idf_sum = 0.0
        for term in terms:
            found = self.postings(term)
            idf = _idf(self.n, 0 if found is None else len(found[0]))
            idf_sum += idf
            if found is not None:
                docs.append(found[0])
                products.append(idf * found[2])
        # One pass over all the postings, in query order: each document's sum is added up
        # term by term, as a loop of `raw[docs] += idf * weights` would, bit for bit.
        if docs:
            every = np.concatenate(docs)
            raw: np.ndarray = np.bincount(every, np.concatenate(products), self.n)
            matched = np.bincount(every, minlength=self.n).astype(np.int32)
        else:
            raw, matched = np.zeros(self.n), np.zeros(self.n, dtype=np.int32)
        normalised = raw / idf_sum if idf_sum > 0 else np.zeros_like(raw)
        if terms:
            # The union of query and description terms, made in place in one array: a new
            # array of the library's size is 50 pages at 26,000 skills, whose first touch
            # costs more than the arithmetic. It holds every query term, so it is >= 1.
            jaccard: np.ndarray = self._unique + float(len(terms))
            jaccard -= matched
            np.divide(matched, jaccard, out=jaccard)
        else:
            jaccard = np.zeros(self.n)
        return LexicalScores(terms, raw, normalised, matched, jaccard, idf_sum)

    def explain(self, prompt: str, skill_index: int) -> Explain:
        """Per query term, matched or not, how the skill's BM25 score is made (any skill)."""
        return self.explain_many(prompt, [skill_index])[0]

    def explain_terms(self, terms: Sequence[str], skill_index: int) -> Explain:
        """`explain` for query terms already read from the prompt, as a decision keeps them."""
        return self._explain_terms(terms, [skill_index])[0]

    def explain_many(self, prompt: str, skill_indices: Sequence[int]) -> list[Explain]:
        """`explain` for several skills, sharing the prompt's terms and their postings."""
        return self._explain_terms(self.query_terms(prompt), skill_indices)

    def _explain_terms(self, query: Sequence[str], skill_indices: Sequence[int]) -> list[Explain]:
        wanted = np.asarray(skill_indices, dtype=np.int64)
        # One CSR's postings ascend (`postings`); a patched index's overlay comes last.
        ascending = self._one_csr
        terms: list[tuple[str, int, float, list[int]]] = []
        for term in query:
            tf = [0] * len(wanted)
            # The term frequencies alone: an explain computes the weights of its skills.
            found = self._term_frequencies(term)
            df = 0 if found is None else len(found[0])
            if found is not None and df and len(wanted):
                docs, term_tf = found
                if not ascending:
                    order = np.argsort(docs, kind="stable")
                    docs, term_tf = docs[order], term_tf[order]
                at = docs.searchsorted(wanted)
                held = docs.take(at, mode="clip") == wanted
                tf = (term_tf.take(at, mode="clip") * held).astype(np.int64).tolist()
            terms.append((term, df, _idf(self.n, df), tf))
        idf_sum = sum(idf for _, _, idf, _ in terms)
        return [
            self._explain(terms, idf_sum, row, index, length)
            for row, (index, length) in enumerate(
                zip(wanted.tolist(), self.dl[wanted].tolist(), strict=True)
            )
        ]

    def _explain(
        self,
        terms: list[tuple[str, int, float, list[int]]],
        idf_sum: float,
        row: int,
        index: int,
        dl: int,
    ) -> Explain:
        k1, b, n, avgdl = self.k1, self.b, self.n, self.avgdl
        norm = k1 * (1.0 - b + b * dl / avgdl)
        rows: list[TermExplain] = []
        matched: list[str] = []
        missing: list[str] = []
        score = 0.0
        for term, df, idf, tfs in terms:
            tf = tfs[row]
            contribution = 0.0
            if tf:
                # The same float operations, in the same order, as the vectorised score.
                contribution = idf * (tf * (k1 + 1.0) / (tf + norm))
                score += contribution
                matched.append(term)
            else:
                missing.append(term)
            rows.append(TermExplain(term, tf > 0, tf, df, n, idf, dl, avgdl, k1, b, contribution))
        normalised = score / idf_sum if idf_sum > 0 else 0.0
        return Explain(
            self.ids[index], tuple(rows), score, normalised, tuple(matched), tuple(missing)
        )


class CrossScorer:
    """BM25 of many queries against every document: lint's near-duplicate check, which
    scores each description as a query on the others (§5.2 cross-scores) and keeps the
    documents at or over a bar.

    `LexicalIndex.score` with only what that check reads, the normalised scores of the
    documents that reach the bar (and of those the caller names), into one buffer reused
    from query to query. Every posting's product idf x weight, each term's idf and its
    largest product are computed once, as arrays over the postings (a lint asks for each
    term thousands of times): no Python object per term outlives its query. The explorer
    lints in a thread beside its others, and small objects held through a pass are
    spread over the allocator's arenas, which the other threads' objects then keep alive
    once the pass lets go (docs/benchmarks.md, "Kept open for an afternoon").

    A term in more than `COMMON_SHARE` of the documents is not spread over all its
    postings: its idf is small, so its products are too, and the most they can add
    (each term's largest product) decides which documents could still reach the bar;
    its products are looked up for those documents alone. On 26,000 replicated skills the
    pass spread 1.49 billion postings, 48,000 a query from the two words every variant's
    description shares. The scores equal `score`'s up to the rounding of adding the
    common terms last (a few units in the last place).
    """

    COMMON_SHARE = 0.05  # of the documents: a term in more is looked up, not spread
    REACH_SHARE = 0.5  # of the bar: at most what the terms left out may add together

    def __init__(self, lexical: LexicalIndex) -> None:
        # One CSR and every product, for this scorer alone: a decision reads a few terms'
        # postings, a lint every term's, many times.
        flat = lexical.compacted()
        self._spans, self._docs = flat._spans, flat._docs
        bounds = np.asarray(flat._spans.bounds, dtype=np.int64)
        held = np.diff(bounds) > 0
        starts, df = bounds[:-1][held], np.diff(bounds)[held]
        idf = np.array([_idf(flat.n, count) for count in df.tolist()], dtype=np.float64)
        self._products = np.repeat(idf, df) * flat.weights()
        # A term's idf and largest product, at its first posting.
        self._idf_at = np.zeros(len(flat._docs), dtype=np.float64)
        self._top_at = np.zeros(len(flat._docs), dtype=np.float64)
        self._idf_at[starts] = idf
        if len(starts):
            self._top_at[starts] = np.maximum.reduceat(self._products, starts)
        self._unheld_idf = _idf(flat.n, 0)  # a term no document holds: LexicalIndex.idf
        self._raw = np.zeros(lexical.n, dtype=np.float64)
        self._common = max(1, int(self.COMMON_SHARE * lexical.n))

    def _term(self, term: str) -> tuple[float, np.ndarray, np.ndarray, float]:
        """The term's idf, its postings' documents, their idf x weight, and the largest."""
        start, end = self._spans.get(term, (0, 0))
        if end <= start:
            return self._unheld_idf, self._docs[:0], self._products[:0], 0.0
        return (
            float(self._idf_at[start]),
            self._docs[start:end],
            self._products[start:end],
            float(self._top_at[start]),
        )

    def hits(
        self, terms: Sequence[str], bar: float, also: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The documents whose normalised BM25 (raw / Σ idf) for the query `terms`
        (distinct, in order) is at least `bar`, with the documents of `also` (ascending)
        whatever their score: both ascending, and their scores."""
        known = [self._term(term) for term in terms]
        idf_sum = sum(idf for idf, *_ in known)
        if idf_sum <= 0:
            return also, np.zeros(len(also))
        # The commonest terms are left out while the most they can add stays within half
        # the bar: only documents whose other terms bring the other half are candidates.
        left_out: list[int] = []
        reach = 0.0
        for k in sorted(range(len(known)), key=lambda k: -len(known[k][1])):
            top = known[k][3]
            if len(known[k][1]) <= self._common or reach + top > self.REACH_SHARE * bar * idf_sum:
                break
            left_out.append(k)
            reach += top
        raw = self._raw
        raw.fill(0.0)
        for k, (_idf, docs, products, _top) in enumerate(known):
            if len(docs) and k not in left_out:
                raw[docs] += products
        # What could reach the bar once the common terms are added, with room for rounding.
        need = bar * idf_sum - reach
        candidates = np.flatnonzero(raw >= need - 1e-9 * max(abs(need), 1.0))
        candidates = np.union1d(candidates, also)
        scores = raw[candidates]
        for k in sorted(left_out):
            _idf, docs, products, _top = known[k]
            at = np.minimum(np.searchsorted(docs, candidates), len(docs) - 1)
            scores += np.where(docs[at] == candidates, products[at], 0.0)
        scores /= idf_sum
        keep = scores >= bar
        if len(also):
            keep |= np.isin(candidates, also, assume_unique=True)
        return candidates[keep], scores[keep]
