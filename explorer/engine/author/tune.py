"""Offline description tuning: small edits of one skill's description, scored by `decide()`.

An author has trigger evals for a skill (prompts that should and should not trigger it).
`tune()` splits the skill's own cases into a tuning part and a held-out part (a stable
hash of each prompt, positives and negatives apart), proposes small readable edits of
the description from the tuning part only, and scores every edit with the one cascade,
`pipeline.decide()`, on a patched *copy* of the snapshot (`whatif.patched_index`, exactly
as the explorer's what-if does). The edits:

* words and short phrases of missed positive prompts that the description lacks, weighed
  by the library's BM25 idf (a word every skill has says nothing);
* a "Use when …" sentence built from them;
* a "Use when the user says …" sentence quoting the tuning part's most typical
  should-trigger prompts (the nearest to the others by the model's vectors);
* a "Not for …" sentence built from prompts that should not trigger the skill but do;
* removing description words that pull those prompts in.

A few rounds of a small beam search combine them, deterministically. The best few edits
are then scored on the held-out part (which decides what is recommended) and on every
other case of the file: a prompt that expects another skill and that the edit makes this
skill take is a STEAL. Every case a finalist flips is routed once more with the lexical
channels held at the old description (the BM25, keyword and phrase tables of the unedited
library; the new text reaches only the dense vector and what reads the text at stage 2):
and, when a fix vanishes there, once more with the models held at the old description
(the new words only). An edit whose every fix vanishes with the lexical channels off
and holds with the words alone gained by word matching alone: it is flagged, and ranks
lower. A fix that needs the words and the models together is the models' gain too.

The snapshot given is never modified; nothing here prints or writes, except `apply`,
which writes one candidate through `rewrite.save` (only the description's bytes change).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from explorer.engine.author.languages import (
    FOREIGN_FUNCTION_WORDS,
    UNSPACED_EDGES,
    UNSPACED_FUNCTION_PHRASES,
    says_not_for,
    says_when_to_use,
)
from explorer.engine.author.reach import Measured, Reach, changed_terms, measure, reach
from explorer.engine.author.rewrite import Edit, edit_description, save
from explorer.engine.author.whatif import patched_index
from explorer.engine.base.config import Config
from explorer.engine.base.text import (
    STOPWORDS,
    counted,
    latin_accented,
    match_tokens,
    norm_token,
)
from explorer.engine.base.threads import batch_workers, kept_pool
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.rerank import RememberedLogits, rerank_document
from explorer.engine.qa.cases import SHOULD_TRIGGER, Case, CaseError, CaseSet, load_cases
from explorer.engine.qa.evaluate import passes
from explorer.engine.route.decision import Decision
from explorer.engine.route.pipeline import decide
from explorer.engine.route.presets import generic_word
from explorer.engine.route.relevance import (
    script_tokens,
    states_exclusion,
    unspaced,
)

SCHEMA = "skill-explorer/tune@1"
MAX_DESCRIPTION = 1024  # the Agent Skills spec's limit on a description
TUNING_SHARE = 0.6  # of the positives, and of the negatives, tuned on; the rest is held out
SPLIT_SEED = "skill-explorer/tune"
_Result = TypeVar("_Result")  # what `_Tuner.each` gives for each case
_WORD_RE = re.compile(r"[A-Za-z0-9]{2,}")
# A word standing alone: not a piece of "pre-commit", "init.sh" or "src/app" (removing
# "pre" must not leave "-commit").
_WHOLE_WORD_RE = re.compile(r"(?<![\w./-])[A-Za-z0-9]{2,}(?![\w/-]|\.\w)")
_MIN_WORD = 3  # shorter words are rarely what names a task
MIN_MARGIN = 0.05  # relevance probability summed over the tuning part: a move, not noise
SINGLE_PROMPT = 0.5  # the weight of a word only one wanted prompt has, against a shared one
QUOTE_CHARS = 140  # the longest prompt a description quotes
QUOTES = (1, 2, 3)  # how many prompts each quoting edit quotes
# Words of a conversation that name no task, beyond the stopwords and presets.GENERIC_WORDS.
FILLER: frozenset[str] = frozenset(  # as match tokens (§2.5): "always" is "alway"
    norm_token(word)
    for word in (
        "but dont don doesn didn isn aren wasn won wouldn cant shouldn couldn really actually "
        "maybe usual usually quick quickly simple stuff lot lots kind sort okay hey yes they "
        "them their someone somebody right able anymore gave given got gotten took taken "
        "went gone came seen saw said told knew known thought felt kept left meant brought "
        "began held happened seems seemed tried "
        # How often, how much, how sure: "at once" names no task ("Use it for once.")
        "once twice several again already still even ever never always often sometimes "
        "soon later almost enough instead rather quite whole entire else otherwise anyway "
        "somehow basically literally totally definitely probably perhaps especially "
        # Where, and a code literal: "Use it for inside, TRUE and FALSE." names no task.
        "inside outside true false "
        # English function words past the router's short list (§2.2), and words of saying
        # and of when: "Use it for across, actual and whether." lists, it names nothing.
        "whether over across within between through throughout during under upon onto "
        "toward towards against among along around behind beyond below above near since "
        "until unless while though although because however therefore thus hence which "
        "whose whom where there here what who how why each every either neither both other "
        "another same such than any some much many more most less least few own very just "
        "only also too actual current currently recently today tomorrow yesterday tonight "
        "assume assuming saying telling asking thing things something anything everything "
        "nothing "
        # Words of motion, degree, rank and who: they say how a request goes ("traffic goes
        # up", "a decent model", "the second one"), never what it asks for. "Use it for
        # goes, decent and second." was a recommended edit.
        "go goes going fall falls falling fell beat beats beating move moves moving moved "
        "win wins winning hard harder easy easier decent good better best great nice bad "
        "worse worst long longer big bigger small smaller second third half day days "
        "nobody everyone everybody anyone anybody available possible sure ready whatever"
    ).split()
)
# Names users call the assistant by: "ask Claude to …" says who is asked, not what for, so
# "Use it for claude." would name no task. (A skill about one of them has it already.)
ADDRESSEES: frozenset[str] = frozenset("claude chatgpt codex gemini copilot assistant".split())
# Days and months: "the report for friday" dates a request; "Use for april." names nothing.
CALENDAR: frozenset[str] = frozenset(
    norm_token(word)
    for word in (
        "monday tuesday wednesday thursday friday saturday sunday january february april "
        "june july august september october november december"  # not march: ray marching
    ).split()
)


class Part(StrEnum):
    TUNING = "tuning"
    HELD_OUT = "held-out"
    OTHER = "other"  # a case about another skill, or about none


class Effect(StrEnum):
    FIX = "fix"  # one of the skill's own cases fails before and passes after
    BREAK = "break"  # a case passes before and fails after
    STEAL = "steal"  # a case about another skill that the edit makes this skill take (or join)
    RELEASE = "release"  # a case about another skill that the edit lets go


@dataclass(frozen=True)
class Options:
    """How hard to search: every number bounds the work, so one skill stays in seconds."""

    rounds: int = 3
    beam: int = 3
    max_terms: int = 4  # single-word additions tried per description
    evaluations: int = 40  # descriptions scored on the tuning part, at most
    finalists: int = 6  # scored on the held-out part and the other cases
    share: float = TUNING_SHARE


@dataclass(frozen=True)
class Split:
    """The skill's own cases in two parts, and every other case of the file."""

    tuning: tuple[Case, ...]
    held_out: tuple[Case, ...]
    others: tuple[Case, ...]
    from_file: bool = False  # the file's own train/validation split, not the hash's


def is_about(case: Case, skill_id: str) -> bool:
    """Whether a case says what the skill should do: take the prompt, or leave it."""
    return skill_id in case.expect or skill_id in case.reject


def _order(case: Case) -> bytes:
    """A case's place in the split order: a hash of its prompt alone. Reordering the
    file changes nothing, and adding or removing a case moves the cut by one place
    instead of reshuffling both parts."""
    key = f"{SPLIT_SEED}\0{case.prompt}"
    return hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()


def split_cases(cases: Sequence[Case], skill_id: str, share: float = TUNING_SHARE) -> Split:
    """The author's own split when the file gives every case of the skill one, train and
    validation both (skill-creator's `train`/`validation` lists, TOML's `split`), each with
    a should-trigger prompt: tuned on train, validation held out (without a positive on
    both sides there is nothing to learn from or nothing to gain). Otherwise the skill's
    positives and negatives, each ordered by a stable hash of the prompt and cut at
    `share`; a group of two or more keeps at least one case on each side."""
    tuning: list[Case] = []
    held: list[Case] = []
    own = [case for case in cases if is_about(case, skill_id)]
    others = tuple(case for case in cases if not is_about(case, skill_id))
    if {case.split for case in own} == {"train", "validation"} and all(
        any(case.positive and case.split == part for case in own)
        for part in ("train", "validation")
    ):
        return Split(
            tuple(case for case in own if case.split == "train"),
            tuple(case for case in own if case.split == "validation"),
            others,
            from_file=True,
        )
    for group in (
        [case for case in own if case.positive],
        [case for case in own if not case.positive],
    ):
        ordered = sorted(group, key=_order)
        cut = round(share * len(ordered))
        cut = min(max(cut, 1), len(ordered) - 1) if len(ordered) >= 2 else len(ordered)
        tuning += ordered[:cut]
        held += ordered[cut:]
    return Split(tuple(tuning), tuple(held), others)


