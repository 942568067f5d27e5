"""Calibrating a reranker's agreement gate over several libraries (spec §4, §5.4, §9).

A reranker's logits have their own scale, so its gate (`rerank_min`, `rerank_margin`) is a
property of the model, measured like the cosine knee. A reranker that judges candidates
better than the hybrid score may also be trusted with weaker ones than §5.4's floor
(`min_similarity - 0.03`): its own `floor` (RerankCalibration.floor) is swept too, and stage 2
then runs for any prompt whose top hybrid score reaches it.

The objective, the one a default stage 2 must meet: the most train hits over all libraries
together (the count the shipping comparison makes; recall averaged over libraries would let a
small library's one case outweigh a large one's several), each library's train false
injections no more than the same config's without the reranker (per library: pooled, one
library's gain would buy another's losses). Ties go
to fewer false injections, then to the more conservative point (the fast path kept, higher
floor, higher rerank_min, smaller margin).

How it stays faithful to the one cascade: each train case is routed once through `decide()`
with the gate wide open, which yields every candidate's logit; the gate's arithmetic is then
redone per grid point. The chosen point is routed again through `decide()` on every train
case and the two must agree. Validation is routed only at the chosen point, to report.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.models import RerankCalibration
from explorer.engine.qa.calibrate import memoised
from explorer.engine.qa.cases import Case
from explorer.engine.qa.evaluate import passes
from explorer.engine.qa.libraries import LibraryCases
from explorer.engine.route.decision import Decision, Stage
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import CALIBRATED, LEARNED, resolve

SCHEMA = "skill-explorer/calibration-reranker@1"
OPEN = 1e9  # a gate threshold that lets every candidate through


# A grid point: (keep the §5.2 fast path, §5.4 floor or None for the preset's, rerank_min, margin)
GatePoint = tuple[bool, float | None, float, float]


@dataclass(frozen=True)
class GateGrid:
    floors: tuple[float | None, ...]  # None: §5.4's floor (min_similarity - 0.03)
    mins: tuple[float, ...]
    margins: tuple[float, ...]
    fast_paths: tuple[bool, ...] = (True, False)  # keep the §5.2 fast path, or let it decide

    def points(self) -> list[GatePoint]:
        return list(itertools.product(self.fast_paths, self.floors, self.mins, self.margins))


def default_gate_grid() -> GateGrid:
    return GateGrid(
        floors=(None, *(round(0.70 - 0.05 * step, 2) for step in range(11))),  # 0.70 .. 0.20
        mins=tuple(round(-3.0 + 0.25 * step, 2) for step in range(29)),  # -3 .. 4
        margins=(0.5, 1.0, 1.5, 2.0, 3.0, 5.0),
    )


@dataclass(frozen=True)
class Figures:
    positives: int
    hits: int
    negatives: int
    false_injects: int

    @property
    def recall(self) -> float | None:
        return self.hits / self.positives if self.positives else None

    @property
    def false_inject_rate(self) -> float | None:
        return self.false_injects / self.negatives if self.negatives else None

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "recall": self.recall,
            "false_inject_rate": self.false_inject_rate,
        }


@dataclass(frozen=True)
class LibraryGate:
    name: str
    skills: int
    train: dict[str, Figures]  # "without" | "with" -> figures
    validation: dict[str, Figures]


@dataclass(frozen=True)
class RerankerCalibration:
    reranker: str
    recommended: dict[str, Any]  # floor (None = §5.4's), rerank_min, rerank_margin
    libraries: tuple[LibraryGate, ...]
    grid_size: int
    seconds: float
    verified: bool
    verify_note: str
    objective: str = (
        "most train hits over all libraries together with each library's train false "
        "injections no more than without the reranker; ties: fewer false injections, then "
        "the fast path kept, higher floor, higher rerank_min, smaller margin"
    )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "reranker": self.reranker,
            "objective": self.objective,
            "recommended": self.recommended,
            "grid_size": self.grid_size,
            "seconds": self.seconds,
            "verified": self.verified,
            "verify_note": self.verify_note,
            "libraries": [
                {
                    "name": library.name,
                    "skills": library.skills,
                    "train": {k: v.as_dict() for k, v in library.train.items()},
                    "validation": {k: v.as_dict() for k, v in library.validation.items()},
                }
                for library in self.libraries
            ],
        }


@dataclass
class _Case:
    """One train case, routed once with the gate wide open."""

    case: Case
    fixed: tuple[str, ...] | None  # injected ids when stage 2 cannot change them
    lexical: tuple[str, ...] | None  # the fast path's pick, when it fires (None: it does not)
    cosine: tuple[str, ...]  # injected ids by the cosine stage alone (the fast path off)
    baseline: tuple[str, ...]  # injected ids without the reranker (the cosine stage)
    top: float  # top hybrid score
    scores: np.ndarray  # pool candidates' hybrid scores
    logits: np.ndarray
    ids: tuple[str, ...]  # pool candidates' ids, in the cascade's pick order for ties


def with_gate(index: Index, gate: RerankCalibration) -> Index:
    """The same library with the reranker's gate (and floor) replaced."""
    status = dataclasses.replace(index.models.status, rerank_calibration=gate)
    return dataclasses.replace(index, models=dataclasses.replace(index.models, status=status))


