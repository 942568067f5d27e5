"""The BM25 channel over descriptions (spec §5.2, §9.2-§9.4), with a per-term explain.

Statistics are over the whole library (§9.2). Scoring is vectorised over an inverted
index; `explain` recomputes one skill's score term by term with the very same float
operations in the same order, so the contributions sum exactly to the ranked score.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.engine.skills import Skill
from explorer.engine.text import match_tokens

MIN_SHARED_TERMS = 2  # §5.2: the lexical winner must share this many distinct query terms


@dataclass(frozen=True)
class TermExplain:
    """One query term's part in one skill's BM25 score (Elasticsearch `_explain` style)."""

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
    tokens = match_tokens(skill.description)
    if include_name_keywords:
        tokens += match_tokens(skill.name.replace("-", " ").replace("_", " "))
        tokens += match_tokens(" ".join(skill.keywords))
    return tokens


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
        self._term_counts = [Counter(doc) for doc in documents]
        self._unique = np.array([len(counts) for counts in self._term_counts], dtype=np.int64)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for doc_index, counts in enumerate(self._term_counts):
            for term, tf in counts.items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(doc_index)
                tfs.append(tf)
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        norm = self.k1 * (1.0 - self.b + self.b * self.dl / self.avgdl)
        for term, (docs, tfs) in postings.items():
            doc_array = np.array(docs, dtype=np.int64)
            tf_array = np.array(tfs, dtype=np.float64)
            weights = tf_array * (self.k1 + 1.0) / (tf_array + norm[doc_array])
            self._postings[term] = (doc_array, weights)

    def df(self, term: str) -> int:
        posting = self._postings.get(term)
        return 0 if posting is None else len(posting[0])

    def idf(self, term: str) -> float:
        """§5.2: Lucene idf, ln(1 + (N - df + 0.5) / (df + 0.5))."""
        df = self.df(term)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    @staticmethod
    def query_terms(prompt: str) -> tuple[str, ...]:
        """§5.2: the prompt's match tokens, de-duplicated, first occurrence order."""
        return tuple(dict.fromkeys(match_tokens(prompt)))

    def score(self, prompt: str) -> LexicalScores:
        terms = self.query_terms(prompt)
        raw = np.zeros(self.n, dtype=np.float64)
        matched = np.zeros(self.n, dtype=np.int32)
        idf_sum = 0.0
        for term in terms:
            idf = self.idf(term)
            idf_sum += idf
            posting = self._postings.get(term)
            if posting is None:
                continue
            docs, weights = posting
            raw[docs] += idf * weights
            matched[docs] += 1
        normalised = raw / idf_sum if idf_sum > 0 else np.zeros_like(raw)
        union = len(terms) + self._unique - matched
        jaccard = np.divide(matched, union, out=np.zeros(self.n), where=union > 0)
        return LexicalScores(terms, raw, normalised, matched, jaccard, idf_sum)

    def explain(self, prompt: str, skill_index: int) -> Explain:
        """Per query term, matched or not, how the skill's BM25 score is made (any skill)."""
        counts = self._term_counts[skill_index]
        dl = int(self.dl[skill_index])
        norm = self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)
        rows: list[TermExplain] = []
        score = 0.0
        idf_sum = 0.0
        for term in self.query_terms(prompt):
            tf = counts.get(term, 0)
            idf = self.idf(term)
            idf_sum += idf
            contribution = 0.0
            if tf:
                contribution = idf * (tf * (self.k1 + 1.0) / (tf + norm))
                score += contribution
            rows.append(
                TermExplain(
                    term,
                    tf > 0,
                    tf,
                    self.df(term),
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
            skill_id=self.ids[skill_index],
            terms=tuple(rows),
            score=score,
            normalised=score / idf_sum if idf_sum > 0 else 0.0,
            matched=tuple(row.term for row in rows if row.matched),
            missing=tuple(row.term for row in rows if not row.matched),
        )
