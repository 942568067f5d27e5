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

from dataclasses import dataclass
from functools import lru_cache

from explorer.engine.decision import Decision, GateName, Row, Verdict

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
    floor = float(decision.thresholds.get("min_similarity", 0.0))
    gates = {gate.name: gate for gate in decision.gates}
    if verdict is Verdict.INJECT:
        if decision.relevance is not None and row.relevance is not None:
            bar = decision.relevance.threshold
            task = decision.task_for(row.id)
            if task is not None:  # §9.12: one clause of the prompt asked for it on its own
                return Reason(
                    verdict, f"task {task.clause!r}: p {task.p:.2f} ≥ {bar:.2f}: {task.drivers}"
                )
            return Reason(verdict, f"p {row.relevance:.2f} ≥ {bar:.2f}: {_drivers(decision, row)}")
        injected = next((item for item in decision.injected if item.id == row.id), None)
        detail = f", {injected.confidence:.2f} {injected.band}" if injected else ""
        return Reason(Verdict.INJECT, f"injected: {decision.stage} stage{detail}")
    if verdict in (Verdict.RELEVANCE, Verdict.SECOND_SKILL) and decision.relevance is not None:
        p = row.relevance if row.relevance is not None else 0.0
        second = verdict is Verdict.SECOND_SKILL
        bar = decision.relevance.second_threshold if second else decision.relevance.threshold
        label = "second skill's bar" if second else ""
        return Reason(
            verdict,
            f"p {p:.2f} < {label}{' ' if label else ''}{bar:.2f}: {_drivers(decision, row)}",
            max(bar - p, 0.0),
            PROBABILITY,
        )
    if verdict is Verdict.MIN_SIMILARITY:
        return Reason(
            verdict, f"{_num(row.score)} < floor {_num(floor)}", max(floor - row.score, 0.0)
        )
    if verdict is Verdict.SCORE_MARGIN:
        gate = gates.get(GateName.SCORE_MARGIN)
        margin = float(decision.thresholds.get("score_margin", 0.0))
        top = float(gate.inputs.get("top_score", 0.0)) if gate else row.score
        cutoff = float(gate.thresholds.get("cutoff", top - margin)) if gate else top - margin
        return Reason(
            verdict,
            f"{_num(row.score)} < cut-off {_num(cutoff)} = top {_num(top)} - {_num(margin)}",
            max(cutoff - row.score, 0.0),
        )
    if verdict is Verdict.AGREEMENT_FLOOR:
        gate = gates.get(GateName.AGREEMENT_FLOOR)
        bar = float(gate.thresholds.get("floor", floor)) if gate else floor
        return Reason(
            verdict,
            f"{_num(row.score)} < agreement floor {_num(bar)}",
            max(bar - row.score, 0.0),
        )
    if verdict is Verdict.RERANK_MIN:
        gate = gates.get(GateName.RERANK_MIN)
        bar = float(gate.thresholds.get("rerank_min", 0.0)) if gate else 0.0
        logit = row.rerank if row.rerank is not None else float("nan")
        return Reason(
            verdict,
            f"logit {_num(logit, 2)} < rerank_min {_num(bar, 2)}",
            max(bar - logit, 0.0),
            LOGIT,
        )
    if verdict is Verdict.RERANK_MARGIN:
        gate = gates.get(GateName.RERANK_MARGIN)
        best = float(gate.inputs.get("best") or 0.0) if gate else 0.0
        margin = float(gate.thresholds.get("rerank_margin", 0.0)) if gate else 0.0
        logit = row.rerank if row.rerank is not None else float("nan")
        cutoff = best - margin
        return Reason(
            verdict,
            f"logit {_num(logit, 2)} < cut-off {_num(cutoff, 2)} = best {_num(best, 2)} - "
            f"{_num(margin, 2)}",
            max(cutoff - logit, 0.0),
            LOGIT,
        )
    if verdict is Verdict.RERANK_TOP_K:
        return _not_reranked(decision, row)
    if verdict is Verdict.LEXICAL_DOMINANCE:
        gate = gates.get(GateName.LEXICAL_DOMINANCE)
        winner = gate.inputs.get("top") if gate else None
        bm25 = float(gate.inputs.get("top_bm25") or 0.0) if gate else 0.0
        # This skill's number first, as in every other reason: a narrow column keeps it.
        return Reason(verdict, f"bm25 {row.bm25:.2f} < {bm25:.2f}: lexical fast path took {winner}")
    if verdict is Verdict.MAX_SKILLS:
        gate = gates.get(GateName.MAX_SKILLS)
        cap = gate.thresholds.get("max_skills") if gate else None
        return Reason(verdict, f"passed, but max_skills = {cap} were already picked")
    if verdict is Verdict.CHAR_BUDGET:
        gate = gates.get(GateName.CHAR_BUDGET)
        budget = gate.thresholds.get("char_budget") if gate else None
        return Reason(verdict, f"passed, but its text would exceed char_budget = {budget}")
    if verdict is Verdict.DENY:
        return Reason(verdict, "passed, but the config's deny list names it")
    if verdict is Verdict.INVOKED:
        return Reason(verdict, f"passed, but the prompt invokes /{row.id} (the host loads it)")
    if verdict is Verdict.BLANK_PROMPT:
        return Reason(verdict, "blank prompt: nothing to route")
    if verdict is Verdict.EMPTY:
        return Reason(verdict, "no skills in the library")
    return Reason(verdict, verdict)


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
