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

from explorer.engine.base.text import clipped
from explorer.engine.inference.rerank import sigmoid
from explorer.engine.route.decision import Decision, GateName, Row, Stage, Verdict
from explorer.engine.route.relevance import ModelForm

SCORE, LOGIT, PROBABILITY, BM25 = "score", "logit", "p", "bm25"
# The table column that shows each unit's number: the deciding column of a row.
COLUMN = {SCORE: "hybrid", LOGIT: "rerank", PROBABILITY: "p", BM25: "bm25"}


@dataclass(frozen=True)
class Reason:
    """The deciding gate for one skill, its comparison as text, and the gap to injection.

    `value` is the skill's number the gate compared, `bar` what it was compared with (both
    in `unit`); `missing` how much more `value` would pass that gate, and `needs` what else
    would (another route past the gate, or what no number says: the deny list)."""

    gate: str  # the verdict: "inject" or the gate that dropped the skill
    text: str  # the comparison that decided, with its numbers
    missing: float | None = None  # how much more `unit` would pass that gate; None: no number
    unit: str = SCORE  # SCORE (hybrid), LOGIT (reranker), PROBABILITY (§9.12) or BM25
    value: float | None = None
    bar: float | None = None
    needs: str = ""

    @property
    def column(self) -> str:
        """The table's column that holds `value`: the one that decided this row."""
        return COLUMN[self.unit]

    def delta_text(self) -> str:
        """The gap as a short signed number: `+0.041`, `+0.60 logit`, or '' without one."""
        if self.missing is None:
            return ""
        if self.unit == LOGIT:
            return f"+{_above_zero(self.missing, 2)} logit"
        if self.unit == PROBABILITY:
            return f"+{_above_zero(self.missing, 2)} p"
        if self.unit == BM25:
            return f"+{_above_zero(self.missing, 2)} bm25"
        return f"+{_above_zero(self.missing, 3)}"

    def gap_text(self) -> str:
        """Gap-to-win in words: what the skill would need to pass its gate."""
        if self.gate == Verdict.INJECT:
            return ""
        parts = []
        if self.missing is not None and self.bar is not None:
            label = {SCORE: "hybrid", LOGIT: "logit", PROBABILITY: "p", BM25: "BM25"}[self.unit]
            digits = 3 if self.unit == SCORE else 2
            if self.unit == PROBABILITY:
                digits = bar_places(self.bar, digits)
            # The bar as the value beside it reads it: 0.0454 for a skill at 0.0451, not
            # 0.045, which it would seem to meet already.
            bar = (
                _pair(self.value, self.bar, digits)[1]
                if self.value is not None
                else bar_text(self.bar, digits)
            )
            parts.append(f"missing {self.delta_text()}: needs {label} ≥ {bar}")
        if self.needs:
            parts.append(self.needs)
        return "; ".join(parts)


# The most decimals a number is printed with to tell it from its bar (or from none): a
# float64 holds about 17 significant digits.
MOST_PLACES = 17


def _above_zero(gap: float, digits: int) -> str:
    """A gap with `digits` decimals, or as many more as it takes not to read as none: p
    0.8295 under a bar of 0.83 misses by "0.0005", not "+0.00"."""
    for places in range(digits, MOST_PLACES + 1):
        shown = _num(gap, places)
        if gap <= 0 or float(shown) > 0:
            break
    return shown


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


# The most decimals a bar is printed with to read as it was written: a pinned 0.999 reads
# "0.999", not "1.00"; a fitted 0.78331… still reads "0.78".
BAR_PLACES = 4


def bar_places(bar: float, digits: int = 2) -> int:
    """The decimals a configured threshold is printed with: `digits`, or the few more it
    was written with, so a bar of 0.999 never reads "1.00", one no probability can meet."""
    for places in range(digits, BAR_PLACES + 1):
        if abs(round(bar, places) - bar) < 1e-12:
            return places
    return digits


def bar_text(bar: float, digits: int = 2) -> str:
    """A configured threshold as it was written (`bar_places`)."""
    return _num(bar, bar_places(bar, digits))


def _pair(value: float, bar: float, digits: int = 3) -> tuple[str, str]:
    """`value` and `bar` printed with `digits` decimals, or with as many more as it takes
    for them to differ: "0.128 < 0.128" reads as false; "0.1277 < 0.1283" does not."""
    for places in range(digits, MOST_PLACES + 1):
        shown = _num(value, places), _num(bar, places)
        if shown[0] != shown[1] or value == bar:
            break
    return shown


