"""The Decision: every score, term and gate of one routing, as data (spec §3, §5).

Its JSON form carries a `schema` version; the key names are a contract that tests pin,
because hooks, CI scripts and the explorer read them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cached_property
from itertools import repeat
from typing import Any, overload

import numpy as np

from explorer.engine.inference.rerank import sigmoid
from explorer.engine.route.matches import Hits, Match
from explorer.engine.route.relevance import FEATURE_LABELS, FORMULAS, ModelForm

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
    RELEVANCE = "relevance"  # §9.12: the relevance model decided


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
    FORCE = "force"  # §5.5; §9.17 beyond the cosine stage, after the stage (and its tasks)
    RELEVANCE = "relevance"  # §9.12, instead of §5.1-§5.5 under the learned preset
    SECOND_SKILL = "second_skill"  # §9.12: a second task's skill
    TASKS = "tasks"  # §9.12: each task of a several-task prompt, routed on its own
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
    RELEVANCE = "relevance"  # §9.12: its probability is under the model's threshold
    SECOND_SKILL = "second_skill"  # §9.12: under the threshold for a second skill
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


BAND_HIGH, BAND_MEDIUM = 0.80, 0.55  # §5.7


def band(confidence: float) -> Band:
    """The band a pick's confidence falls in (§5.7): the decision, the injected text and
    the session ledger's re-send rule read this one rule."""
    if confidence >= BAND_HIGH:
        return Band.HIGH
    return Band.MEDIUM if confidence >= BAND_MEDIUM else Band.LOW


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


@dataclass(frozen=True)
class RelevanceTrace:
    """§9.12: what the relevance model read and said for each candidate, in pool order."""

    candidates: tuple[int, ...]  # skill positions
    features: tuple[str, ...]
    values: np.ndarray  # [candidates, features]
    contributions: np.ndarray  # [candidates, features], log-odds
    bias: float
    probabilities: np.ndarray
    threshold: float
    second_threshold: float
    model: str
    form: ModelForm = ModelForm.LOGISTIC
    # Candidate rows, most probable first, ties in id order: the order the picks come from.
    ranked: tuple[int, ...] = ()
    # The model's RelevanceModel.room, asked only for the rows an explanation shows.
    room_of: Callable[[np.ndarray], tuple[tuple[str, float], ...]] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def formula(self) -> str:
        """How p follows from s = bias + the contributions, as `why` prints it."""
        return FORMULAS[self.form]

    def at(self, position: int) -> int | None:
        """The candidate row of a skill position, or None when it was no candidate."""
        try:
            return self.candidates.index(position)
        except ValueError:
            return None

    def room(self, row: int) -> tuple[tuple[str, float], ...]:
        """What each channel at its strongest would add to candidate `row`'s log-odds,
        largest first (RelevanceModel.room); empty when the model cannot say."""
        return () if self.room_of is None else self.room_of(self.values[row])

    def top_contributions(self, row: int, count: int = 3) -> list[tuple[str, float]]:
        """The features that moved this candidate's log-odds most, signed, largest first."""
        order = np.argsort(-np.abs(self.contributions[row]), kind="stable")[:count]
        return [(self.features[i], float(self.contributions[row, i])) for i in order]

    def drivers(self, row: int, count: int = 3, digits: int = 2) -> str:
        """`bm25 lead +1.55, cos lead +1.12`: the top contributions as people read them."""
        return ", ".join(
            f"{FEATURE_LABELS.get(name, name)} {value:+.{digits}f}"
            for name, value in self.top_contributions(row, count)
        )

    def behind(self, row: int, ahead: int, count: int = 2, digits: int = 1) -> str:
        """`rerank -2.1, bm25 lead -1.3`: the features on which candidate `row` trails
        candidate `ahead` most, each its contribution less the other's (their log-odds
        differ by the sum of these over every feature); empty when it trails on none by
        as much as `digits` can show."""
        gaps = self.contributions[row] - self.contributions[ahead]
        order = np.argsort(gaps, kind="stable")[:count]
        return ", ".join(
            f"{FEATURE_LABELS.get(self.features[i], self.features[i])} {gaps[i]:+.{digits}f}"
            for i in order
            if round(float(gaps[i]), digits) < 0  # a gap that prints as -0.0 says nothing
        )

    def explain(self, row: int) -> dict[str, Any]:
        return {
            "probability": float(self.probabilities[row]),
            "bias": self.bias,
            "contributions": {
                name: float(value)
                for name, value in zip(self.features, self.contributions[row], strict=True)
            },
            "features": {
                name: float(value)
                for name, value in zip(self.features, self.values[row], strict=True)
            },
            "room": dict(self.room(row)),  # §9.12, "Room": log-odds, most first
        }


