"""Why one skill was or was not injected, in one line, with the number that decided it.

`reason(decision, skill_id)` reads the verdict the cascade gave the skill and the inputs
and thresholds of the gate that gave it, and says the comparison that failed:

    0.410 < floor 0.520
    0.979 < cut-off 1.023 = top 1.143 - 0.120
    logit -3.10 < rerank_min -2.50

plus how much the skill is missing (`missing`, in the unit of that comparison). Computed
here once, it is the same sentence in the explorer's table and panel and in `why`.
It reads the Decision only: no scoring is repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from explorer.engine.decision import Decision, Gate, GateName, Row, Verdict

SCORE, LOGIT, PROBABILITY = "score", "logit", "p"


@dataclass(frozen=True)
class Reason:
    """The deciding gate for one skill, its comparison as text, and the gap to injection."""

    gate: str  # the verdict: "inject" or the gate that dropped the skill
    text: str  # the comparison that decided, with its numbers
    missing: float | None = None  # how much more `unit` would pass that gate; None: no number
    unit: str = SCORE  # SCORE (hybrid score), LOGIT (reranker logit) or PROBABILITY (§9.12)

    def delta_text(self) -> str:
        """The gap as a short signed number: `+0.041`, `+0.60 logit`, or '' without one."""
        if self.missing is None:
            return ""
        if self.unit == LOGIT:
            return f"+{self.missing:.2f} logit"
        if self.unit == PROBABILITY:
            return f"+{self.missing:.2f} p"
        return f"+{self.missing:.3f}"


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def reason(decision: Decision, row: Row) -> Reason:
    """The reason for `row` (a row of `decision`)."""
    verdict = row.verdict
    if verdict is Verdict.INJECT:
        return _injected(decision, row)
    if verdict in (Verdict.RELEVANCE, Verdict.SECOND_SKILL) and decision.relevance is not None:
        return _below_relevance(decision, row)
    explain = _BY_VERDICT.get(verdict)
    if explain is None:
        return Reason(verdict, verdict)
    return explain(decision, row, {gate.name: gate for gate in decision.gates})


Gates = dict[str, Gate]


def _injected(decision: Decision, row: Row) -> Reason:
    if decision.relevance is not None and row.relevance is not None:
        bar = decision.relevance.threshold
        task = decision.task_for(row.id)
        if task is not None:  # §9.12: one clause of the prompt asked for it on its own
            return Reason(
                row.verdict, f"task {task.clause!r}: p {task.p:.2f} ≥ {bar:.2f}: {task.drivers}"
            )
        return Reason(row.verdict, f"p {row.relevance:.2f} ≥ {bar:.2f}: {_drivers(decision, row)}")
    injected = next((item for item in decision.injected if item.id == row.id), None)
    detail = f", {injected.confidence:.2f} {injected.band}" if injected else ""
    return Reason(Verdict.INJECT, f"injected: {decision.stage} stage{detail}")


def _below_relevance(decision: Decision, row: Row) -> Reason:
    """§9.12: the probability under the model's bar (the second skill's, for the runner-up)."""
    assert decision.relevance is not None
    p = row.relevance if row.relevance is not None else 0.0
    second = row.verdict is Verdict.SECOND_SKILL
    bar = decision.relevance.second_threshold if second else decision.relevance.threshold
    label = "second skill's bar " if second else ""
    return Reason(
        row.verdict,
        f"p {p:.2f} < {label}{bar:.2f}: {_drivers(decision, row)}",
        max(bar - p, 0.0),
        PROBABILITY,
    )


def _below_floor(decision: Decision, row: Row, gates: Gates) -> Reason:
    floor = float(decision.thresholds.get("min_similarity", 0.0))
    return Reason(
        row.verdict, f"{_num(row.score)} < floor {_num(floor)}", max(floor - row.score, 0.0)
    )


def _below_score_cutoff(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.SCORE_MARGIN)
    margin = float(decision.thresholds.get("score_margin", 0.0))
    top = float(gate.inputs.get("top_score", 0.0)) if gate else row.score
    cutoff = float(gate.thresholds.get("cutoff", top - margin)) if gate else top - margin
    return Reason(
        row.verdict,
        f"{_num(row.score)} < cut-off {_num(cutoff)} = top {_num(top)} - {_num(margin)}",
        max(cutoff - row.score, 0.0),
    )


def _below_agreement_floor(decision: Decision, row: Row, gates: Gates) -> Reason:
    floor = float(decision.thresholds.get("min_similarity", 0.0))
    gate = gates.get(GateName.AGREEMENT_FLOOR)
    bar = float(gate.thresholds.get("floor", floor)) if gate else floor
    return Reason(
        row.verdict, f"{_num(row.score)} < agreement floor {_num(bar)}", max(bar - row.score, 0.0)
    )


def _below_rerank_min(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.RERANK_MIN)
    bar = float(gate.thresholds.get("rerank_min", 0.0)) if gate else 0.0
    logit = row.rerank if row.rerank is not None else float("nan")
    return Reason(
        row.verdict,
        f"logit {_num(logit, 2)} < rerank_min {_num(bar, 2)}",
        max(bar - logit, 0.0),
        LOGIT,
    )


def _below_rerank_cutoff(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.RERANK_MARGIN)
    best = float(gate.inputs.get("best") or 0.0) if gate else 0.0
    margin = float(gate.thresholds.get("rerank_margin", 0.0)) if gate else 0.0
    logit = row.rerank if row.rerank is not None else float("nan")
    cutoff = best - margin
    return Reason(
        row.verdict,
        f"logit {_num(logit, 2)} < cut-off {_num(cutoff, 2)} = best {_num(best, 2)} - "
        f"{_num(margin, 2)}",
        max(cutoff - logit, 0.0),
        LOGIT,
    )


def _lexical_took(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.LEXICAL_DOMINANCE)
    winner = gate.inputs.get("top") if gate else None
    bm25 = float(gate.inputs.get("top_bm25") or 0.0) if gate else 0.0
    # This skill's number first, as in every other reason: a narrow column keeps it.
    return Reason(row.verdict, f"bm25 {row.bm25:.2f} < {bm25:.2f}: lexical fast path took {winner}")


def _capped(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.MAX_SKILLS)
    cap = gate.thresholds.get("max_skills") if gate else None
    return Reason(row.verdict, f"passed, but max_skills = {cap} were already picked")


def _over_budget(decision: Decision, row: Row, gates: Gates) -> Reason:
    gate = gates.get(GateName.CHAR_BUDGET)
    budget = gate.thresholds.get("char_budget") if gate else None
    return Reason(row.verdict, f"passed, but its text would exceed char_budget = {budget}")


def _said(text: str) -> Callable[[Decision, Row, Gates], Reason]:
    """A verdict whose reason has no number: its sentence, with the skill's id for `{id}`."""
    return lambda _decision, row, _gates: Reason(row.verdict, text.format(id=row.id))


