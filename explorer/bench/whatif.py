"""whatif: one edit of a description in the explorer's what-if editor -> its new scores.

What the editor computes each time typing pauses (explorer/engine/author/whatif.py): the edited
SKILL.md parsed, the one description embedded, a patched copy of the index, and
`decide()` for the prompt on it. The cases' re-run is not included (it is one decide per
case, measured by decide_warm). Target: median <= 100 ms at 1,000 skills, so the editor
answers within a typing pause.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from explorer.bench import measure
from explorer.engine import Config, Index

WHATIF_LIMIT_MS = 100.0  # at 1,000 skills
WHATIF_EDITS = 30
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
