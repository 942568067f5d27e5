"""Threshold calibration (spec §4): sweep the gates' thresholds on train, report on validation.

The knee of a dense model is a property of that model, so it has to be measured on
labelled prompts. Every grid point runs the one cascade (`pipeline.decide`); nothing
here scores a skill. The sweep is cheap because no swept threshold changes a decision's
inputs: the query embedding, the BM25 scores and the cross-encoder's logits depend only
on the prompt and the library, so they are memoised for the run, and a grid point costs
only the gates' arithmetic.

Split discipline: the recommendation is chosen on the train split alone. Validation
cases are routed only at the recommendation and at the current config, to report how
well the choice generalises; they can never change the choice.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from explorer.engine.base.config import Config, to_toml
from explorer.engine.base.text import counted
from explorer.engine.index.lexical import LexicalIndex, LexicalScores
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.embed import Embedder
from explorer.engine.inference.models import (
    REFERENCE_RERANK,
    Models,
    RerankCalibration,
)
from explorer.engine.inference.rerank import Reranker
from explorer.engine.qa.cases import KINDS, Case
from explorer.engine.qa.evaluate import TUNED_FIELDS, Rates, percentiles, rates
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import resolve
from explorer.engine.route.relevance import load_relevance_model

SCHEMA = "skill-explorer/calibration@1"
TRAIN_FRACTION = 2 / 3
LEXICAL_OFF = 0.0  # §5.2: lexical_min = 0 turns the fast path off
PARAMETERS = TUNED_FIELDS  # min_similarity, score_margin, lexical_*, rerank_* (last two: reranker)
RELEVANCE_PARAMETER = "relevance_threshold"  # the one value swept under the relevance model


def relevance_grid(model_threshold: float) -> Grid:
    """§9.12's threshold from 0.05 to 0.95 by 0.05, and the model's own for the library."""
    bars = {round(0.05 * step, 2) for step in range(1, 20)} | {round(model_threshold, 4)}
    return Grid((), (), (), relevance_threshold=tuple(sorted(bars)))


GATES_TIE_BREAK = (
    "highest train host value, then fewest train false injections, then the stricter "
    "thresholds (higher min_similarity, smaller score_margin, lexical path off or a "
    "higher lexical_min/lexical_margin, higher rerank_min, smaller rerank_margin)"
)
RELEVANCE_BUDGET = 0.05  # the train false-inject rate the shipped model's threshold keeps to


@dataclass(frozen=True)
class Grid:
    """The values swept; the grid is their product. Empty `rerank` means not swept. A
    non-empty `relevance_threshold` is the whole grid: under the relevance model (§9.12)
    the gates' thresholds decide nothing, its threshold does."""

    min_similarity: tuple[float, ...]
    score_margin: tuple[float, ...]
    lexical: tuple[tuple[float, float], ...]  # (lexical_min, lexical_margin); min 0 = off
    rerank: tuple[tuple[float, float], ...] = ()  # (rerank_min, rerank_margin)
    relevance_threshold: tuple[float, ...] = ()

    @property
    def swept(self) -> tuple[str, ...]:
        if self.relevance_threshold:
            return (RELEVANCE_PARAMETER,)
        return PARAMETERS if self.rerank else PARAMETERS[:4]

    def points(self) -> Iterator[dict[str, float]]:
        if self.relevance_threshold:
            yield from ({RELEVANCE_PARAMETER: bar} for bar in self.relevance_threshold)
            return
        rerank: Iterable[tuple[float, float] | None] = self.rerank or (None,)
        for min_sim, margin, lexical, pair in itertools.product(
            self.min_similarity, self.score_margin, self.lexical, rerank
        ):
            values = {
                "min_similarity": min_sim,
                "score_margin": margin,
                "lexical_min": lexical[0],
                "lexical_margin": lexical[1],
            }
            if pair is not None:
                values["rerank_min"], values["rerank_margin"] = pair
            yield values

    def __len__(self) -> int:
        if self.relevance_threshold:
            return len(self.relevance_threshold)
        return (
            len(self.min_similarity)
            * len(self.score_margin)
            * len(self.lexical)
            * max(len(self.rerank), 1)
        )


