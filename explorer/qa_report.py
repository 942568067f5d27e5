"""Renderings of eval, compare, calibration and lint results for the terminal.

Rendering only: every figure shown comes from the engine's report objects. Each
rendering is a list of blocks (text and rich tables) for `explorer.terminal.emit`, which
makes prompts and skill text visible-safe and fits tables to the terminal.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

from explorer.engine.author import (
    COLLISION_WEIGHTS,
    NEAR_HYBRID,
    NEAR_P,
    SEVERITIES,
    Collision,
    CollisionMap,
    Finding,
)
from explorer.engine.base import clipped, counted
from explorer.engine.qa import (
    HOST_VALUE_PENALTY,
    OBSERVE_ONLY,
    CalibrationReport,
    CaseResult,
    Comparison,
    EvalReport,
    Rates,
)
from explorer.engine.route import bar_text, shown_against
from explorer.report import Blocks
from explorer.terminal import FittedTable, table

PROMPT_WIDTH = 60
CLAUSE_SHOWN = 30  # of the clause that injected a rival (§9.12, several tasks)


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _delta(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "(none)"


def headline(rates: Rates) -> list[str]:
    return [
        f"recall             {_rate(rates.recall)}  ({rates.hits}/{rates.positives} positives)",
        f"false-inject rate  {_rate(rates.false_inject_rate)}  "
        f"({rates.false_injects}/{rates.negatives} negatives)",
        f"host value         {_rate(rates.host_value)}  "
        f"(recall - {HOST_VALUE_PENALTY} x false-inject rate)",
    ]


def eval_text(report: EvalReport, source: str) -> Blocks:
    r = report.rates
    lines: Blocks = [
        f"eval {source}: {counted(r.cases, 'case')} "
        f"({r.positives} positive, {r.negatives} negative) "
        f"on {counted(report.skills, 'skill')} [{report.label}]",
        f"model {report.models['dense']}, reranker {report.models['reranker'] or 'none'}; "
        f"{_deciding(report.thresholds)}; preset {report.config.get('preset', 'reference')}",
        "",
        *headline(r),
        f"stage-1 recall@{report.k:<3} {_rate(report.recall_at_k)}  "
        "(an expected skill in the top k by hybrid score)",
        f"stage-1 top-1      {_rate(report.top1)}",
        f"unexpected skill   {counted(report.extra_injects, 'positive')} with a skill "
        "injected that the case does not expect",
        "",
        table(
            ["kind", "cases", "passed", "rate", ""],
            [
                [
                    kind.kind,
                    str(kind.cases),
                    str(kind.passed),
                    _rate(kind.rate),
                    "observe only: not in the figures above" if kind.kind in OBSERVE_ONLY else "",
                ]
                for kind in report.by_kind.values()
            ],
            right={1, 2, 3},
        ),
    ]
    if report.by_skill:
        lines += [
            "",
            "trigger evals per skill (as skill-creator reports them):",
            table(
                ["skill", "triggered (should)", "not triggered (should not)"],
                [
                    [
                        rates.skill,
                        f"{rates.triggered}/{rates.should}",
                        f"{rates.quiet}/{rates.should_not}",
                    ]
                    for rates in report.by_skill
                ],
                right={1, 2},
            ),
        ]
    failures = report.failures
    lines += ["", f"failures ({len(failures)}):"]
    bar = report.thresholds.get("relevance_threshold")
    sources = list(dict.fromkeys(result.case.source for result in report.results))
    if not failures:
        lines.append("  none")
    elif len(sources) > 1:  # the skills' own trigger evals: a line says where only in its file
        for path, results in _by_file(failures, sources).items():
            lines += [f"{path} ({len(results)}):", failure_table(results, bar)]
    else:
        lines.append(failure_table(failures, bar))
    t = report.timings
    lines += [
        "",
        f"timings: decide() median {t.median_ms:.1f} ms, p95 {t.p95_ms:.1f} ms, "
        f"total {t.total_ms / 1000:.2f} s for {r.cases} cases",
    ]
    return lines


def _by_file(failures: Sequence[CaseResult], sources: Sequence[str]) -> dict[str, list[CaseResult]]:
    """The failures by the file their case came from, in the order the cases were read,
    each file named from the folder all the run's `sources` share (`pdf/evals/evals.json`:
    the skill's folder is in the name even when one skill's files alone fail)."""
    try:
        shared = os.path.commonpath([os.path.dirname(source) or "." for source in sources])
    except ValueError:  # absolute paths beside relative ones: each is named whole
        shared = ""
    groups: dict[str, list[CaseResult]] = {}
    for result in failures:
        source = result.case.source
        name = os.path.relpath(source, shared) if shared and source else source or "—"
        groups.setdefault(name, []).append(result)
    return groups


# The failures' columns in the order they give way on a narrow terminal: the case's
# expected skill, what went wrong and its prompt (cut with an ellipsis) stay.
FAILURE_DROPS = ("best rival", "deciding", "stage", "kind", "line")


def _strength(probability: float | None, score: float | None, bar: float | None) -> str:
    """The number that decided, named: the relevance model's p when it scored the skill
    (never rounded onto its bar), else the hybrid score."""
    if probability is not None:
        return f"p {probability:.2f}" if bar is None else f"p {shown_against(probability, bar)}"
    return "—" if score is None else f"hybrid {score:.3f}"


def failure_table(failures: Sequence[CaseResult], bar: float | None = None) -> FittedTable:
    """One row per failed case: the stage, the gate to blame, and the strongest other
    skill, each with the number that decided (p under the learned preset, whose bar is
    `bar`)."""
    rows = []
    for result in failures:
        failure = result.failure
        assert failure is not None
        if failure.reason == "missed":
            expected = f"{failure.expected}#{failure.expected_rank or '—'}"
            score = _strength(failure.expected_probability, failure.expected_score, bar)
            why = failure.gate or "—"
            if failure.injected:
                why += f"; got {_ids(failure.injected)}"
        elif result.case.reject:
            expected, score = f"not {_ids(result.case.reject)}", "—"
            why = f"injected {_ids(failure.injected)}"
        else:
            expected, score = "(none)", "—"
            why = f"injected {_ids(failure.injected)}"
        if failure.runner_up is None:
            runner = "—"
        else:
            strength = _strength(failure.runner_up_probability, failure.runner_up_score, bar)
            if failure.runner_up_clause is not None:  # a clause's own p injected it
                strength += f' for "{clipped(failure.runner_up_clause, CLAUSE_SHOWN)}"'
            # Of a false injection the strongest other skill is the injected one, which the
            # column before names: here only how strong it stood.
            injected = failure.runner_up in failure.injected
            runner = (
                f"the injected one, {strength}" if injected else f"{failure.runner_up} {strength}"
            )
        rows.append(
            [
                str(result.case.line or "—"),
                result.case.kind,
                expected,
                score,
                failure.stage,
                why,
                runner,
                clipped(result.case.prompt, PROMPT_WIDTH),
            ]
        )
    headers = [
        "line",
        "kind",
        "expected#rank",
        "deciding",
        "stage",
        "gate / injected",
        "best rival",
        "prompt",
    ]
    return FittedTable(
        headers, rows, right={0, 3}, droppable=FAILURE_DROPS, clipped=("gate / injected", "prompt")
    )


def compare_text(comparison: Comparison, report_a: EvalReport, report_b: EvalReport) -> Blocks:
    rows = [
        [name, _rate(values["a"]), _rate(values["b"]), _delta(values["delta"])]
        for name, values in comparison.metrics.items()
    ]
    rows += [
        [f"{kind} pass rate", _rate(values["a"]), _rate(values["b"]), _delta(values["delta"])]
        for kind, values in comparison.by_kind.items()
    ]
    lines: Blocks = [
        f"A: {comparison.label_a}",
        f"B: {comparison.label_b}",
        "",
        table(["metric", "A", "B", "B - A"], rows, right={1, 2, 3}),
        "",
        f"injected sets: mean Jaccard overlap {_rate(comparison.jaccard)} over "
        f"{counted(comparison.matched, 'case')}; {counted(comparison.changed, 'case')} changed",
    ]
    for title, flips in (
        ("pass -> fail", comparison.regressions),
        ("fail -> pass", comparison.fixes),
    ):
        lines += ["", f"{title} ({len(flips)}):"]
        if flips:
            lines.append(
                table(
                    ["where", "kind", "A injected", "B injected", "prompt"],
                    [
                        [
                            flip.where,
                            flip.kind,
                            _ids(flip.injected_a),
                            _ids(flip.injected_b),
                            clipped(flip.prompt, PROMPT_WIDTH),
                        ]
                        for flip in flips
                    ],
                    right=set(),
                )
            )
        else:
            lines.append("  none")
    timing_a, timing_b = report_a.timings, report_b.timings
    lines += [
        "",
        f"timings: A median {timing_a.median_ms:.1f} ms, B median {timing_b.median_ms:.1f} ms",
    ]
    return lines


def _deciding(thresholds: dict[str, float]) -> str:
    """The thresholds that decide an eval's cases: the relevance model's bar where it
    decides (the floor is its fallback then), else the cascade's floor and margin."""
    if "relevance_threshold" in thresholds:
        return f"the relevance model injects at p ≥ {bar_text(thresholds['relevance_threshold'])}"
    return (
        f"min_similarity {thresholds['min_similarity']:.2f}, "
        f"score_margin {thresholds['score_margin']:.2f}"
    )


