"""Calibration over several real libraries at once (spec §4, §9): one rule for all of them.

A floor measured on one library does not carry over to another: a library of 2,000
skills has a best-by-chance skill that scores higher than one of 130. So the sweep runs
over every library's train split together, and the floor may follow the library's size
(`min_similarity + floor_log_slope * ln(N / 200)`, presets.floor_for). Chosen together:

* the structure of stage 1: `bm25_weight`, `keyword_generic_guard`, `keyword_min_cosine`;
* the lexical fast path: `lexical_min`, `lexical_margin`, `lexical_min_cosine`;
* the cosine stage: the floor (base and slope) and `score_margin`.

The objective: the highest recall averaged over libraries, subject to two train
false-inject limits, one on plain negatives (0.05) and one on near-misses (0.30; why:
docs/routing.md, "§9.9 Calibration over real libraries"), by default each over all
libraries' cases together (one library's ~15 negatives of a group make a rate in steps
of 0.07, too coarse to hold each library to 0.05 without throwing recall away on one
unlucky prompt; `scope = "library"` holds each library to them). Ties go to fewer false
injections, then to the middle of the plateau of floors that give the same outcome.

How it stays faithful to the one cascade: every stage-1 score comes from
`pipeline.decide` (one call per case and structure), and whether the fast path fires
comes from `decide` too. Only the cosine stage's arithmetic (§5.5: keep scores at or
above the floor and within the margin of the top, at most max_skills) is redone here,
vectorised over the grid; the chosen point is then routed through `decide` on every
train case and the two must agree, or the report says they do not.

Split discipline as in calibrate.py: validation cases are routed only at the chosen
point and at the reference, to report, never to choose.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.calibrate import memoised
from explorer.engine.qa.evaluate import Rates, evaluate
from explorer.engine.qa.libraries import LibraryCases
from explorer.engine.route.decision import Stage
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import (
    CALIBRATED,
    FLOOR_REFERENCE_N,
    LEARNED,
    PRESETS,
    clamp_size,
    floor_for,
)

SCHEMA = "skill-explorer/calibration-libraries@1"
FIR_BUDGET = 0.05
# Near-misses (a negative that brushes a skill's topic or name: "who makes Chromecast") get
# their own, looser budget. Held to 0.05 with the plain negatives, they set the floor so
# high that indirect requests are thrown away (as the sample library's near-misses
# show); the lexical fast path alone already injects on about a quarter of
# them. docs/routing.md, "§9.9 Calibration over real libraries".
NEAR_MISS_BUDGET = 0.30
# "pooled": the false injections of all libraries together stay within the budget (a rate
# over ~120 train negatives, steadier than one over ~30); "library": each library's does.
SCOPES = ("pooled", "library")
FRONTIER_BUDGETS = (0.0, 0.05, 0.10, 0.15, 0.20, 0.30)  # reported, not chosen from
NEAR_MISS_FRONTIER = (0.0, 0.10, 0.20, 0.30, 0.45, 1.0)  # the same, for near-misses
RRF_K = 60  # reciprocal-rank fusion constant (Cormack et al.), for the diagnostic only
TOP = 3  # a pick needs at most max_skills (2) ranks; one more shows the margin's reach


@dataclass(frozen=True)
class Structure:
    """The departures that change stage-1 scores (one decide() per case each)."""

    bm25_weight: float
    keyword_generic_guard: bool
    keyword_min_cosine: float

    def values(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FastPath:
    """§5.2 lexical fast path settings (lexical_min 0 = off) and its §9 cosine guard."""

    lexical_min: float
    lexical_margin: float
    lexical_min_cosine: float

    def values(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MultiGrid:
    structures: tuple[Structure, ...]
    fast_paths: tuple[FastPath, ...]
    floors: tuple[float, ...]  # the floor at N = FLOOR_REFERENCE_N
    slopes: tuple[float, ...]
    margins: tuple[float, ...]

    def __len__(self) -> int:
        return (
            len(self.structures)
            * len(self.fast_paths)
            * len(self.floors)
            * len(self.slopes)
            * len(self.margins)
        )


def default_multi_grid() -> MultiGrid:
    return MultiGrid(
        structures=tuple(
            Structure(weight, guard, floor)
            for weight in (0.0, 0.25, 0.5, 0.75, 1.0)
            for guard in (False, True)
            # 0.6 and above: a name token earns its boost only on a prompt that is already
            # close in meaning, i.e. hardly ever on the ones the floor decides
            for floor in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6)
        ),
        fast_paths=(
            FastPath(0.0, 2.0, 0.0),
            *(
                FastPath(low, gap, cos)
                for low, gap in ((4.0, 2.0), (6.0, 2.0), (8.0, 3.0))
                for cos in (0.0, 0.2, 0.3)
            ),
        ),
        floors=tuple(round(0.20 + 0.01 * step, 2) for step in range(91)),  # 0.20 .. 1.10
        # Ordered by distance from the reference (slope 0, margin 0.12): on a tie the first wins.
        slopes=(0.0, 0.01, -0.01, 0.02, -0.02, 0.03, 0.04, 0.06),
        margins=(0.12, 0.08, 0.16, 0.04, 0.20, 0.30),
    )


@dataclass(frozen=True)
class Tally:
    """False injections per grid point as `Budget` compares them ([..., libs] counts in,
    one library per last-axis entry), prepared once per sweep: pooled, summed over the
    libraries; by library, kept per library. Summing the whole grid (millions of points x
    libraries) on every budget check cost seconds per calibration."""

    fis: np.ndarray  # false injects on plain negatives
    near_fis: np.ndarray  # on near-misses
    plain: np.ndarray  # plain negatives (per library, or their sum)
    near: np.ndarray  # near-miss negatives
    scope: str

    @classmethod
    def of(
        cls,
        fis: np.ndarray,
        near_fis: np.ndarray,
        plain: np.ndarray,
        near: np.ndarray,
        scope: str,
    ) -> Tally:
        if scope == "library":
            return cls(fis, near_fis, plain, near, scope)
        return cls(fis.sum(axis=-1), near_fis.sum(axis=-1), np.sum(plain), np.sum(near), scope)


@dataclass(frozen=True)
class Budget:
    """What calibration may spend: false injects on plain negatives and on near-misses,
    over all libraries together (pooled) or in each library."""

    negatives: float = FIR_BUDGET
    near_misses: float = NEAR_MISS_BUDGET
    scope: str = "pooled"

    def within(
        self,
        fis: np.ndarray,
        near_fis: np.ndarray,
        plain: np.ndarray,
        near: np.ndarray,
    ) -> np.ndarray:
        """Which points ([..., libs] counts) keep both rates within the budget; a library
        with no case of a group cannot break that group's limit."""
        tally = Tally.of(fis, near_fis, plain, near, self.scope)
        return np.asarray(self.plain_ok(tally) & self.near_ok(tally))

    def plain_ok(self, tally: Tally) -> np.ndarray:
        """Which points keep the false-inject rate on plain negatives within its limit."""
        return self._ok(tally.fis, self.negatives * tally.plain + 1e-9, tally.scope)

    def near_ok(self, tally: Tally) -> np.ndarray:
        """Which points keep the rate on near-misses within its limit."""
        return self._ok(tally.near_fis, self.near_misses * tally.near + 1e-9, tally.scope)

    @staticmethod
    def _ok(counts: np.ndarray, limit: np.ndarray, scope: str) -> np.ndarray:
        ok = counts <= limit
        return np.asarray(ok.all(axis=-1) if scope == "library" else ok)


