"""What matched: the prompt's words, phrases and files that earned each skill a boost (§3.2-§3.5).

`decide()` records the hits as it computes the boost channels (no second pass, so what is
named here is exactly what was added); `Hits` keeps them sparse, by skill position, and a
Decision turns them into `Match` values only for the rows it is asked for. A match that a
§9 guard removed is kept with boost 0 and a note, so an author sees the hit and why it
earned nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from explorer.engine.base.text import tokenize


class MatchKind(StrEnum):
    """The channel a match fed; the string values are part of the decision JSON."""

    KEYWORD = "keyword"  # §3.2: a prompt token equal to one of the skill's keywords
    PHRASE = "phrase"  # §3.3: every token of a quoted trigger phrase is in the prompt
    FILE = "file"  # §3.4: a named file of the skill's document family
    PROJECT = "project"  # §3.5: the working directory's ecosystem


class KeywordSource(StrEnum):
    """Where a keyword came from: a token of the skill's name, or its keywords/aliases."""

    NAME = "name"
    KEYWORD = "keyword"


SHORT = {MatchKind.KEYWORD: "kw", MatchKind.PHRASE: "ph", MatchKind.FILE: "file"}


@dataclass(frozen=True, slots=True)
class Match:
    """One hit: the prompt's term, what in the skill it matched, and what it added."""

    kind: MatchKind
    term: str  # the prompt's token, the phrase's tokens, the file's name, the ecosystem term
    source: str  # keyword: name | keyword; phrase: the phrase's tokens; file: the family
    boost: float  # added to the hybrid score; 0 when a guard removed it
    note: str = ""  # why a guard removed it

    def label(self) -> str:
        """`kw: "kubernetes" (name)`, `ph: "pod keeps crashing"`, `file: report.pdf → pdf`."""
        if self.kind is MatchKind.KEYWORD:
            text = f'kw: "{self.term}" ({self.source})'
        elif self.kind is MatchKind.PHRASE:
            text = f'ph: "{self.term}"'
        elif self.kind is MatchKind.FILE:
            text = f"file: {self.term} → {self.source}"
        else:
            text = f"project: {self.term}"
        return text

    def added(self) -> str:
        """What it added: `+0.15`, or `+0 (cos < 0.6)` (keyword_min_cosine) when a §9 guard
        removed it."""
        return f"+{self.boost:.2f}" if not self.note else f"+0 ({self.note})"


@dataclass
class Hits:
    """The raw hits of one decide(), by skill position; cheap to collect, built on demand."""

    keyword_boost: float = 0.0
    phrase_boost: float = 0.0
    file_boost: float = 0.0
    project_boost: float = 0.0
    keywords: dict[str, np.ndarray] = field(default_factory=dict)  # token -> postings
    generic: dict[str, np.ndarray] = field(default_factory=dict)  # removed by the word guard
    floored: frozenset[int] = frozenset()  # keyword removed: cosine under keyword_min_cosine
    keyword_min_cosine: float = 0.0
    phrases: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    files: list[tuple[str, str, int]] = field(default_factory=list)  # (file, family, position)
    projects: dict[int, str] = field(default_factory=dict)  # position -> ecosystem term

    _by_skill: _HitsBySkill | None = field(default=None, init=False, repr=False, compare=False)

    def by_position(self, ids: tuple[str, ...]) -> dict[int, tuple[Match, ...]]:
        """Every skill with a hit, and its matches in channel order (keyword, phrase, file)."""
        return {
            position: self.at(position, ids[position]) for position in sorted(self._skills().hit)
        }

    def at(self, position: int, skill_id: str) -> tuple[Match, ...]:
        """The matches of the skill at `position`, in channel order (keyword, phrase, file,
        project). Made for the rows that are read: a common keyword hits hundreds of
        skills at 26,000, and making every one's matches (its name tokenised to tell a
        name hit from a keyword) cost the explorer milliseconds at every repaint."""
        skills = self._skills()
        if position not in skills.hit:
            return ()
        found: list[Match] = []
        name: set[str] | None = None

        def source(token: str) -> str:
            nonlocal name
            if name is None:
                name = set(tokenize(skill_id))
            return KeywordSource.NAME if token in name else KeywordSource.KEYWORD

        for token, holders in skills.keywords:
            if position in holders:
                floored = position in self.floored
                found.append(
                    Match(
                        MatchKind.KEYWORD,
                        token,
                        source(token),
                        0.0 if floored else self.keyword_boost,
                        f"cos < {self.keyword_min_cosine:.3g}" if floored else "",
                    )
                )
        for token, holders in skills.generic:
            if position in holders:
                found.append(Match(MatchKind.KEYWORD, token, source(token), 0.0, "generic word"))
        for phrase in skills.phrases.get(position, ()):
            found.append(Match(MatchKind.PHRASE, phrase, phrase, self.phrase_boost))
        for file_name, family in skills.files.get(position, ()):
            found.append(Match(MatchKind.FILE, file_name, family, self.file_boost))
        term = self.projects.get(position)
        if term is not None:
            found.append(Match(MatchKind.PROJECT, term, term, self.project_boost))
        return tuple(found)

    def _skills(self) -> _HitsBySkill:
        """The hits regrouped by skill, once per decision (sets of positions, no Match)."""
        if self._by_skill is None:
            keywords = [(t, frozenset(p.tolist())) for t, p in sorted(self.keywords.items())]
            generic = [(t, frozenset(p.tolist())) for t, p in sorted(self.generic.items())]
            phrases: dict[int, list[str]] = {}
            for position, tokens in sorted(self.phrases):  # the set order varies by run
                phrases.setdefault(position, []).append(" ".join(tokens))
            files: dict[int, list[tuple[str, str]]] = {}
            for file_name, family, position in self.files:
                files.setdefault(position, []).append((file_name, family))
            hit = frozenset().union(
                *(holders for _, holders in keywords + generic),
                phrases,
                files,
                self.projects,
            )
            self._by_skill = _HitsBySkill(keywords, generic, phrases, files, hit)
        return self._by_skill


@dataclass(frozen=True)
class _HitsBySkill:
    """`Hits` by skill: which positions each keyword holds, each skill's phrases and files."""

    keywords: list[tuple[str, frozenset[int]]]
    generic: list[tuple[str, frozenset[int]]]
    phrases: dict[int, list[str]]
    files: dict[int, list[tuple[str, str]]]
    hit: frozenset[int]  # every position with a match