def without_reranker(index: Index) -> Index:
    return dataclasses.replace(index, models=dataclasses.replace(index.models, reranker=None))


def _figures(cases: Sequence[Case], injected: Sequence[Sequence[str]]) -> Figures:
    positives = sum(case.positive for case in cases)
    hits = sum(
        passes(case, ids) for case, ids in zip(cases, injected, strict=True) if case.positive
    )
    negatives = len(cases) - positives
    false = sum(
        not passes(case, ids)
        for case, ids in zip(cases, injected, strict=True)
        if not case.positive
    )
    return Figures(positives, hits, negatives, false)


def _probe(
    case: Case, decision: Decision, baseline: Decision, cosine: Decision, index: Index
) -> _Case:
    rows = [row for row in decision.rows if row.rerank is not None]
    rows.sort(key=lambda row: (-(row.rerank or 0.0), index.id_rank[index.positions[row.id]]))
    fixed = decision.injected_ids if decision.stage is not Stage.RERANK else None
    lexical = baseline.injected_ids if baseline.stage is Stage.LEXICAL else None
    c = decision.channels
    return _Case(
        case,
        fixed,
        lexical,
        cosine.injected_ids,
        baseline.injected_ids,
        float(c.score[c.hybrid_order[0]]) if len(c.ids) else 0.0,
        np.array([row.score for row in rows]),
        np.array([row.rerank for row in rows], dtype=np.float64),
        tuple(row.id for row in rows),
    )


def _simulate(
    item: _Case,
    fast_path: bool,
    floor: float,
    rerank_min: float,
    margin: float,
    recall_floor: float,
    max_skills: int,
) -> tuple[str, ...]:
    """The gate's arithmetic (§5.2 kept or not, §5.3's recall floor, §5.4 with its
    eligibility `floor`, the §5.6 cap), with the values `presets.resolve` gives decide()."""
    if fast_path and item.lexical is not None:
        return item.lexical
    if item.fixed is not None:
        return item.fixed
    if item.top < recall_floor:  # stage 2 skipped: the cosine stage decides
        return item.baseline if fast_path else item.cosine
    eligible = item.scores >= floor
    if not eligible.any():
        return ()
    best = item.logits[eligible].max()
    kept = eligible & (item.logits >= rerank_min) & (item.logits >= best - margin)
    return tuple(item.ids[i] for i in np.flatnonzero(kept)[:max_skills])


def _sweep(
    items: Sequence[_Case], point: GatePoint, index: Index, config: Config
) -> list[tuple[str, ...]]:
    """Each probed case's injected ids under one grid point, by `_simulate`, with the
    thresholds the resolver gives a reranker of that gate (a `None` floor: §5.4's)."""
    fast_path, floor, rerank_min, margin = point
    gate = RerankCalibration(rerank_min, margin, "grid point", floor=floor, fast_path=fast_path)
    tuning = resolve(config, with_gate(index, gate).models.status, len(index))
    return [
        _simulate(
            item,
            not tuning.fast_path_off,
            tuning.agreement_floor,
            tuning.rerank_min,
            tuning.rerank_margin,
            tuning.recall_floor,
            config.max_skills,
        )
        for item in items
    ]


def calibrate_reranker(
    libraries: Sequence[tuple[LibraryCases, Index]],
    config: Config,
    *,
    grid: GateGrid | None = None,
    progress: Callable[[str], None] | None = None,
) -> RerankerCalibration:
    """Sweep the reranker's gate on every library's train split; report each on validation."""
    started = time.perf_counter()
    grid = grid or default_gate_grid()
    if not libraries:
        raise ValueError("no libraries to calibrate on")
    if libraries[0][1].models.reranker is None:
        raise ValueError("no reranker is loaded: " + libraries[0][1].models.status.reranker_note)
    # The gate of the calibrated preset's stage 2 is what is swept (§9.11), never the learned
    # preset's relevance model (§9.12).
    preset = CALIBRATED if config.preset == LEARNED else config.preset
    config = config.replace(force=[], deny=[], rerank_min=None, rerank_margin=None, preset=preset)
    prepared = [_prepare(cases, index, config, progress) for cases, index in libraries]
    points = grid.points()
    outcomes = [
        [_figures(lib.cases.train, _sweep(lib.items, point, lib.fast, config)) for lib in prepared]
        for point in points
    ]
    point = best_point(points, outcomes, [lib.base for lib in prepared])
    fast_path, floor, rerank_min, margin = point
    reports, mismatches = _verify_and_report(prepared, point, config)
    verified = not mismatches
    note = (
        "the chosen gate routed through decide() on every train case gives the sweep's picks"
        if verified
        else "sweep and decide() disagree (an invoked /name, a denied skill, the budget?): "
        + "; ".join(mismatches)
    )
    return RerankerCalibration(
        reranker=libraries[0][1].models.status.reranker or "",
        recommended={
            "floor": floor,
            "rerank_min": rerank_min,
            "rerank_margin": margin,
            "fast_path": fast_path,
        },
        libraries=tuple(reports),
        grid_size=len(points),
        seconds=time.perf_counter() - started,
        verified=verified,
        verify_note=note,
    )