@dataclass(frozen=True)
class LibraryResult:
    name: str
    skills: int
    train_cases: int
    validation_cases: int
    floor: float  # the recommended floor in force for this library's N
    train: dict[str, Rates]  # config label -> rates
    validation: dict[str, Rates]
    best_constant_floor: float | None  # this library's own train knee at the chosen structure
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for split in ("train", "validation"):
            data[split] = {
                label: rates.by_library() for label, rates in getattr(self, split).items()
            }
        return data


@dataclass(frozen=True)
class StructureSummary:
    """Per structure, on train: stage-1 top-1 and its best feasible point."""

    values: dict[str, Any]
    top1: dict[str, float | None]  # library -> top-1
    best_macro_recall: float | None  # None: no point within the false-inject budget
    best_point: dict[str, Any] | None


@dataclass(frozen=True)
class MultiCalibration:
    libraries: tuple[LibraryResult, ...]
    recommended: dict[str, Any]
    structures: tuple[StructureSummary, ...]
    rrf: dict[str, Any]  # diagnostic: reciprocal-rank fusion, top-1 and best feasible recall
    frontier: tuple[dict[str, Any], ...]  # per budget: the best train point and its figures
    grid_size: int
    decide_calls: int
    seconds: float
    budget: Budget
    verified: bool
    verify_note: str
    model: str
    objective: str = (
        "highest train recall averaged over libraries, with the train false-inject rate on "
        "plain negatives and the one on near-misses each within its budget (scope pooled: "
        "all libraries' cases together; library: each library's); ties: fewer train false "
        "injections, then the middle of the plateau of floors with the same outcome"
    )
    labels: tuple[str, ...] = field(default=("reference", "recommended"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "model": self.model,
            "objective": self.objective,
            "budget": asdict(self.budget),
            "grid_size": self.grid_size,
            "decide_calls": self.decide_calls,
            "seconds": self.seconds,
            "verified": self.verified,
            "verify_note": self.verify_note,
            "recommended": self.recommended,
            "libraries": [library.to_dict() for library in self.libraries],
            "structures": [asdict(summary) for summary in self.structures],
            "rrf": self.rrf,
            "frontier": list(self.frontier),
        }


@dataclass
class _Library:
    """One library prepared for the sweep: its index, train cases and per-case arrays."""

    cases: LibraryCases
    index: Index
    fast: Index
    positive: np.ndarray  # bool [cases]
    near_miss: np.ndarray  # bool [cases]: a negative of the near-miss group
    expected: list[set[int]]  # expected skill positions per case

    @property
    def n(self) -> int:
        return len(self.index)


@dataclass
class _Top:
    """The first TOP skills by hybrid score for every train case, under one structure."""

    scores: np.ndarray  # float [cases, TOP] (-inf pads a library smaller than TOP)
    hits: np.ndarray  # bool [cases, TOP]: the skill at that rank is expected
    top1: float | None


def _prepare(library: LibraryCases, index: Index) -> _Library:
    positions = index.positions
    cases = library.train
    fast = memoised(index)
    # The sweep models the cosine stage: a cross-encoder would decide instead (§5.4).
    fast = dataclasses.replace(fast, models=dataclasses.replace(fast.models, reranker=None))
    return _Library(
        library,
        index,
        fast,
        np.array([case.positive for case in cases], dtype=bool),
        np.array([case.near_miss for case in cases], dtype=bool),
        [{positions[s] for s in case.expect if s in positions} for case in cases],
    )


def _structure_config(config: Config, structure: Structure) -> Config:
    return config.replace(**structure.values(), lexical_min=0.0)


def _tops(lib: _Library, config: Config) -> _Top:
    cases = lib.cases.train
    scores = np.full((len(cases), TOP), -np.inf)
    hits = np.zeros((len(cases), TOP), dtype=bool)
    for row, case in enumerate(cases):
        channels = decide(case.prompt, lib.fast, config).channels
        order = channels.hybrid_order[:TOP]
        scores[row, : len(order)] = channels.score[order]
        hits[row, : len(order)] = [int(i) in lib.expected[row] for i in order]
    positives = int(lib.positive.sum())
    top1 = float(hits[lib.positive, 0].sum() / positives) if positives else None
    return _Top(scores, hits, top1)


def _rrf_tops(lib: _Library, config: Config) -> _Top:
    """Diagnostic: rank by 1/(60 + dense rank) + 1/(60 + BM25 rank) instead of the score."""
    cases = lib.cases.train
    scores = np.full((len(cases), TOP), -np.inf)
    hits = np.zeros((len(cases), TOP), dtype=bool)
    for row, case in enumerate(cases):
        c = decide(case.prompt, lib.fast, config).channels
        dense_rank = np.empty(len(c.ids), dtype=np.float64)
        dense_rank[np.lexsort((lib.index.id_rank, -c.cosine))] = np.arange(1, len(c.ids) + 1)
        fused = 1.0 / (RRF_K + dense_rank)
        ranked = c.bm25_rank > 0
        fused[ranked] += 1.0 / (RRF_K + c.bm25_rank[ranked])
        order = np.lexsort((lib.index.id_rank, -fused))[:TOP]
        scores[row, : len(order)] = fused[order]
        hits[row, : len(order)] = [int(i) in lib.expected[row] for i in order]
    positives = int(lib.positive.sum())
    top1 = float(hits[lib.positive, 0].sum() / positives) if positives else None
    return _Top(scores, hits, top1)


def _fast_path(lib: _Library, config: Config, fast: FastPath) -> tuple[np.ndarray, np.ndarray]:
    """Per train case: does the fast path decide, and does its pick pass?"""
    cases = lib.cases.train
    fires = np.zeros(len(cases), dtype=bool)
    passed = np.zeros(len(cases), dtype=bool)
    if fast.lexical_min <= 0:
        return fires, passed
    tuned = config.replace(**fast.values())
    for row, case in enumerate(cases):
        decision = decide(case.prompt, lib.fast, tuned)
        if decision.stage is Stage.LEXICAL:
            fires[row] = True
            injected = {lib.index.positions[i] for i in decision.injected_ids}
            passed[row] = bool(injected & lib.expected[row]) if case.positive else not injected
    return fires, passed


def _sweep_cosine_stage(
    top: _Top,
    lib: _Library,
    fires: np.ndarray,
    lexical_passed: np.ndarray,
    floors: np.ndarray,
    margins: np.ndarray,
    max_skills: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """§5.5 + §5.6 cap over margins x floors: hits, false injects on plain negatives and
    false injects on near-misses, each [M, F]."""
    s = top.scores  # [C, TOP], descending
    relative = s[:, 0, None] - margins[None, :]  # [C, M]
    cutoff = np.maximum(floors[None, None, :], relative[:, :, None])  # [C, M, F]
    ranks = min(max_skills, s.shape[1])  # beyond the cap nothing is injected
    kept = s[:, :ranks, None, None] >= cutoff[:, None, :, :]  # [C, R, M, F]; a prefix
    picked_hit = (kept & top.hits[:, :ranks, None, None]).any(axis=1)  # [C, M, F]
    any_kept = kept[:, 0]
    positive = lib.positive[:, None, None]
    passed = np.where(positive, picked_hit, ~any_kept)
    passed = np.where(fires[:, None, None], lexical_passed[:, None, None], passed)
    hits = (passed & positive).sum(axis=0)
    failed_negative = ~passed & ~positive
    near = lib.near_miss[:, None, None]
    return hits, (failed_negative & ~near).sum(axis=0), (failed_negative & near).sum(axis=0)


def calibrate_libraries(
    libraries: Sequence[tuple[LibraryCases, Index]],
    config: Config,
    *,
    grid: MultiGrid | None = None,
    budget: Budget | None = None,
    progress: Any = None,
) -> MultiCalibration:
    """Sweep the grid on every library's train split together; report each on validation."""
    started = time.perf_counter()
    grid = grid or default_multi_grid()
    budget = budget or Budget()
    if budget.scope not in SCOPES:
        raise ValueError(f"budget scope {budget.scope!r}; expected one of {', '.join(SCOPES)}")
    config = swept_config(config)
    libs = [_prepare(cases, index) for cases, index in libraries]
    if not libs:
        raise ValueError("no libraries to calibrate on")

    def say(message: str) -> None:
        if progress is not None:
            progress(message)

    sweep = _sweep(libs, config, grid, say)
    objective = _Objective.of(sweep, budget)
    best = _recommend(sweep, objective)
    recommended = sweep.values(best)
    say(f"chosen: {recommended}")
    summaries = _structure_summaries(sweep, objective)
    frontier = _frontier(sweep, objective)
    rrf = _rrf_diagnostic(libs, config, budget)
    calls = sweep.calls + sum(len(lib.cases.train) for lib in libs)
    results, mismatches, routed = _verify_and_report(libs, config, sweep, best, budget)
    verified = not mismatches
    note = (
        "the chosen point routed through decide() on every train case gives the sweep's figures"
        if verified
        else "sweep and decide() disagree (an invoked /name, a tie or a reranker?): "
        + "; ".join(mismatches)
    )
    return MultiCalibration(
        libraries=tuple(results),
        recommended=recommended,
        structures=tuple(summaries),
        rrf=rrf,
        frontier=tuple(frontier),
        grid_size=len(grid),
        decide_calls=calls + routed,
        seconds=time.perf_counter() - started,
        budget=budget,
        verified=verified,
        verify_note=note,
        model=libs[0].index.models.status.dense,
    )


def swept_config(config: Config) -> Config:
    """The config the sweep routes with: no reranker, force or deny list, and the calibrated
    preset's gates (the learned preset's relevance model is trained by its own command,
    docs/routing.md §9.12, so its gates are what is swept)."""
    preset = CALIBRATED if config.preset == LEARNED else config.preset
    return config.replace(reranker="off", force=[], deny=[], preset=preset)


# A grid point: (structure, fast path, slope, margin, floor) indices.
Point = tuple[int, int, int, int, int]


@dataclass
class _Sweep:
    """Hits and false injections per library at every grid point, each array
    [structures, fast paths, slopes, margins, floors, libraries], and what they came from."""

    grid: MultiGrid
    libs: list[_Library]
    tops: dict[Structure, list[_Top]]
    floors: np.ndarray  # the floor at N = FLOOR_REFERENCE_N
    sizes: tuple[int, int]  # the preset's measured library sizes (presets.floor_for)
    logs: np.ndarray  # ln(N / FLOOR_REFERENCE_N) per library, N clamped as decide() clamps it
    hits: np.ndarray
    fis: np.ndarray  # false injects on plain negatives
    near_fis: np.ndarray  # on near-misses
    calls: int  # decide() calls made

    @property
    def names(self) -> list[str]:
        return [lib.cases.spec.name for lib in self.libs]

    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per library: positive, plain negative and near-miss train cases."""
        positives = np.array([int(lib.positive.sum()) for lib in self.libs])
        near = np.array([int(lib.near_miss.sum()) for lib in self.libs])
        plain = np.array([int((~lib.positive).sum()) for lib in self.libs]) - near
        return positives, plain, near

    def values(self, point: Point, *, structure: bool = True) -> dict[str, Any]:
        """The config values of a grid point (without the structure's, when asked)."""
        si, fi, ki, mi, floor_i = point
        return {
            **(self.grid.structures[si].values() if structure else {}),
            **self.grid.fast_paths[fi].values(),
            "min_similarity": float(self.floors[floor_i]),
            "floor_log_slope": float(self.grid.slopes[ki]),
            "score_margin": float(self.grid.margins[mi]),
        }


def _sweep(libs: list[_Library], config: Config, grid: MultiGrid, say: Any) -> _Sweep:
    """Stage-1 tops per structure and fast-path outcomes per setting (the decide() calls),
    then the cosine stage's arithmetic over every grid point, vectorised."""
    names = [lib.cases.spec.name for lib in libs]
    positives = np.array([int(lib.positive.sum()) for lib in libs])
    if not positives.all():
        empty = [name for name, p in zip(names, positives, strict=True) if not p]
        raise ValueError(f"no positive train cases in: {', '.join(empty)}")
    calls = 0
    tops: dict[Structure, list[_Top]] = {}
    for structure in grid.structures:
        tops[structure] = [_tops(lib, _structure_config(config, structure)) for lib in libs]
        calls += sum(len(lib.cases.train) for lib in libs)
    say(f"stage 1 scored under {len(grid.structures)} structures")
    fast_paths: dict[FastPath, list[tuple[np.ndarray, np.ndarray]]] = {}
    for fast in grid.fast_paths:
        fast_paths[fast] = [_fast_path(lib, config, fast) for lib in libs]
        calls += sum(len(lib.cases.train) for lib in libs) if fast.lexical_min > 0 else 0
    say(f"fast path tried under {len(grid.fast_paths)} settings")

    floors = np.array(grid.floors, dtype=np.float64)
    shape = (
        len(grid.structures),
        len(grid.fast_paths),
        len(grid.slopes),
        len(grid.margins),
        len(floors),
        len(libs),
    )
    hits = np.zeros(shape, dtype=np.int32)
    fis = np.zeros(shape, dtype=np.int32)
    near_fis = np.zeros(shape, dtype=np.int32)
    # The floor rule as decide() applies it: N clamped to the preset's measured sizes.
    sizes = PRESETS[config.preset].floor_sizes
    logs = np.array([math.log(clamp_size(lib.n, sizes) / FLOOR_REFERENCE_N) for lib in libs])
    margins = np.array(grid.margins, dtype=np.float64)
    for (si, structure), (fi, fast), (ki, slope) in itertools.product(
        enumerate(grid.structures), enumerate(grid.fast_paths), enumerate(grid.slopes)
    ):
        for li, lib in enumerate(libs):
            fires, lexical_passed = fast_paths[fast][li]
            h, f, n = _sweep_cosine_stage(
                tops[structure][li],
                lib,
                fires,
                lexical_passed,
                floors + slope * logs[li],
                margins,
                config.max_skills,
            )
            hits[si, fi, ki, :, :, li] = h
            fis[si, fi, ki, :, :, li] = f
            near_fis[si, fi, ki, :, :, li] = n
    say(f"{len(grid)} grid points swept")
    return _Sweep(grid, libs, tops, floors, sizes, logs, hits, fis, near_fis, calls)


@dataclass
class _Objective:
    """What the sweep chooses by: each point's recall averaged over libraries, its false
    injections, and which points keep a budget's limits (each limit's verdict kept, as the
    frontier varies one limit while the other stays at the budget's)."""

    budget: Budget
    tally: Tally
    recall: np.ndarray  # [..., libs]
    macro: np.ndarray
    total_fi: np.ndarray
    plain_ok: dict[float, np.ndarray] = field(default_factory=dict)
    near_ok: dict[float, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, sweep: _Sweep, budget: Budget) -> _Objective:
        positives, plain, near = sweep.counts()
        recall = sweep.hits / positives
        # Each point's false injections, summed once (pooled).
        tally = Tally.of(sweep.fis, sweep.near_fis, plain, near, budget.scope)
        total_fi = (
            tally.fis + tally.near_fis
            if budget.scope != "library"
            else sweep.fis.sum(axis=-1) + sweep.near_fis.sum(axis=-1)
        )
        return cls(budget, tally, recall, recall.mean(axis=-1), total_fi)

    def within(
        self, negatives: float | None = None, near_misses: float | None = None
    ) -> np.ndarray:
        budget = self.budget
        limits = Budget(
            budget.negatives if negatives is None else negatives,
            budget.near_misses if near_misses is None else near_misses,
            budget.scope,
        )
        if limits.negatives not in self.plain_ok:
            self.plain_ok[limits.negatives] = limits.plain_ok(self.tally)
        if limits.near_misses not in self.near_ok:
            self.near_ok[limits.near_misses] = limits.near_ok(self.tally)
        return np.asarray(self.plain_ok[limits.negatives] & self.near_ok[limits.near_misses])


def _recommend(sweep: _Sweep, objective: _Objective) -> Point:
    """The best point within the budget, its floor moved to the middle of the plateau of
    floors that give exactly its outcome in every library."""
    best = _choose(objective.macro, objective.total_fi, objective.within())
    si, fi, ki, mi, floor_i = best
    hits, fis, near_fis = sweep.hits, sweep.fis, sweep.near_fis
    same = (
        (hits[si, fi, ki, mi] == hits[best]).all(axis=-1)
        & (fis[si, fi, ki, mi] == fis[best]).all(axis=-1)
        & (near_fis[si, fi, ki, mi] == near_fis[best]).all(axis=-1)
    )
    plateau = _run_around(same, floor_i)
    return si, fi, ki, mi, plateau[len(plateau) // 2]


def _structure_summaries(sweep: _Sweep, objective: _Objective) -> list[StructureSummary]:
    """Per structure: stage 1's top-1 in each library and its best point within the budget."""
    feasible = objective.within()
    summaries = []
    for s_index, candidate in enumerate(sweep.grid.structures):
        sub = (slice(s_index, s_index + 1),)
        pick = _choose(
            objective.macro[sub], objective.total_fi[sub], feasible[sub], allow_none=True
        )
        point = None
        best_macro = None
        if pick is not None:
            _, f2, k2, m2, fl2 = pick
            best_macro = float(objective.macro[s_index, f2, k2, m2, fl2])
            point = sweep.values((s_index, f2, k2, m2, fl2), structure=False)
        tops = sweep.tops[candidate]
        summaries.append(
            StructureSummary(
                candidate.values(),
                {name: top.top1 for name, top in zip(sweep.names, tops, strict=True)},
                best_macro,
                point,
            )
        )
    return summaries


def _frontier(sweep: _Sweep, objective: _Objective) -> list[dict[str, Any]]:
    """The best train point under each of FRONTIER_BUDGETS (near-misses at the budget's
    limit) and each of NEAR_MISS_FRONTIER (plain negatives at the budget's): reported, not
    chosen from."""
    _, plain, near = sweep.counts()
    fir = np.where(plain > 0, sweep.fis / np.maximum(plain, 1), 0.0)
    near_fir = np.where(near > 0, sweep.near_fis / np.maximum(near, 1), 0.0)
    names = sweep.names

    def point(ok: np.ndarray, **limits: float) -> dict[str, Any]:
        pick = _choose(objective.macro, objective.total_fi, ok, allow_none=True)
        if pick is None:
            return {**limits, "macro_recall": None}
        return {
            **limits,
            "macro_recall": float(objective.macro[pick]),
            "recall": {n: float(objective.recall[pick][i]) for i, n in enumerate(names)},
            "false_inject_rate": {n: float(fir[pick][i]) for i, n in enumerate(names)},
            "near_miss_rate": {n: float(near_fir[pick][i]) for i, n in enumerate(names)},
            "values": sweep.values(pick),
        }

    budget = objective.budget
    frontier = [
        point(objective.within(negatives=limit), budget=limit, near_miss_budget=budget.near_misses)
        for limit in FRONTIER_BUDGETS
    ]
    frontier += [
        point(objective.within(near_misses=limit), budget=budget.negatives, near_miss_budget=limit)
        for limit in NEAR_MISS_FRONTIER
        if limit != budget.near_misses
    ]
    return frontier


def _verify_and_report(
    libs: list[_Library], config: Config, sweep: _Sweep, best: Point, budget: Budget
) -> tuple[list[LibraryResult], list[str], int]:
    """The chosen point and the reference routed through decide() on every train and
    validation case: each library's figures, where the sweep and decide() disagree, and
    how many cases were routed."""
    recommended = sweep.values(best)
    tuned = config.replace(**recommended)
    reference = config.replace(
        preset="reference",
        min_similarity=None,
        score_margin=None,
        lexical_min=0.0,
        bm25_weight=None,
        floor_log_slope=None,
        keyword_generic_guard=None,
        keyword_min_cosine=None,
        lexical_min_cosine=None,
    )
    si, fi, ki, mi, _ = best
    hits, fis, near_fis = sweep.hits, sweep.fis, sweep.near_fis
    results: list[LibraryResult] = []
    mismatches: list[str] = []
    calls = 0
    for li, lib in enumerate(libs):
        spec = lib.cases.spec
        train: dict[str, Rates] = {}
        validation: dict[str, Rates] = {}
        for label, chosen in (("reference", reference), ("recommended", tuned)):
            report = evaluate(lib.cases.train, lib.fast, chosen, label=label)
            train[label] = Rates.from_report(report)
            calls += len(lib.cases.train)
            if lib.cases.validation:
                report = evaluate(lib.cases.validation, lib.fast, chosen, label=label)
                validation[label] = Rates.from_report(report)
                calls += len(lib.cases.validation)
        swept_hits, swept_fi = int(hits[best][li]), int(fis[best][li] + near_fis[best][li])
        routed = train["recommended"]
        if (routed.hits, routed.false_injects) != (swept_hits, swept_fi):
            mismatches.append(
                f"{spec.name}: sweep {swept_hits} hits/{swept_fi} false, decide() "
                f"{routed.hits}/{routed.false_injects}"
            )
        own = _own_knee(
            hits[si, fi, ki, mi, :, li],
            fis[si, fi, ki, mi, :, li],
            near_fis[si, fi, ki, mi, :, li],
            lib,
            budget,
        )
        floor = floor_for(
            recommended["min_similarity"], recommended["floor_log_slope"], lib.n, sweep.sizes
        )
        results.append(
            LibraryResult(
                name=spec.name,
                skills=lib.n,
                train_cases=len(lib.cases.train),
                validation_cases=len(lib.cases.validation),
                floor=floor,
                train=train,
                validation=validation,
                best_constant_floor=None
                if own is None
                else float(sweep.floors[own] + sweep.grid.slopes[ki] * sweep.logs[li]),
                warnings=lib.cases.warnings,
            )
        )
    return results, mismatches, calls


def _choose(
    macro: np.ndarray, total_fi: np.ndarray, feasible: np.ndarray, *, allow_none: bool = False
) -> Any:
    """The best grid point: feasible first, highest macro recall, fewest false injections.
    Without a feasible point: the highest recall - 0.15 x (false injections per library)."""
    if feasible.any():
        score = np.where(feasible, np.round(macro, 9), -np.inf)
    elif allow_none:
        return None
    else:
        score = np.round(macro - 0.15 * total_fi, 9)
    best = score == score.max()
    fewest = total_fi[best].min()
    # Ties left: the first in grid order (smaller weight, guards off, fast path off, smaller
    # slope and margin), i.e. the least departure from the reference. Vectorised: a small
    # library ties at thousands of grid points, and a Python loop over them took seconds.
    first = np.flatnonzero(best & (total_fi == fewest))[0]
    return tuple(int(x) for x in np.unravel_index(first, score.shape))


def _run_around(mask: np.ndarray, at: int) -> list[int]:
    """The contiguous run of True in `mask` that contains `at`."""
    low = at
    while low > 0 and mask[low - 1]:
        low -= 1
    high = at
    while high + 1 < len(mask) and mask[high + 1]:
        high += 1
    return list(range(low, high + 1))


def _own_knee(
    hits: np.ndarray, fis: np.ndarray, near_fis: np.ndarray, lib: _Library, budget: Budget
) -> int | None:
    """One library's best floor alone (within the budget): shows whether the knee moves with N."""
    near = int(lib.near_miss.sum())
    plain = int((~lib.positive).sum()) - near
    alone = dataclasses.replace(budget, scope="library")
    ok = alone.within(fis[:, None], near_fis[:, None], np.array([plain]), np.array([near]))
    if not ok.any():
        return None
    score = np.where(ok, hits, -1)
    candidates = np.flatnonzero(score == score.max())
    return int(candidates[len(candidates) // 2])


def _rrf_diagnostic(libs: list[_Library], config: Config, budget: Budget) -> dict[str, Any]:
    """Reciprocal-rank fusion as the order and its top RRF value as the gate, swept the
    same way (fast path off): what the rank-only fusion can do. Not a product option."""
    probe = config.replace(bm25_weight=0.0, lexical_min=0.0)
    tops = [_rrf_tops(lib, probe) for lib in libs]
    # RRF values live near 2/(60+1); sweep their own floor range.
    rrf_floors = np.linspace(0.0, 2.0 / (RRF_K + 1), 121)
    best: tuple[float, float, float] | None = None
    positives = np.array([int(lib.positive.sum()) for lib in libs])
    near = np.array([int(lib.near_miss.sum()) for lib in libs])
    plain = np.array([int((~lib.positive).sum()) for lib in libs]) - near
    for margin in (0.0005, 0.001, 0.002, 0.005, 1.0):
        hit_rows, fi_rows, near_rows = [], [], []
        for top, lib in zip(tops, libs, strict=True):
            none = np.zeros(len(lib.cases.train), dtype=bool)
            h, f, n = _sweep_cosine_stage(
                top, lib, none, none, rrf_floors, np.array([margin]), config.max_skills
            )
            hit_rows.append(h[0])
            fi_rows.append(f[0])
            near_rows.append(n[0])
        recall = np.array(hit_rows).T / positives  # [F, libs]
        feasible = budget.within(np.array(fi_rows).T, np.array(near_rows).T, plain, near)
        if feasible.any():
            macro = np.where(feasible, recall.mean(axis=1), -1.0)
            at = int(np.argmax(macro))
            if best is None or macro[at] > best[0]:
                best = (float(macro[at]), float(rrf_floors[at]), margin)
    return {
        "k": RRF_K,
        "top1": {lib.cases.spec.name: top.top1 for lib, top in zip(libs, tops, strict=True)},
        "best_macro_recall": None if best is None else best[0],
        "best_floor": None if best is None else best[1],
        "best_margin": None if best is None else best[2],
    }
