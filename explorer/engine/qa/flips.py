"""Why a case flipped, or a verdict changed, between two decisions of the same prompt.

A flip is named by the skills that moved in or out of the injection: the one that took the
case (injected now, not before) and the one that lost it (injected before, not now). For
each: the gate it failed on the side where it was not injected, the number that gate
compared (engine/route/reasons.py: p under the relevance model, else the hybrid score, the
reranker's logit or BM25) before → after with its bar, and, under the relevance model,
the contribution that moved most. Nothing is scored here: two Decisions are read.

`flip_causes` re-decides only the flipped cases of two eval runs, on the snapshot and
config each ran on: two decisions a flip, whatever the number of cases.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.evaluate import EvalReport, pair_results
from explorer.engine.route.decision import Decision, Row, TaskTrace, Verdict
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import BM25, LOGIT, PROBABILITY, reason
from explorer.engine.route.relevance import FEATURE_LABELS

TOOK, LOST, MOVED = "took", "lost", "moved"
LABEL = {PROBABILITY: "p", LOGIT: "logit", BM25: "BM25"}


@dataclass(frozen=True)
class Shift:
    """One skill between two decisions: the gate, and its deciding number before → after."""

    skill: str
    role: str  # TOOK, LOST, or MOVED (a verdict change that is neither: compare's rows)
    verdict_before: str | None  # None: not in that library
    verdict_after: str | None
    gate: str  # the gate it failed where it was not injected
    unit: str  # reasons.SCORE, LOGIT, PROBABILITY or BM25
    before: float | None
    after: float | None
    bar: float | None
    moved: str = ""  # the relevance contribution that changed most: "p moved by bm25 lead …"
    # The bar on each side. They differ when a threshold was edited between the two (the
    # number may not have moved at all; the bar did), or when the skill was measured
    # against the first skill's bar on one side and the second skill's on the other.
    bars: tuple[float | None, float | None] = (None, None)
    # What decided the injection on the other side when it is another number: "rerank_top_k
    # → INJECT" passed the candidates' hybrid bar, and then p decided ("now p 1.00 ≥ 0.48").
    injected_by: str = ""

    @property
    def label(self) -> str:
        """The deciding number's name: p, logit, BM25 or hybrid."""
        return LABEL.get(self.unit, "hybrid")

    def numbers(self) -> str:
        """`p 0.85 → 0.45 (bar 0.57)`: the deciding number on both sides; `p 0.25 → 0.25
        (bar 0.48 → 0.05)` when the bar moved instead; `p — → 0.12` for a side that did not
        have the number (not a candidate there)."""
        label = self.label
        digits = 3 if label == "hybrid" else 2
        if self.verdict_before is None or self.verdict_after is None:
            return "new in the library" if self.verdict_before is None else "gone from the library"
        if self.before is None and self.after is None:
            return ""
        was, now = (f"{v:.{digits}f}" if v is not None else "—" for v in (self.before, self.after))
        text = f"{label} {was} → {now}"
        if self.bar is not None:
            text += f" (bar {self._bar(digits)})"
        return f"{text}; {self.injected_by}" if self.injected_by else text

    def _bar(self, digits: int) -> str:
        assert self.bar is not None
        bar = f"{self.bar:.{digits}f}"
        was, now = (f"{b:.{digits}f}" if b is not None else None for b in self.bars)
        return f"{was} → {now}" if was is not None and now is not None and was != now else bar

    def text(self) -> str:
        """`plaintext-accounting lost it: relevance, p 0.85 → 0.45 (bar 0.57); bm25 lead …`"""
        head = {TOOK: "took it", LOST: "lost it", MOVED: "moved"}[self.role]
        parts = [f"{self.gate}, {self.numbers()}" if self.numbers() else self.gate]
        if self.moved:
            parts.append(self.moved)
        return f"{self.skill} {head}: {'; '.join(parts)}"


@dataclass(frozen=True)
class FlipCause:
    """What moved one case: every skill that took or lost it."""

    shifts: tuple[Shift, ...]

    def text(self) -> str:
        return "; ".join(shift.text() for shift in self.shifts) or "no injection changed"


def _row(decision: Decision, skill: str) -> Row | None:
    return None if decision.rows.index_of(skill) is None else decision.row(skill)


def _value(row: Row | None, unit: str) -> float | None:
    if row is None:
        return None
    if unit == PROBABILITY:
        return row.relevance
    if unit == LOGIT:
        return row.rerank
    if unit == BM25:
        return row.bm25
    return row.score