def typed_case(prompt: str, skill_id: str, cases: Sequence[Case], injected: bool) -> Case | None:
    """The prompt an author typed, as a should-trigger case of `skill_id`, for the tuning
    part: when it is not injected for it (the question "why not mine?") and no case of the
    file has that prompt (the file's own label wins). None otherwise: a prompt the skill
    already takes asks nothing of the tuner, and one it should not take is the file's to
    say."""
    words = " ".join(prompt.split())
    if injected or not words or any(" ".join(case.prompt.split()) == words for case in cases):
        return None
    return Case(prompt=prompt, expect=(skill_id,), kind=SHOULD_TRIGGER, source="the prompt typed")


@dataclass(frozen=True)
class Probe:
    """One case routed once: what was injected and the skill's own row."""

    injected: tuple[str, ...]
    passed: bool
    cosine: float
    bm25: float
    rerank: float | None
    relevance: float | None
    terms: frozenset[str]  # the prompt's BM25 terms the skill's indexed text holds
    stage: str  # the cascade stage that decided (decision.Stage's value)
    # Another skill's case: the skill it expects, that skill's p and the bar it had to
    # clear (the relevance model's leads tie every candidate's p to the others').
    expected: str | None = None
    expected_p: float | None = None
    bar: float | None = None
    task: tuple[str, float] | None = None  # the clause (and its p) that injected the skill


def _probe(
    case: Case,
    index: Index,
    config: Config,
    skill_id: str,
    decision: Decision | None = None,
) -> Probe:
    if decision is None:
        decision = decide(case.prompt, index, config, context=case.context, cwd=case.cwd or None)
    row = decision.rows.by_id(skill_id)
    position = index.positions[skill_id]
    terms = frozenset(index.lexical.explain(case.prompt, position).matched)
    expected = next(iter(case.expect), None) if not is_about(case, skill_id) else None
    if expected not in index.positions:
        expected = None
    return Probe(
        injected=tuple(decision.injected_ids),
        passed=passes(case, decision.injected_ids),
        cosine=row.cosine,
        bm25=row.bm25,
        rerank=row.rerank,
        relevance=row.relevance,
        terms=terms,
        stage=decision.stage.value,
        expected=expected,
        expected_p=decision.rows.by_id(expected).relevance if expected else None,
        bar=_bar_for(decision, index.positions[expected]) if expected else None,
        task=None if (found := decision.task_for(skill_id)) is None else (found.clause, found.p),
    )


def _bar_for(decision: Decision, position: int) -> float | None:
    """The bar the skill at `position` had to clear: the first pick's when its p is the
    best of the candidates, else the second pick's (§9.12)."""
    trace = decision.relevance
    if trace is None:
        return None
    found = dict(zip(trace.candidates, trace.probabilities.tolist(), strict=True))
    if position not in found or found[position] >= max(found.values()):
        return trace.threshold
    return trace.second_threshold


@dataclass(frozen=True)
class Flip:
    """A case whose outcome the edit changes, and how the skill's channels moved on it."""

    case: Case
    part: Part
    effect: Effect
    cosine: float  # after - before
    bm25: float
    rerank: float | None  # None when the skill was not reranked on either side
    relevance: float | None
    terms_gained: tuple[str, ...]  # BM25 terms the skill matches only after the edit
    terms_lost: tuple[str, ...]
    stages: tuple[str, str]  # the stage that decided, before and after
    rerank_after: float | None  # the skill's logit after the edit, when reranked
    # Another skill's case: the skill it expects, its p before and after, and its bar after.
    expected: str | None = None
    expected_p: tuple[float | None, float | None] = (None, None)
    bar: float | None = None
    # A steal whose own skill is still injected: this one fires beside it (an extra
    # injection, which the eval does not count as a failure of the case).
    beside: bool = False
    # §9.12: the clause of a several-task prompt that injected the skill after the edit,
    # and its p: the whole prompt's p (`relevance`) may have moved too little to say it.
    task: tuple[str, float] | None = None

    @property
    def words_gained(self) -> tuple[str, ...]:
        """`terms_gained` as the prompt writes them ("goes", not the match token "goe")."""
        return as_written(self.terms_gained, [self.case.prompt])

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.case.prompt,
            "where": self.case.where,
            "expect": list(self.case.expect),
            "part": self.part.value,
            "effect": self.effect.value,
            "delta": {
                "cosine": self.cosine,
                "bm25": self.bm25,
                "rerank": self.rerank,
                "relevance": self.relevance,
            },
            "terms_gained": list(self.terms_gained),
            "terms_lost": list(self.terms_lost),
            "stages": list(self.stages),
            "rerank_after": self.rerank_after,
            "expected": self.expected,
            "expected_p": list(self.expected_p),
            "bar": self.bar,
            "beside": self.beside,
            "task": None if self.task is None else {"clause": self.task[0], "p": self.task[1]},
        }


def _effect(case: Case, part: Part, skill_id: str, before: Probe, after: Probe) -> Effect | None:
    if part is Part.OTHER:
        ours_before, ours_after = skill_id in before.injected, skill_id in after.injected
        if ours_after and not ours_before:
            return Effect.STEAL
        if ours_before and not ours_after:
            return Effect.RELEASE
    if before.passed and not after.passed:
        return Effect.BREAK
    if after.passed and not before.passed:
        return Effect.FIX
    return None


def _delta(left: float | None, right: float | None) -> float | None:
    return None if left is None or right is None else right - left


def _flip(case: Case, part: Part, skill_id: str, before: Probe, after: Probe) -> Flip | None:
    effect = _effect(case, part, skill_id, before, after)
    if effect is None:
        return None
    return Flip(
        case=case,
        part=part,
        effect=effect,
        cosine=after.cosine - before.cosine,
        bm25=after.bm25 - before.bm25,
        rerank=_delta(before.rerank, after.rerank),
        relevance=_delta(before.relevance, after.relevance),
        terms_gained=tuple(sorted(after.terms - before.terms)),
        terms_lost=tuple(sorted(before.terms - after.terms)),
        stages=(before.stage, after.stage),
        rerank_after=after.rerank,
        expected=after.expected,
        expected_p=(before.expected_p, after.expected_p),
        bar=after.bar,
        beside=effect is Effect.STEAL and bool(set(case.expect) & set(after.injected)),
        task=after.task,
    )


@dataclass(frozen=True)
class Tally:
    """Passed cases out of all, in one part, and of its should-trigger cases: a skill that
    takes none of its prompts passes every should-not one, and "10/20" hid a recall of 0/10."""

    passed: int
    total: int
    wanted_passed: int = 0
    wanted: int = 0

    @property
    def should_trigger(self) -> str | None:
        """`0/6`, the should-trigger share, when the part has other cases too (else None:
        the whole tally says it)."""
        if not self.wanted or self.wanted == self.total:
            return None
        return f"{self.wanted_passed}/{self.wanted}"

    def __str__(self) -> str:
        """`6/12 (should trigger 0/6)`."""
        share = self.should_trigger
        return f"{self.passed}/{self.total}" + (f" (should trigger {share})" if share else "")

    def to_dict(self) -> dict[str, int]:
        return {
            "passed": self.passed,
            "total": self.total,
            "should_trigger_passed": self.wanted_passed,
            "should_trigger": self.wanted,
        }


def _tally(probes: Sequence[Probe], cases: Sequence[Case]) -> Tally:
    wanted = [probe.passed for probe, case in zip(probes, cases, strict=True) if case.positive]
    return Tally(sum(probe.passed for probe in probes), len(probes), sum(wanted), len(wanted))


@dataclass(frozen=True)
class Shift:
    """How the skill's channels moved, averaged over its should-trigger cases the edit
    fixes: what made it take them. Averaged over every flip, a fix (p up) and a release
    (p down) cancel, and the mean reads as no move or a loss. An edit that fixes no such
    case is averaged over all its flips, and says so (`over_fixes`)."""

    cosine: float
    bm25: float
    rerank: float | None
    relevance: float | None
    terms: tuple[str, ...]  # BM25 terms gained on those cases, most frequent first
    over_fixes: bool = True
    words: tuple[str, ...] = ()  # the terms as those cases' prompts write them

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"terms": list(self.terms), "words": list(self.words)}