def _values(values: dict[str, float]) -> str:
    return ", ".join(f"{name} = {value:g}" for name, value in values.items())


def _column(values: Sequence[float]) -> list[str]:
    """A grid column's values with one number of decimals (0.85 and 0.90, not 0.9)."""
    places = max((len(f"{value:g}".partition(".")[2]) for value in values), default=0)
    return [f"{value:.{places}f}" for value in values]


def calibration_text(report: CalibrationReport, source: str, top: int) -> Blocks:
    rerank = (
        f"reranker {report.reranker}"
        if report.reranker
        else "no reranker (rerank_min and rerank_margin not swept)"
    )
    lines: Blocks = [
        f"calibrate {source}: model {report.model}, {rerank}",
        f"split: {report.split_note}: {report.train_cases} train, "
        f"{report.validation_cases} validation; chosen on train only",
        "",
        "knee (train): cosine of the expected skill for positives, top cosine for negatives",
    ]
    names = ["min", "p10", "p25", "p50", "p75", "p90", "max"]
    rows = [
        [label, *(_rate(values.get(name)) for name in names)]
        for label, values in report.knee.items()
    ]
    lines.append(table(["", *names], rows, right=set(range(1, len(names) + 1))))
    lines += [
        "",
        f"grid: {report.grid_size:,} points, {report.decide_calls:,} decide() calls "
        f"in {report.seconds:.1f} s",
        f"top {min(top, len(report.table))} by {report.ranking}:",
    ]
    swept = list(report.swept)
    shown = report.table[:top]
    columns = [_column([point.values[name] for point in shown]) for name in swept]
    grid_rows = [
        [
            *(column[row] for column in columns),
            _rate(point.train.recall),
            _rate(point.train.false_inject_rate),
            _rate(point.train.host_value),
        ]
        for row, point in enumerate(shown)
    ]
    lines.append(
        table([*swept, "recall", "false-inj", "host"], grid_rows, right=range(len(swept) + 3))
    )
    # Not "recommended" when the validation split says to keep the current values.
    chosen = "best on train" if report.validation_prefers_current else "recommended"
    lines += [
        "",
        f"{chosen + ':':<{len(chosen) + 1}} {_values(report.recommended)}",
        f"{'current:':<{len(chosen) + 1}} {_values(report.current)}",
        *(f"caution: {caution}" for caution in report.cautions),
        "",
    ]
    outcome_rows = []
    for label, current, recommended in (
        ("train", report.train_current, report.train_recommended),
        ("validation", report.validation_current, report.validation_recommended),
    ):
        if current is None or recommended is None:
            outcome_rows.append([label, "no cases", "", "", "", "", ""])
            continue
        outcome_rows.append(
            [
                label,
                _rate(current.recall),
                _rate(current.false_inject_rate),
                _rate(current.host_value),
                _rate(recommended.recall),
                _rate(recommended.false_inject_rate),
                _rate(recommended.host_value),
            ]
        )
    lines.append(
        table(
            [
                "split",
                "recall now",
                "false-inj now",
                "host now",
                "recall rec",
                "false-inj rec",
                "host rec",
            ],
            outcome_rows,
            right=set(range(1, 7)),
        )
    )
    return lines


