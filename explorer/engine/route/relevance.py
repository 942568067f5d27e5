"""The relevance model: one probability per candidate from every channel's evidence (§9.12).

The reference's gates each let one channel decide alone: a cosine floor, a BM25 fast path,
a reranker minimum. Measured on libraries nobody tuned them to, each of those vetoes or
forces on evidence that another channel contradicts (a reranker logit of 0.93 rejecting
the skill every other channel ranks first; BM25 injecting on a word the prompt says it
does not want). Here the channels are features of one model instead (boosted trees, read
as one contribution per feature), trained and chosen leave-library-out
(`explorer/training/relevance.py`), so each counts for what it is worth beside the others,
and every candidate's probability is a sum of named contributions that `why` and the
explorer show.

Pure functions of a prompt and the candidates' channels; the model is a small JSON file
shipped in `explorer/models/relevance/`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer.engine.base.text import match_tokens
from explorer.engine.inference.multilingual import MULTILINGUAL_MODEL
from explorer.engine.route.presets import generic_word

if TYPE_CHECKING:
    from explorer.engine.index.lexical import Explain
    from explorer.engine.route.query import Query

RELEVANCE_MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "relevance"
RELEVANCE_MODEL = RELEVANCE_MODEL_DIR / "model.json"
BM25_POOL = 4  # §9.12: the best BM25 skills join the candidates beside the hybrid top k
MULTILINGUAL_POOL = 4  # §9.14: and the skills nearest by the multilingual cosine
LOGIT_CLIP = 10.0

# §9.12 exclusions: a description's clause that says what the skill is not for. The clause
# runs from the cue to the end of its sentence.
_EXCLUSION_CUE = re.compile(
    r"\b(?:not\s+(?:for|to\s+be\s+used|intended|meant|suitable|designed|a\s+replacement)"
    r"|(?:do\s+not|don'?t|never|avoid)\s+(?:use|trigger|invoke|apply)"
    r"|(?:does\s+not|doesn'?t|do\s+not|don'?t|won'?t|will\s+not|cannot|can'?t)\s+"
    r"(?:cover|handle|support|do|apply|include|write|create|generate|replace)"
    r"|except(?:\s+for)?|excluding|other\s+than|rather\s+than|instead\s+of"
    r"|skip\s+(?:this|it)|out\s+of\s+scope)\b",
    re.IGNORECASE,
)
# A prompt's negation: the few words after the cue are what the user does not want.
_NEGATION_CUE = re.compile(
    r"\b(?:without|not|no|never|don'?t|do\s+not|doesn'?t|instead\s+of|rather\s+than"
    r"|except|excluding|skip|skipping|avoid|avoiding|but\s+not)\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;!?\n()\[\]]|\s(?:but|then|and\s+then|so)\s", re.IGNORECASE)
NEGATION_SPAN = 4  # content words after a prompt's negation cue

# Scripts written without spaces between words: matched by character bigrams.
_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR")


def _clause_after(text: str, start: int) -> str:
    end = _CLAUSE_END.search(text, start)
    return text[start : end.start() if end else len(text)]


@lru_cache(maxsize=65_536)
def description_terms(description: str) -> tuple[str, ...]:
    """A description's match tokens, memoised: every candidate's are read per prompt."""
    return tuple(match_tokens(description))


def states_exclusion(text: str) -> bool:
    """Whether the text says what a skill is not for ("not for X", "does not cover X")."""
    return _EXCLUSION_CUE.search(text) is not None


@lru_cache(maxsize=65_536)
def excluded_terms(description: str) -> frozenset[str]:
    """§9.12: the match tokens of the description's own exclusions ("not for X", "does not
    cover X", "don't use for X"). Memoised: a candidate's description is read per prompt."""
    terms: set[str] = set()
    for cue in _EXCLUSION_CUE.finditer(description):
        terms.update(match_tokens(_clause_after(description, cue.end())))
    return frozenset(terms)


def excluded_query_terms(description: str, explain: Explain) -> list[str]:
    """The prompt's BM25 terms that fall in the description's own exclusions, in order:
    what the Terms tab and `why` name beside the terms table."""
    excluded = excluded_terms(description)
    return [term.term for term in explain.terms if term.term in excluded]


def missing_query_terms(explain: Explain) -> list[str]:
    """The prompt's terms the description lacks that could tell a skill apart, rarest
    first (by idf: what adding the word would earn most), stopwords and generic words
    ("what", "help") left out: what the Terms tab, `why` and the export name as missing."""
    missing = [term for term in explain.terms if not term.matched and not generic_word(term.term)]
    return [term.term for term in sorted(missing, key=lambda term: -term.idf)]


def negated_terms(prompt: str) -> frozenset[str]:
    """§9.12: the match tokens a prompt negates ("without running the linter" -> linter...)."""
    terms: set[str] = set()
    for cue in _NEGATION_CUE.finditer(prompt):
        terms.update(match_tokens(_clause_after(prompt, cue.end()))[:NEGATION_SPAN])
    return frozenset(terms)


def unspaced(char: str) -> bool:
    """A character of a script written without spaces between words."""
    name = unicodedata.name(char, "")
    return name.startswith(_UNSPACED)


@lru_cache(maxsize=65_536)
def script_tokens(text: str) -> frozenset[str]:
    """§9.12: the tokens §2.1 drops, any script: words of non-ASCII letters, lower-cased,
    and character bigrams of scripts written without spaces (Chinese, Japanese, Thai...)."""
    tokens: set[str] = set()
    for word in re.findall(r"\w+", text):
        if word.isascii():
            continue
        run: list[str] = []
        spaced: list[str] = []
        for char in word + " ":
            if char != " " and unspaced(char):
                run.append(char)
                continue
            if run:
                tokens.update("".join(run[i : i + 2]) for i in range(max(len(run) - 1, 1)))
                run = []
            if char != " ":
                spaced.append(char)
        plain = "".join(spaced).casefold()
        if len(plain) >= 2 and not plain.isascii():
            tokens.add(plain)
    return frozenset(tokens)


# The features, in the model's order. Each is a function of the candidate's channels and
# of how it stands against the other candidates; docs/routing.md §9.12 says why each is there.
FEATURES: tuple[str, ...] = (
    "cosine",  # dense cosine (§3.1)
    "cosine_lead",  # cosine - the best other candidate's cosine
    "cosine_rank",  # 1 / rank by cosine among all skills
    "bm25_norm",  # BM25 / Σ idf of the query terms (§9.5)
    "bm25_lead",  # bm25_norm - the best other candidate's
    "bm25_rank",  # 1 / rank by BM25 (0: no query term in the description)
    "overlap",  # Jaccard of match tokens (§9.4)
    "shared_terms",  # ln(1 + query terms the description has)
    "query_terms",  # ln(1 + the prompt's query terms)
    "keyword",  # keyword and name-token hits (§3.2), before any guard
    "phrase",  # trigger phrases matched (§3.3)
    "file",  # a named file of this skill's family (§3.4)
    "rerank",  # the cross-encoder's logit, clipped (§5.4); 0 without a reranker
    "rerank_lead",  # logit - the best other candidate's logit
    "rerank_rank",  # 1 / rank by logit among the candidates
    "excluded",  # share of the prompt's idf the description excludes
    "negated",  # share of the shared terms' idf that the prompt negates
    "script_overlap",  # share of the prompt's non-ASCII tokens the skill's text has
    "library_size",  # ln N
    "description_length",  # ln(1 + the description's match tokens)
    "multilingual",  # the multilingual encoder's cosine (§9.14)
    "multilingual_lead",  # that cosine - the best other candidate's
    "multilingual_rank",  # 1 / rank by that cosine among all skills
)
# +1: more of the feature never lowers p; -1: never raises it; 0: either way. Evidence
# for a skill only ever counts for it, so a tree cannot learn a kink of its training
# libraries (a cosine "too high to be right") that no new library shares.
MONOTONE: dict[str, int] = {
    "cosine": 1,
    "cosine_lead": 1,
    "cosine_rank": 1,
    "bm25_norm": 1,
    "bm25_lead": 1,
    "bm25_rank": 1,
    "overlap": 1,
    "shared_terms": 1,
    "query_terms": 0,
    "keyword": 1,
    "phrase": 1,
    "file": 1,
    "rerank": 1,
    "rerank_lead": 1,
    "rerank_rank": 1,
    "excluded": -1,
    "negated": -1,
    "script_overlap": 1,
    "library_size": 0,
    "description_length": 0,
    "multilingual": 1,
    "multilingual_lead": 1,
    "multilingual_rank": 1,
}
# The channels an edit of a description can move, each with the features it feeds (every
# one monotone, so each has a strongest side): what `room` measures (§9.12, "Room").
CHANNELS: dict[str, tuple[str, ...]] = {
    "rerank": ("rerank", "rerank_lead", "rerank_rank"),
    "bm25": ("bm25_norm", "bm25_lead", "bm25_rank", "overlap", "shared_terms"),
    "cos": ("cosine", "cosine_lead", "cosine_rank"),
    "ml cos": ("multilingual", "multilingual_lead", "multilingual_rank"),
    "hits": ("keyword", "phrase", "file"),
    "other scripts": ("script_overlap",),
    "exclusions": ("excluded", "negated"),
}
FEATURE_LABELS: dict[str, str] = {
    "cosine": "cos",
    "cosine_lead": "cos lead",
    "cosine_rank": "cos rank",
    "bm25_norm": "bm25",
    "bm25_lead": "bm25 lead",
    "bm25_rank": "bm25 rank",
    "overlap": "overlap",
    "shared_terms": "shared terms",
    "query_terms": "prompt length",
    "keyword": "keyword",
    "phrase": "phrase",
    "file": "file",
    "rerank": "rerank",
    "rerank_lead": "rerank lead",
    "rerank_rank": "rerank rank",
    "excluded": "excluded",
    "negated": "negated",
    "script_overlap": "script overlap",
    "library_size": "library size",
    "description_length": "description length",
    "multilingual": "ml cos",
    "multilingual_lead": "ml cos lead",
    "multilingual_rank": "ml cos rank",
}


@dataclass(frozen=True)
class CandidateEvidence:
    """What the channels measured for the candidates of one prompt, in candidate order."""

    cosine: np.ndarray
    cosine_rank: np.ndarray  # 1-based rank among all skills
    bm25_norm: np.ndarray
    bm25_rank: np.ndarray  # 1-based, 0 = unranked
    overlap: np.ndarray
    shared_terms: np.ndarray
    keyword_hits: np.ndarray
    phrase_hits: np.ndarray
    file_hits: np.ndarray
    logits: np.ndarray | None  # None: no reranker
    descriptions: Sequence[str]
    texts: Sequence[str]  # name + description + body head, for the script channel
    query_terms: Sequence[str]
    idf: Mapping[str, float]
    library_size: int
    # §9.14: the multilingual cosine and its 1-based rank among all skills; None without it
    multilingual: np.ndarray | None = None
    multilingual_rank: np.ndarray | None = None


def _lead(values: np.ndarray) -> np.ndarray:
    """Each value minus the best of the others (positive only for a clear leader)."""
    if len(values) < 2:
        return np.zeros_like(values)
    order = np.argsort(-values, kind="stable")
    best, second = values[order[0]], values[order[1]]
    others_best = np.full_like(values, best)
    others_best[order[0]] = second
    return np.asarray(values - others_best, dtype=np.float64)


def _reciprocal_rank(values: np.ndarray) -> np.ndarray:
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    return 1.0 / ranks


def features(query: Query, evidence: CandidateEvidence) -> np.ndarray:
    """The FEATURES matrix, one row per candidate: the prompt's negated and script tokens
    come parsed with it, so the model reads the prompt as every channel did."""
    k = len(evidence.cosine)
    matrix = np.zeros((k, len(FEATURES)), dtype=np.float64)
    if k == 0:
        return matrix
    column = {name: position for position, name in enumerate(FEATURES)}
    cosine = evidence.cosine.astype(np.float64)
    matrix[:, column["cosine"]] = cosine
    matrix[:, column["cosine_lead"]] = np.clip(_lead(cosine), -0.5, 0.5)
    matrix[:, column["cosine_rank"]] = 1.0 / np.maximum(evidence.cosine_rank, 1)
    bm25 = evidence.bm25_norm.astype(np.float64)
    matrix[:, column["bm25_norm"]] = bm25
    matrix[:, column["bm25_lead"]] = _lead(bm25)
    ranked = evidence.bm25_rank > 0
    matrix[ranked, column["bm25_rank"]] = 1.0 / evidence.bm25_rank[ranked]
    matrix[:, column["overlap"]] = evidence.overlap
    matrix[:, column["shared_terms"]] = np.log1p(evidence.shared_terms)
    matrix[:, column["query_terms"]] = math.log1p(len(evidence.query_terms))
    matrix[:, column["keyword"]] = np.minimum(evidence.keyword_hits, 3)
    matrix[:, column["phrase"]] = np.minimum(evidence.phrase_hits, 3)
    matrix[:, column["file"]] = evidence.file_hits > 0
    if evidence.logits is not None:
        logits = np.clip(evidence.logits.astype(np.float64), -LOGIT_CLIP, LOGIT_CLIP)
        matrix[:, column["rerank"]] = logits
        matrix[:, column["rerank_lead"]] = np.clip(_lead(logits), -LOGIT_CLIP, LOGIT_CLIP)
        matrix[:, column["rerank_rank"]] = _reciprocal_rank(logits)
    idf = evidence.idf
    negated = query.negated
    prompt_script = query.script_tokens
    terms = list(dict.fromkeys(evidence.query_terms))
    total_idf = sum(idf.get(term, 0.0) for term in terms)
    for row, description in enumerate(evidence.descriptions):
        if total_idf > 0:
            excluded = excluded_terms(description)
            if excluded:
                hit = sum(idf.get(term, 0.0) for term in terms if term in excluded)
                matrix[row, column["excluded"]] = hit / total_idf
            if negated:
                own = set(description_terms(description))
                shared = [term for term in terms if term in own]
                shared_idf = sum(idf.get(term, 0.0) for term in shared)
                if shared_idf > 0:
                    hit = sum(idf.get(term, 0.0) for term in shared if term in negated)
                    matrix[row, column["negated"]] = hit / shared_idf
        if prompt_script:
            found = prompt_script & script_tokens(evidence.texts[row])
            matrix[row, column["script_overlap"]] = len(found) / len(prompt_script)
        matrix[row, column["description_length"]] = math.log1p(len(description_terms(description)))
    matrix[:, column["library_size"]] = math.log(max(evidence.library_size, 1))
    if evidence.multilingual is not None and evidence.multilingual_rank is not None:
        multilingual = evidence.multilingual.astype(np.float64)
        matrix[:, column["multilingual"]] = multilingual
        matrix[:, column["multilingual_lead"]] = np.clip(_lead(multilingual), -0.5, 0.5)
        matrix[:, column["multilingual_rank"]] = 1.0 / np.maximum(evidence.multilingual_rank, 1)
    return matrix


class ModelForm(StrEnum):
    """How a candidate's score s = bias + Σ contributions becomes its probability (§9.12)."""

    # p = sigmoid(s): each candidate judged alone, whatever the others score.
    LOGISTIC = "logistic"
    # p = e^s / (1 + Σ e^s over the candidates): the prompt asks for one of them or for
    # none, so s is the log-odds of this skill against injecting nothing, and a candidate
    # that others outscore loses probability to them.
    CHOICE = "choice"