def _steps(centre: float, step: float, count: int) -> tuple[float, ...]:
    values = (round(centre + step * offset, 4) for offset in range(-count, count + 1))
    return tuple(value for value in values if 0.0 < value < 1.0)


def default_grid(
    knee: float, *, reranker: bool, gate: RerankCalibration = REFERENCE_RERANK
) -> Grid:
    """A grid around the model's own knee (§4). With a reranker two more axes are swept,
    around that cross-encoder's own gate (logit scales differ between models), so the
    cosine axes get coarser to keep the product (and the run time) similar."""
    if not reranker:
        return Grid(
            min_similarity=_steps(knee, 0.02, 10),
            score_margin=(0.04, 0.08, 0.12, 0.16, 0.20),
            lexical=(
                (LEXICAL_OFF, 2.0),
                *((low, gap) for low in (3.0, 4.0, 5.0, 6.0, 8.0) for gap in (1.0, 2.0, 3.0)),
            ),
        )
    return Grid(
        min_similarity=_steps(knee, 0.04, 5),
        score_margin=(0.08, 0.12, 0.16),
        lexical=((LEXICAL_OFF, 2.0), (4.0, 1.0), (4.0, 2.0), (6.0, 2.0)),
        rerank=tuple(
            (round(gate.rerank_min + low, 2), round(max(gate.rerank_margin + gap, 0.25), 2))
            for low in (-1.5, -0.5, 0.0, 0.5, 1.0, 2.0)
            for gap in (-1.0, 0.0, 1.0)
        ),
    )


@dataclass(frozen=True)
class Split:
    train: tuple[Case, ...]
    validation: tuple[Case, ...]
    note: str  # where the split came from, said in the output


def split_cases(cases: Sequence[Case], seed: int = 0) -> Split:
    """The cases' own split; cases without one get a seeded random 2/3-1/3 split per kind."""
    unlabelled = [case for case in cases if case.split is None]
    if not unlabelled:
        return Split(
            tuple(case for case in cases if case.split == "train"),
            tuple(case for case in cases if case.split == "validation"),
            "split from the cases file",
        )
    rng = random.Random(seed)
    assigned: dict[int, str] = {}
    for kind in KINDS:
        # Sorted by prompt, so the split depends on the cases and the seed, not file order.
        members = sorted(
            (
                position
                for position, case in enumerate(cases)
                if case.split is None and case.kind == kind
            ),
            key=lambda position: (cases[position].prompt, position),
        )
        rng.shuffle(members)
        cut = round(len(members) * TRAIN_FRACTION)
        assigned.update(dict.fromkeys(members[:cut], "train"))
        assigned.update(dict.fromkeys(members[cut:], "validation"))
    labelled = [
        case if case.split is not None else dataclasses.replace(case, split=assigned[position])
        for position, case in enumerate(cases)
    ]
    how = (
        "no case has a split"
        if len(unlabelled) == len(cases)
        else f"{len(unlabelled)} of {len(cases)} cases have no split"
    )
    return Split(
        tuple(case for case in labelled if case.split == "train"),
        tuple(case for case in labelled if case.split == "validation"),
        f"{how}: seeded random 2/3-1/3 split per kind (seed {seed})",
    )


class _MemoEmbedder:
    """The dense model with every query vector kept for the run (no LRU eviction)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.identity, self.dim = inner.name, inner.identity, inner.dim
        self._queries: dict[str, np.ndarray] = {}

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vector = self._queries.get(text)
        if vector is None:
            vector = self._queries[text] = self.inner.embed_query(text)
        return vector


class _MemoReranker:
    """The cross-encoder with its logits kept per (prompt, candidates): the candidates come
    from the hybrid order, which no swept threshold changes (§5.4)."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner
        self.name, self.model_path = inner.name, inner.model_path
        self._logits: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        key = (query, tuple(documents))
        logits = self._logits.get(key)
        if logits is None:
            logits = self._logits[key] = self.inner.score(query, documents)
        return logits


