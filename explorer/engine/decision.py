"""The Decision: every score, term and gate of one routing, as data (spec §3, §5).

Its JSON form carries a `schema` version; the key names are a contract that tests pin,
because hooks, CI scripts and the explorer read them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np

from explorer.engine.rerank import sigmoid

SCHEMA = "skill-explorer/decision@1"

# The vocabulary of a decision. Each enum is a str, so the JSON (and any code that still
# compares with a plain string) sees exactly the values the schema has always had.


class Stage(StrEnum):
    """The stage that decided (§5); BLANK and EMPTY: the cascade had nothing to do."""

    BLANK = "blank"
    EMPTY = "empty"
    LEXICAL = "lexical"
    RERANK = "rerank"
    COSINE = "cosine"


class GateName(StrEnum):
    """The gates, in the order the cascade runs them (those that do not apply are absent)."""

    KEYWORD_GUARD = "keyword_guard"  # §9, only when a keyword guard is on
    CONFIDENT_WINNER = "confident_winner"  # §5.1
    LEXICAL_DOMINANCE = "lexical_dominance"  # §5.2
    RECALL_FLOOR = "recall_floor"  # §5.3
    RERANKER = "reranker"  # §5.4
    AGREEMENT_FLOOR = "agreement_floor"  # §5.4
    RERANK_MIN = "rerank_min"  # §5.4
    RERANK_MARGIN = "rerank_margin"  # §5.4
    MIN_SIMILARITY = "min_similarity"  # §5.5
    SCORE_MARGIN = "score_margin"  # §5.5
    FORCE = "force"  # §5.5
    INVOKED = "invoked"  # §5.6
    DENY = "deny"  # §5.6
    SESSION_LEDGER = "session_ledger"  # §10, only when the hook passes the session's ledger
    MAX_SKILLS = "max_skills"  # §5.6
    BODY_INJECT = "body_inject"  # §5.7
    CHAR_BUDGET = "char_budget"  # §5.6


class Verdict(StrEnum):
    """What became of one skill: INJECT, or the reason (mostly a gate) that dropped it."""

    INJECT = "inject"
    BLANK_PROMPT = "blank_prompt"  # the prompt was blank: nothing was routed
    EMPTY = "empty"  # never on a row (an empty library has none); kept for the stage's name
    LEXICAL_DOMINANCE = "lexical_dominance"  # another skill won the lexical fast path
    RERANK_TOP_K = "rerank_top_k"  # not among the reranker's candidates
    AGREEMENT_FLOOR = "agreement_floor"
    RERANK_MIN = "rerank_min"
    RERANK_MARGIN = "rerank_margin"
    MIN_SIMILARITY = "min_similarity"
    SCORE_MARGIN = "score_margin"
    INVOKED = "invoked"
    DENY = "deny"
    SESSION_LEDGER = "session_ledger"  # already in the conversation (§10)
    MAX_SKILLS = "max_skills"
    CHAR_BUDGET = "char_budget"


class Band(StrEnum):
    """How sure an injection is (§5.7)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class InjectionMode(StrEnum):
    """What an injection carries: the description, or the body for a lone confident pick."""

    DESCRIPTION = "description"
    BODY = "body"


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    """One gate of the cascade, in order: its inputs, its thresholds and its outcome.

    Keyword-only: `passed` and `skipped` are two booleans that must never be swapped.
    """

    name: GateName
    section: str  # the spec section it implements
    passed: bool
    skipped: bool = False
    inputs: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True, slots=True)
class Injection:
    id: str
    confidence: float
    band: Band
    mode: InjectionMode
    path: str


@dataclass(frozen=True, slots=True)
class Row:
    """One skill's line in the trace: every channel, and the gate that kept or dropped it."""

    id: str
    rank: int  # stage-1 rank by hybrid score, 1-based
    cosine: float
    keyword: float
    phrase: float
    file: float
    project: float  # §3.5: the working directory's ecosystem
    score: float  # the hybrid score (§3.6), plus bm25_fused under a fused preset (§9)
    bm25: float
    bm25_norm: float
    bm25_rank: int | None  # None: no query term in the description
    rerank: float | None  # raw logit, None when not reranked
    rerank_prob: float | None
    pool: str | None  # why it was a rerank candidate: dense | bm25 | both (§9.1)
    matched_terms: int
    query_terms: int
    jaccard: float
    verdict: Verdict
    path: str
    bm25_fused: float = 0.0  # bm25_weight * bm25_norm, the §9 fused channel (0 = reference)