_BY_VERDICT: dict[Verdict, Callable[[Decision, Row, Gates], Reason]] = {
    Verdict.MIN_SIMILARITY: _below_floor,
    Verdict.SCORE_MARGIN: _below_score_cutoff,
    Verdict.AGREEMENT_FLOOR: _below_agreement_floor,
    Verdict.RERANK_MIN: _below_rerank_min,
    Verdict.RERANK_MARGIN: _below_rerank_cutoff,
    Verdict.RERANK_TOP_K: lambda decision, row, _gates: _not_reranked(decision, row),
    Verdict.LEXICAL_DOMINANCE: _lexical_took,
    Verdict.MAX_SKILLS: _capped,
    Verdict.CHAR_BUDGET: _over_budget,
    Verdict.DENY: _said("passed, but the config's deny list names it"),
    Verdict.INVOKED: _said("passed, but the prompt invokes /{id} (the host loads it)"),
    Verdict.BLANK_PROMPT: _said("blank prompt: nothing to route"),
    Verdict.EMPTY: _said("no skills in the library"),
}


def _drivers(decision: Decision, row: Row, count: int = 2) -> str:
    """§9.12: the features that moved this candidate's log-odds most, signed."""
    trace = decision.relevance
    position = (decision.channels.positions or {}).get(row.id)
    at = None if trace is None or position is None else trace.at(position)
    if trace is None or at is None:
        return ""
    return trace.drivers(at, count, digits=1)


@lru_cache(maxsize=8)
def _rerank_bar(decision: Decision) -> tuple[object, float | None]:
    """rerank_top_k and the lowest hybrid score among the reranker's candidates, once per
    decision (the table asks for one row at a time)."""
    gate = next((g for g in decision.gates if g.name is GateName.RERANKER), None)
    if gate is None:
        return None, None
    candidates = gate.inputs.get("candidates") or ()
    known = [s for s in dict.fromkeys(candidates) if decision.rows.index_of(s) is not None]
    scores = [decision.row(skill_id).score for skill_id in known]
    return gate.thresholds.get("rerank_top_k"), (min(scores) if scores else None)


def _not_reranked(decision: Decision, row: Row) -> Reason:
    """Not among the reranker's candidates: the lowest candidate's score is the bar."""
    k, bar = _rerank_bar(decision)
    if bar is None:
        return Reason(Verdict.RERANK_TOP_K, f"not among the rerank_top_k = {k} candidates")
    return Reason(
        Verdict.RERANK_TOP_K,
        f"{_num(row.score)} < {_num(bar)}, the lowest of the top {k} sent to the reranker",
        max(bar - row.score, 0.0),
    )


def reasons(decision: Decision) -> dict[str, Reason]:
    """Every skill's reason, by id (for JSON and reports; the explorer asks row by row)."""
    return {row.id: reason(decision, row) for row in decision.rows}
