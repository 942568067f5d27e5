"""What-if for a description: a skill's scores and the cases' outcomes before it is saved.

`what_if(index, config, skill_id, description, prompt)` parses the SKILL.md as it would
be written (rewrite.edit_description, the live index's own parser), patches a *copy* of
the snapshot with that one skill exactly as the live index patches it after a save
(incremental.patch_index: the new description embedded with the loaded model, BM25's
postings, lengths and weights recomputed, the keyword, phrase and project tables patched),
and runs the one cascade, `decide()`, on it. So the numbers the editor shows are the
numbers the explorer will show once the file is saved; the live index is never touched.

One description is one embedding (about 10 ms with the default model); the cases file
costs one `decide()` per case on the unedited library (the explorer has that run already)
and one per case the edit can reach on the edited copy (reach.py), with the case
prompts' embeddings cached by the embedder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from explorer.engine.author.reach import changed_terms, measure, reach
from explorer.engine.author.rewrite import Edit, edit_description
from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Discovery, Skill
from explorer.engine.index.incremental import patch_index
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.qa.cases import Case
from explorer.engine.qa.evaluate import CaseResult, Comparison, EvalReport, compare, evaluate
from explorer.engine.qa.flips import FlipCause, flip_causes
from explorer.engine.route.decision import Decision, Verdict
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import reason


@dataclass(frozen=True)
class Standing:
    """One skill's place in one decision: the numbers the table's row shows."""

    skill_id: str
    rank: int  # the row's place in the table (injected first, then by hybrid score)
    hybrid_rank: int  # stage-1 rank by hybrid score
    cosine: float
    bm25: float
    boosts: float  # keyword + phrase + file + project
    hybrid: float
    rerank: float | None  # the logit, None when not reranked
    relevance: float | None  # §9.12's p, None when the relevance model did not see it
    verdict: Verdict
    reason: str  # the deciding comparison, as in the table's why column
    missing: float | None  # the Δ to inject, in `unit`; None: no number (or injected)
    missing_text: str  # `+0.041`, `+0.60 logit`, or ''

    @property
    def injected(self) -> bool:
        return self.verdict is Verdict.INJECT


def standing(decision: Decision, skill_id: str) -> Standing | None:
    """`skill_id`'s standing in `decision`; None when the decision has no such row.

    Reads one row (rows are lazy: a 26,000-skill decision makes only this one)."""
    place = decision.rows.index_of(skill_id)
    if place is None:
        return None
    row = decision.rows.by_id(skill_id)
    why = reason(decision, row)
    return Standing(
        skill_id=skill_id,
        rank=place + 1,
        hybrid_rank=row.rank,
        cosine=row.cosine,
        bm25=row.bm25,
        boosts=row.keyword + row.phrase + row.file + row.project,
        hybrid=row.score,
        rerank=row.rerank,
        relevance=row.relevance,
        verdict=row.verdict,
        reason=why.text,
        missing=why.missing,
        missing_text=why.delta_text(),
    )


@dataclass(frozen=True)
class WhatIf:
    """The skill before and after the edit, for one prompt and (optionally) the cases file."""

    skill_id: str
    prompt: str
    edit: Edit
    before: Standing | None
    after: Standing | None  # None when the edit cannot be saved (edit.problem says why)
    decision: Decision | None  # the whole decision on the patched copy
    patched: Index | None = None  # the snapshot copy the edit was scored on
    cases_before: EvalReport | None = None
    cases_after: EvalReport | None = None
    comparison: Comparison | None = None  # before -> after: the flips
    causes: Mapping[str, FlipCause] = dataclasses.field(default_factory=dict)  # prompt -> why


def patched_index(index: Index, skill: Skill, config: Config) -> Index:
    """A copy of `index` with the skill at `skill.path` replaced, as a save would patch it.

    The live index patches in place-changed skills with `patch_index` and rebuilds when it
    cannot (a renamed id moves the skill's rank among ties, so it is patched too); the
    copy here goes the same way. `index` is not modified: it is immutable and every table
    that changes is copied.
    """
    try:
        position = index.paths.index(skill.path)
    except ValueError:
        raise KeyError(f"{skill.path} is not in this snapshot") from None
    skills = list(index.skills)
    skills[position] = skill
    found = Discovery(tuple(skills), index.rejected)
    patched = patch_index(index, found, config, index.models, None, version=index.version)
    if patched is not None:
        return patched
    return index_skills(
        found, index.roots, config, index.models, None, version=index.version, previous=index
    )


def what_if(
    index: Index,
    config: Config,
    skill_id: str,
    description: str,
    prompt: str,
    *,
    original: str,
    cases: Sequence[Case] | None = None,
    cases_before: EvalReport | None = None,
    before: Decision | None = None,
    cwd: str | None = None,
) -> WhatIf:
    """Score `prompt` (and the cases) as if `skill_id`'s description were `description`.

    `original` is the SKILL.md's text the edit starts from. `before` is the decision for
    `prompt` on `index`, when the caller has it; `cases_before` likewise for the cases.
    """
    position = index.positions.get(skill_id)
    if position is None:
        raise KeyError(f"no skill {skill_id!r} in this snapshot")
    path = index.skills[position].path
    if before is None or before.prompt != prompt:
        before = decide(prompt, index, config, cwd=cwd)
    edit = edit_description(path, original, description)
    old = standing(before, skill_id)
    if not edit.ok or edit.skill is None:
        return WhatIf(skill_id, prompt, edit, old, None, None, None, cases_before)
    copy = patched_index(index, edit.skill, config)
    decision = decide(prompt, copy, config, cwd=cwd)
    new = standing(decision, edit.skill.id)
    result = WhatIf(skill_id, prompt, edit, old, new, decision, copy, cases_before)
    if cases is None:
        return result
    return with_cases(result, index, config, cases, cases_before, cwd=cwd)


def with_cases(
    result: WhatIf,
    index: Index,
    config: Config,
    cases: Sequence[Case],
    cases_before: EvalReport | None = None,
    *,
    cwd: str | None = None,
) -> WhatIf:
    """`result` with the cases run on both snapshots and compared (the flips).

    Separate from `what_if` so a front end can show the scores first and the flips a
    moment later: the cases cost one `decide()` each.
    """
    if result.patched is None:
        return result
    if cases_before is None:
        cases_before = evaluate(cases, index, config, cwd=cwd)
    kept = _unreached(result, index, config, cases, cases_before, cwd)
    cases_after = evaluate(cases, result.patched, config, cwd=cwd, kept=kept)
    runs = (index, config), (result.patched, config)
    return dataclasses.replace(
        result,
        cases_before=cases_before,
        cases_after=cases_after,
        comparison=compare(cases_before, cases_after),
        causes=flip_causes(cases_before, cases_after, *runs, cwd=cwd),
    )


def _unreached(
    result: WhatIf,
    index: Index,
    config: Config,
    cases: Sequence[Case],
    before: EvalReport,
    cwd: str | None,
) -> list[CaseResult | None]:
    """Each case's result before the edit where the edit cannot reach it (reach.py), so it
    stands after; None where it must be decided again. All None when the run before is of
    other cases, the skill moved, or a session directory could bring a project boost."""
    patched = result.patched
    position = index.positions[result.skill_id]
    olds = before.results
    if (
        patched is None
        or cwd
        or patched.positions.get(result.skill_id) != position
        or len(olds) != len(cases)
        or any(old.case != case for old, case in zip(olds, cases, strict=True))
    ):
        return [None] * len(cases)
    changed = changed_terms(
        index.skills[position].description, patched.skills[position].description
    )
    kept: list[CaseResult | None] = []
    for case, old in zip(cases, olds, strict=True):
        seen = measure(case.prompt, index, config)
        reached = reach(case, index, position, seen).reached(changed, patched, position)
        kept.append(None if reached else old)
    return kept
