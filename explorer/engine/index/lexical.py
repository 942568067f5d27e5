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


@dataclass(frozen=True)
class Explain:
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
    norm = k1 * (1.0 - b + b * dl / avgdl)
    weights: np.ndarray = tf * (k1 + 1.0) / (tf + norm[docs])
    return weights


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
    """An inverted BM25 index whose per-posting weights are precomputed at build time."""

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
        # their tf and precomputed BM25 weight, where (start, end) = _spans[t].
        vocabulary: dict[str, int] = {}
        term_of_token = [
            vocabulary.setdefault(term, len(vocabulary)) for doc in documents for term in doc
        ]
        doc_of_token = np.repeat(np.arange(self.n, dtype=np.int64), self.dl)
        pairs, tf = np.unique(
            np.array(term_of_token, dtype=np.int64) * max(self.n, 1) + doc_of_token,
            return_counts=True,
        )
        terms_of_pair, self._docs = np.divmod(pairs, max(self.n, 1))
        self._tf = tf.astype(np.float64)
        self._weights = _posting_weights(self._tf, self._docs, self.dl, self.avgdl, k1, b)
        bounds = np.searchsorted(terms_of_pair, np.arange(len(vocabulary) + 1))
        self._vocabulary = vocabulary
        self._spans: Any = TermSpans(vocabulary, bounds)
        self._unique = np.bincount(self._docs, minlength=self.n).astype(np.int64)

    def patched(self, changes: Mapping[int, Sequence[str]]) -> LexicalIndex:
        """A new index in which the documents at the given positions have new tokens.

        The library's statistics (dl, avgdl, df) and every precomputed weight are
        updated, so scores equal those of a full rebuild bit for bit; but instead of
        re-tokenising and re-sorting every posting, only the changed documents' postings
        are removed and inserted (numpy copies, milliseconds at 26,000 skills). `self` is
        not modified: a snapshot in use keeps its index.
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

        Skills added or removed shift every later position; this moves the postings of
        the others with one vectorised remap (it must be increasing, as path order is)
        instead of re-tokenising the library, then recomputes dl, avgdl, df and every
        weight with the same float operations as a build, so scores equal a full
        rebuild's bit for bit.
        """
        vocabulary = getattr(self, "_vocabulary", None)
        bounds = getattr(self._spans, "bounds", None)
        if vocabulary is None or bounds is None:
            raise ValueError("only an index built in memory can be patched")
        kept_old = np.flatnonzero(old_to_new >= 0)
        if np.any(np.diff(old_to_new[kept_old]) <= 0):
            raise ValueError("a remap must keep the documents' order")
        width = max(n, 1)
        vocabulary = dict(vocabulary)
        terms = np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))
        new_docs_of_old = old_to_new[self._docs] if self.n else self._docs
        keep = new_docs_of_old >= 0
        # Still sorted by (term, doc): the remap keeps the documents' order.
        keys = terms[keep] * width + new_docs_of_old[keep]
        tf = self._tf[keep]
        dl = np.zeros(n, dtype=np.int64)
        dl[old_to_new[kept_old]] = self.dl[kept_old]
        new_terms: list[int] = []
        new_docs: list[int] = []
        for position, tokens in changes.items():
            dl[position] = len(tokens)
            new_terms += [vocabulary.setdefault(term, len(vocabulary)) for term in tokens]
            new_docs += [position] * len(tokens)
        added, added_tf = np.unique(
            np.array(new_terms, dtype=np.int64) * width + np.array(new_docs, dtype=np.int64),
            return_counts=True,
        )
        at = np.searchsorted(keys, added)
        keys = np.insert(keys, at, added)
        tf = np.insert(tf, at, added_tf.astype(np.float64))
        terms_of_pair, docs = np.divmod(keys, width)
        index = LexicalIndex.__new__(LexicalIndex)
        index.ids, index.k1, index.b, index.n = tuple(ids), self.k1, self.b, n
        index.dl = dl
        index.avgdl = max(1.0, float(dl.mean())) if n else 1.0
        index._docs, index._tf = docs, tf
        index._weights = _posting_weights(tf, docs, dl, index.avgdl, self.k1, self.b)
        index._vocabulary = vocabulary
        index._spans = TermSpans(
            vocabulary, np.searchsorted(terms_of_pair, np.arange(len(vocabulary) + 1))
        )
        index._unique = np.bincount(docs, minlength=n).astype(np.int64)
        return index

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

        `spans` is anything with `get(term, default)` -> (start, end): a dict, or the
        store's binary search over sorted terms, so no vocabulary is decoded up front.
        """
        index = cls.__new__(cls)
        index.ids = tuple(ids)
        index.k1, index.b = k1, b
        index.n = len(index.ids)
        index.dl, index.avgdl = dl, avgdl
        index._docs, index._tf, index._weights = docs, tf, weights
        index._spans = spans
        index._unique = unique
        return index

    def df(self, term: str) -> int:
        start, end = self._spans.get(term, (0, 0))
        return int(end - start)

    def idf(self, term: str) -> float:
        """§5.2: Lucene idf, ln(1 + (N - df + 0.5) / (df + 0.5))."""
        df = self.df(term)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    @staticmethod
    def query_terms(prompt: str) -> tuple[str, ...]:
        """§5.2: the prompt's match tokens, de-duplicated, first occurrence order."""
        return tuple(dict.fromkeys(match_tokens(prompt)))

    def score(self, prompt: str) -> LexicalScores:
        return self.score_terms(self.query_terms(prompt))

    def score_terms(self, terms: tuple[str, ...]) -> LexicalScores:
        """`score` for query terms already read from the prompt (the router's parsed query)."""
        raw = np.zeros(self.n, dtype=np.float64)
        matched = np.zeros(self.n, dtype=np.int32)
        idf_sum = 0.0
        for term in terms:
            idf = self.idf(term)
            idf_sum += idf
            span = self._spans.get(term)
            if span is None:
                continue
            docs = self._docs[span[0] : span[1]]
            raw[docs] += idf * self._weights[span[0] : span[1]]
            matched[docs] += 1
        normalised = raw / idf_sum if idf_sum > 0 else np.zeros_like(raw)
        union = len(terms) + self._unique - matched
        jaccard = np.divide(matched, union, out=np.zeros(self.n), where=union > 0)
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
        terms: list[tuple[str, int, float, np.ndarray]] = []
        for term in query:
            tf = np.zeros(len(wanted), dtype=np.int64)
            start, end = self._spans.get(term, (0, 0))
            if end > start and len(wanted):
                docs = self._docs[start:end]
                at = np.minimum(np.searchsorted(docs, wanted), len(docs) - 1)
                hit = docs[at] == wanted
                tf[hit] = self._tf[start + at[hit]]
            terms.append((term, end - start, self.idf(term), tf))
        idf_sum = sum(idf for _, _, idf, _ in terms)
        return [self._explain(terms, idf_sum, row, int(index)) for row, index in enumerate(wanted)]

    def _explain(
        self, terms: list[tuple[str, int, float, np.ndarray]], idf_sum: float, row: int, index: int
    ) -> Explain:
        dl = int(self.dl[index])
        norm = self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)
        rows: list[TermExplain] = []
        score = 0.0
        for term, df, idf, tfs in terms:
            tf = int(tfs[row])
            contribution = 0.0
            if tf:
                # The same float operations, in the same order, as the vectorised score.
                contribution = idf * (tf * (self.k1 + 1.0) / (tf + norm))
                score += contribution
            rows.append(
                TermExplain(
                    term,
                    tf > 0,
                    tf,
                    df,
                    self.n,
                    idf,
                    dl,
                    self.avgdl,
                    self.k1,
                    self.b,
                    contribution,
                )
            )
        return Explain(
            skill_id=self.ids[index],
            terms=tuple(rows),
            score=score,
            normalised=score / idf_sum if idf_sum > 0 else 0.0,
            matched=tuple(row.term for row in rows if row.matched),
            missing=tuple(row.term for row in rows if not row.matched),
        )