def p_text(p: float, bar: float | None = None) -> str:
    """A p in a table column: two decimals (beside its `bar`, more where two would round
    it onto the bar, as `shown_against`), and `<.01` for one that would read 0.00, so a
    column of candidates the model all but ruled out, listed by p, does not read as ties
    in no order."""
    if round(p, 2) == 0:
        return "<.01"
    return f"{p:.2f}" if bar is None else shown_against(p, bar)


def shown_against(value: float, bar: float, digits: int = 2) -> str:
    """`value` as `_pair` prints it beside `bar`: with `digits` decimals, or more where
    fewer would round it onto the bar (p 0.478 reads "0.478", not "0.48", against 0.48)."""
    return _pair(value, bar, digits)[0]


def _gap(
    verdict: str, text: str, value: float | None, bar: float, unit: str = SCORE, needs: str = ""
) -> Reason:
    missing = None if value is None or value != value else max(bar - value, 0.0)
    return Reason(verdict, text, missing, unit, value, bar, needs)


def reason(decision: Decision, row: Row) -> Reason:
    """The reason for `row` (a row of `decision`)."""
    verdict = row.verdict
    floor = float(decision.thresholds.get("min_similarity", 0.0))
    gates = {gate.name: gate for gate in decision.gates}
    trace = decision.relevance
    if verdict is Verdict.INJECT:
        forced = gates.get(GateName.FORCE)
        if forced is not None and forced.section == "9.17" and row.id in forced.inputs["forced"]:
            text = "forced: the config's force list names it, and a keyword hit it (§9.17)"
            return Reason(verdict, text, None, SCORE, row.score)
        task = decision.task_for(row.id)
        if trace is not None and task is not None:  # §9.12: a clause asked for it on its own
            shown, bar_shown = _pair(task.p, trace.threshold, bar_places(trace.threshold))
            text = f"task {task.clause!r}: p {shown} ≥ {bar_shown}: {task.drivers}"
            return Reason(verdict, text, None, PROBABILITY, task.p, trace.threshold)
        if trace is not None and row.relevance is not None:
            bar = trace.threshold if row.id == decision.injected_ids[0] else trace.second_threshold
            shown, bar_shown = _pair(row.relevance, bar, bar_places(bar))
            text = f"p {shown} ≥ {bar_shown}: {_drivers(decision, row)}"
            return Reason(verdict, text, None, PROBABILITY, row.relevance, bar)
        injected = next((item for item in decision.injected if item.id == row.id), None)
        detail = f", confidence {injected.confidence:.2f} ({injected.band})" if injected else ""
        text = f"by the {decision.stage} stage{detail}"
        if decision.stage == Stage.LEXICAL:
            return Reason(verdict, text, None, BM25, row.bm25)
        if decision.stage == Stage.RERANK and row.rerank is not None:
            return Reason(verdict, text, None, LOGIT, row.rerank)
        return Reason(verdict, text, None, SCORE, row.score)
    if verdict in (Verdict.RELEVANCE, Verdict.SECOND_SKILL) and trace is not None:
        p = row.relevance if row.relevance is not None else 0.0
        second = verdict is Verdict.SECOND_SKILL
        bar = trace.second_threshold if second else trace.threshold
        if p >= bar and not second:  # over the bar, but two skills at most were picked
            picked = [decision.row(skill).relevance or 0.0 for skill in decision.injected_ids]
            weakest = min(picked, default=bar)
            return _gap(
                verdict,
                f"p {shown_against(p, bar, bar_places(bar))} ≥ {bar_text(bar)}, but "
                f"{', '.join(decision.injected_ids)} ranked higher",
                p,
                weakest,
                PROBABILITY,
            )
        label = "second skill's bar " if second else ""
        shown, bar_shown = _pair(p, bar, bar_places(bar))
        text = f"p {shown} < {label}{bar_shown}: {_shortfall(decision, row)}"
        return _gap(verdict, text, p, bar, PROBABILITY)
    if verdict is Verdict.MIN_SIMILARITY:
        shown, bar_shown = _pair(row.score, floor)
        return _gap(verdict, f"{shown} < floor {bar_shown}", row.score, floor)
    if verdict is Verdict.SCORE_MARGIN:
        gate = gates.get(GateName.SCORE_MARGIN)
        margin = float(decision.thresholds.get("score_margin", 0.0))
        top = float(gate.inputs.get("top_score", 0.0)) if gate else row.score
        cutoff = float(gate.thresholds.get("cutoff", top - margin)) if gate else top - margin
        shown, bar_shown = _pair(row.score, cutoff)
        text = f"{shown} < cut-off {bar_shown} = top {_num(top)} - {_num(margin)}"
        return _gap(verdict, text, row.score, cutoff)
    if verdict is Verdict.AGREEMENT_FLOOR:
        gate = gates.get(GateName.AGREEMENT_FLOOR)
        bar = float(gate.thresholds.get("floor", floor)) if gate else floor
        shown, bar_shown = _pair(row.score, bar)
        text = f"{shown} < agreement floor {bar_shown}"
        return _gap(verdict, text, row.score, bar)
    if verdict is Verdict.RERANK_MIN:
        gate = gates.get(GateName.RERANK_MIN)
        bar = float(gate.thresholds.get("rerank_min", 0.0)) if gate else 0.0
        logit = row.rerank if row.rerank is not None else float("nan")
        shown, bar_shown = _pair(logit, bar, 2)
        text = f"logit {shown} < rerank_min {bar_shown}"
        return _gap(verdict, text, logit, bar, LOGIT)
    if verdict is Verdict.RERANK_MARGIN:
        gate = gates.get(GateName.RERANK_MARGIN)
        best = float(gate.inputs.get("best") or 0.0) if gate else 0.0
        margin = float(gate.thresholds.get("rerank_margin", 0.0)) if gate else 0.0
        logit = row.rerank if row.rerank is not None else float("nan")
        cutoff = best - margin
        shown, bar_shown = _pair(logit, cutoff, 2)
        text = f"logit {shown} < cut-off {bar_shown} = best {_num(best, 2)} - {_num(margin, 2)}"
        return _gap(verdict, text, logit, cutoff, LOGIT)
    if verdict is Verdict.RERANK_TOP_K:
        return _not_reranked(decision, row)
    if verdict is Verdict.LEXICAL_DOMINANCE:
        gate = gates.get(GateName.LEXICAL_DOMINANCE)
        winner = gate.inputs.get("top") if gate else None
        bm25 = float(gate.inputs.get("top_bm25") or 0.0) if gate else 0.0
        # This skill's number first, as in every other reason: a narrow column keeps it.
        shown, bar_shown = _pair(row.bm25, bm25, 2)
        text = f"bm25 {shown} < {bar_shown}: lexical fast path took {winner}"
        return _gap(verdict, text, row.bm25, bm25, BM25, "or the fast path off (lexical_min = 0)")
    if verdict is Verdict.MAX_SKILLS:
        gate = gates.get(GateName.MAX_SKILLS)
        cap = gate.thresholds.get("max_skills") if gate else None
        text = f"would be injected, but max_skills = {cap} were already picked"
        task = decision.task_for(row.id)
        if task is not None:  # §9.12: the whole prompt's picks come first, then each task's
            clause = clipped(task.clause, CLAUSE_SHOWN)
            text = (
                f"would be injected for the task {clause!r} (p {task.p:.2f}), but "
                f"max_skills = {cap} were already picked"
            )
            order = "the whole prompt's picks come first, then each task's in its order"
            return Reason(verdict, text, needs=f"needs max_skills above {cap} ({order})")
        if trace is not None and row.relevance is not None:
            # Against the whole prompt's picks: a task's pick came after this one's turn.
            picked = [
                decision.row(skill).relevance or 0.0
                for skill in decision.injected_ids
                if decision.task_for(skill) is None
            ]
            return _gap(verdict, text, row.relevance, min(picked, default=0.0), PROBABILITY)
        scores = [decision.row(skill).score for skill in decision.injected_ids]
        return _gap(verdict, text, row.score, min(scores, default=row.score))
    if verdict is Verdict.CHAR_BUDGET:
        gate = gates.get(GateName.CHAR_BUDGET)
        budget = gate.thresholds.get("char_budget") if gate else None
        text = f"would be injected, but its text would exceed char_budget = {budget}"
        return Reason(verdict, text, needs=f"needs a shorter text, or char_budget above {budget}")
    if verdict is Verdict.DENY:
        text = "would be injected, but the config's deny list names it"
        return Reason(verdict, text, needs="needs its id off the deny list")
    if verdict is Verdict.INVOKED:
        text = f"would be injected, but the prompt invokes /{row.id} (the host loads it)"
        return Reason(verdict, text, needs="nothing: the host loads it itself")
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


