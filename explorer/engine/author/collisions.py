"""The collision map: pairs of skills that compete for the same prompts.

Two kinds of prompt are routed through the one `decide()`:

* the cases, when there are any: each names the skill (or skills) it expects;
* prompts sampled from each description's own sentences (its first `SENTENCES` sentences
  of at least `MIN_WORDS` content words): a sentence the author wrote to say what the
  skill does is a prompt the skill should win.

For each prompt the expected skill meets its strongest rival: another skill injected in
its place (a **take**), beside it (a **share**), or a **near miss**: ranked right behind
it with a relevance of at least `NEAR_P` (without the relevance model: within
`NEAR_HYBRID` of its hybrid score), or, when no other skill is injected, ranked ahead of
it by the relevance model with at least `NEAR_P` (its lead over the expected skill is
what held that one's p down). A pair's weight adds these up, a take counting most, so
the pairs at the top are the ones whose descriptions the router cannot keep apart. Each
pair carries the description words the two share (by idf, the words that pull the same
prompts) and the cases that flip between them: a case that expects one and that the
other takes.

Pure: nothing is printed or written; the CLI (`lint --collisions`) and the explorer
(`tui/collisions.py`) show the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from explorer.engine.base.config import Config
from explorer.engine.base.text import match_tokens, whole_tokens
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.cases import Case
from explorer.engine.route.decision import Decision
from explorer.engine.route.pipeline import decide
from explorer.engine.route.relevance import excluded_terms, script_tokens, unspaced

SCHEMA = "skill-explorer/collisions@1"
SENTENCES = 3  # sampled from each description
MIN_WORDS = 3  # content words a sampled sentence needs
NEAR_P = 0.1  # a runner-up the relevance model gives at least this is a near miss
NEAR_HYBRID = 0.1  # without the relevance model: a runner-up this close in hybrid score
COLLISION_WEIGHTS = {"take": 1.0, "share": 0.5, "near": 0.25}
SHARED_SHOWN = 8
RIVALS = 8  # the runner-up is looked for among the first rows
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


@dataclass(frozen=True)
class Contest:
    """One prompt two skills competed for."""

    prompt: str
    source: str  # "case" or "sentence"
    expected: str  # the skill the prompt belongs to
    rival: str
    kind: str  # take | share | near
    where: str = ""  # the case's file:line, for cases

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "source": self.source,
            "expected": self.expected,
            "rival": self.rival,
            "kind": self.kind,
            "where": self.where,
        }


@dataclass
class Collision:
    """Two skills and every prompt they competed for, either way round."""

    a: str
    b: str
    contests: list[Contest] = field(default_factory=list)
    shared: tuple[str, ...] = ()

    @property
    def weight(self) -> float:
        return sum(COLLISION_WEIGHTS[contest.kind] for contest in self.contests)

    @property
    def flips(self) -> list[Contest]:
        """Cases that expect one of the two and that the other takes."""
        return [c for c in self.contests if c.source == "case" and c.kind == "take"]

    def count(self, kind: str) -> int:
        return sum(contest.kind == kind for contest in self.contests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "skills": [self.a, self.b],
            "weight": self.weight,
            "takes": self.count("take"),
            "shares": self.count("share"),
            "near_misses": self.count("near"),
            "shared_words": list(self.shared),
            "flips": [contest.to_dict() for contest in self.flips],
            "contests": [contest.to_dict() for contest in self.contests],
        }


@dataclass(frozen=True)
class CollisionMap:
    collisions: tuple[Collision, ...]  # ranked, heaviest first
    prompts: int  # prompts routed
    cases: int
    sentences: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "prompts": self.prompts,
            "cases": self.cases,
            "sentences": self.sentences,
            "collisions": [collision.to_dict() for collision in self.collisions],
        }


def sentences(description: str, limit: int = SENTENCES) -> list[str]:
    """The description's first `limit` sentences with at least MIN_WORDS content words."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(description):
        sentence = sentence.strip()
        if len(set(match_tokens(sentence))) >= MIN_WORDS:
            out.append(sentence)
        if len(out) == limit:
            break
    return out


