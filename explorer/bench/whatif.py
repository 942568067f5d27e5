"""whatif: one edit of a description in the explorer's what-if editor -> its new scores.

What the editor computes each time typing pauses (explorer/engine/author/whatif.py): the edited
SKILL.md parsed, the one description embedded, a patched copy of the index, and
`decide()` for the prompt on it. Target: median <= 100 ms at 1,000 skills, so the editor
answers within a typing pause.

whatif_cases: the flips that follow, the cases run on the edited copy with the Cases
tab's run before it given, so only the cases the edit can reach are decided again
(author/reach.py), against deciding every case. The cases are the first sentence of
up to WHATIF_CASES skills' descriptions, each expecting its skill. No target: the row
says what the reach check saves at each size, with the bench's models, which have no
cross-encoder (the explorer's decide has one, and each case skipped saves its pass).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from explorer.bench import measure
from explorer.engine import Config, Index

WHATIF_LIMIT_MS = 100.0  # at 1,000 skills
WHATIF_EDITS = 30
WHATIF_CASES = 100
CASES_EDITS = 3
PROMPT = "review the typed payloads of my api before the release"


def bench_whatif(index: Index, config: Config, *, edits: int = WHATIF_EDITS) -> dict[str, Any]:
    """Edit one skill's description `edits` times (each text new: each one embedding)."""
    from explorer.engine import decide
    from explorer.engine.author import read_skill_text, what_if

    if not len(index):
        return measure.error_row("whatif", "an empty library")
    skill = index.skills[len(index) // 2]
    original = read_skill_text(skill.path)
    decide(PROMPT, index, config)  # the prompt's embedding is cached, as while editing
    samples: list[float] = []
    for number in range(edits):
        description = f"{skill.description} Also reviews typed payloads, edit {number}."
        started = time.perf_counter()
        result = what_if(index, config, skill.id, description, PROMPT, original=original)
        samples.append(measure.ms(time.perf_counter() - started))
        if result.after is None:
            return measure.error_row("whatif", f"{skill.path}: {result.edit.problem}")
    stats = measure.stats(samples)
    return {
        "metric": "whatif",
        "size": len(index),
        **stats,
        "target": f"median <= {WHATIF_LIMIT_MS:g} ms at 1,000 skills",
        **measure.verdict(stats["median_ms"], WHATIF_LIMIT_MS),
        "note": (
            f"{len(index)} skills, {edits} edits of {Path(skill.path).parent.name}'s "
            "description, each new (one embedding, a patched index copy, one decide)"
        ),
    }


def bench_whatif_cases(index: Index, config: Config, *, edits: int = CASES_EDITS) -> dict[str, Any]:
    """`edits` edits of one skill, the cases run on each edited copy: only the reached
    cases (the explorer's way) against all of them; one warm-up edit first."""
    from explorer.engine import evaluate
    from explorer.engine.author import read_skill_text, what_if, with_cases
    from explorer.engine.qa import Case

    if not len(index):
        return measure.error_row("whatif_cases", "an empty library")
    step = max(len(index) // WHATIF_CASES, 1)
    cases = [
        Case(skill.description.split(". ")[0], (skill.id,), kind="direct")
        for skill in index.skills[::step][:WHATIF_CASES]
    ]
    before = evaluate(cases, index, config)
    skill = index.skills[len(index) // 2]
    original = read_skill_text(skill.path)
    reached: list[float] = []
    every: list[float] = []
    decided = 0
    for number in range(edits + 1):
        description = f"{skill.description} Also reviews typed payloads, edit {number}."
        result = what_if(index, config, skill.id, description, PROMPT, original=original)
        if result.patched is None:
            return measure.error_row("whatif_cases", f"{skill.path}: {result.edit.problem}")
        started = time.perf_counter()
        full = with_cases(result, index, config, cases, before)
        middle = time.perf_counter()
        evaluate(cases, result.patched, config)
        ended = time.perf_counter()
        if number:  # the first is the warm-up
            reached.append(measure.ms(middle - started))
            every.append(measure.ms(ended - middle))
            assert full.cases_after is not None
            pairs = zip(full.cases_after.results, before.results, strict=True)
            decided += sum(after is not old for after, old in pairs)
    stats = measure.stats(reached)
    all_cases = float(statistics.median(every))
    return {
        "metric": "whatif_cases",
        "size": len(index),
        **stats,
        "baseline": {"median_ms": all_cases, "what": "every case decided on the edited copy"},
        "ratio": stats["median_ms"] / max(all_cases, 1e-9),
        "target": "no target: the reached cases against every case (baseline)",
        "pass": True,
        "note": (
            f"{len(cases)} cases, {decided / edits:.0f} decided again an edit on average "
            "(no cross-encoder)"
        ),
    }