def _mean(values: Iterable[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def _shift(flips: Sequence[Flip]) -> Shift:
    taken = [
        flip
        for flip in flips
        if flip.effect is Effect.FIX and flip.part is not Part.OTHER and flip.case.positive
    ]
    if taken:
        flips = taken
    counts: dict[str, int] = {}
    for flip in flips:
        for term in flip.terms_gained:
            counts[term] = counts.get(term, 0) + 1
    terms = tuple(sorted(counts, key=lambda term: (-counts[term], term)))
    return Shift(
        cosine=_mean(flip.cosine for flip in flips) or 0.0,
        bm25=_mean(flip.bm25 for flip in flips) or 0.0,
        rerank=_mean(flip.rerank for flip in flips),
        relevance=_mean(flip.relevance for flip in flips),
        terms=terms,
        over_fixes=bool(taken),
        words=as_written(terms, [flip.case.prompt for flip in flips]),
    )


def as_written(terms: Iterable[str], texts: Iterable[str]) -> tuple[str, ...]:
    """BM25 terms (match tokens, §2.5: "goe", "hour") as `texts` write them ("goes",
    "hours"; a compound or a name whole, once), or as they are where no text does."""
    written: dict[str, str] = {}
    for text in texts:
        for surface, token in _words(text):
            if token:
                written.setdefault(token, surface)
    return tuple(dict.fromkeys(written.get(term, term) for term in terms))


@dataclass(frozen=True)
class Candidate:
    """One proposed description, scored."""

    description: str
    steps: tuple[str, ...]  # what was done to the original, in order
    diff: tuple[tuple[str, str], ...]  # ("=" | "-" | "+", words)
    tuning: Tally
    held_out: Tally
    flips: tuple[Flip, ...]
    dense_fixes: int  # own fixes and releases that remain with the lexical channels held
    dense_steals: int
    shift: Shift
    text: str  # the SKILL.md as it would be written
    # Fixes and releases that neither the words alone nor the models alone make: with the
    # lexical channels off they vanish, and with the models held at the old description too.
    joint_fixes: int = 0

    def count(self, effect: Effect, part: Part | None = None) -> int:
        return sum(
            flip.effect is effect and (part is None or flip.part is part) for flip in self.flips
        )

    @property
    def fixes(self) -> int:
        return self.count(Effect.FIX) + self.count(Effect.RELEASE)

    @property
    def releases(self) -> int:
        """Other skills' cases it lets go (counted among the fixes)."""
        return self.count(Effect.RELEASE)

    @property
    def breaks(self) -> int:
        return self.count(Effect.BREAK)

    @property
    def steals(self) -> int:
        return self.count(Effect.STEAL)

    @property
    def drops(self) -> int:
        """Steps that drop a sentence of the author's (to make room, or as filler): at an
        equal gain, an edit that keeps the author's text ranks first."""
        return sum(step.startswith('drop "') or '(dropping "' in step for step in self.steps)

    @property
    def false_injections(self) -> int:
        """The skill's own should-not-trigger prompts the edit makes it take."""
        return sum(
            flip.effect is Effect.BREAK and flip.part is not Part.OTHER and not flip.case.positive
            for flip in self.flips
        )

    @property
    def net(self) -> int:
        return self.fixes - self.breaks - self.steals

    def part_net(self, part: Part) -> int:
        return (
            self.count(Effect.FIX, part)
            + self.count(Effect.RELEASE, part)
            - self.count(Effect.BREAK, part)
            - self.count(Effect.STEAL, part)
        )

    @property
    def kept_fixes(self) -> int:
        """The fixes that remain without the edit's lexical effect."""
        return min(self.dense_fixes, self.fixes)

    @property
    def survives(self) -> float | None:
        """The share of the fixes that remain without the edit's lexical effect."""
        return self.kept_fixes / self.fixes if self.fixes else None

    @property
    def remaining(self) -> str:
        """'1 of 4 fixes remains (25%)': the lexical-off figure as both front ends say it."""
        verb = "remains" if 1 in (self.kept_fixes, self.fixes) else "remain"
        share = "" if self.survives is None else f" ({self.survives:.0%})"
        return f"{self.kept_fixes} of {counted(self.fixes, 'fix', 'fixes')} {verb}{share}"

    @property
    def lexical_only(self) -> bool:
        """Every fix is made by the new words alone: none remains with the lexical
        channels off, and none needs the models' move as well (a joint fix)."""
        return self.fixes > 0 and self.dense_fixes == 0 and self.joint_fixes == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "length": len(self.description),
            "steps": list(self.steps),
            "diff": [list(piece) for piece in self.diff],
            "tuning": self.tuning.to_dict(),
            "held_out": self.held_out.to_dict(),
            "net": {
                "all": self.net,
                "tuning": self.part_net(Part.TUNING),
                "held_out": self.part_net(Part.HELD_OUT),
                "other": self.part_net(Part.OTHER),
            },
            "fixes": self.fixes,
            "breaks": self.breaks,
            "steals": self.steals,
            "without_lexical": {
                "fixes": self.dense_fixes,
                "steals": self.dense_steals,
                "joint_fixes": self.joint_fixes,
                "survives": self.survives,
                "lexical_only": self.lexical_only,
            },
            "channels": self.shift.to_dict(),
            "flips": [flip.to_dict() for flip in self.flips],
        }


def rank_key(candidate: Candidate) -> tuple[Any, ...]:
    """Stealers, then lexical-only gains, rank below the rest; then the held-out gain, the
    overall gain, fewer breaks, fewer of the author's sentences dropped, fewer steps."""
    return (
        candidate.steals > 0,
        candidate.lexical_only,
        -candidate.part_net(Part.HELD_OUT),
        -candidate.net,
        candidate.breaks,
        candidate.drops,
        len(candidate.steps),
        len(candidate.description),
        candidate.description,
    )


def shortcomings(candidate: Candidate) -> list[str]:
    """What keeps `candidate` from being recommended, in words (none: it can be): a gain
    on the held-out part and over all the cases (a held-out fix bought with as many
    tuning cases broken is no gain), no steal, no new false injection, no case broken by
    an edit that drops the author's text, and a gain that is not word matching alone.
    `tune --apply` of one with shortcomings says them."""
    found = []
    held_out_gain = candidate.part_net(Part.HELD_OUT) > 0
    losing = held_out_gain and candidate.net <= 0  # its breaks and steals cancel its fixes
    if not held_out_gain and not candidate.held_out.total:
        found.append(
            "no held-out case to check it on (of the skill's should-trigger cases and of its "
            f"should-not-trigger ones, {TUNING_SHARE:.0%} are tuned on and the rest held "
            "out, once there are two or more)"
        )
    elif not held_out_gain:
        found.append("no gain on the held-out cases")
    elif losing:
        lost = " and ".join(
            f"{verb} {count}"
            for verb, count in (("breaks", candidate.breaks), ("steals", candidate.steals))
            if count
        )
        cases = "case" if candidate.breaks + candidate.steals == 1 else "cases"
        found.append(f"it {lost} {cases}, no fewer than the {candidate.fixes} it fixes")
    if candidate.steals and not losing:  # a losing one has said its steals already
        found.append(f"it steals {counted(candidate.steals, 'case')} from other skills")
    if candidate.drops and candidate.breaks and not losing:
        # The author's text served those cases: a fix elsewhere does not pay for it.
        found.append(
            f"it drops some of the author's text and breaks {counted(candidate.breaks, 'case')}"
        )
    if candidate.false_injections:
        found.append(counted(candidate.false_injections, "new false injection"))
    if candidate.lexical_only:
        found.append("its gain is word matching only")
    return found


def recommendable(candidate: Candidate) -> bool:
    return not shortcomings(candidate)


def _outcomes(candidate: Candidate) -> tuple[set[tuple[int, Part]], set[tuple[int, Part]]]:
    """The cases `candidate` wins (fixes, releases) and loses (breaks, steals)."""
    good: set[tuple[int, Part]] = set()
    bad: set[tuple[int, Part]] = set()
    for flip in candidate.flips:
        wins = flip.effect in (Effect.FIX, Effect.RELEASE)
        (good if wins else bad).add((id(flip.case), flip.part))
    return good, bad


def _adds_nothing(longer: Candidate, shorter: Candidate) -> bool:
    """`longer` is `shorter` with more steps that win no case it does not win and lose
    every case it loses: the extra steps are noise (a word only one prompt has, added
    where the quote above it already fixed that prompt)."""
    if not set(shorter.steps) < set(longer.steps):
        return False
    (good_long, bad_long), (good_short, bad_short) = _outcomes(longer), _outcomes(shorter)
    return good_long <= good_short and bad_short <= bad_long


def _without_idle_steps(ranked: Sequence[Candidate]) -> list[Candidate]:
    """`ranked` (best first) less each candidate that only adds idle steps to one ranked
    above it: an author reads one edit per idea, not the same edit padded three ways."""
    kept: list[Candidate] = []
    for candidate in ranked:
        if not any(_adds_nothing(candidate, better) for better in kept):
            kept.append(candidate)
    return kept


@dataclass(frozen=True)
class TuneResult:
    skill_id: str
    path: str
    original: str  # the description
    original_text: str  # the SKILL.md text the edits start from
    split: Split
    tuning: Tally  # before any edit
    held_out: Tally
    others: Tally  # the other cases the skill is near before any edit (the ones routed)
    candidates: tuple[Candidate, ...]  # ranked, best first
    recommended: int | None  # the index of the recommended candidate
    evaluated: int  # descriptions scored
    seconds: float
    share: float = TUNING_SHARE
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    others_total: int = 0  # every other case of the file

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "skill": self.skill_id,
            "path": self.path,
            "description": self.original,
            "split": {
                "from_file": self.split.from_file,
                "tuning": len(self.split.tuning),
                "held_out": len(self.split.held_out),
                "others": len(self.split.others),
                "share": self.share,
                "seed": SPLIT_SEED,
            },
            "before": {
                "tuning": self.tuning.to_dict(),
                "held_out": self.held_out.to_dict(),
                "others": self.others.to_dict(),
                "others_total": self.others_total,
            },
            "recommended": None if self.recommended is None else self.recommended + 1,
            "evaluated": self.evaluated,
            "notes": list(self.notes),
            "candidates": [
                {"number": number, **candidate.to_dict()}
                for number, candidate in enumerate(self.candidates, 1)
            ],
        }