FORMULAS = {
    ModelForm.LOGISTIC: "σ(s)",
    ModelForm.CHOICE: "e^s / (1 + Σ e^s of the candidates)",
}


@dataclass(frozen=True)
class TreeEnsemble:
    """Boosted regression trees over the FEATURES, flattened into one node table (§9.12).

    Node i splits on `feature[i]` at `threshold[i]`: a row with x ≤ threshold goes to
    `left[i]`, the others to `right[i]`; a leaf has left = right = -1. `value[i]` is the
    score a tree expects at node i (at a leaf, the leaf's own), so every step down a tree
    moves the score by value[child] - value[node], and that step is credited to the
    feature the node split on. A candidate's contributions then add up, with `base`, to its
    score exactly: the same reading as a linear model's, feature by feature.
    """

    roots: np.ndarray  # each tree's first node
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    @property
    def base(self) -> float:
        """The score before any split: the sum of the trees' root values."""
        return float(self.value[self.roots].sum())

    def contributions(self, matrix: np.ndarray) -> np.ndarray:
        """Each feature's share of each row's score (rows add up with `base`)."""
        rows = matrix.shape[0]
        out = np.zeros((rows, matrix.shape[1]), dtype=np.float64)
        node = np.tile(self.roots, (rows, 1))
        row = np.repeat(np.arange(rows)[:, None], len(self.roots), axis=1)
        while True:
            inner = self.left[node] >= 0
            if not inner.any():
                return out
            at, here = row[inner], node[inner]
            split = self.feature[here]
            child = np.where(
                matrix[at, split] <= self.threshold[here], self.left[here], self.right[here]
            )
            np.add.at(out, (at, split), self.value[child] - self.value[here])
            node[inner] = child

    def to_dict(self) -> dict[str, list[float] | list[int]]:
        return {
            "roots": [int(value) for value in self.roots],
            "feature": [int(value) for value in self.feature],
            "threshold": [float(value) for value in self.threshold],
            "left": [int(value) for value in self.left],
            "right": [int(value) for value in self.right],
            "value": [float(value) for value in self.value],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], features: int) -> TreeEnsemble:
        def column(key: str, kind: type) -> np.ndarray:
            values: np.ndarray = np.asarray(data[key], dtype=kind)
            if values.ndim != 1 or (kind is np.float64 and not np.isfinite(values).all()):
                raise ValueError(f"model trees field {key!r} is not a list of finite numbers")
            return values

        trees = cls(
            roots=column("roots", np.int64),
            feature=column("feature", np.int64),
            threshold=column("threshold", np.float64),
            left=column("left", np.int64),
            right=column("right", np.int64),
            value=column("value", np.float64),
        )
        nodes = len(trees.value)
        if not len(trees.roots) or any(
            len(part) != nodes for part in (trees.feature, trees.threshold, trees.left, trees.right)
        ):
            raise ValueError("model trees: the node columns differ in length")
        inner = np.nonzero(trees.left >= 0)[0]
        children = np.concatenate([trees.left[inner], trees.right[inner]])
        parents = np.concatenate([inner, inner])
        if (trees.roots < 0).any() or (trees.roots >= nodes).any():
            raise ValueError("model trees: a root is outside the node table")
        # A child after its parent: a walk down always ends, whatever the file says.
        if (
            ((children <= parents) | (children >= nodes)).any()
            or (trees.feature[inner] < 0).any()
            or (trees.feature[inner] >= features).any()
        ):
            raise ValueError("model trees: a split points outside the table or back up it")
        return trees


