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
and one per case the edit can reach on the edited copy (reach.py). A `WhatIfMemo` carries
from one keystroke to the next what does not change: each case's reach, and each
(prompt, document) pair's cross-encoder logit, so that only the edited skill's pairs are
scored again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from explorer.engine.author.reach import Reach, changed_terms, measure, reach
from explorer.engine.author.rewrite import Edit, edit_description
from explorer.engine.base.config import Config
from explorer.engine.base.text import shared_prefix
from explorer.engine.discovery.skills import Discovery, Skill
from explorer.engine.index.incremental import patch_index
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.inference.models import LogitMemo, Models
from explorer.engine.inference.rerank import ReadWindow, rerank_document
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
    rank: int  # the row's place in the table, Decision.rows' order
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
    # The characters of the edited description the cross-encoder reads beside the prompt,
    # when the edit starts past them: its logit cannot move, whatever the edit says.
    unread_past: int | None = None


class WhatIfMemo:
    """What the what-if runs on one unedited library and config share, keystroke after
    keystroke: each case's reach (reach.py), measured once, and the logit of each
    (prompt, document) pair the edited copies' decisions score (`logits`: the explorer
    passes its own, which its cases runs filled). Without it a keystroke measured every
    case again and reranked every candidate of every case it reached, where only the
    edited skill's document is new (docs/explorer.md, "What-if (F7) and compare (F8)")."""

    def __init__(self, index: Index, config: Config, logits: LogitMemo | None = None) -> None:
        self.index, self.config = index, config
        self.models = (LogitMemo() if logits is None else logits).models(index.models)
        self.remembering = dataclasses.replace(index, models=self.models)  # routes as `index`
        self._reaches: dict[tuple[Case, int], Reach] = {}
        self._before: tuple[tuple[tuple[Case, ...], str | None], EvalReport] | None = None

    def before(self, cases: Sequence[Case], cwd: str | None) -> EvalReport:
        """The cases on the unedited library, run once (while the explorer's own run is
        not of this snapshot and config, every keystroke asked for it)."""
        key = (tuple(cases), cwd)
        if self._before is None or self._before[0] != key:
            self._before = key, evaluate(cases, self.remembering, self.config, cwd=cwd)
        return self._before[1]

    def holds(self, index: Index, config: Config) -> bool:
        return self.index is index and self.config is config

    def reach(self, case: Case, position: int) -> Reach:
        key = (case, position)
        found = self._reaches.get(key)
        if found is None:
            seen = measure(case.prompt, self.index, self.config)
            found = self._reaches[key] = reach(case, self.index, position, seen).kept()
        return found


def patched_index(
    index: Index, skill: Skill, config: Config, models: Models | None = None
) -> Index:
    """A copy of `index` with the skill at `skill.path` replaced, as a save would patch it,
    routed with `models` (the index's own by default).

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
    models = index.models if models is None else models
    patched = patch_index(index, found, config, models, None, version=index.version)
    if patched is None:
        patched = index_skills(
            found, index.roots, config, models, None, version=index.version, previous=index
        )
    # The patch keeps the library's models; the copy routes with the ones given.
    return patched if patched.models is models else dataclasses.replace(patched, models=models)


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
    memo: WhatIfMemo | None = None,
) -> WhatIf:
    """Score `prompt` (and the cases) as if `skill_id`'s description were `description`.

    `original` is the SKILL.md's text the edit starts from. `before` is the decision for
    `prompt` on `index`, when the caller has it; `cases_before` likewise for the cases;
    `memo`, what earlier runs on `index` and `config` learnt.
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
    memo = memo if memo is not None and memo.holds(index, config) else None
    copy = patched_index(index, edit.skill, config, memo.models if memo is not None else None)
    decision = decide(prompt, copy, config, cwd=cwd)
    new = standing(decision, edit.skill.id)
    unread = _unread_past(copy, prompt, index.skills[position].description, edit.skill)
    result = WhatIf(
        skill_id, prompt, edit, old, new, decision, copy, cases_before, unread_past=unread
    )
    if cases is None:
        return result
    return with_cases(result, index, config, cases, cases_before, cwd=cwd, memo=memo)


def _unread_past(index: Index, prompt: str, old: str, skill: Skill) -> int | None:
    """Where the cross-encoder stops reading `skill`'s edited description beside `prompt`,
    when the edit starts at or past that point (None otherwise, or with no window to
    tell): an author who appends a sentence sees the logit hold and should know why."""
    reranker, new = index.models.reranker, skill.description
    if not isinstance(reranker, ReadWindow) or not prompt.strip() or old == new:
        return None
    start = shared_prefix(old, new)  # where the edit begins
    read = reranker.read_chars(prompt, rerank_document(new, skill.body_head))
    return read if read is not None and start >= read else None


def with_cases(
    result: WhatIf,
    index: Index,
    config: Config,
    cases: Sequence[Case],
    cases_before: EvalReport | None = None,
    *,
    cwd: str | None = None,
    memo: WhatIfMemo | None = None,
) -> WhatIf:
    """`result` with the cases run on both snapshots and compared (the flips).

    Separate from `what_if` so a front end can show the scores first and the flips a
    moment later: the cases cost one `decide()` each.
    """
    if result.patched is None:
        return result
    if memo is None or not memo.holds(index, config):
        memo = WhatIfMemo(index, config)  # this run's alone
    if cases_before is None:
        cases_before = memo.before(cases, cwd)
    kept = _unreached(result, index, cases, cases_before, cwd, memo)
    cases_after = evaluate(cases, result.patched, config, cwd=cwd, kept=kept)
    runs = (memo.remembering, config), (result.patched, config)
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
    cases: Sequence[Case],
    before: EvalReport,
    cwd: str | None,
    memo: WhatIfMemo,
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
        reached = memo.reach(case, position).reached(changed, patched, position)
        kept.append(None if reached else old)
    return kept