@dataclass
class _Prepared:
    """One library probed: its memoised index, each train case routed with the gate wide
    open, and its train figures without the reranker."""

    cases: LibraryCases
    fast: Index
    items: list[_Case]
    base: Figures


def _prepare(
    cases: LibraryCases,
    index: Index,
    config: Config,
    progress: Callable[[str], None] | None,
) -> _Prepared:
    """The probe: the gate wide open and the fast path off, so every case reaches stage 2;
    beside it each case without the reranker, with and without the fast path."""
    probe_gate = RerankCalibration(-OPEN, OPEN, "calibration probe", floor=-OPEN, fast_path=False)
    fast = memoised(index)
    bare = without_reranker(fast)
    probe = with_gate(fast, probe_gate)
    no_fast_path = config.replace(lexical_min=0.0)
    items = []
    for case in cases.train:
        baseline = decide(case.prompt, bare, config)
        cosine = decide(case.prompt, bare, no_fast_path)
        items.append(_probe(case, decide(case.prompt, probe, config), baseline, cosine, index))
    base = _figures(cases.train, [item.baseline for item in items])
    if progress is not None:
        progress(f"{cases.spec.name}: {len(items)} train cases probed")
    return _Prepared(cases, fast, items, base)


def _verify_and_report(
    prepared: Sequence[_Prepared], point: GatePoint, config: Config
) -> tuple[list[LibraryGate], list[str]]:
    """The chosen gate routed through decide() on every train and validation case, beside
    the same library without the reranker; the libraries where decide() and the sweep
    disagree."""
    fast_path, floor, rerank_min, margin = point
    gate = RerankCalibration(
        rerank_min, margin, "calibrated by calibrate --reranker", floor=floor, fast_path=fast_path
    )
    mismatches = []
    reports = []
    for lib in prepared:
        cases, fast = lib.cases, lib.fast
        tuned = with_gate(fast, gate)
        bare = without_reranker(fast)
        train_with = [decide(case.prompt, tuned, config).injected_ids for case in cases.train]
        swept = _sweep(lib.items, point, fast, config)
        if [tuple(ids) for ids in train_with] != swept:
            differ = sum(tuple(a) != b for a, b in zip(train_with, swept, strict=True))
            mismatches.append(f"{cases.spec.name}: {differ} case(s)")
        validation = cases.validation
        reports.append(
            LibraryGate(
                cases.spec.name,
                len(fast),
                {"without": lib.base, "with": _figures(cases.train, train_with)},
                {
                    "without": _figures(
                        validation,
                        [decide(c.prompt, bare, config).injected_ids for c in validation],
                    ),
                    "with": _figures(
                        validation,
                        [decide(c.prompt, tuned, config).injected_ids for c in validation],
                    ),
                },
            )
        )
    return reports, mismatches


def best_point(
    points: Sequence[GatePoint],
    outcomes: Sequence[Sequence[Figures]],
    baselines: Sequence[Figures],
) -> GatePoint:
    """The objective (module docstring): `outcomes[i][j]` is library j's train figures at
    `points[i]`, `baselines[j]` its figures without the reranker."""

    def within(figures: Sequence[Figures]) -> bool:
        return all(
            got.false_injects <= base.false_injects
            for got, base in zip(figures, baselines, strict=True)
        )

    def key(i: int) -> tuple[int, int, bool, float, float, float]:
        fast_path, floor, rerank_min, margin = points[i]
        return (
            -sum(figures.hits for figures in outcomes[i]),
            sum(figures.false_injects for figures in outcomes[i]),
            not fast_path,
            -(floor if floor is not None else 9.0),
            -rerank_min,
            margin,
        )

    feasible = [i for i in range(len(points)) if within(outcomes[i])] or range(len(points))
    return points[min(feasible, key=key)]