@dataclass(frozen=True)
class SizeTier:
    """The injection thresholds for libraries of at most `max_skills` skills (None: any
    size). A prompt no skill serves meets different competition in a folder of ten skills
    than in one of a thousand, so one bar for every size lets too much through in large
    libraries and too little in small ones (§9.12 "One bar per library size")."""

    max_skills: int | None
    threshold: float
    second_threshold: float

    def to_dict(self) -> dict[str, object]:
        return {
            "max_skills": self.max_skills,
            "threshold": self.threshold,
            "second_threshold": self.second_threshold,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> SizeTier:
        bound = data.get("max_skills")
        tier = cls(
            max_skills=None if bound is None else int(bound),  # type: ignore[call-overload]
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
            second_threshold=float(data["second_threshold"]),  # type: ignore[arg-type]
        )
        if not (0.0 <= tier.threshold <= 1.0 and 0.0 <= tier.second_threshold <= 1.0):
            raise ValueError(f"size tier thresholds must lie in [0, 1]: {dict(data)}")
        return tier


@dataclass(frozen=True)
class RelevanceModel:
    """A score over FEATURES turned into one probability per candidate by its `form`, with
    its injection thresholds.

    The score s = bias + the candidate's contributions: `weight * (x - mean) / scale` per
    feature for a linear model, or, when `trees` is set, what each feature's splits added
    (TreeEnsemble; the linear fields are then zero). The best candidate is injected at
    p ≥ the threshold; the next one too when its own p reaches the second threshold. Both
    are chosen by the training script's rule (§9.12), per library size when `size_tiers`
    is set (the first tier the library fits in), else `threshold` and `second_threshold`.
    """

    name: str
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    second_threshold: float
    source: str
    # The models whose features it was trained on: a cosine or a logit means something only
    # for the model that produced it (§4), so under others the §5 gates decide (§9.12).
    dense: str = "minilm"
    # The dense model's weights (its file's sha256) when they were recorded: the name stays
    # when the packaged encoder is retrained, its cosines do not (§9.15).
    dense_sha256: str = ""
    reranker: str | None = "skill-reranker-minilm-l3"
    multilingual: str | None = MULTILINGUAL_MODEL  # §9.14; None: trained without it
    form: ModelForm = ModelForm.LOGISTIC
    trees: TreeEnsemble | None = None
    size_tiers: tuple[SizeTier, ...] = ()

    def threshold_in_force(self, pinned: float | None, library_size: int) -> float:
        """The injection threshold: `pinned` (the config's relevance_threshold) when set,
        else this model's for a library of this size."""
        return pinned if pinned is not None else self.thresholds_for(library_size)[0]

    def thresholds_for(self, library_size: int) -> tuple[float, float]:
        """The (threshold, second threshold) for a library of this many skills."""
        for tier in self.size_tiers:
            if tier.max_skills is None or library_size <= tier.max_skills:
                return tier.threshold, tier.second_threshold
        return self.threshold, self.second_threshold

    def mismatch(self, dense: str, reranker: str | None, multilingual: str | None) -> str:
        """Why this model cannot judge a library run with these models ('' if it can)."""
        if dense != self.dense:
            return f"trained on {self.dense}'s cosines, this library runs {dense}"
        if reranker != self.reranker:
            return f"trained with {self.reranker}'s logits, this library has {reranker or 'none'}"
        if self.multilingual is not None and multilingual != self.multilingual:
            return (
                f"trained with {self.multilingual}'s cosines, this library has "
                f"{multilingual or 'none'}"
            )
        return ""

    def contributions(self, matrix: np.ndarray) -> np.ndarray:
        """Each feature's share of each candidate's log-odds (rows add up with the bias)."""
        if self.trees is not None:
            return self.trees.contributions(matrix)
        return np.asarray(((matrix - self.mean) / self.scale) * self.weights, dtype=np.float64)

    def log_odds(self, matrix: np.ndarray, contributions: np.ndarray | None = None) -> np.ndarray:
        """s: the log-odds of each candidate (under CHOICE: against injecting nothing).
        `contributions`: the matrix's, when the caller has them already."""
        if contributions is None:
            contributions = self.contributions(matrix)
        return np.asarray(contributions.sum(axis=1) + self.bias, dtype=np.float64)

    def room(self, values: np.ndarray) -> tuple[tuple[str, float], ...]:
        """§9.12, "Room": for one candidate's feature row, what each channel would add to
        its log-odds s if it favoured the candidate as strongly as the trees ever reward
        (its features past every split, on the side MONOTONE calls better), the rest as
        they are; most first. Monotone trees cannot lower s that way, so each is ≥ 0 (a
        rounding below zero reads 0). Rooms do not add up: each is measured alone. Empty
        for a linear model, whose features have no strongest value."""
        if self.trees is None:
            return ()
        column = {name: i for i, name in enumerate(self.features)}
        rows = [values]
        for members in CHANNELS.values():
            row = values.copy()
            for name in members:
                row[column[name]] = np.inf if MONOTONE[name] > 0 else -np.inf
            rows.append(row)
        scores = self.log_odds(np.vstack(rows))
        room = [
            (channel, max(float(gain), 0.0))
            for channel, gain in zip(CHANNELS, scores[1:] - scores[0], strict=True)
        ]
        return tuple(sorted(room, key=lambda item: -item[1]))

    def probability(
        self, matrix: np.ndarray, contributions: np.ndarray | None = None
    ) -> np.ndarray:
        scores = self.log_odds(matrix, contributions)
        if self.form is ModelForm.LOGISTIC:
            return np.asarray(1.0 / (1.0 + np.exp(-scores)), dtype=np.float64)
        return choice_probabilities(scores)

    def to_dict(self) -> dict[str, object]:
        return (
            {
                "name": self.name,
                "features": list(self.features),
                "mean": [float(value) for value in self.mean],
                "scale": [float(value) for value in self.scale],
                "weights": [float(value) for value in self.weights],
                "bias": self.bias,
                "threshold": self.threshold,
                "second_threshold": self.second_threshold,
                "source": self.source,
                "dense": self.dense,
                "reranker": self.reranker,
                "multilingual": self.multilingual,
                "form": str(self.form),
            }
            | ({"dense_sha256": self.dense_sha256} if self.dense_sha256 else {})
            | ({"trees": self.trees.to_dict()} if self.trees is not None else {})
            | (
                {"size_tiers": [tier.to_dict() for tier in self.size_tiers]}
                if self.size_tiers
                else {}
            )
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RelevanceModel:
        names = tuple(str(name) for name in data["features"])  # type: ignore[attr-defined]
        if names != FEATURES:
            raise ValueError(f"model features {names} are not this engine's {FEATURES}")

        def vector(key: str) -> np.ndarray:
            values = np.asarray(data[key], dtype=np.float64)
            if values.shape != (len(FEATURES),) or not np.isfinite(values).all():
                raise ValueError(f"model field {key!r} is not {len(FEATURES)} finite numbers")
            return values

        scale = vector("scale")
        if (scale <= 0).any():
            raise ValueError("model field 'scale' must be positive")
        numbers = {
            key: float(data[key])  # type: ignore[arg-type]
            for key in ("bias", "threshold", "second_threshold")
        }
        if not all(math.isfinite(value) for value in numbers.values()):
            raise ValueError("model bias and thresholds must be finite")
        tiers = tuple(
            SizeTier.from_dict(tier)
            for tier in data.get("size_tiers", ())  # type: ignore[attr-defined]
        )
        bounds = [tier.max_skills for tier in tiers]
        if None in bounds[:-1] or bounds[:-1] != sorted(bounds[:-1]):  # type: ignore[type-var]
            raise ValueError("size tiers must rise in max_skills, and only the last be open")
        return cls(
            name=str(data.get("name", "relevance")),
            features=names,
            mean=vector("mean"),
            scale=scale,
            weights=vector("weights"),
            source=str(data.get("source", "")),
            dense=str(data.get("dense", RelevanceModel.dense)),
            dense_sha256=str(data.get("dense_sha256", "")),
            reranker=None if data.get("reranker") is None else str(data["reranker"]),
            multilingual=(None if data.get("multilingual") is None else str(data["multilingual"])),
            form=ModelForm(str(data.get("form", ModelForm.LOGISTIC))),
            trees=(
                TreeEnsemble.from_dict(data["trees"], len(FEATURES))  # type: ignore[arg-type]
                if data.get("trees") is not None
                else None
            ),
            size_tiers=tiers,
            **numbers,
        )


def choice_probabilities(scores: np.ndarray) -> np.ndarray:
    """e^s / (1 + Σ e^s), computed without overflow (the 1 is "inject nothing")."""
    if not len(scores):
        return np.zeros(0)
    top = max(0.0, float(scores.max()))
    shifted = np.exp(scores - top)
    return np.asarray(shifted / (math.exp(-top) + shifted.sum()), dtype=np.float64)


@lru_cache(maxsize=4)
def load_relevance_model(path: str = str(RELEVANCE_MODEL)) -> RelevanceModel:
    """The packaged model (or another JSON file of the same shape)."""
    return RelevanceModel.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