class _MemoLexical:
    """The BM25 index with each prompt's scores kept: they depend on the prompt and the
    library only (§5.2, §9.2). The arrays are shared read-only between decisions."""

    def __init__(self, inner: LexicalIndex) -> None:
        self._inner = inner
        self._scores: dict[str, LexicalScores] = {}

    def score(self, prompt: str) -> LexicalScores:
        scores = self._scores.get(prompt)
        if scores is None:
            scores = self._scores[prompt] = self._inner.score(prompt)
        return scores

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def memoised(index: Index) -> Index:
    """The same library with its per-prompt work (query embedding, BM25, cross-encoder
    logits) memoised for a sweep: only the gates' arithmetic runs per grid point."""
    models = index.models
    embedder = _MemoEmbedder(models.embedder) if models.embedder is not None else None
    reranker = _MemoReranker(models.reranker) if models.reranker is not None else None
    return dataclasses.replace(
        index,
        lexical=cast(LexicalIndex, _MemoLexical(index.lexical)),
        models=Models(
            embedder=embedder,
            reranker=reranker,
            status=models.status,
            warnings=models.warnings,
            multilingual=models.multilingual,
        ),
    )


@dataclass(frozen=True)
class GridPoint:
    values: dict[str, float]
    train: Rates


@dataclass(frozen=True)
class CalibrationReport:
    """What the sweep found and how the recommendation does on cases it never saw."""

    split_note: str
    train_cases: int
    validation_cases: int
    model: str
    reranker: str | None
    knee: dict[str, dict[str, float]]  # positives / negatives -> percentiles (train)
    grid_size: int
    decide_calls: int
    seconds: float
    table: tuple[GridPoint, ...]  # every grid point, best first
    recommended: dict[str, float]
    current: dict[str, float]
    train_recommended: Rates
    train_current: Rates
    validation_recommended: Rates | None
    validation_current: Rates | None
    tie_break: str = GATES_TIE_BREAK
    swept: tuple[str, ...] = field(default=PARAMETERS[:4])
    # What to weigh before taking the recommendation (few cases, a broken budget, worse on
    # validation): `calibrate` says each under it; it writes the point all the same.
    cautions: tuple[str, ...] = ()

    @property
    def validation_prefers_current(self) -> bool:
        """Whether the validation split, which the choice never saw, scores the current
        values higher than the recommendation: then the report says to keep them."""
        worse = _worse_on_validation(self.validation_recommended, self.validation_current)
        return worse is not None

    @property
    def ranking(self) -> str:
        """How the table is ordered, in words."""
        if self.swept == (RELEVANCE_PARAMETER,):
            return self.tie_break
        return f"train host value (ties: {self.tie_break})"

    def recommended_config(self, base: Config) -> Config:
        return base.replace(**self.recommended)

    def to_toml(self, base: Config) -> str:
        """The recommendation as a config file layer, with where it came from."""
        header = (
            f"# skill-explorer calibrate: chosen on {self.train_cases} train cases "
            f"({self.split_note}); model {self.model}\n"
        )
        return header + to_toml(self.recommended_config(base), only=self.swept)

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        table = self.table if top is None else self.table[:top]
        return {
            "schema": SCHEMA,
            "split": {
                "note": self.split_note,
                "train": self.train_cases,
                "validation": self.validation_cases,
            },
            "model": self.model,
            "reranker": self.reranker,
            "swept": list(self.swept),
            "knee": self.knee,
            "grid_size": self.grid_size,
            "decide_calls": self.decide_calls,
            "seconds": self.seconds,
            "tie_break": self.tie_break,
            "table": [{"values": point.values, "train": point.train.headline()} for point in table],
            "recommended": self.recommended,
            "current": self.current,
            "train": {
                "recommended": self.train_recommended.headline(),
                "current": self.train_current.headline(),
            },
            "validation": {
                "recommended": _maybe(self.validation_recommended),
                "current": _maybe(self.validation_current),
            },
        }