@dataclass(frozen=True)
class TaskTrace:
    """§9.12: one clause of a several-task prompt, routed on its own."""

    clause: str
    best: str | None  # the clause's most probable skill; None: no candidate
    p: float
    drivers: str  # what moved `best`'s probability, as RelevanceTrace.drivers says it
    added: bool  # its skill joined the picks (it cleared the threshold, was not picked yet)
    trace: RelevanceTrace | None  # the clause's own candidates and features

    def to_dict(self) -> dict[str, Any]:
        return {
            "clause": self.clause,
            "best": self.best,
            "p": self.p,
            "drivers": self.drivers,
            "added": self.added,
        }


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
    pool: str | None  # why it was a candidate: dense | bm25 | both (§9.1) | multilingual (§9.14)
    matched_terms: int
    query_terms: int
    jaccard: float
    verdict: Verdict
    path: str
    bm25_fused: float = 0.0  # bm25_weight * bm25_norm, the §9 fused channel (0 = reference)
    # What earned the keyword, phrase, file and project boosts, named (engine/route/matches.py).
    matches: tuple[Match, ...] = ()
    relevance: float | None = None  # §9.12: the relevance model's probability, if a candidate


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
    positions: Mapping[str, int] | None = None  # id -> index (the Index's); None: built here


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
        hits: Hits | None = None,
        relevance: RelevanceTrace | None = None,
        tasks: tuple[TaskTrace, ...] = (),
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
        self.hits = hits or Hits()
        self.relevance = relevance
        self.tasks = tasks

    @property
    def matches(self) -> dict[int, tuple[Match, ...]]:
        """Skill position -> what matched it (only skills with a hit)."""
        return self.rows.matches

    @property
    def injected_ids(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.injected)

    def gate(self, name: GateName) -> Gate:
        return next(gate for gate in self.gates if gate.name == name)

    def verdict(self, index: int) -> Verdict:
        return self._verdicts.get(index, self._default_verdict)

    @cached_property
    def rows(self) -> Rows:
        """Every skill: the injected first, in injection order; then, when the relevance
        model decided, its other candidates by `p`; then the rest by hybrid score.

        A lazy sequence: the order is computed vectorised, and a `Row` is made only when
        it is read (the explorer draws a screenful, `route` prints its top N). Reading all
        of them (`to_dict`, iterating) gives exactly the rows an eager build would.
        """
        return Rows(self)

    def rows_rerank(self) -> dict[int, float]:
        """skill index -> raw logit, for the skills the reranker scored."""
        return self._rerank

    def task_for(self, skill_id: str) -> TaskTrace | None:
        """The clause that added this skill to the picks, if one did (§9.12)."""
        return next((task for task in self.tasks if task.added and task.best == skill_id), None)

    def row(self, skill_id: str) -> Row:
        """One skill's row, by id, without building the others (KeyError when unknown)."""
        return self.rows.by_id(skill_id)

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
            "relevance": self._relevance_dict(),
            "tasks": [task.to_dict() for task in self.tasks],
            "timings_ms": self.timings_ms,
        }

    def _relevance_dict(self) -> dict[str, Any] | None:
        """§9.12: every candidate's probability as the sum of its named contributions."""
        trace = self.relevance
        if trace is None:
            return None
        return {
            "model": trace.model,
            "form": str(trace.form),
            "threshold": trace.threshold,
            "second_threshold": trace.second_threshold,
            "candidates": {
                self.channels.ids[position]: trace.explain(row)
                for row, position in enumerate(trace.candidates)
            },
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=json_default)


# The numeric fields of a Row that come straight from a channel array, for `Rows.column`.
_CHANNEL_FIELDS = (
    "cosine",
    "keyword",
    "phrase",
    "file",
    "project",
    "score",
    "bm25",
    "bm25_norm",
    "bm25_fused",
    "matched_terms",
    "jaccard",
)