def lint_text(findings: Sequence[Finding], skills: int, ignored: int = 0) -> str:
    """Each finding on a line, then the counts (and how many --ignore left out)."""
    lines = [str(finding) for finding in findings]
    counts = Counter(finding.severity for finding in findings)
    plurals = {"error": "errors", "warning": "warnings", "info": "info"}
    summary = ", ".join(
        counted(counts.get(severity, 0), severity, plurals[severity]) for severity in SEVERITIES
    )
    summary += f" in {counted(skills, 'skill')}"
    if ignored:
        summary += f" ({counted(ignored, 'finding')} of ignored rules not shown)"
    lines += ["" if lines else "no findings", summary]
    return "\n".join(lines)


COLLISION_FLIPS_SHOWN = 3
COLLISION_PROMPT_WIDTH = 80


def _clipped(prompt: str) -> str:
    """A collision's prompt on one line, cut (`_clip`) past COLLISION_PROMPT_WIDTH."""
    return clipped(prompt.replace("\n", " "), COLLISION_PROMPT_WIDTH)


def collision_lines(collision: Collision, number: int) -> list[str]:
    """One pair: its weight and counts, the words both descriptions have, the flips."""
    takes, shares, near = (collision.count(kind) for kind in ("take", "share", "near"))
    lines = [
        f"#{number} {collision.a} <> {collision.b}  weight {collision.weight:.2f}: "
        f"{takes} taken, {shares} shared, {counted(near, 'near miss', 'near misses')}",
        f"    shared words: {', '.join(collision.shared) or '(none: the models alone)'}",
    ]
    flips = collision.flips
    for contest in flips[:COLLISION_FLIPS_SHOWN]:
        prompt = _clipped(contest.prompt)
        lines.append(f"    FLIP {prompt!r}: expects {contest.expected}, {contest.rival} took it")
    if len(flips) > COLLISION_FLIPS_SHOWN:
        lines.append(f"    … {len(flips) - COLLISION_FLIPS_SHOWN} more flipped cases")
    sampled = [c for c in collision.contests if c.source == "sentence" and c.kind == "take"]
    for contest in sampled[:1]:
        prompt = _clipped(contest.prompt)
        lines.append(
            f"    {contest.rival} takes a sentence of {contest.expected}'s own: {prompt!r}"
        )
    if not flips and not sampled and collision.contests:
        # Only shares and near misses: one of them, so the pair is not a bare count (a
        # cross-reference sentence, "see schema-markup", reads as one at once).
        contest = collision.contests[0]
        prompt = _clipped(contest.prompt)
        whose = "a case of" if contest.source == "case" else "a sentence of"
        did = {"share": "was injected beside it", "near": "came close"}.get(contest.kind, "took it")
        lines.append(f"    {whose} {contest.expected}'s, {contest.rival} {did}: {prompt!r}")
    return lines