class _RememberedQueries:
    """An embedder whose query vectors are kept for the whole run (the embedder's own LRU
    holds 256: a library-wide case file is thousands of prompts, each routed once per
    finalist). The vector is the embedder's own; documents go to it unchanged."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_query(self, text: str) -> np.ndarray:
        vector = self._memo.get(text)
        if vector is None:
            vector = self._memo[text] = self._inner.embed_query(text)
        return vector


def remembering(index: Index) -> Index:
    """`index` with its cross-encoder (if any) remembering logits and its embedders
    remembering query vectors, for one run; the models themselves are shared."""
    models = index.models
    reranker = models.reranker
    if reranker is not None and not isinstance(reranker, RememberedLogits):
        models = dataclasses.replace(models, reranker=RememberedLogits(reranker))
    embedder = models.embedder
    if embedder is not None and not isinstance(embedder, _RememberedQueries):
        models = dataclasses.replace(models, embedder=_RememberedQueries(embedder))
    multilingual = models.multilingual
    if multilingual is not None and not isinstance(multilingual, _RememberedQueries):
        models = dataclasses.replace(models, multilingual=_RememberedQueries(multilingual))
    if models is index.models:
        return index
    return dataclasses.replace(index, models=models)


class _ReadsInstead:
    """A reranker that reads `read` wherever the library gives it `given` (one skill's
    document): with the lexical channels held at the old description the cross-encoder
    still reads the edit, and with the models held it reads the old text."""

    def __init__(self, inner: Any, given: str, read: str) -> None:
        self._inner, self._given, self._read = inner, given, read

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        swapped = [self._read if doc == self._given else doc for doc in documents]
        return np.asarray(self._inner.score(query, swapped), dtype=np.float64)


# --- proposing edits ---------------------------------------------------------------


# A word joined to others by hyphens ("all-hands", "pre-commit") is offered as the whole.
_COMPOUND_RE = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+")
# Two or more capitalised words in a row, past a sentence's first word: a name ("Black
# Friday", "Google Sheets") is offered whole, not as "black".
_NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z0-9]+(?:\s+[A-Z][a-z0-9]+)+\b")


def _words(prompt: str) -> list[tuple[str, str]]:
    """(surface, match token) of each content word, in order; stopwords become ("", "").
    The surface of a word inside a hyphenated compound or a capitalised name is the whole
    compound or name, which is what an edit offers: its match token stays the word's."""
    wholes = {
        position: found.group()
        for pattern in (_COMPOUND_RE, _NAME_RE)
        for found in pattern.finditer(prompt)
        for position in range(*found.span())
    }
    words: list[tuple[str, str]] = []
    for found in _WORD_RE.finditer(prompt):
        surface = found.group()
        lower = surface.lower()
        start, end = found.span()
        before = prompt[start - 1] if start else ""
        after = prompt[end] if end < len(prompt) else ""
        if lower in STOPWORDS or latin_accented(before) or latin_accented(after):
            words.append(("", ""))
            continue
        whole = wholes.get(start)
        if whole is not None and " " not in whole:
            # A compound keeps its case only for its acronyms ("CI-ready"), as a word does.
            shown = "-".join(
                part if part[1:] != part[1:].lower() else part.lower() for part in whole.split("-")
            )
        elif whole is not None:
            shown = " ".join(whole.split())
        else:
            # A capital at the start of a sentence is not part of the word; an acronym is.
            shown = surface if surface[1:] != surface[1:].lower() else lower
        words.append((shown, norm_token(lower)))
    return words


def _usable(term: str) -> bool:
    return (
        len(term) >= _MIN_WORD
        and term.isalpha()
        and not generic_word(term)
        and term not in FILLER
        and term not in ADDRESSEES
        and term not in CALENDAR
        and term not in FOREIGN_FUNCTION_WORDS
    )


@dataclass(frozen=True)
class _Evidence:
    """What the failing cases of one description say, as weighed words."""

    terms: tuple[tuple[str, str], ...]  # (match token, surface) from missed prompts, best first
    phrases: tuple[str, ...]  # two-word phrases from missed prompts, best first
    excluded: tuple[str, ...]  # surface words of prompts the skill takes wrongly
    pulling: tuple[tuple[str, str], ...]  # (match token, a surface form) in the description
    # match token -> idf x the wanted prompts that have it: what a sentence is worth keeping
    worth: dict[str, float] = field(default_factory=dict)
    shared: tuple[str, ...] = ()  # surface words two or more wanted prompts have, best first


def _evidence(
    description: str,
    missed: Sequence[str],
    wrong: Sequence[str],
    wanted: Sequence[str],
    idf: Callable[[str], float],
) -> _Evidence:
    """Weigh words: idf times (missed prompts with it, plus half the other wanted prompts
    with it, minus the prompts taken wrongly with it). A word several of the skill's
    prompts share names its topic; a word of one prompt may only be that prompt's."""
    own = set(match_tokens(description))
    support: dict[str, int] = {}
    for prompt in wanted:
        for term in set(match_tokens(prompt)):
            support[term] = support.get(term, 0) + 1
    wanted_terms = set(support)
    script: dict[str, int] = {}  # words of other scripts (§9.12's script overlap)
    for prompt in wanted:
        for token in script_tokens(prompt):
            script[token] = script.get(token, 0) + 1
    wrong_terms: dict[str, int] = {}
    wrong_surface: dict[str, str] = {}
    for prompt in wrong:
        for surface, term in dict.fromkeys(_words(prompt)):
            if term:
                wrong_terms[term] = wrong_terms.get(term, 0) + 1
                wrong_surface.setdefault(term, surface)
    counts: dict[str, int] = {}
    surfaces: dict[str, str] = {}
    pairs: dict[str, int] = {}
    seen_here: set[str] = set()
    for prompt in missed:
        words = _words(prompt)
        for surface, term in words:
            if term and term not in own and term not in seen_here and _usable(term):
                counts[term] = counts.get(term, 0) + 1
                surfaces.setdefault(term, surface)
            seen_here.add(term)
        seen_here.clear()
        for (first, a), (second, b) in itertools.pairwise(words):
            if first == second:  # two words of one compound or name: offered whole already
                continue
            if a and b and a != b and _usable(a) and _usable(b) and not {a, b} <= own:
                phrase = f"{first} {second}"
                pairs[phrase] = pairs.get(phrase, 0) + 1

    def weight(term: str, count: int) -> float:
        others = support.get(term, count) - count
        # A word of one prompt alone is as likely that prompt's own as the topic's: it
        # fixes the tuning prompt and rarely a prompt not seen yet, so it weighs half.
        alone = SINGLE_PROMPT if support.get(term, count) < 2 else 1.0
        return idf(term) * (count + others / 2 - wrong_terms.get(term, 0)) * alone

    terms = sorted(
        ((term, weight(term, count)) for term, count in counts.items()),
        key=lambda item: (-item[1], item[0]),
    )
    phrase_weights = {
        phrase: sum(weight(norm_token(part.lower()), count) for part in phrase.split())
        for phrase, count in pairs.items()
        if count >= 2
    }
    phrases = sorted(
        (phrase for phrase, value in phrase_weights.items() if value > 0),
        key=lambda phrase: (-phrase_weights[phrase], phrase),
    )
    excluded = sorted(
        (
            term
            for term in wrong_terms
            if term not in own and term not in wanted_terms and _usable(term)
        ),
        key=lambda term: (-idf(term) * wrong_terms[term], term),
    )
    pulling = sorted(
        (
            term
            for term in own
            if term in wrong_terms
            and term not in wanted_terms
            and not generic_word(term)
            and term not in FOREIGN_FUNCTION_WORDS  # removing one breaks the sentence
        ),
        key=lambda term: (-idf(term) * wrong_terms[term], term),
    )
    shared_phrases = _unspaced_phrases(description, wanted)
    description_surface = {term: surface for surface, term in _words(description) if term}
    # Words that several wanted prompts share, passing or not: what the skill's users call
    # its topic, the likeliest words of prompts not seen yet.
    shared_surface: dict[str, str] = {}
    for prompt in wanted:
        for surface, term in _words(prompt):
            if term and term not in own and _usable(term):
                shared_surface.setdefault(term, surface)
    shared = sorted(
        (
            term
            for term in shared_surface
            if support.get(term, 0) >= 2 and support[term] > wrong_terms.get(term, 0)
        ),
        key=lambda term: (-idf(term) * (support[term] - wrong_terms.get(term, 0)), term),
    )
    return _Evidence(
        terms=tuple((term, surfaces[term]) for term, value in terms if value > 0),
        phrases=tuple(phrases),
        excluded=tuple(wrong_surface[term] for term in excluded),
        pulling=tuple((term, description_surface.get(term, term)) for term in pulling),
        worth={term: idf(term) * count for term, count in support.items()} | script,
        shared=tuple(shared_surface[term] for term in shared) + shared_phrases,
    )


