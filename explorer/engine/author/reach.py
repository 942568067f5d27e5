"""Which cases an edit of one skill's description can change, found without routing them.

An edit moves one skill's vectors, its BM25 postings and the idf of the words it adds or
removes. A case whose prompt the skill was not near before (among the prompt's nearest
skills by either model's cosine, §9.14, or by BM25, nor named by a keyword or a trigger
phrase), that the new vectors do not bring near, and that has none of those words, keeps
its decision: the skill stays out of its candidates and no table the cascade reads for
it changes. The tuner routes only the cases an edit reaches (docs/tune.md, "Check"), and
the what-if screen likewise; tests/engine/test_tune.py checks the rule against routing
every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.base.text import keyword_tokens, match_tokens
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.cases import Case
from explorer.engine.route.relevance import BM25_POOL, MULTILINGUAL_POOL

NEAR_MARGIN = 3  # skills beyond the reranked top k that still count as near a prompt


@dataclass(frozen=True)
class Nearest:
    """A prompt in one vector space: its vector, every skill's cosine, and the cosine a skill
    needs to be among its `pool` nearest (and NEAR_MARGIN more); None without the space."""

    query: np.ndarray | None = None
    cosine: np.ndarray | None = None
    bar: float = np.inf

    @classmethod
    def of(cls, prompt: str, embedder: Any, vectors: Any, pool: int) -> Nearest:
        if embedder is None or vectors is None or not prompt.strip():
            return cls()
        vector = embedder.embed_query(prompt)
        if vector.shape[0] != vectors.shape[1]:
            return cls()
        cosine = np.nan_to_num(vectors @ vector, nan=-np.inf)
        rank = min(len(cosine), pool + NEAR_MARGIN)
        return cls(vector, cosine, float(np.sort(cosine)[-rank]) if rank else np.inf)

    def near(self, position: int) -> bool:
        return self.cosine is not None and float(self.cosine[position]) >= self.bar

    def without_cosines(self) -> Nearest:
        """What `reaches` reads, kept: the every-skill cosines go (at 26,000 skills, 100 KB
        a prompt)."""
        return Nearest(self.query, None, self.bar)

    def reaches(self, vectors: Any, position: int) -> bool:
        """Whether a skill whose row of `vectors` changed is now among the nearest."""
        if self.query is None or vectors is None:
            return False
        return float(vectors[position] @ self.query) >= self.bar


@dataclass(frozen=True)
class Measured:
    """One prompt on the unedited library, for any skill's reach check."""

    dense: Nearest
    bm25: np.ndarray  # every skill's BM25
    terms: frozenset[str]
    keywords: frozenset[str]
    multilingual: Nearest  # §9.14: its nearest skills join the candidates too


def measure(prompt: str, index: Index, config: Config) -> Measured:
    return Measured(
        Nearest.of(prompt, index.models.embedder, index.vectors, max(config.rerank_top_k, 1)),
        index.lexical.score(prompt).raw,
        frozenset(index.lexical.query_terms(prompt)),
        frozenset(keyword_tokens(prompt)),
        Nearest.of(prompt, index.models.multilingual, index.multilingual, MULTILINGUAL_POOL),
    )


@dataclass(frozen=True)
class Reach:
    """A case, measured once: the prompt in each vector space (with the cosine a skill needs
    to be among its nearest), its BM25 terms, and whether the skill is near it already."""

    dense: Nearest
    terms: frozenset[str]
    near: bool
    multilingual: Nearest

    def reached(self, changed: frozenset[str], edited: Index, position: int) -> bool:
        """Whether the edit can change this case's decision: the skill was near it, the
        prompt has a word the edit adds or removes (`changed`), or the edited library's
        vectors bring the skill near it."""
        return (
            self.near
            or bool(self.terms & changed)
            or self.dense.reaches(edited.vectors, position)
            or self.multilingual.reaches(edited.multilingual, position)
        )

    def kept(self) -> Reach:
        """This reach as a cache keeps it: all `reached` reads, without the cosines."""
        return Reach(
            self.dense.without_cosines(), self.terms, self.near, self.multilingual.without_cosines()
        )


def reach(case: Case, index: Index, position: int, seen: Measured) -> Reach:
    """What it takes for an edit of the skill at `position` to reach `case` (its prompt
    measured as `seen`), without routing it."""
    near = bool(case.context) or bool(case.cwd)  # other text than the prompt: route it
    near = near or seen.dense.near(position) or seen.multilingual.near(position)
    raw = seen.bm25
    if raw[position] > 0:
        near = near or int(np.count_nonzero(raw > raw[position])) < BM25_POOL + NEAR_MARGIN
    terms = seen.terms
    for token in terms:
        for owner, tokens in index.phrase_table.get(token, ()):
            if owner == position and all(part in terms for part in tokens):
                near = True  # a trigger phrase's boost, likewise
    for token in seen.keywords:
        postings = index.keyword_postings.get(token)
        if postings is not None and position in postings:
            near = True  # a keyword boost can lift it into the candidates
    return Reach(seen.dense, terms, near, seen.multilingual)


def changed_terms(before: str, after: str) -> frozenset[str]:
    """The words one description has and the other lacks: a prompt with one of them reads
    different BM25 postings and idf."""
    return frozenset(match_tokens(before)) ^ frozenset(match_tokens(after))