class CrossScorer:
    """BM25 of many queries against every document: lint's near-duplicate check, which
    scores each description as a query on the others (§5.2 cross-scores).

    `LexicalIndex.score` with only what that check reads: the raw scores, into one
    buffer reused from query to query (no per-query arrays of the library's size, which
    at 26,000 skills cost more than the scoring), and each term's idf computed once. The
    values equal `score`'s bit for bit: the same products, added in the same order.

    Pruning was tried and measured worse: at 26,000 skills of families of variants, the
    documents that could reach the near-duplicate bar (max-score bounds) were ~1,000 a
    query, and scoring those alone cost more than this pass over the postings.
    """

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        self._raw = np.zeros(lexical.n, dtype=np.float64)
        self._terms: dict[str, tuple[float, int, int]] = {}

    def _term(self, term: str) -> tuple[float, int, int]:
        known = self._terms.get(term)
        if known is None:
            lexical = self._lexical
            start, end = lexical._spans.get(term, (0, 0))
            known = self._terms[term] = (lexical.idf(term), int(start), int(end))
        return known

    def scores(self, terms: Sequence[str]) -> tuple[np.ndarray, float]:
        """Raw BM25 of the query `terms` (distinct, in order) for every document, and Σ idf.
        The array is the scorer's own: it holds the next query's scores after the next
        call."""
        raw = self._raw
        raw.fill(0.0)
        idf_sum = 0.0
        docs, weights = self._lexical._docs, self._lexical._weights
        for term in terms:
            idf, start, end = self._term(term)
            idf_sum += idf
            if end > start:
                raw[docs[start:end]] += idf * weights[start:end]
        return raw, idf_sum