UNSPACED_PHRASE = (2, 6)  # characters: shortest and longest phrase offered


def _unspaced_phrases(description: str, wanted: Sequence[str]) -> tuple[str, ...]:
    """Phrases of scripts written without spaces (Chinese, Japanese, Thai…) that two or
    more wanted prompts share and the description lacks, the most shared and longest
    first. The router reads those scripts as character bigrams (§9.12's script tokens),
    not as the ASCII words the rest of the evidence is made of: without these, a skill
    whose users write Chinese has nothing to be offered. A phrase inside a longer one that
    as many prompts share is left out; so are phrases that name no task ("帮我看看"), and
    particles and pronouns end a phrase ("这张照片的快门" offers "照片" and "快门")."""
    low, high = UNSPACED_PHRASE
    support: dict[str, int] = {}
    for prompt in wanted:
        seen: set[str] = set()
        for run in re.findall(r"\w+", prompt):
            chars = [char if unspaced(char) and char not in UNSPACED_EDGES else " " for char in run]
            text = "".join(chars)
            for function in UNSPACED_FUNCTION_PHRASES:  # "怎么设计" holds "设计", not "么设计"
                text = text.replace(function, " ")
            for piece in text.split():
                for size in range(low, min(high, len(piece)) + 1):
                    seen.update(piece[i : i + size] for i in range(len(piece) - size + 1))
        for phrase in seen:
            support[phrase] = support.get(phrase, 0) + 1
    kept = [phrase for phrase, count in support.items() if count >= 2 and phrase not in description]
    whole = [
        phrase
        for phrase in kept
        if not any(
            phrase in other and support[other] >= support[phrase]
            for other in kept
            if other != phrase
        )
    ]
    return tuple(sorted(whole, key=lambda phrase: (-support[phrase], -len(phrase), phrase)))


def quotable(prompt: str) -> str | None:
    """A prompt as a description may quote it: on one line, its double quotes made single
    (they would close the quote), or None when it is too long to read as an example or
    holds an angle bracket (the spec forbids them in a description)."""
    text = " ".join(prompt.split()).replace('"', "'")
    if not text or len(text) > QUOTE_CHARS or "<" in text or ">" in text:
        return None
    return text


def typical_first(prompts: Sequence[str], index: Index) -> list[str]:
    """The quotable prompts, the most typical first: by the cosine of each prompt's vector
    to the mean of all of them, read by the multilingual encoder when there is one (the
    users of a skill write in more than one language, §9.14), else by the dense model.
    A typical prompt, quoted, brings the skill nearer the prompts like it, the ones not
    seen yet among them; an odd one brings it nearer itself alone."""
    quoted = list(dict.fromkeys(text for text in map(quotable, prompts) if text))
    models = index.models
    embedder = models.multilingual or models.embedder
    if len(quoted) < 3 or embedder is None:
        return quoted
    vectors = np.stack([embedder.embed_query(prompt) for prompt in quoted])
    closeness = vectors @ vectors.mean(axis=0)
    return [quoted[i] for i in sorted(range(len(quoted)), key=lambda i: (-closeness[i], i))]


def _head(text: str, words: int = 4, chars: int = 24) -> str:
    """The opening of a quoted prompt, as a step names it: its first words, as many as
    fit in `chars` (a script written without spaces, or one long word, is cut at `chars`)."""
    kept: list[str] = []
    for word in text.split()[:words]:
        if kept and len(" ".join([*kept, word])) > chars:
            break
        kept.append(word)
    head = " ".join(kept)[:chars]
    return f'"{head}…"' if head != text else f'"{text}"'


def _quoting(description: str, prompts: Sequence[str]) -> str:
    sentence = QUOTE.format(_listing([f'"{text}"' for text in prompts]))
    if prompts[-1][-1] in _ENDINGS:  # 'says "… first."' is a whole sentence already
        sentence = sentence[:-1]
    return _sentence(description, sentence)


def _listing(items: Sequence[str], conjunction: str = "or") -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


_ENDINGS = ".!?。！？"  # what ends a sentence, in spaced scripts and in CJK (_SENTENCE_RE)


def _sentence(description: str, sentence: str) -> str:
    text = description.rstrip()
    if text and text.rstrip('"')[-1:] not in _ENDINGS:
        text += "."
    return f"{text} {sentence}"


# The sentences an edit adds, around the words it lists. Every word of each is a §2.2
# stopword, so a sentence's own words match no prompt: only the words it lists move the
# lexical channels (a template word such as "about" or "covers" would be a shared term of
# every prompt that says it, and a fix it made would be the template's, not the edit's).
USE_FOR = "Use for {}."
USE_WHEN = "Use when the user asks for {}."
QUOTE = "Use when the user says {}."  # around prompts quoted whole
COVERING = "Use it for {}."  # extended by later words ("Use it for bills and hours.")
_COVERING_WORDS = r"Use it for ([A-Za-z0-9 ,]+)\."
_COVERS_RE = re.compile(r"(?:^|(?<=[.!?] ))" + _COVERING_WORDS + "$")
_LEADING_COVERS_RE = re.compile("^" + _COVERING_WORDS + r"(?= |$)")


def _covering(description: str, words: Sequence[str], *, front: bool = False) -> str:
    """The description with a COVERING sentence naming `words`: the closing one (or,
    with `front`, the opening one) extended when there is one (two edits read as one
    sentence), else a new one."""
    text = description.rstrip()
    found = (_LEADING_COVERS_RE if front else _COVERS_RE).search(text)
    if found is None:
        sentence = COVERING.format(_listing(list(words), "and"))
        return _leading(text, sentence) if front else _sentence(text, sentence)
    items = [item.strip() for item in re.split(r",| and ", found.group(1)) if item.strip()]
    items += [word for word in words if word not in items]
    sentence = COVERING.format(_listing(items, "and"))
    return text[: found.start()] + sentence + text[found.end() :]


def _leading(description: str, sentence: str) -> str:
    """`sentence` first: the packaged cross-encoder reads a prompt and the first few dozen
    word pieces of a description (its 64-token window), so only words near the start reach
    it; words added at the end move the cosine and the lexical channels alone."""
    text = description.strip()
    return f"{sentence} {text}" if text else sentence


def _without(description: str, term: str) -> str:
    """The description without every word whose match token is `term`, tidied."""

    def keep(found: re.Match[str]) -> str:
        return "" if norm_token(found.group().lower()) == term else found.group()

    text = _WHOLE_WORD_RE.sub(keep, description)
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    text = re.sub(r"([,;:])(\s*[,;:.])+", r"\2", text)
    text = re.sub(r"\((\s*)\)", "", text)
    return text.strip()


# After a closing quote, only before what does not read as the sentence going on
# ('… says "a." or "b."' is one sentence).
_SENTENCE_RE = re.compile(r'(?<=[.!?])\s+|(?<=[.!?]")\s+(?=[^a-z])|(?<=[。！？])\s*')
# A full stop that ends an abbreviation, not a sentence ("(e.g. a campaign)"). Not "etc.":
# it ends sentences as often as not.
_ABBREVIATION_RE = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|vs|cf|approx|incl|esp|viz|resp)\.$", re.I)


def _sentences(description: str) -> list[str]:
    """The description's sentences, each with the text between its pieces as written.

    A piece does not end a sentence while a double quote or a parenthesis is open in it,
    or when it ends in an abbreviation: a quoted prompt's full stops, "(e.g. an
    interview)" and "vs. the old API" stay whole, so moving, dropping or keeping a sentence
    never cuts a quotation, an aside or an exclusion in two."""
    text = description.strip()
    out: list[str] = []
    start, joining = 0, False
    for end in [*_SENTENCE_RE.finditer(text), None]:
        piece = text[start : end.start() if end else len(text)]
        if piece:
            if joining:
                out[-1] += piece
            else:
                out.append(piece)
        if end is None:
            break
        sentence = out[-1] if out else ""
        joining = bool(
            sentence.count('"') % 2
            or sentence.count("(") > sentence.count(")")
            or _ABBREVIATION_RE.search(sentence)
        )
        if joining and out:
            out[-1] += end.group()
        start = end.end()
    return out


def _joined(sentences: Iterable[str]) -> str:
    """Sentences as one text: a space after each, but none after a full stop of a script
    written without spaces ("。"), where the author put none."""
    text = ""
    for sentence in sentences:
        if text and text[-1] not in "。！？":
            text += " "
        text += sentence
    return text


def _worth(sentence: str, worth: dict[str, float]) -> float:
    """How much of what the wanted prompts say a sentence says (their words, by idf, and
    their words in other scripts)."""
    tokens = set(match_tokens(sentence)) | script_tokens(sentence)
    return sum(worth.get(token, 0.0) for token in tokens)