def _maybe(value: Rates | None) -> dict[str, Any] | None:
    return None if value is None else value.headline()


def _strictness(values: dict[str, float]) -> tuple[float, ...]:
    """Smaller is stricter (fewer injections), for breaking ties in the objective."""
    if RELEVANCE_PARAMETER in values:
        return (-values[RELEVANCE_PARAMETER],)
    lexical_off = values["lexical_min"] <= 0
    return (
        -values["min_similarity"],
        values["score_margin"],
        0.0 if lexical_off else 1.0,
        -values["lexical_min"],
        -values["lexical_margin"],
        -values.get("rerank_min", 0.0),
        values.get("rerank_margin", 0.0),
    )


def _rank_key(point: GridPoint) -> tuple[float, ...]:
    host = point.train.host_value
    # Rounded so float noise never outranks the documented tie-breaks.
    return (
        -round(host if host is not None else -1e9, 9),
        point.train.false_injects,
        *_strictness(point.values),
    )


def relevance_order(budget: float, within: bool = True) -> str:
    """How the relevance sweep's points are ranked, said in the report; `within`: some
    point keeps the train false-inject rate within the budget."""
    if not within:
        return (
            f"fewest train false injections (no point keeps them within {budget:g}; "
            "ties: the higher recall)"
        )
    return (
        f"train recall among the points whose train false-inject rate is at most {budget:g} "
        "(ties: the higher relevance_threshold), then the others by fewest false injections"
    )


def _within_budget(rates: Rates, budget: float) -> bool:
    """Whether a point's train false-inject rate keeps the budget (rounded as ranked)."""
    return round(rates.false_inject_rate or 0.0, 9) <= budget


def _relevance_rank_key(point: GridPoint, budget: float) -> tuple[float, ...]:
    recall = round(point.train.recall or 0.0, 9)
    if _within_budget(point.train, budget):
        return (0.0, -recall, -point.values[RELEVANCE_PARAMETER])
    return (1.0, round(point.train.false_inject_rate or 0.0, 9), -recall)


def current_values(config: Config, index: Index, swept: Sequence[str]) -> dict[str, float]:
    """The thresholds in force now (a model's knee where the config pins none, §4)."""
    tuning = resolve(config, index.models.status, len(index))
    values = {
        "min_similarity": tuning.min_similarity,
        "score_margin": tuning.score_margin,
        "lexical_min": tuning.lexical_min,
        "lexical_margin": tuning.lexical_margin,
    }
    values.update({"rerank_min": tuning.rerank_min, "rerank_margin": tuning.rerank_margin})
    if RELEVANCE_PARAMETER in swept:
        model = load_relevance_model()
        values[RELEVANCE_PARAMETER] = model.threshold_in_force(
            config.relevance_threshold, len(index)
        )
    return {name: values[name] for name in swept}


def knee(cases: Sequence[Case], index: Index, config: Config) -> dict[str, dict[str, float]]:
    """Cosine of the expected skill (positives) and the top cosine (negatives), as
    percentiles: where the two distributions part is the knee (§4)."""
    positive: list[float] = []
    negative: list[float] = []
    for case in cases:
        decision = decide(case.prompt, index, config, context=case.context, cwd=case.cwd or None)
        cosines = decision.channels.cosine
        if case.positive:
            found = [
                float(cosines[index.positions[s]]) for s in case.expect if s in index.positions
            ]
            if found:
                positive.append(max(found))
        elif len(cosines):
            negative.append(float(np.max(cosines)))
    return {"positives": percentiles(positive), "negatives": percentiles(negative)}