def _by_probability(decision: Decision, exclude: Sequence[int]) -> list[int]:
    """§9.12: the relevance model's candidates in its order (`RelevanceTrace.ranked`),
    leaving out `exclude`. Under that model `p` decides, so the rows after the injected
    ones are in the order it judged them: the skill that came closest is the next row,
    not the one the hybrid score happens to rank first."""
    relevance = decision.relevance
    if relevance is None or decision.stage is not Stage.RELEVANCE:
        return []
    skip = set(exclude)
    positions = (relevance.candidates[row] for row in relevance.ranked)
    return [position for position in positions if position not in skip]


class Rows(Sequence[Row]):
    """A decision's rows in order, each made when first read (lazy rows).

    Building every row of the library on every keystroke would cost, at 26,000 skills,
    0.4-0.6 s, twenty times the decision itself. The order (injected
    first, in injection order; then the relevance model's candidates by `p`, when it
    decided; then by hybrid rank) and the whole columns (`column`,
    `ids`) come from the channel arrays at numpy speed; a `Row` object is made for the
    rows that are shown, asked for or pinned, and kept for the next reader.

    It copies what rows are made of from the decision and keeps no reference to the
    decision itself: the decision keeps its `Rows`, and a reference back would make every
    decision a cycle, which only a full collection frees. The explorer defers those while
    background work runs, and at 26,000 skills each decision's arrays are megabytes.
    """

    def __init__(self, decision: Decision) -> None:
        c = self._channels = decision.channels
        self._verdicts = decision._verdicts
        self._default_verdict = decision._default_verdict
        self._rerank = decision._rerank
        self._pool = decision._pool
        self._hits = decision.hits
        self._relevance = decision.relevance
        n = len(c.ids)
        rank = np.empty(n, dtype=np.int64)
        rank[c.hybrid_order] = np.arange(1, n + 1)
        self._rank = rank
        by_id = self._positions()
        first = [by_id[item.id] for item in decision.injected if item.id in by_id]
        first += _by_probability(decision, exclude=first)
        rest = c.hybrid_order
        if first:
            keep = np.ones(n, dtype=bool)
            keep[first] = False
            rest = rest[keep[rest]]
        self.order: np.ndarray = np.concatenate(
            [np.asarray(first, dtype=np.int64), np.asarray(rest, dtype=np.int64)]
        )
        self._made: dict[int, Row] = {}
        self._at: np.ndarray | None = None

    def _positions(self) -> Mapping[str, int]:
        c = self._channels
        if c.positions is None:
            c.positions = {skill_id: index for index, skill_id in enumerate(c.ids)}
        return c.positions

    def __len__(self) -> int:
        return len(self.order)

    @overload
    def __getitem__(self, item: int) -> Row: ...

    @overload
    def __getitem__(self, item: slice) -> tuple[Row, ...]: ...

    def __getitem__(self, item: int | slice) -> Row | tuple[Row, ...]:
        if isinstance(item, slice):
            return tuple(self._make(int(index)) for index in self.order[item])
        return self._make(int(self.order[item]))

    def __iter__(self) -> Iterator[Row]:
        return (self._make(int(index)) for index in self.order)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    # Equal to any sequence of the same rows, so unhashable; typeshed declares object.__hash__
    # a method, hence the ignore.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Rows of {len(self)}: {len(self._made)} made>"

    @property
    def made(self) -> int:
        """How many Row objects exist so far (tests check that laziness holds)."""
        return len(self._made)

    @cached_property
    def ids(self) -> tuple[str, ...]:
        """Every row's skill id, in row order."""
        ids = self._channels.ids
        # map over a list of ints: at 26,000 rows a generator of int() calls cost ~25 ms,
        # and the explorer asks for this on the event loop at every repaint.
        return tuple(map(ids.__getitem__, self.order.tolist()))

    @property
    def library_ids(self) -> tuple[str, ...]:
        """Every skill's id in the library's order (the index's own tuple, not a copy):
        the same object for every decision on one snapshot."""
        return self._channels.ids

    def id_at(self, row: int) -> str:
        """Row `row`'s skill id, without making `ids` (a tuple of every row's)."""
        return self._channels.ids[int(self.order[row])]

    def index_of(self, skill_id: str) -> int | None:
        """The row number of `skill_id` in this order, or None."""
        position = self._positions().get(skill_id)
        if position is None:
            return None
        return int(self._row_numbers()[position])

    def _row_numbers(self) -> np.ndarray:
        """Skill index -> its row number (the inverse of `order`)."""
        if self._at is None:
            at = np.empty(len(self.order), dtype=np.int64)
            at[self.order] = np.arange(len(self.order))
            self._at = at
        return self._at

    def by_id(self, skill_id: str) -> Row:
        return self._make(self._positions()[skill_id])

    def mapping(self) -> RowsById:
        """skill id -> Row, lazily (the explorer keeps one to show deltas after a re-index)."""
        return RowsById(self)

    def scores(self, ids: Sequence[str]) -> np.ndarray:
        """The hybrid score of each of `ids` (NaN for an id this decision does not have)."""
        positions = self._positions()
        score = np.asarray(self._channels.score, dtype=np.float64)
        # One dict lookup per id in C (map), then numpy: the explorer compares whole
        # decisions on the event loop after every save.
        at = np.fromiter(map(positions.get, ids, repeat(-1)), dtype=np.int64, count=len(ids))
        found = at >= 0
        values = np.full(len(ids), np.nan)
        values[found] = score[at[found]]
        return values

    def scores_of(self, rows: Rows) -> np.ndarray:
        """This decision's hybrid score of each of `rows`' skills, in `rows`' order (NaN for
        a skill this decision does not have). Two decisions on libraries in the same order
        (two prompts on one snapshot, or a save that edited a skill in place) are compared
        by position, with no lookup per skill: at 26,000 skills, on the event loop after
        every save, a lookup per id cost about 10 ms."""
        mine, theirs = self._channels, rows._channels
        if mine.ids is theirs.ids or mine.ids == theirs.ids:
            score: np.ndarray = np.asarray(mine.score, dtype=np.float64)[rows.order]
            return score
        return self.scores(rows.ids)

    def column(self, name: str) -> np.ndarray:
        """One numeric field for every row, in row order (without making rows).

        `rank`, `rerank` (NaN where not reranked) and the channel fields of `Row`.
        """
        if name == "rank":
            ranks: np.ndarray = self._rank[self.order]
            return ranks
        if name == "rerank":
            values = np.full(len(self.order), np.nan)
            at = self._rerank
            if at:  # only the reranked skills: a few dozen, not every row
                indexes = np.fromiter(at, dtype=np.int64, count=len(at))
                logits = np.fromiter(at.values(), dtype=np.float64, count=len(at))
                values[self._row_numbers()[indexes]] = logits
            return values
        if name not in _CHANNEL_FIELDS:
            raise KeyError(name)
        array: np.ndarray = getattr(self._channels, name)[self.order]
        return array

    def verdicts(self) -> set[Verdict]:
        """The verdicts that occur among the rows."""
        found = set(self._verdicts.values())
        if len(self._verdicts) < len(self.order):
            found.add(self._default_verdict)
        return found

    def _make(self, index: int) -> Row:
        row = self._made.get(index)
        if row is None:
            row = self._made[index] = self._row_at(index, int(self._rank[index]))
        return row

    @cached_property
    def matches(self) -> dict[int, tuple[Match, ...]]:
        """Skill position -> what matched it (only skills with a hit)."""
        return self._hits.by_position(self._channels.ids)

    def _row_at(self, index: int, rank: int) -> Row:
        c = self._channels
        logit = self._rerank.get(index)
        return Row(
            id=c.ids[index],
            rank=rank,
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
            verdict=self._verdicts.get(index, self._default_verdict),
            path=c.paths[index],
            bm25_fused=float(c.bm25_fused[index]),
            matches=self._hits.at(index, c.ids[index]),
            relevance=self._relevance_at(index),
        )

    def _relevance_at(self, index: int) -> float | None:
        if self._relevance is None:
            return None
        row = self._relevance.at(index)
        return None if row is None else float(self._relevance.probabilities[row])


class RowsById(Mapping[str, Row]):
    """A decision's rows by skill id, made on lookup; `scores` and `scores_of` compare
    whole columns."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows
        self.scores = rows.scores
        self.scores_of = rows.scores_of

    def __getitem__(self, skill_id: str) -> Row:
        return self._rows.by_id(skill_id)

    def get(self, skill_id: str, default: Any = None) -> Any:
        try:
            return self._rows.by_id(skill_id)
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows.ids)

    def __len__(self) -> int:
        return len(self._rows)


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
