"""Two decisions side by side as a ranking diff (Quepid / Splainer style).

`ranking_diff(base, current)` pairs every skill of two decisions (a pinned prompt and the
prompt being typed; or the same prompt on the previous and the current snapshot) and says,
for each: how its place moved (↑3, ↓1, new, gone), how each channel's score moved (cosine,
BM25, the boosts, the hybrid score, the reranker's logit when both were reranked) and
whether its verdict changed. It reads the two Decisions only: nothing is scored again.

A place is the row's place in the explorer's table: injected skills first, then the
relevance model's other candidates by p when it decided, then by hybrid score
(Decision.rows). With `depth`, only the top `depth` places of each side count:
a skill that enters them is `new`, one that leaves them is `gone` (as a search-results
diff shows a document that entered or left the first page); without it, `new` and `gone`
mean added to or removed from the library.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from explorer.engine.qa.flips import Shift, shift
from explorer.engine.route.decision import Decision, Row, Verdict


class Move(StrEnum):
    """How a skill's place changed."""

    UP = "up"
    DOWN = "down"
    SAME = "same"
    NEW = "new"  # in the current top (or library), not in the base's
    GONE = "gone"  # in the base's top (or library), not in the current one


@dataclass(frozen=True)
class Channel:
    """One score on both sides; `delta` is current - base (None when a side lacks it)."""

    base: float | None
    current: float | None

    @property
    def delta(self) -> float | None:
        if self.base is None or self.current is None:
            return None
        return self.current - self.base


@dataclass(frozen=True)
class Entry:
    """One skill in the diff."""

    skill_id: str
    base_rank: int | None  # place in the base decision (None: not in its library)
    rank: int | None  # place in the current decision (a `gone` skill may still have one)
    move: Move
    cosine: Channel
    bm25: Channel
    boosts: Channel  # keyword + phrase + file + project
    hybrid: Channel
    rerank: Channel  # logits; a side is None when that decision did not rerank the skill
    base_verdict: Verdict | None
    verdict: Verdict | None
    # §9.12: the relevance model's p; a side is None when the skill was not its candidate
    # there. What decides under the learned preset: a p that moved moves no other column.
    p: Channel = Channel(None, None)
    # A changed verdict's cause: the gate and its number before -> after (engine/qa/flips.py).
    shift: Shift | None = None

    @property
    def places(self) -> int:
        """Places moved up (negative: down); 0 for new, gone and unmoved."""
        if self.base_rank is None or self.rank is None:
            return 0
        return self.base_rank - self.rank

    @property
    def move_text(self) -> str:
        if self.move is Move.UP:
            return f"↑{self.places}"
        if self.move is Move.DOWN:
            return f"↓{-self.places}"
        if self.move is Move.SAME:
            return "="
        return str(self.move)

    @property
    def verdict_changed(self) -> bool:
        return self.base_verdict != self.verdict


@dataclass(frozen=True)
class RankingDiff:
    """Every compared skill: the current ranking's order first, then the ones that left it."""

    base_prompt: str
    prompt: str
    base_stage: str
    stage: str
    base_injected: tuple[str, ...]
    injected: tuple[str, ...]
    entries: tuple[Entry, ...]
    depth: int | None

    @property
    def moved(self) -> tuple[Entry, ...]:
        return tuple(entry for entry in self.entries if entry.move is not Move.SAME)

    @property
    def same_injection(self) -> bool:
        return set(self.base_injected) == set(self.injected)


def _boosts(row: Row) -> float:
    return row.keyword + row.phrase + row.file + row.project


def _channel(base: Row | None, current: Row | None, field: str) -> Channel:
    def value(row: Row | None) -> float | None:
        if row is None:
            return None
        if field == "boosts":
            return _boosts(row)
        found: float | None = getattr(row, field)
        return found

    return Channel(value(base), value(current))


def ranking_diff(base: Decision, current: Decision, *, depth: int | None = None) -> RankingDiff:
    """Pair the skills of `base` and `current` (see the module's docstring).

    Rows are lazy: with a depth, only the rows of the two tops are made, whatever the
    library's size."""

    def place(decision: Decision, skill_id: str) -> int | None:
        found = decision.rows.index_of(skill_id)
        return None if found is None else found + 1

    def row(decision: Decision, skill_id: str) -> Row | None:
        return None if decision.rows.index_of(skill_id) is None else decision.rows.by_id(skill_id)

    def top(decision: Decision, limit: int) -> list[str]:
        ids = decision.channels.ids
        return [ids[int(index)] for index in decision.rows.order[:limit]]

    def within(place: int | None) -> int | None:
        if place is None or (depth is not None and place > depth):
            return None
        return place

    limit = depth if depth is not None else max(len(base.rows), len(current.rows))
    top_now = top(current, limit)
    ordered = list(top_now)
    shown = set(top_now)
    ordered += [
        skill_id
        for skill_id in top(base, limit)
        if skill_id not in shown and within(place(current, skill_id)) is None
    ]
    entries = []
    for skill_id in ordered:
        base_place, now_place = place(base, skill_id), place(current, skill_id)
        base_rank, rank = within(base_place), within(now_place)
        if base_rank is None:
            move = Move.NEW
        elif rank is None:
            move = Move.GONE
        elif rank < base_rank:
            move = Move.UP
        elif rank > base_rank:
            move = Move.DOWN
        else:
            move = Move.SAME
        old, new = row(base, skill_id), row(current, skill_id)
        changed = old is not None and new is not None and old.verdict != new.verdict
        entries.append(
            Entry(
                skill_id=skill_id,
                base_rank=base_place,
                rank=now_place,
                move=move,
                cosine=_channel(old, new, "cosine"),
                bm25=_channel(old, new, "bm25"),
                boosts=_channel(old, new, "boosts"),
                hybrid=_channel(old, new, "score"),
                rerank=_channel(old, new, "rerank"),
                p=_channel(old, new, "relevance"),
                base_verdict=old.verdict if old is not None else None,
                verdict=new.verdict if new is not None else None,
                shift=shift(skill_id, base, current) if changed else None,
            )
        )
    return RankingDiff(
        base_prompt=base.prompt,
        prompt=current.prompt,
        base_stage=str(base.stage),
        stage=str(current.stage),
        base_injected=base.injected_ids,
        injected=current.injected_ids,
        entries=tuple(entries),
        depth=depth,
    )