@dataclass
class Channels:
    """Per-skill arrays in index order, from which rows are built only when asked for."""

    ids: tuple[str, ...]
    paths: tuple[str, ...]
    cosine: np.ndarray
    keyword: np.ndarray
    phrase: np.ndarray
    file: np.ndarray
    project: np.ndarray
    score: np.ndarray
    bm25_fused: np.ndarray
    bm25: np.ndarray
    bm25_norm: np.ndarray
    bm25_rank: np.ndarray  # 0 where unranked
    matched_terms: np.ndarray
    jaccard: np.ndarray
    hybrid_order: np.ndarray  # skill indices by hybrid score
    bm25_order: np.ndarray  # skill indices by raw BM25
    query_terms: int


class Decision:
    """What the router decided for one prompt, and why, gate by gate."""

    def __init__(
        self,
        *,
        prompt: str,
        stage: Stage,
        injected: tuple[Injection, ...],
        text: str,
        gates: tuple[Gate, ...],
        channels: Channels,
        verdicts: dict[int, Verdict],
        default_verdict: Verdict,
        rerank: dict[int, float],
        pool: dict[int, str],
        timings_ms: dict[str, float],
        models: dict[str, Any],
        thresholds: dict[str, float],
        query_terms: tuple[str, ...],
        index_version: int,
        tuning: dict[str, Any] | None = None,
        project_terms: dict[str, str] | None = None,
    ) -> None:
        self.prompt = prompt
        self.stage = stage
        self.injected = injected
        self.text = text
        self.gates = gates
        self.channels = channels
        self._verdicts = verdicts
        self._default_verdict = default_verdict
        self._rerank = rerank
        self._pool = pool
        self.timings_ms = timings_ms
        self.models = models
        self.thresholds = thresholds
        self.query_terms = query_terms
        self.index_version = index_version
        self.tuning = tuning or {}
        # §3.5: skill id -> the ecosystem term that earned it the project boost
        self.project_terms = project_terms or {}

    @property
    def injected_ids(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.injected)

    def gate(self, name: GateName) -> Gate:
        return next(gate for gate in self.gates if gate.name == name)

    def verdict(self, index: int) -> Verdict:
        return self._verdicts.get(index, self._default_verdict)

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """Every skill: the injected first, in injection order, then by hybrid score."""
        c = self.channels
        position = {skill_id: order for order, skill_id in enumerate(self.injected_ids)}
        hybrid_rank = np.empty(len(c.ids), dtype=np.int64)
        hybrid_rank[c.hybrid_order] = np.arange(1, len(c.ids) + 1)
        ordered = sorted(
            (int(index) for index in c.hybrid_order),
            key=lambda index: (position.get(c.ids[index], len(position)), hybrid_rank[index]),
        )
        rows = []
        for index in ordered:
            logit = self._rerank.get(index)
            rows.append(
                Row(
                    id=c.ids[index],
                    rank=int(hybrid_rank[index]),
                    cosine=float(c.cosine[index]),
                    keyword=float(c.keyword[index]),
                    phrase=float(c.phrase[index]),
                    file=float(c.file[index]),
                    project=float(c.project[index]),
                    score=float(c.score[index]),
                    bm25=float(c.bm25[index]),
                    bm25_norm=float(c.bm25_norm[index]),
                    bm25_rank=int(c.bm25_rank[index]) or None,
                    rerank=logit,
                    rerank_prob=None if logit is None else sigmoid(logit),
                    pool=self._pool.get(index),
                    matched_terms=int(c.matched_terms[index]),
                    query_terms=c.query_terms,
                    jaccard=float(c.jaccard[index]),
                    verdict=self.verdict(index),
                    path=c.paths[index],
                    bm25_fused=float(c.bm25_fused[index]),
                )
            )
        return tuple(rows)

    def row(self, skill_id: str) -> Row:
        return next(row for row in self.rows if row.id == skill_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "prompt": self.prompt,
            "stage": self.stage,
            "injected": [asdict(item) for item in self.injected],
            "text": self.text,
            "query_terms": list(self.query_terms),
            "thresholds": self.thresholds,
            "tuning": self.tuning,
            "project_terms": self.project_terms,
            "models": self.models,
            "index_version": self.index_version,
            "gates": [asdict(gate) for gate in self.gates],
            "skills": [_row_dict(row) for row in self.rows],
            "timings_ms": self.timings_ms,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=json_default)


def _row_dict(row: Row) -> dict[str, Any]:
    data = asdict(row)
    data["overlap"] = {
        "matched": data.pop("matched_terms"),
        "query_terms": data.pop("query_terms"),
        "jaccard": data.pop("jaccard"),
    }
    return data


def json_default(value: Any) -> Any:
    """numpy scalars and tuples for json.dumps."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")