def _leads(description: str, worth: dict[str, float], count: int = 2) -> list[tuple[str, str]]:
    """(step, description) with one of its later sentences moved first: the ones the
    wanted prompts' words fill most. The words stay the same; what changes is what the
    cross-encoder reads (its window holds the first few dozen word pieces)."""
    parts = _sentences(description)
    if len(parts) < 2:
        return []
    ranked = sorted(
        (i for i in range(1, len(parts)) if _worth(parts[i], worth) > _worth(parts[0], worth)),
        key=lambda i: (-_worth(parts[i], worth), i),
    )
    out = []
    for position in ranked[:count]:
        moved = [parts[position]] + [part for i, part in enumerate(parts) if i != position]
        words = parts[position].split()
        head = " ".join(words[:5]) + (" …" if len(words) > 5 else "")
        out.append((f'lead with "{head}"', _joined(moved)))
    return out


def _trimmed(
    description: str, length: int, worth: dict[str, float], authors_first: str
) -> tuple[str, str] | None:
    """The description at most `length` characters long, by dropping its least useful
    sentences (those whose words the wanted prompts use least, per character), never the
    first, the author's first (an edit may have put another before it) nor an exclusion;
    and the first words of what was dropped. None when that cannot fit."""
    parts = _sentences(description)
    if len(parts) < 2:
        return None
    kept_first = " ".join(authors_first.split())

    def value(sentence: str) -> float:
        return _worth(sentence, worth) / len(sentence)

    # A sentence that says what the skill is not for keeps the prompts it must not take
    # out (the relevance model's exclusions, §9.12, or another language's), and one that
    # says when to use it is a trigger a host model reads (the author's, or an earlier
    # step's, which dropping would undo): never dropped.
    order = sorted(
        (
            i
            for i in range(1, len(parts))
            if not states_exclusion(parts[i])
            and not says_not_for(parts[i])
            and not says_when_to_use(parts[i])
            and " ".join(parts[i].split()) != kept_first
        ),
        key=lambda i: (value(parts[i]), -len(parts[i]), -i),
    )
    dropped: set[int] = set()
    text = description.strip()
    for position in order:
        if len(text) <= length:
            break
        dropped.add(position)
        text = _joined(part for i, part in enumerate(parts) if i not in dropped)
    if len(text) > length or not dropped:
        return None
    first = parts[min(dropped)].split()
    gone = " ".join(first[:5]) + (" …" if len(first) > 5 or len(dropped) > 1 else "")
    return text, gone


def _fitted(
    description: str,
    step: str,
    add: Callable[[str], str],
    worth: dict[str, float],
    authors_first: str,
) -> tuple[str, str]:
    """`add(description)`, with room made for it when it would pass the spec's limit."""
    added = add(description)
    if len(added) <= MAX_DESCRIPTION:
        return step, added
    need = len(description) - (len(added) - MAX_DESCRIPTION)
    for _ in range(3):  # an extended COVERING sentence grows a little less than a new one
        trimmed = _trimmed(description, need, worth, authors_first)
        if trimmed is None:
            return step, added  # refused by the spec check
        text, gone = trimmed
        added = add(text)
        if len(added) <= MAX_DESCRIPTION:
            return f'{step} (dropping "{gone}")', added
        need -= len(added) - MAX_DESCRIPTION
    return step, added