def calibrate(
    cases: Sequence[Case],
    index: Index,
    config: Config,
    *,
    grid: Grid | None = None,
    seed: int = 0,
    budget: float = RELEVANCE_BUDGET,
) -> CalibrationReport:
    """Sweep the grid on the train split; report the best point on validation.

    The gates' grid is ranked by host value. Under the relevance model the threshold is
    chosen by the rule its own was (§9.12): the most recall whose train false-inject rate
    stays within `budget`, so calibrating on a library moves the trade-off's point on that
    library, not the trade-off."""
    started = time.perf_counter()
    split = split_cases(cases, seed)
    fast = memoised(index)
    has_reranker = index.models.reranker is not None
    if grid is None:
        status = index.models.status
        if resolve(config, status, len(index)).relevance:
            grid = relevance_grid(load_relevance_model().thresholds_for(len(index))[0])
        else:
            grid = default_grid(
                status.calibration.min_similarity,
                reranker=has_reranker,
                gate=status.rerank_calibration,
            )
    swept = grid.swept
    calls = 0

    def route(subset: Sequence[Case], values: dict[str, float]) -> Rates:
        nonlocal calls
        tuned = config.replace(**values)
        calls += len(subset)
        return rates(subset, [decide(case.prompt, fast, tuned).injected_ids for case in subset])

    points = [GridPoint(values, route(split.train, values)) for values in grid.points()]
    if not points:
        raise ValueError("the calibration grid is empty")
    if grid.relevance_threshold:
        points.sort(key=lambda point: _relevance_rank_key(point, budget))
    else:
        points.sort(key=_rank_key)
    best = points[0].values
    current = current_values(config, index, swept)
    validation = split.validation
    train_current = route(split.train, current)
    validation_recommended = route(validation, best) if validation else None
    validation_current = route(validation, current) if validation else None
    distributions = knee(split.train, fast, config)
    cautions = _cautions(
        points[0].train,
        validation_recommended,
        validation_current,
        budget if grid.relevance_threshold else None,
    )
    return CalibrationReport(
        split_note=split.note,
        train_cases=len(split.train),
        validation_cases=len(validation),
        model=index.models.status.dense,
        reranker=index.models.status.reranker,
        knee=distributions,
        grid_size=len(grid),
        decide_calls=calls,
        seconds=time.perf_counter() - started,
        table=tuple(points),
        recommended=dict(best),
        current=current,
        train_recommended=points[0].train,
        train_current=train_current,
        validation_recommended=validation_recommended,
        validation_current=validation_current,
        swept=swept,
        tie_break=(
            relevance_order(budget, _within_budget(points[0].train, budget))
            if grid.relevance_threshold
            else GATES_TIE_BREAK
        ),
        cautions=cautions,
    )


FEW_CASES = 20  # train positives or negatives under this choose a threshold on chance


def _cautions(
    train: Rates,
    validation: Rates | None,
    validation_current: Rates | None,
    budget: float | None,
) -> tuple[str, ...]:
    """What the report must say beside the recommendation: it rests on few cases, no
    point kept the false-inject budget, or it does worse than the current values on the
    validation split, which it never saw."""
    found = []
    if train.positives < FEW_CASES or train.negatives < FEW_CASES:
        found.append(
            f"the train split has {counted(train.positives, 'positive')} and "
            f"{counted(train.negatives, 'negative')}: too few to choose a threshold on, read "
            "the recommendation as a guess"
        )
    rate = train.false_inject_rate
    if budget is not None and rate is not None and not _within_budget(train, budget):
        found.append(
            f"no point keeps the train false-inject rate within {budget:g}: the "
            f"recommendation is the one with the fewest ({rate:.3f})"
        )
    worse = _worse_on_validation(validation, validation_current)
    if worse is not None:
        then, now = worse
        found.append(
            f"on the validation split the recommendation does worse than the current "
            f"values (host value {then:.3f} against {now:.3f}): keep the current ones"
        )
    return tuple(found)


def _worse_on_validation(
    recommended: Rates | None, current: Rates | None
) -> tuple[float, float] | None:
    """(the recommendation's, the current values') validation host value, when the first
    is the lower; None otherwise or without a validation split."""
    if recommended is None or current is None:
        return None
    then, now = recommended.host_value, current.host_value
    if then is None or now is None or then >= now:
        return None
    return then, now
