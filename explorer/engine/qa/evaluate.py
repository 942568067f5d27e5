"""Run labelled cases through `decide()` and say how well the library routes, and why not.

Every number comes from the one cascade (`pipeline.decide`): nothing here scores a skill.
A failure is reported with the stage that decided, the gate that dropped the expected
skill (its row verdict) or the skills injected by mistake, and the best rival: of the skills
not expected, the one strongest by the number that decided (the relevance model's
probability under the learned preset, else the stage-1 rank): the injected one when a
skill took the case, and how far over the bar it stood.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.base.text import did_you_mean
from explorer.engine.base.turns import checkpoint
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.cases import GROUPS, KINDS, SHOULD_NOT_TRIGGER, SHOULD_TRIGGER, Case
from explorer.engine.route.decision import Decision, Row, Stage, Verdict
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import resolve
from explorer.engine.route.relevance import load_relevance_model

SCHEMA = "skill-explorer/eval@1"
COMPARE_SCHEMA = "skill-explorer/eval-compare@1"
# The host pays for a false injection (context spent on an irrelevant skill) at 0.15 of
# the value of a correct one; the issue defines host value this way.
HOST_VALUE_PENALTY = 0.15
NOT_IN_LIBRARY = "not_in_library"  # the gate named for an expected id the library lacks
# The thresholds calibration sweeps; a report records them so two runs can be told apart.
TUNED_FIELDS = (
    "min_similarity",
    "score_margin",
    "lexical_min",
    "lexical_margin",
    "rerank_min",
    "rerank_margin",
)


def passes(case: Case, injected: Iterable[str]) -> bool:
    """A positive passes when any expected id is injected; a negative when nothing is; a
    should-not-trigger case when none of its rejected skills is."""
    chosen = set(injected)
    if case.positive:
        return bool(chosen & set(case.expect))
    if case.reject:
        return not chosen & set(case.reject)
    return not chosen


HEADLINE_FIELDS = (
    "cases",
    "positives",
    "hits",
    "negatives",
    "false_injects",
    "recall",
    "false_inject_rate",
    "host_value",
)
# What a per-library figure set carries (eval --by-library, calibrate --manifest, the
# committed quality baseline): no host value, but top-1, recall@k and the near-misses.
LIBRARY_FIELDS = (
    *HEADLINE_FIELDS[:-1],
    "top1",
    "recall_at_k",
    "near_misses",
    "near_miss_injects",
)


@dataclass(frozen=True)
class Rates:
    """The figures over one set of cases: the headline (recall, false injections, host
    value), and, from a whole report (`from_report`), top-1, recall@k and the near-misses.

    One type for the single-library sweep (calibrate.py), eval, and the per-library
    figures (quality.py, multical.py); each writes its own fields (`headline`,
    `by_library`), so their JSON keeps its shape."""

    cases: int
    positives: int
    hits: int
    negatives: int
    false_injects: int
    recall: float | None  # None when there are no positives
    false_inject_rate: float | None  # None when there are no negatives
    host_value: float | None  # recall - 0.15 x false-inject rate; None without positives
    top1: float | None = None
    recall_at_k: float | None = None
    near_misses: int = 0  # of the negatives
    near_miss_injects: int = 0  # of the false injects

    @property
    def plain_negatives(self) -> int:
        return self.negatives - self.near_misses

    @property
    def plain_false_injects(self) -> int:
        return self.false_injects - self.near_miss_injects

    @classmethod
    def from_report(cls, report: EvalReport) -> Rates:
        near = [result for result in report.results if result.case.near_miss]
        return dataclasses.replace(
            report.rates,
            top1=report.top1,
            recall_at_k=report.recall_at_k,
            near_misses=len(near),
            near_miss_injects=sum(not result.passed for result in near),
        )

    def headline(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in HEADLINE_FIELDS}

    def by_library(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in LIBRARY_FIELDS}


def rates(cases: Sequence[Case], injected: Sequence[Iterable[str]]) -> Rates:
    """Headline figures from each case's injected ids (the calibration sweep's fast path)."""
    positives = hits = negatives = false_injects = 0
    for case, chosen in zip(cases, injected, strict=True):
        if case.observe_only:
            continue  # reported by kind, never in the headline (reference: examples/eval.rs)
        ok = passes(case, chosen)
        if case.positive:
            positives += 1
            hits += ok
        else:
            negatives += 1
            false_injects += not ok
    recall = hits / positives if positives else None
    fir = false_injects / negatives if negatives else None
    host = None if recall is None else recall - HOST_VALUE_PENALTY * (fir or 0.0)
    return Rates(len(cases), positives, hits, negatives, false_injects, recall, fir, host)


@dataclass(frozen=True)
class Failure:
    """Why one case failed: where the cascade decided and which gate is to blame."""

    reason: str  # "missed" (a positive) or "false_inject" (a negative)
    stage: Stage  # the stage that decided (§5)
    gate: Verdict | str | None  # missed: the expected skill's verdict (or NOT_IN_LIBRARY)
    expected: str | None  # the best-ranked expected skill (missed)
    expected_rank: int | None
    expected_score: float | None
    expected_cosine: float | None
    injected: tuple[str, ...]  # what was injected instead
    runner_up: str | None  # the strongest skill not expected (injected or not)
    runner_up_score: float | None
    min_similarity: float
    # §9.12: the relevance model's probabilities, when it decided and scored the skill
    expected_probability: float | None = None
    runner_up_probability: float | None = None
    # The clause whose own p injected the runner-up, when one did (§9.12, several tasks):
    # then runner_up_probability is that clause's p, not the whole prompt's.
    runner_up_clause: str | None = None


@dataclass(frozen=True)
class CaseResult:
    case: Case
    injected: tuple[str, ...]
    passed: bool
    stage: Stage
    expected_rank: int | None  # best stage-1 rank of an expected skill (positives)
    top: str | None  # the stage-1 winner by hybrid score
    extra: tuple[str, ...]  # on a positive: injected ids that were not expected
    failure: Failure | None
    ms: float  # wall time of decide()


@dataclass(frozen=True)
class SkillTriggerRates:
    """One skill's trigger evals, the way skill-creator reports them: how many of the
    prompts that should trigger it did, and how many of those that should not did not."""

    skill: str
    should: int
    triggered: int
    should_not: int
    quiet: int


@dataclass(frozen=True)
class KindRates:
    kind: str
    cases: int
    passed: int
    rate: float | None


@dataclass(frozen=True)
class Timings:
    median_ms: float
    p95_ms: float
    total_ms: float


@dataclass(frozen=True)
class EvalReport:
    """The outcome of one cases file against one library and config."""

    label: str
    results: tuple[CaseResult, ...]
    rates: Rates
    k: int  # rerank_top_k: the stage-1 pool size recall@k is measured at
    recall_at_k: float | None
    top1: float | None
    extra_injects: int  # positives that got a skill they did not expect (passed or not)
    by_kind: dict[str, KindRates]
    timings: Timings
    thresholds: dict[str, float]
    models: dict[str, Any]
    skills: int
    warnings: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    by_skill: tuple[SkillTriggerRates, ...] = ()  # the trigger-eval cases, per skill

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        """Failed cases that count (observe-only kinds are in by_kind, not here)."""
        return tuple(
            result for result in self.results if not result.passed and not result.case.observe_only
        )

    def metric(self, name: str) -> float | None:
        """A headline metric by its JSON name (recall, false_inject_rate, host_value, ...)."""
        source = self if name in ("recall_at_k", "top1") else self.rates
        value: float | None = getattr(source, name)
        return value

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "label": self.label,
            "metrics": {
                **self.rates.headline(),
                "k": self.k,
                "recall_at_k": self.recall_at_k,
                "top1": self.top1,
                "extra_injects": self.extra_injects,
            },
            "by_kind": {kind: asdict(value) for kind, value in self.by_kind.items()},
            "by_skill": [asdict(value) for value in self.by_skill],
            "timings_ms": asdict(self.timings),
            "thresholds": self.thresholds,
            "models": self.models,
            "skills": self.skills,
            "config": self.config,
            "warnings": list(self.warnings),
            "cases": [_result_dict(result) for result in self.results],
        }


def _result_dict(result: CaseResult) -> dict[str, Any]:
    return {
        **result.case.to_dict(),
        "injected": list(result.injected),
        "passed": result.passed,
        "stage": result.stage,
        "expected_rank": result.expected_rank,
        "top": result.top,
        "extra": list(result.extra),
        "failure": None if result.failure is None else asdict(result.failure),
        "ms": result.ms,
    }


METRIC_NAMES = ("recall", "false_inject_rate", "host_value", "recall_at_k", "top1")


def missing_skill_warnings(cases: Sequence[Case], ids: Sequence[str]) -> tuple[str, ...]:
    """One warning per skill the cases name that the library lacks (`passes`): a case that
    expects only missing skills can never pass, and one that rejects only missing skills
    passes whatever is injected; every report over such cases should say so."""
    known = set(ids)
    expected = {skill for case in cases for skill in case.expect} - known
    rejected = {skill for case in cases for skill in case.reject} - known - expected

    def named(skill: str, field: str) -> str:
        """`'pfd' (line 3) (did you mean 'pdf'?)`: where the cases file names it."""
        lines = [case.line for case in cases if skill in getattr(case, field) and case.line]
        shown = ", ".join(map(str, lines[:5])) + (f" … ({len(lines)} in all)" * (len(lines) > 5))
        where = f"line {shown}" if len(lines) == 1 else f"lines {shown}"
        nearest = did_you_mean(skill, ids, count=1)
        return f"{skill!r} ({where}){nearest}" if lines else f"{skill!r}{nearest}"

    return tuple(
        f"expected skill {named(skill, 'expect')} is not in the library; a case that expects "
        "only it cannot pass"
        for skill in sorted(expected)
    ) + tuple(
        f"rejected skill {named(skill, 'reject')} is not in the library; a case that rejects "
        "only it passes whatever is injected"
        for skill in sorted(rejected)
    )


def evaluate(
    cases: Iterable[Case],
    index: Index,
    config: Config,
    *,
    label: str = "",
    cwd: str | None = None,
    kept: Sequence[CaseResult | None] = (),
) -> EvalReport:
    """`decide()` every case (§5, the one cascade) and gather metrics and failures.

    A case's own cwd (the TSV's 5th column) wins over `cwd`, the session's directory.
    `kept` (one per case, when given) holds results known to stand on `index` without
    deciding again (the what-if's cases an edit cannot reach); None decides that case."""
    case_list = list(cases)
    results: list[CaseResult] = []
    for number, case in enumerate(case_list):
        checkpoint()
        known = kept[number] if kept else None
        if known is not None:
            results.append(known)
            continue
        started = time.perf_counter()
        decision = decide(case.prompt, index, config, context=case.context, cwd=case.cwd or cwd)
        elapsed = (time.perf_counter() - started) * 1000
        results.append(case_result(case, decision, elapsed))
    return report_from(results, index, config, label=label)


def case_result(case: Case, decision: Decision, ms: float = 0.0) -> CaseResult:
    """Judge one decision against its case, naming the gate behind a failure."""
    injected = decision.injected_ids
    passed = passes(case, injected)
    # Rows are made only for the skills looked at (lazy rows); by hybrid rank,
    # the order is the channels' hybrid_order.
    rows = decision.rows
    expected_rows = sorted(
        (decision.row(skill_id) for skill_id in case.expect if rows.index_of(skill_id) is not None),
        key=lambda row: row.rank,
    )
    best = expected_rows[0] if expected_rows else None
    by_rank = decision.channels.hybrid_order
    ids = decision.channels.ids
    top = ids[int(by_rank[0])] if len(by_rank) else None
    extra = tuple(skill for skill in injected if skill not in case.expect) if case.positive else ()
    failure = None
    if not passed:
        # The rows' order is strength by what decided (Decision.rows): the injected, then
        # the relevance model's candidates by p when it decided, then by hybrid rank.
        strongest = map(rows.id_at, range(len(rows)))  # lazily: a library is 26,000 rows
        runner_id = next((skill for skill in strongest if skill not in case.expect), None)
        runner: Row | None = decision.row(runner_id) if runner_id is not None else None
        task = decision.task_for(runner_id) if runner_id is not None else None
        failure = Failure(
            reason="missed" if case.positive else "false_inject",
            stage=decision.stage,
            gate=(best.verdict if best else NOT_IN_LIBRARY) if case.positive else None,
            expected=best.id if best else (case.expect[0] if case.expect else None),
            expected_rank=best.rank if best else None,
            expected_score=best.score if best else None,
            expected_cosine=best.cosine if best else None,
            injected=injected,
            runner_up=runner.id if runner else None,
            runner_up_score=runner.score if runner else None,
            min_similarity=float(decision.thresholds["min_similarity"]),
            expected_probability=best.relevance if best else None,
            runner_up_probability=task.p if task else runner.relevance if runner else None,
            runner_up_clause=task.clause if task else None,
        )
    return CaseResult(
        case=case,
        injected=injected,
        passed=passed,
        stage=decision.stage,
        expected_rank=best.rank if best else None,
        top=top,
        extra=extra,
        failure=failure,
        ms=ms,
    )


def _trigger_rates(results: Sequence[CaseResult]) -> tuple[SkillTriggerRates, ...]:
    counts: dict[str, list[int]] = {}
    for result in results:
        case = result.case
        if case.kind == SHOULD_TRIGGER and case.expect:
            tally = counts.setdefault(case.expect[0], [0, 0, 0, 0])
            tally[0] += 1
            tally[1] += result.passed
        elif case.kind == SHOULD_NOT_TRIGGER and case.reject:
            tally = counts.setdefault(case.reject[0], [0, 0, 0, 0])
            tally[2] += 1
            tally[3] += result.passed
    return tuple(SkillTriggerRates(skill, *tally) for skill, tally in sorted(counts.items()))


def report_from(
    results: Sequence[CaseResult], index: Index, config: Config, *, label: str = ""
) -> EvalReport:
    """Aggregate judged cases into a report (also used on a subset, e.g. one split)."""
    cases = [result.case for result in results]
    headline = rates(cases, [result.injected for result in results])
    k = max(config.rerank_top_k, 1)
    positives = [r for r in results if r.case.positive and not r.case.observe_only]
    at_k = sum(1 for r in positives if r.expected_rank is not None and r.expected_rank <= k)
    top1 = sum(1 for r in positives if r.expected_rank == 1)
    by_kind: dict[str, KindRates] = {}
    for kind in dict.fromkeys((*KINDS, *GROUPS)):
        members = [result for result in results if result.case.category == kind]
        if members:
            passed = sum(result.passed for result in members)
            by_kind[kind] = KindRates(kind, len(members), passed, passed / len(members))
    by_skill = _trigger_rates(results)
    times = np.array([result.ms for result in results], dtype=np.float64)
    timings = Timings(
        median_ms=float(np.median(times)) if len(times) else 0.0,
        p95_ms=float(np.percentile(times, 95)) if len(times) else 0.0,
        total_ms=float(times.sum()),
    )
    warnings = missing_skill_warnings(cases, index.ids)
    status = index.models.status
    return EvalReport(
        label=label,
        results=tuple(results),
        rates=headline,
        k=k,
        recall_at_k=at_k / len(positives) if positives else None,
        top1=top1 / len(positives) if positives else None,
        extra_injects=sum(1 for result in positives if result.extra),
        by_kind=by_kind,
        by_skill=by_skill,
        timings=timings,
        thresholds=_thresholds(config, index),
        models={"dense": status.dense, "reranker": status.reranker},
        skills=len(index),
        warnings=warnings,
        config={"preset": config.preset, **{name: getattr(config, name) for name in TUNED_FIELDS}},
    )


def _thresholds(config: Config, index: Index) -> dict[str, float]:
    """The thresholds that decide: the relevance model's bar for this library's size
    (§9.12) where it decides, and the cascade's floor and margin (its fallback)."""
    tuning = resolve(config, index.models.status, len(index))
    found = {"min_similarity": tuning.min_similarity, "score_margin": tuning.score_margin}
    if tuning.relevance:
        model = load_relevance_model()
        found["relevance_threshold"] = model.threshold_in_force(
            config.relevance_threshold, len(index)
        )
    return found


@dataclass(frozen=True)
class Flip:
    """One case whose outcome differs between two runs."""

    prompt: str
    kind: str
    where: str
    passed_a: bool
    passed_b: bool
    injected_a: tuple[str, ...]
    injected_b: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """Two runs of the same cases side by side (Quepid / OpenSearch compare style)."""

    label_a: str
    label_b: str
    metrics: dict[str, dict[str, float | None]]  # name -> {a, b, delta}
    by_kind: dict[str, dict[str, float | None]]
    flipped: tuple[Flip, ...]  # pass -> fail and fail -> pass
    changed: int  # cases whose injected set differs, whether or not the outcome flipped
    matched: int  # cases present in both runs
    jaccard: float | None  # mean Jaccard overlap of the injected sets

    @property
    def regressions(self) -> tuple[Flip, ...]:
        return tuple(flip for flip in self.flipped if flip.passed_a and not flip.passed_b)

    @property
    def fixes(self) -> tuple[Flip, ...]:
        return tuple(flip for flip in self.flipped if not flip.passed_a and flip.passed_b)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": COMPARE_SCHEMA,
            "a": self.label_a,
            "b": self.label_b,
            "metrics": self.metrics,
            "by_kind": self.by_kind,
            "flipped": [asdict(flip) for flip in self.flipped],
            "changed": self.changed,
            "matched": self.matched,
            "jaccard": self.jaccard,
        }