def _shortfall(decision: Decision, row: Row) -> str:
    """§9.12, for a candidate under the bar: the features on which it trails the skill
    ahead of it (the injected one, else the most probable candidate), by log-odds, the
    numbers first (a narrow table cuts the sentence's end). Its own largest contributions
    would mislead here: they are what raised it, not what kept it out. The most probable
    candidate itself, with nothing injected, shows them, as the evidence that came
    closest."""
    trace = decision.relevance
    positions = decision.channels.positions or {}
    at = None if trace is None else trace.at(positions.get(row.id, -1))
    if trace is None or at is None:
        return ""
    ahead = next(
        (
            (skill, number)
            for skill in decision.injected_ids
            if (number := trace.at(positions.get(skill, -1))) is not None
        ),
        None,
    )
    if ahead is None and trace.ranked:
        best = trace.ranked[0]
        ahead = (decision.channels.ids[trace.candidates[best]], best)
    drivers = trace.drivers(at, 2, digits=1)
    if ahead is None or ahead[1] == at:
        return f"closest: {drivers}"
    gaps = trace.behind(at, ahead[1])
    return f"{gaps} vs {ahead[0]}" if gaps else drivers


CLAUSE_SHOWN = 40  # characters of a task's clause a reason quotes (§9.12)
ROOM_SHOWN = 2  # channels named by room_text, most room first
ROOM_MIN = 0.05  # log-odds: less room than this is no room