COLLISION_LEGEND = (
    "(for a prompt one skill should win: taken, the other was injected in its place; "
    "shared, injected beside it; near miss, the other was not injected but came close, at "
    f"p ≥ {NEAR_P:g} (without the relevance model: within {NEAR_HYBRID:g} of its hybrid "
    "score); weight = "
    + " + ".join(
        f"{name} x {COLLISION_WEIGHTS[kind]:g}"
        for kind, name in (("take", "taken"), ("share", "shared"), ("near", "near misses"))
    )
    + ")"
)


def collisions_text(found: CollisionMap, top: int, negatives: int = 0) -> str:
    """The map's pairs, heaviest first; `negatives`: the cases that expect no skill, which
    it does not route (a collision is two skills after one prompt), said beside the count
    so it does not read as cases lost."""
    verb = "expects" if negatives == 1 else "expect"
    aside = f"; not the {counted(negatives, 'case')} that {verb} no skill" if negatives else ""
    lines = [
        f"collisions: {counted(found.prompts, 'prompt')} routed ({counted(found.cases, 'case')}, "
        f"{counted(found.sentences, 'sentence')} of the descriptions{aside}); pairs that "
        f"compete: {len(found.collisions)}"
    ]
    if not found.cases:
        lines.append("(labelled prompts find more: --cases FILE routes them too)")
    if found.collisions:
        lines.append(COLLISION_LEGEND)
    for number, collision in enumerate(found.collisions[:top], 1):
        lines += ["", *collision_lines(collision, number)]
    if len(found.collisions) > top:
        lighter = counted(len(found.collisions) - top, "lighter pair")
        lines += ["", f"… {lighter} (--top N)"]
    return "\n".join(lines)