def _proposals(
    description: str,
    evidence: _Evidence,
    options: Options,
    authors_first: str,
    examples: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """(step, new description) for one description (the author's, or an edit of it whose
    first sentence is `authors_first`), from its evidence and the prompts it may quote
    (`examples`, the most typical first). Each addition is tried at the end and, where
    the cross-encoder reads it, at the start; one that would pass the spec's 1,024
    characters drops the description's least useful sentences."""
    worth = evidence.worth
    proposals: list[tuple[str, str]] = []

    def add(step: str, change: Callable[[str], str]) -> None:
        proposals.append(_fitted(description, step, change, worth, authors_first))

    # Two words of one compound ("pre", "commit") are offered once, as "pre-commit".
    top = list(dict.fromkeys(surface for _, surface in evidence.terms[: options.max_terms]))
    for surface in top:
        add(f'add "{surface}"', partial(_covering, words=[surface]))
        add(f'add "{surface}" first', partial(_covering, words=[surface], front=True))
    for size in (2, 3):
        if len(top) >= size:
            some = top[:size]
            add(f"add {', '.join(some)}", partial(_covering, words=some))
            add(f"add {', '.join(some)} first", partial(_covering, words=some, front=True))
    phrases = list(evidence.phrases[:2])
    used = {norm_token(word.lower()) for phrase in phrases for word in phrase.split()}
    reasons = phrases + [surface for term, surface in evidence.terms if term not in used]
    if reasons:
        sentence = USE_FOR.format(_listing(reasons[:3]))
        add(sentence, partial(_sentence, sentence=sentence))
        add(f"first: {sentence}", partial(_leading, sentence=sentence))
    # The words several wanted prompts share, passing or not, name the users' topic: the
    # likeliest words of prompts not seen yet, so they are offered in more than one shape.
    shared = list(evidence.shared)
    if shared:
        sentence = USE_FOR.format(_listing(shared[:3]))
        add(f"first: {sentence}", partial(_leading, sentence=sentence))
    if len(shared) > 3:
        sentence = USE_WHEN.format(_listing(shared[:5]))
        add(f"first: {sentence}", partial(_leading, sentence=sentence))
    if shared and top:
        mixed = list(dict.fromkeys([*shared[:2], *top[:2]]))
        if len(mixed) > 1:
            sentence = USE_WHEN.format(_listing(mixed))
            add(f"first: {sentence}", partial(_leading, sentence=sentence))
            add(sentence, partial(_sentence, sentence=sentence))
    # A typical prompt quoted whole moves every channel toward the prompts like it; one
    # such sentence to a description, so an edit stays a few examples, not a list.
    opening = QUOTE.split("{}")[0]
    quoted = any(f'{opening}"{text}"' in description for text in examples)
    fresh = [] if quoted else list(examples)
    for count in QUOTES:
        if len(fresh) >= count:
            heads = [_head(text) for text in fresh[:count]]
            add(f"quote {_listing(heads, 'and')}", partial(_quoting, prompts=fresh[:count]))
    proposals += _leads(description, worth)
    if evidence.excluded:
        sentence = f"Not for {_listing(list(evidence.excluded[:3]))}."
        add(sentence, partial(_sentence, sentence=sentence))
    for term, surface in evidence.pulling[:2]:
        proposals.append((f'remove "{surface}"', _without(description, term)))
    # Filler dilutes the cosine: the least useful sentence alone, or as many as the spec
    # needs gone when the description is over its limit.
    parts = _sentences(description)
    length = MAX_DESCRIPTION if len(description) > MAX_DESCRIPTION else len(description) - 1
    if len(parts) >= 3 or len(description) > MAX_DESCRIPTION:
        trimmed = _trimmed(description, length, worth, authors_first)
        if trimmed is not None:
            proposals.append((f'drop "{trimmed[1]}"', trimmed[0]))
    return proposals


def _keeps_spec(original: str, description: str) -> bool:
    """At most 1,024 characters (or, over it already, shorter than before); no new angle
    bracket."""
    return (
        bool(description.strip())
        and len(description) <= max(MAX_DESCRIPTION, len(original) - 1)
        and description.count("<") <= original.count("<")
        and description.count(">") <= original.count(">")
    )


def word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """The description's change word by word: ("=", kept), ("-", removed), ("+", added)."""
    left, right = old.split(), new.split()
    pieces: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append(("=", " ".join(left[a1:a2])))
            continue
        if a2 > a1:
            pieces.append(("-", " ".join(left[a1:a2])))
        if b2 > b1:
            pieces.append(("+", " ".join(right[b1:b2])))
    return tuple(pieces)


# --- scoring -------------------------------------------------------------------------


@dataclass
class _Scored:
    description: str
    steps: tuple[str, ...]
    edit: Edit
    tuning: list[Probe]
    net: int  # on the tuning part (the patched copy is not kept: one per finalist is made again)
    general: int  # the net without the fixes that only copied one prompt's words (_general)
    margin: float = 0.0  # how far the relevance model moved toward the right side (_margin)


@dataclass
class TuneCache:
    """What tuning runs on one unedited library (the same index and config) share: each
    prompt routed once, and measured once for the check of which cases an edit reaches.
    A caller tuning many skills of one library passes the same cache to every run."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    prompts: dict[str, Measured] = field(default_factory=dict)


class _Tuner:
    def __init__(
        self,
        index: Index,
        config: Config,
        skill_id: str,
        split: Split,
        original_text: str,
        cache: TuneCache | None = None,
    ) -> None:
        self.index, self.config, self.skill_id, self.split = index, config, skill_id, split
        self.cache = TuneCache() if cache is None else cache
        self.position = index.positions[skill_id]
        self.path = index.skills[self.position].path
        self.original_text = original_text

    def each(self, work: Callable[[Case], _Result], cases: Sequence[Case]) -> list[_Result]:
        """`work` on every case, one case on each core at once (`threads.kept_pool`): a
        case's decision under an edit mostly waits on one new pair of the cross-encoder,
        which runs alone on one thread. Decisions do not depend on each other."""
        if min(batch_workers(), len(cases)) <= 1:
            return [work(case) for case in cases]
        return list(kept_pool("tune").map(work, cases))

    def probes(self, cases: Sequence[Case], index: Index) -> list[Probe]:
        return self.each(lambda case: _probe(case, index, self.config, self.skill_id), cases)

    def reach(self, case: Case) -> Reach:
        """What it takes for an edit to reach `case`, measured without routing it."""
        seen = self.cache.prompts.get(case.prompt)
        if seen is None:
            seen = self.cache.prompts[case.prompt] = measure(case.prompt, self.index, self.config)
        return reach(case, self.index, self.position, seen)

    def others(
        self,
        cases: Sequence[Case],
        reaches: Sequence[Reach],
        changed: frozenset[str],
        patched: Index,
    ) -> list[tuple[Probe, Probe] | None]:
        """(before, after) for each other case the edit can reach (reach.py), else None:
        any other case keeps its decision."""
        reached = [where.reached(changed, patched, self.position) for where in reaches]
        both = iter(
            self.each(
                lambda case: (self.before(case), _probe(case, patched, self.config, self.skill_id)),
                [case for case, near in zip(cases, reached, strict=True) if near],
            )
        )
        return [next(both) if near else None for near in reached]

    def before(self, case: Case) -> Probe:
        """The case on the unedited library, routed once (and kept in the cache)."""
        decision = None
        if not case.context and not case.cwd:
            decision = self.cache.decisions.get(case.prompt)
            if decision is None:
                decision = decide(case.prompt, self.index, self.config)
                self.cache.decisions[case.prompt] = decision
        return _probe(case, self.index, self.config, self.skill_id, decision)

    def patched(self, description: str) -> tuple[Edit, Index] | str:
        """The edit and the patched copy, or why the SKILL.md cannot take it."""
        edit = edit_description(self.path, self.original_text, description)
        if not edit.ok or edit.skill is None:
            return edit.problem or "the edit cannot be written"
        if edit.skill.id != self.skill_id:
            return f"the edited file would be read as skill {edit.skill.id!r}"
        return edit, patched_index(self.index, edit.skill, self.config)

    def lexical_held(self, patched: Index) -> Index:
        """The library with the lexical channels off for the edit: every table and feature
        that reads words (BM25, keywords, phrases, the relevance model's shared terms,
        exclusions and length) sees the old description; only the models read the new one
        (the dense and multilingual vectors, and the document the cross-encoder reads)."""
        return self._mixed(words=self.index, vectors=patched, document=patched)

    def models_held(self, patched: Index) -> Index:
        """The converse: the edit's words in every lexical table and feature, the models
        reading the old description."""
        return self._mixed(words=patched, vectors=self.index, document=self.index)

    def _mixed(self, *, words: Index, vectors: Index, document: Index) -> Index:
        """`words`'s lexical tables with `vectors`'s vectors and a cross-encoder reading
        `document`'s text of the skill wherever `words` has its own."""
        models = self.index.models
        reranker = models.reranker
        if reranker is not None and document is not words:
            given, read = (index.skills[self.position] for index in (words, document))
            models = dataclasses.replace(
                models,
                reranker=_ReadsInstead(
                    reranker,
                    rerank_document(given.description, given.body_head),
                    rerank_document(read.description, read.body_head),
                ),
            )
        return dataclasses.replace(
            words, vectors=vectors.vectors, multilingual=vectors.multilingual, models=models
        )


def _margin(cases: Sequence[Case], before: Sequence[Probe], after: Sequence[Probe]) -> float:
    """The relevance model's probability for the skill, summed toward the right side:
    up on should-trigger prompts, down on the others (a prompt the skill is no candidate
    for counts as 0). When every tuning case passes already, or none can be flipped, this
    is what still tells an edit that brings prompts like them nearer from one that does
    nothing; a held-out prompt just under the threshold is crossed by such an edit."""
    total = 0.0
    for case, old, new in zip(cases, before, after, strict=True):
        moved = (new.relevance or 0.0) - (old.relevance or 0.0)
        total += moved if case.positive else -moved
    return round(total, 6)  # no float noise in the order


def _search_key(item: _Scored) -> tuple[Any, ...]:
    """The edits that would hold without any one prompt first, then the plain tuning
    gain, the relevance margin, the fewest steps, the shortest text, and the text (a
    stable order)."""
    return (
        -item.general,
        -item.net,
        -item.margin,
        len(item.steps),
        len(item.description),
        item.description,
    )


def _promising(item: _Scored) -> bool:
    """Worth building on: a tuning gain, or no loss and a relevance margin gained."""
    return item.net > 0 or (item.net == 0 and item.general >= 0 and item.margin > MIN_MARGIN)


def _failing(
    cases: Sequence[Case], probes: Sequence[Probe], skill_id: str
) -> tuple[list[str], list[str], list[str]]:
    """(missed positives, prompts taken wrongly, positives it serves) among `cases`."""
    missed = [c.prompt for c, p in zip(cases, probes, strict=True) if c.positive and not p.passed]
    wrong = [
        c.prompt
        for c, p in zip(cases, probes, strict=True)
        if not c.positive and skill_id in p.injected
    ]
    wanted = [c.prompt for c in cases if c.positive]
    return missed, wrong, wanted


def _general(
    description: str,
    cases: Sequence[Case],
    before: Sequence[Probe],
    after: Sequence[Probe],
    added: frozenset[str],
    support: dict[str, int],
) -> int:
    """The tuning net an edit would keep were each fixed prompt left out, roughly: a fix
    counts when the edit adds none of the prompt's words (it moved the model channels) or
    adds one that another wanted prompt shares too (the edit would be proposed without
    this prompt). A fix made only by copying words no other prompt has is how an edit
    overfits the tuning part: such edits rarely reach the held-out prompts. So does a fix
    of a prompt the edit quotes whole: it does not count."""
    score = 0
    for case, old, new in zip(cases, before, after, strict=True):
        if old.passed == new.passed:
            continue
        if not new.passed:
            score -= 1
            continue
        quoted = quotable(case.prompt)
        if case.positive and quoted is not None and f'"{quoted}"' in description:
            continue
        hit = added & frozenset(match_tokens(case.prompt)) if case.positive else frozenset()
        score += not hit or any(support.get(term, 0) >= 2 for term in hit)
    return score


def tune(
    index: Index,
    config: Config,
    skill_id: str,
    cases: Sequence[Case],
    original_text: str,
    options: Options | None = None,
    *,
    cache: TuneCache | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    must_fix: Sequence[Case] = (),
) -> TuneResult:
    """Propose and score description edits for `skill_id` on `cases` (see the module).

    `cache`: shared with other runs on the same `index` and `config` (see TuneCache).
    `progress(stage, done, total)` is called as the work goes (the explorer's bar).
    `must_fix`: cases always in the tuning part, never held out: the prompt an author
    typed (`typed_case`) is the one they asked for help with, so edits are sought for it;
    it never counts towards the held-out figures that recommend one."""
    options = options or Options()
    started = time.perf_counter()
    if skill_id not in index.positions:
        raise KeyError(f"no skill {skill_id!r} in this library")
    split = split_cases(cases, skill_id, options.share)
    if must_fix:
        split = dataclasses.replace(split, tuning=(*must_fix, *split.tuning))
    index = remembering(index)
    tuner = _Tuner(index, config, skill_id, split, original_text, cache)
    original = index.skills[tuner.position].description
    timings: dict[str, float] = {}
    notes: list[str] = []
    notes += [
        f"{case.source or 'a case'} is a should-trigger case, tuned on and never held out: "
        + _head(case.prompt, words=8, chars=60)
        for case in must_fix
    ]
    if (
        split.tuning
        and not split.others
        and all(case.positive for case in (*split.tuning, *split.held_out))
    ):
        notes.append(
            f"every case is one {skill_id} should take: nothing checks what an edit makes it "
            "take besides (a word added from a prompt brings every prompt with that word); "
            "add prompts it should not take, and other skills' cases"
        )
    if not split.tuning:
        notes.append(
            f"no case is about {skill_id}: nothing to tune on; the cases file needs prompts "
            "that should trigger it and prompts that should not (docs/cli.md, Cases files)"
        )
    if not split.from_file and any(case.split for case in (*split.tuning, *split.held_out)):
        notes.append(
            "the file's train/validation split is not used: it needs a should-trigger "
            f"prompt of {skill_id} on both sides and every case in one; split by the "
            "prompts' hash instead"
        )
    if len(original) > MAX_DESCRIPTION:
        notes.append(
            f"the description has {len(original):,} characters, over the spec's "
            f"{MAX_DESCRIPTION:,}: only edits that shorten it are tried"
        )

    tell = progress or (lambda stage, done, total: None)
    tell("routing the cases before any edit", 0, 1)
    base_tuning = tuner.each(tuner.before, split.tuning)
    base_held = tuner.each(tuner.before, split.held_out)
    reaches = [tuner.reach(case) for case in split.others]
    near = [case for case, reach in zip(split.others, reaches, strict=True) if reach.near]
    base_others = tuner.each(tuner.before, near)
    timings["before"] = time.perf_counter() - started

    # Beam search on the tuning part.
    seen = {original}
    expanded: set[str] = set()
    refusals: dict[str, None] = {}  # why an edit could not be written, in order, once each
    scored: list[_Scored] = []
    original_terms = frozenset(match_tokens(original))
    authors_first = (_sentences(original) or [""])[0]  # never dropped by a trim
    support: dict[str, int] = {}  # match token -> the tuning part's positives that have it
    for case in split.tuning:
        if case.positive:
            for term in set(match_tokens(case.prompt)):
                support[term] = support.get(term, 0) + 1
    examples = typical_first([case.prompt for case in split.tuning if case.positive], index)
    best_general = 0
    beam: list[tuple[str, tuple[str, ...], list[Probe]]] = [(original, (), base_tuning)]
    for _ in range(options.rounds):
        fresh: list[_Scored] = []
        for description, steps, probes in beam:
            missed, wrong, wanted = _failing(split.tuning, probes, skill_id)
            evidence = _evidence(description, missed, wrong, wanted, index.lexical.idf)
            proposals = _proposals(description, evidence, options, authors_first, examples)
            if not steps and split.tuning:
                if not missed and not wrong:
                    tried = (
                        "; edits that raise the margin are still tried"
                        if proposals
                        else ", none can be quoted, and the description has nothing to "
                        "trim: nothing to try"
                    )
                    notes.append(
                        "every case of the tuning part passes already, so no missed prompt "
                        f"offers words{tried}"
                    )
                elif not proposals:
                    notes.append(
                        "the failing prompts of the tuning part offer no word to add or "
                        "remove (only ASCII words count, routing.md §2.1)"
                    )
            for step, proposal in proposals:
                if proposal in seen or not _keeps_spec(original, proposal):
                    continue
                if len(scored) + len(fresh) >= options.evaluations:
                    break
                seen.add(proposal)
                tell(
                    "scoring edits on the tuning part",
                    len(scored) + len(fresh),
                    options.evaluations,
                )
                patched = tuner.patched(proposal)
                if isinstance(patched, str):
                    refusals.setdefault(patched, None)
                    continue
                edit, copy = patched
                after = tuner.probes(split.tuning, copy)
                net = sum(a.passed for a in after) - sum(b.passed for b in base_tuning)
                added = frozenset(match_tokens(proposal)) - original_terms
                general = _general(proposal, split.tuning, base_tuning, after, added, support)
                margin = _margin(split.tuning, base_tuning, after)
                fresh.append(_Scored(proposal, (*steps, step), edit, after, net, general, margin))
        if not fresh:
            break
        scored += fresh
        best = sorted((item for item in scored if _promising(item)), key=_search_key)
        top = max((item.general for item in best), default=0)
        if top <= best_general and len(scored) > len(fresh):
            break  # a round that improves on nothing: the next would only stack words
        best_general = max(best_general, top)
        expanded.update(description for description, _, _ in beam)
        beam = [
            (item.description, item.steps, item.tuning)
            for item in best
            if item.description not in expanded
        ][: options.beam]
        if not beam:
            break
    timings["search"] = time.perf_counter() - started - timings["before"]
    # rewrite's reasons speak to the explorer's editor; the key is not ours to offer here.
    notes += [f"not scored: {reason.replace(' (ctrl+o)', '')}" for reason in refusals]

    finalists = sorted(
        (
            item
            for item in scored
            if _promising(item)
            or any(a.passed != b.passed for a, b in zip(item.tuning, base_tuning, strict=True))
        ),
        key=_search_key,
    )[: options.finalists]
    candidates = []
    for number, item in enumerate(finalists):
        tell("checking the best edits on the held-out part and other cases", number, len(finalists))
        candidates.append(_finalise(tuner, item, original, base_tuning, base_held, reaches))
    candidates = [candidate for candidate in candidates if candidate.fixes > 0]
    candidates = _without_idle_steps(sorted(candidates, key=rank_key))
    recommended = next(
        (number for number, candidate in enumerate(candidates) if recommendable(candidate)), None
    )
    if not scored and split.tuning and len(original) > MAX_DESCRIPTION:
        notes.append(
            "no edit was tried: none shortens the description under the spec's "
            f"{MAX_DESCRIPTION:,} characters (the tuner never drops the first sentence, one "
            "that says when to use the skill, nor an exclusion): shorten it by hand first"
        )
    elif scored and not candidates:
        notes.append(
            "the one edit scored fixed no case of the tuning part"
            if len(scored) == 1
            else f"none of the {len(scored)} edits scored fixed a case of the tuning part"
        )
    elif candidates and recommended is None:
        notes.append(
            "nothing is recommended; what keeps #1 from it: "
            + "; ".join(shortcomings(candidates[0]))
        )
    timings["finalists"] = time.perf_counter() - started - timings["before"] - timings["search"]
    return TuneResult(
        skill_id=skill_id,
        path=tuner.path,
        original=original,
        original_text=original_text,
        split=split,
        tuning=_tally(base_tuning, split.tuning),
        held_out=_tally(base_held, split.held_out),
        others=_tally(base_others, near),
        others_total=len(split.others),
        candidates=tuple(candidates),
        recommended=recommended,
        evaluated=len(scored),
        seconds=time.perf_counter() - started,
        share=options.share,
        notes=tuple(notes),
        timings=timings,
    )


def _finalise(
    tuner: _Tuner,
    item: _Scored,
    original: str,
    base_tuning: Sequence[Probe],
    base_held: Sequence[Probe],
    reaches: Sequence[Reach],
) -> Candidate:
    split, skill_id = tuner.split, tuner.skill_id
    assert item.edit.skill is not None
    patched = patched_index(tuner.index, item.edit.skill, tuner.config)
    held = tuner.probes(split.held_out, patched)
    changed = changed_terms(original, item.description)
    pairs: list[tuple[Part, Case, Probe, Probe]] = [
        (part, case, old, new)
        for part, cases, before, after in (
            (Part.TUNING, split.tuning, base_tuning, item.tuning),
            (Part.HELD_OUT, split.held_out, base_held, held),
        )
        for case, old, new in zip(cases, before, after, strict=True)
    ]
    for case, both in zip(
        split.others, tuner.others(split.others, reaches, changed, patched), strict=True
    ):
        if both is not None:
            pairs.append((Part.OTHER, case, *both))
    flips: list[Flip] = []
    before_of: dict[int, Probe] = {}
    for part, case, old, new in pairs:
        flip = _flip(case, part, skill_id, old, new)
        if flip is not None:
            flips.append(flip)
            before_of[id(case)] = old
    # The flipped cases again, with the lexical channels off for the edit; a fix that
    # vanishes there, once more with the models held instead.
    frozen = tuner.lexical_held(patched)
    words_alone: Index | None = None
    dense_fixes = dense_steals = joint_fixes = 0
    for flip in flips:
        if flip.effect is Effect.BREAK:
            continue
        old = before_of[id(flip.case)]
        again = _probe(flip.case, frozen, tuner.config, skill_id)
        effect = _effect(flip.case, flip.part, skill_id, old, again)
        dense_fixes += effect in (Effect.FIX, Effect.RELEASE)
        dense_steals += effect is Effect.STEAL
        if flip.effect is not Effect.STEAL and effect not in (Effect.FIX, Effect.RELEASE):
            if words_alone is None:
                words_alone = tuner.models_held(patched)
            again = _probe(flip.case, words_alone, tuner.config, skill_id)
            joint_fixes += _effect(flip.case, flip.part, skill_id, old, again) is None
    assert item.edit.text is not None
    return Candidate(
        description=item.description,
        steps=item.steps,
        diff=word_diff(original, item.description),
        tuning=_tally(item.tuning, split.tuning),
        held_out=_tally(held, split.held_out),
        flips=tuple(flips),
        dense_fixes=dense_fixes,
        dense_steals=dense_steals,
        shift=_shift(flips),
        text=item.edit.text,
        joint_fixes=joint_fixes,
    )


def cases_for(path: str | os.PathLike[str], skill_id: str) -> CaseSet:
    """The cases file of a tuning run: a skill-creator trigger eval set (`.json`, or text
    that opens with `[` or `{`) is read as `skill_id`'s, unless its items name their skills,
    `skill_id` among them; TOML and TSV name their skills."""
    file = Path(path)
    suffix = file.suffix.lower()
    trigger_evals = suffix == ".json"
    if not trigger_evals and suffix not in (".toml", ".tsv", ".txt"):
        try:
            with file.open("rb") as stream:
                trigger_evals = stream.read(4096).lstrip()[:1] in (b"[", b"{")
        except OSError:
            trigger_evals = False  # load_cases says why it cannot read it
    if trigger_evals:
        # A set over several skills (each item names its own) is read whole: its items
        # about the others are the confusable prompts a steal check needs.
        try:
            whole = load_cases(file)
        except CaseError:
            whole = None  # one skill's set that names none: read as `skill_id`'s
        about = [is_about(case, skill_id) for case in whole.cases] if whole else []
        if whole is not None and any(about) and not all(about):
            return whole
    return load_cases(file, skill=skill_id if trigger_evals else None)


def apply(result: TuneResult, number: int) -> Edit:
    """Write candidate `number` (1-based) into the skill's SKILL.md: only the description
    changes, atomically, and only if the file is still the one tuned (rewrite.save)."""
    if not 1 <= number <= len(result.candidates):
        raise IndexError(f"no candidate {number}: there are {len(result.candidates)}")
    candidate = result.candidates[number - 1]
    edit = edit_description(result.path, result.original_text, candidate.description)
    save(edit)
    return edit