def room_text(decision: Decision, row: Row, count: int = ROOM_SHOWN) -> str:
    """§9.12, "Room": for a candidate the relevance model kept under its bar, the channels
    with the most headroom, the p each would give and what it would add to the log-odds
    s, `rerank → p 0.86 (s +4.2), bm25 → p 0.595 (s +2.7)`: what its contributions (what
    raised it) cannot say. p comes first and s is named: a bare "cos +5.2" reads as a
    cosine. Empty for a skill over its bar (injected, or dropped after it by max_skills,
    deny, …), one the model did not judge, or a model that cannot say."""
    trace = decision.relevance
    positions = decision.channels.positions or {}
    at = None if trace is None else trace.at(positions.get(row.id, -1))
    if trace is None or at is None or trace.form is not ModelForm.LOGISTIC:
        return ""  # under the choice form p is not sigmoid(s) alone
    bar = {Verdict.RELEVANCE: trace.threshold, Verdict.SECOND_SKILL: trace.second_threshold}
    if row.verdict not in bar or float(trace.probabilities[at]) >= bar[row.verdict]:
        return ""
    score = trace.bias + float(trace.contributions[at].sum())
    shown = [
        f"{channel} → p {shown_against(sigmoid(score + gain), bar[row.verdict])} (s {gain:+.1f})"
        for channel, gain in trace.room(at)[:count]
        if gain >= ROOM_MIN
    ]
    return ", ".join(shown)


@lru_cache(maxsize=2)
def _candidate_bars(decision: Decision) -> tuple[object, float | None, int, float | None]:
    """rerank_top_k; the hybrid score its top k end at (the lowest among the candidates
    that entered by it: one that entered by BM25 may score lower); the BM25 pool's size
    and its lowest BM25 (§9.1, §9.12). Once per decision: the table asks for one row at a
    time. Two: the decision on screen and the pinned one; each holds arrays of every skill
    (at 26,000, megabytes), kept alive here."""
    gate = next((g for g in decision.gates if g.name is GateName.RERANKER), None)
    relevance = decision.relevance
    if gate is not None:
        candidates = list(dict.fromkeys(gate.inputs.get("candidates") or ()))
        k = gate.thresholds.get("rerank_top_k")
    elif relevance is not None:
        candidates = [decision.channels.ids[i] for i in relevance.candidates]
        k = decision.tuning.get("rerank_top_k", len(candidates))
    else:
        return None, None, 0, None
    if relevance is not None and not k:
        k = 1  # the relevance model's pool keeps the hybrid score's first (pipeline.py)
    rows = [decision.row(s) for s in candidates if decision.rows.index_of(s) is not None]
    by_hybrid = [row.score for row in rows if row.pool in ("dense", "both", None)]
    by_bm25 = [row.bm25 for row in rows if row.pool in ("bm25", "both")]
    return (
        k,
        min(by_hybrid) if by_hybrid else None,
        len(by_bm25),
        min(by_bm25) if by_bm25 else None,
    )


def _not_reranked(decision: Decision, row: Row) -> Reason:
    """Not among the reranker's (or the relevance model's) candidates: they are the top k
    by hybrid score and the best few by BM25; either bar lets a skill in."""
    k, hybrid_bar, pool, bm25_bar = _candidate_bars(decision)
    verdict = Verdict.RERANK_TOP_K
    if hybrid_bar is None:
        return Reason(verdict, f"not among the rerank_top_k = {k} candidates")
    text = (
        f"{' < '.join(_pair(row.score, hybrid_bar))}, where the top {k} by hybrid score end "
        f"(rerank_top_k)"
    )
    needs = f"or BM25 ≥ {bm25_bar:.2f} (the top {pool} by BM25 join too)" if bm25_bar else ""
    return _gap(verdict, text, row.score, hybrid_bar, SCORE, needs)


def reasons(decision: Decision) -> dict[str, Reason]:
    """Every skill's reason, by id (for JSON and reports; the explorer asks row by row)."""
    return {row.id: reason(decision, row) for row in decision.rows}