def injected_jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """Overlap of two injected sets. Both empty is full agreement (1.0): two runs that both
    stay silent agree, unlike §9.4's token overlap where two empty sets share nothing."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 1.0


def compare(report_a: EvalReport, report_b: EvalReport) -> Comparison:
    """Metric deltas (b - a), flipped cases, and the mean Jaccard of the injected sets."""
    metrics = {name: _delta(report_a.metric(name), report_b.metric(name)) for name in METRIC_NAMES}
    by_kind = {
        kind: _delta(
            report_a.by_kind[kind].rate if kind in report_a.by_kind else None,
            report_b.by_kind[kind].rate if kind in report_b.by_kind else None,
        )
        for kind in KINDS
        if kind in report_a.by_kind or kind in report_b.by_kind
    }
    pairs = pair_results(report_a.results, report_b.results)
    flipped = tuple(
        Flip(a.case.prompt, a.case.kind, a.case.where, a.passed, b.passed, a.injected, b.injected)
        for a, b in pairs
        if a.passed != b.passed
    )
    overlaps = [injected_jaccard(a.injected, b.injected) for a, b in pairs]
    return Comparison(
        label_a=report_a.label,
        label_b=report_b.label,
        metrics=metrics,
        by_kind=by_kind,
        flipped=flipped,
        changed=sum(1 for a, b in pairs if set(a.injected) != set(b.injected)),
        matched=len(pairs),
        jaccard=float(np.mean(overlaps)) if overlaps else None,
    )


def _delta(a: float | None, b: float | None) -> dict[str, float | None]:
    return {"a": a, "b": b, "delta": None if a is None or b is None else b - a}


def pair_results(
    a: Sequence[CaseResult], b: Sequence[CaseResult]
) -> list[tuple[CaseResult, CaseResult]]:
    """Same cases in the same order pair by position; otherwise by prompt text."""
    if [r.case.prompt for r in a] == [r.case.prompt for r in b]:
        return list(zip(a, b, strict=True))
    by_prompt: dict[str, CaseResult] = {}
    for result in b:
        by_prompt.setdefault(result.case.prompt, result)
    return [
        (result, by_prompt[result.case.prompt]) for result in a if result.case.prompt in by_prompt
    ]


def percentiles(
    values: Sequence[float], points: Sequence[int] = (10, 25, 50, 75, 90)
) -> dict[str, float]:
    """Named percentiles plus min and max; empty input gives an empty mapping."""
    if not len(values):
        return {}
    array = np.asarray(values, dtype=np.float64)
    named: dict[str, float] = {"min": float(array.min())}
    named.update({f"p{point}": float(np.percentile(array, point)) for point in points})
    named["max"] = float(array.max())
    return named