def _contributions(decision: Decision, skill: str) -> dict[str, float] | None:
    trace = decision.relevance
    position = (decision.channels.positions or {}).get(skill)
    at = None if trace is None or position is None else trace.at(position)
    if trace is None or at is None:
        return None
    return dict(zip(trace.features, (float(v) for v in trace.contributions[at]), strict=True))


def _moved_most(before: Decision, after: Decision, skill: str) -> str:
    """The relevance contribution (log-odds) that changed most, when both sides have one."""
    old, new = _contributions(before, skill), _contributions(after, skill)
    if old is None or new is None:
        return ""
    name = max(new, key=lambda feature: abs(new[feature] - old.get(feature, 0.0)))
    if abs(new[name] - old.get(name, 0.0)) < 0.005:
        return ""
    label = FEATURE_LABELS.get(name, name)
    # "p moved by": a contribution to p in log-odds, not the channel's own number (the
    # reranker's logit beside it in the what-if is another scale).
    return f"p moved by {label} {old.get(name, 0.0):+.2f} → {new[name]:+.2f}"


def _task_that_added(decision: Decision, skill: str) -> TaskTrace | None:
    """The clause of a several-task prompt whose own routing added `skill`, if one did."""
    return next((task for task in decision.tasks if task.added and task.best == skill), None)


CLAUSE_CHARS = 40  # of a task's clause, quoted in a flip's cause


def _clause(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= CLAUSE_CHARS else text[: CLAUSE_CHARS - 1].rstrip() + "…")


def shift(skill: str, before: Decision, after: Decision, role: str = MOVED) -> Shift:
    """`skill` between `before` and `after`: measured by the gate of the side where it
    was not injected (after, unless it is injected only there)."""
    old, new = _row(before, skill), _row(after, skill)
    was = reason(before, old) if old is not None else None
    now = reason(after, new) if new is not None else None
    deciding = now if new is not None and new.verdict is not Verdict.INJECT else (was or now)
    unit = deciding.unit if deciding is not None else PROBABILITY
    bars = [side.bar if side is not None and side.unit == unit else None for side in (was, now)]
    injected_by = ""
    for word, side, row in (("was", was, old), ("now", now, new)):
        injected = row is not None and row.verdict is Verdict.INJECT
        if injected and side is not None and side.unit != unit and side.value is not None:
            label = LABEL.get(side.unit, "hybrid")
            digits = 3 if label == "hybrid" else 2
            bar = f" ≥ {side.bar:.{digits}f}" if side.bar is not None else ""
            injected_by = f"{word} INJECT at {label} {side.value:.{digits}f}{bar}"
    for word, decision, row in (("was", before, old), ("now", after, new)):
        if row is None or row.verdict is not Verdict.INJECT:
            continue
        task = _task_that_added(decision, skill)
        if task is not None:
            # Injected for one clause of the prompt: that clause's p decided, not the
            # whole prompt's (§9.12, several tasks).
            injected_by = f"{word} INJECT for the task {_clause(task.clause)} at p {task.p:.2f}"
    return Shift(
        skill=skill,
        role=role,
        verdict_before=None if old is None else str(old.verdict),
        verdict_after=None if new is None else str(new.verdict),
        gate=str(deciding.gate) if deciding is not None else "",
        unit=unit,
        before=_value(old, unit),
        after=_value(new, unit),
        bar=deciding.bar if deciding is not None else None,
        moved=_moved_most(before, after, skill),
        bars=(bars[0], bars[1]),
        injected_by=injected_by,
    )


def flip_cause(before: Decision, after: Decision) -> FlipCause:
    """The skills that took and lost the prompt between two decisions of it."""
    was, now = before.injected_ids, after.injected_ids
    took = [shift(skill, before, after, TOOK) for skill in now if skill not in was]
    lost = [shift(skill, before, after, LOST) for skill in was if skill not in now]
    return FlipCause((*lost, *took))


def flip_causes(
    report_a: EvalReport,
    report_b: EvalReport,
    before: tuple[Index, Config],
    after: tuple[Index, Config],
    *,
    cwd: str | None = None,
) -> dict[str, FlipCause]:
    """prompt -> its cause, for every case whose outcome differs between the two runs."""
    causes: dict[str, FlipCause] = {}
    for a, b in pair_results(report_a.results, report_b.results):
        if a.passed == b.passed:
            continue
        case = b.case
        where = case.cwd or cwd
        decided = [
            decide(case.prompt, index, config, context=case.context, cwd=where)
            for index, config in (before, after)
        ]
        causes[case.prompt] = flip_cause(*decided)
    return causes