def contests(decision: Decision, expected: Sequence[str]) -> list[tuple[str, str, str]]:
    """(expected skill, rival, kind) for one routed prompt."""
    injected = decision.injected_ids
    out: list[tuple[str, str, str]] = []
    for skill in expected:
        others = [rival for rival in injected if rival not in expected]
        if others:
            kind = "share" if skill in injected else "take"
            out += [(skill, rival, kind) for rival in others]
            continue
        mine = decision.rows.by_id(skill)
        learned = mine.relevance is not None
        if skill not in injected and not learned:
            continue  # under the gates a miss with nothing injected is the floor's, no rival's
        found = _strongest_rival(decision, expected, learned)
        if found is None:
            continue
        theirs, rival = found
        if skill in injected:
            near = theirs >= NEAR_P if learned else mine.score - theirs <= NEAR_HYBRID
        else:  # no other skill injected: a rival the model put ahead held its leads down
            near = theirs >= NEAR_P and theirs > (mine.relevance or 0.0)
        if near:
            out.append((skill, rival, "near"))
    return out


def _strongest_rival(
    decision: Decision, expected: Sequence[str], learned: bool
) -> tuple[float, str] | None:
    """The strongest of the first RIVALS rows that is not expected: by p when the relevance
    model judged the expected skill (and then only its candidates), else by hybrid score."""
    rivals = [
        (row.relevance if learned else row.score, row.id)
        for row in decision.rows[:RIVALS]
        if row.id not in expected and (row.relevance is not None) == learned
    ]
    if not rivals:
        return None
    theirs, rival = max(rivals, key=lambda item: (item[0] or 0.0, item[1]))
    return None if theirs is None else (theirs, rival)


def _shared(index: Index, a: str, b: str) -> tuple[str, ...]:
    """The words both descriptions claim, rarest first: a word one of them names only to
    exclude it ("not for Playwright suites") is not a claim the two share (§9.12). Then
    their words in other scripts (§9.12's script tokens: "análisis"), and the runs of a
    script written without spaces that both hold, rebuilt from the character bigrams the
    router reads ("用户要求", not "用户", "户要", "要求"): two Chinese descriptions share
    those, and "no shared word" said the models alone had made them compete."""

    def description(skill_id: str) -> str:
        return index.skills[index.positions[skill_id]].description

    def claimed(text: str) -> set[str]:
        return set(whole_tokens(text)) - excluded_terms(text)

    first, second = description(a), description(b)
    both = sorted(
        claimed(first) & claimed(second), key=lambda term: (-index.lexical.idf(term), term)
    )
    scripts = script_tokens(first) & script_tokens(second)
    both += sorted(token for token in scripts if not unspaced(token[0]))
    runs = dict.fromkeys(_runs(first, {token for token in scripts if unspaced(token[0])}))
    both += sorted(runs, key=lambda run: (-len(run), run))
    return tuple(both[:SHARED_SHOWN])


def _runs(text: str, bigrams: set[str]) -> list[str]:
    """The stretches of `text` whose every two neighbouring characters are in `bigrams`."""
    runs: list[str] = []
    run = ""
    for at in range(len(text) - 1):
        pair = text[at : at + 2]
        if pair in bigrams:
            run = run + pair[1] if run else pair
        elif run:
            runs.append(run)
            run = ""
    return [*runs, run] if run else runs


def collision_map(
    index: Index,
    config: Config,
    cases: Sequence[Case] = (),
    *,
    sample: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> CollisionMap:
    """Route the cases and the sampled sentences; the pairs that compete, ranked."""
    prompts: list[tuple[str, str, tuple[str, ...], Case | None]] = []
    for given in cases:
        expected = tuple(name for name in given.expect if name in index.positions)
        if expected:
            prompts.append((given.prompt, "case", expected, given))
    sampled = 0
    if sample:
        for owner in index.skills:
            for sentence in sentences(owner.description):
                prompts.append((sentence, "sentence", (owner.id,), None))
                sampled += 1
    pairs: dict[tuple[str, str], Collision] = {}
    for number, (prompt, source, expected, case) in enumerate(prompts):
        if progress is not None:
            progress(number, len(prompts))
        decision = decide(
            prompt,
            index,
            config,
            context=case.context if case else (),
            cwd=(case.cwd or None) if case else None,
        )
        for skill, rival, kind in contests(decision, expected):
            a, b = sorted((skill, rival))
            collision = pairs.setdefault((a, b), Collision(a, b))
            where = case.where if case is not None else ""
            collision.contests.append(Contest(prompt, source, skill, rival, kind, where))
    if progress is not None:
        progress(len(prompts), len(prompts))
    for (a, b), collision in pairs.items():
        collision.shared = _shared(index, a, b)
    ranked = sorted(pairs.values(), key=lambda c: (-c.weight, -c.count("take"), c.a, c.b))
    return CollisionMap(tuple(ranked), len(prompts), len(prompts) - sampled, sampled)
