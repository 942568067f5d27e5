"""Real usage, read back: what the hook injected, what the model used, and what an edit changes.

Two questions a skill author cannot answer from labelled cases alone:

* **How did the router do in real sessions?** For each `recommend` event, the `use` events
  that follow it in the same session (before the next prompt) say what the model loaded.
  An injected skill the model then loaded was useful; one whose body the hook gave whole
  needed no loading; one it never loaded otherwise was ignored; a
  skill the model loaded on its own while we ranked it in the top three but stayed quiet
  is a near-miss, and one we never ranked at all is a skill we never surfaced.
* **What would an edit change?** Every logged prompt whose text was kept is decided again
  against the current descriptions and thresholds, and the prompts whose injection would
  differ are listed, before the author ships the edit.

The decision function is passed in, so this module needs no index or model of its own;
`explorer.engine.route.pipeline.decide` is what the CLI and the explorer pass.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from explorer.engine.host.telemetry import Event, EventKind
from explorer.engine.route.session import Session

if TYPE_CHECKING:
    from explorer.engine.base.config import Config
    from explorer.engine.index.snapshot import Index

NEAR_MISS_RANK = 3


@dataclass(frozen=True)
class Turn:
    """One prompt of one session: what was decided, and what the model then loaded."""

    recommend: Event
    loaded: tuple[str, ...]  # skills the model loaded after this prompt, in order

    @property
    def injected(self) -> tuple[str, ...]:
        return tuple(ranked.id for ranked in self.recommend.injected)

    def rank_of(self, skill_id: str) -> int | None:
        """1-based rank of the skill in the logged ranking, if it was there."""
        for rank, ranked in enumerate(self.recommend.considered, start=1):
            if ranked.id == skill_id:
                return rank
        return None


@dataclass
class SkillUsage:
    injected: int = 0
    loaded_after_injection: int = 0
    body_given: int = 0  # injected with its body, not loaded after: nothing left to load
    ignored: int = 0  # injected without its body, never loaded in that turn
    near_miss: int = 0  # loaded by the model while ranked <= 3 and not injected
    never_surfaced: int = 0  # loaded by the model and not in the logged ranking


@dataclass
class UsageReport:
    turns: int = 0
    turns_with_injection: int = 0
    uses_without_prompt: int = 0  # use events with no recommend before them in the session
    skills: dict[str, SkillUsage] = field(default_factory=lambda: defaultdict(SkillUsage))

    def totals(self) -> SkillUsage:
        total = SkillUsage()
        for usage in self.skills.values():
            total.injected += usage.injected
            total.loaded_after_injection += usage.loaded_after_injection
            total.body_given += usage.body_given
            total.ignored += usage.ignored
            total.near_miss += usage.near_miss
            total.never_surfaced += usage.never_surfaced
        return total


def turns_of(events: Sequence[Event]) -> tuple[list[Turn], int]:
    """Pair each recommend with the uses that follow it in its session; count orphan uses."""
    by_session: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_session[event.session].append(event)
    turns: list[Turn] = []
    orphans = 0
    for session_events in by_session.values():
        current: Event | None = None
        loaded: list[str] = []
        for event in sorted(session_events, key=lambda e: e.ts_ms):
            if event.kind is EventKind.RECOMMEND:
                if current is not None:
                    turns.append(Turn(current, tuple(loaded)))
                current, loaded = event, []
            elif event.kind is not EventKind.USE:
                continue  # a compaction: it starts no turn and loads nothing
            elif current is None:
                orphans += 1
            elif event.skill not in loaded:
                loaded.append(event.skill)
        if current is not None:
            turns.append(Turn(current, tuple(loaded)))
    turns.sort(key=lambda turn: turn.recommend.ts_ms)
    return turns, orphans


def usage_report(events: Sequence[Event]) -> UsageReport:
    turns, orphans = turns_of(events)
    report = UsageReport(turns=len(turns), uses_without_prompt=orphans)
    for turn in turns:
        injected = set(turn.injected)
        report.turns_with_injection += bool(injected)
        for skill_id in injected:
            usage = report.skills[skill_id]
            usage.injected += 1
            if skill_id in turn.loaded:
                usage.loaded_after_injection += 1
            elif skill_id in turn.recommend.bodies:
                usage.body_given += 1
            else:
                usage.ignored += 1
        for skill_id in turn.loaded:
            if skill_id in injected:
                continue
            rank = turn.rank_of(skill_id)
            if rank is not None and rank <= NEAR_MISS_RANK:
                report.skills[skill_id].near_miss += 1
            elif rank is None:
                report.skills[skill_id].never_surfaced += 1
    return report


@dataclass(frozen=True)
class ReplayChange:
    """A logged prompt whose injection the current library and thresholds would change."""

    prompt: str
    session: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    loaded: tuple[str, ...]  # what the model loaded after the prompt, at the time

    @property
    def gained(self) -> tuple[str, ...]:
        return tuple(skill for skill in self.after if skill not in self.before)

    @property
    def lost(self) -> tuple[str, ...]:
        return tuple(skill for skill in self.before if skill not in self.after)

    @property
    def verdict(self) -> str:
        """Better when the change moves toward what the model used; worse when away."""
        wanted = set(self.loaded)
        score = len(wanted & set(self.gained)) - len(wanted & set(self.lost))
        score -= len(set(self.gained) - wanted) if wanted else 0
        return "better" if score > 0 else "worse" if score < 0 else "changed"


@dataclass(frozen=True)
class Replay:
    replayed: int  # prompts with their text kept, decided again
    without_text: int  # prompts logged without their text (cannot be replayed)
    changes: tuple[ReplayChange, ...]

    def counts(self) -> Counter[str]:
        return Counter(change.verdict for change in self.changes)


def replay(events: Sequence[Event], inject: Callable[[str], Sequence[str]]) -> Replay:
    """Decide every logged prompt again with `inject` (prompt -> injected ids); list changes."""
    turns, _ = turns_of(events)
    changes: list[ReplayChange] = []
    replayed = without_text = 0
    for turn in turns:
        prompt = turn.recommend.prompt
        if not prompt:
            without_text += 1
            continue
        replayed += 1
        after = tuple(inject(prompt))
        if set(after) != set(turn.injected):
            changes.append(
                ReplayChange(prompt, turn.recommend.session, turn.injected, after, turn.loaded)
            )
    return Replay(replayed, without_text, tuple(changes))


# prompt, the session's recent prompts (oldest first), its ledger -> (skill id, confidence)
TurnDecider = Callable[[str, tuple[str, ...], Session], Sequence[tuple[str, float]]]


def replay_sessions(events: Sequence[Event], decide_turn: TurnDecider, depth: int = 3) -> Replay:
    """Decide every logged prompt again as the hook would have, session by session.

    The logged injection went through the session ledger (§10): a skill already sent or
    loaded was held back. Deciding each prompt alone would report every such turn as a
    change. So each session is walked in order with a ledger rebuilt from the replay
    itself: what the replay injects is marked recommended, what the model loaded (the
    logged `use` events) is marked loaded, a logged compaction re-arms it, and the last
    `depth` prompts are the context, as in the hook. A prompt logged without its text
    cannot be decided again; its logged injection and loads still enter the ledger.
    """
    by_session: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_session[event.session].append(event)
    changes: list[tuple[int, ReplayChange]] = []
    replayed = without_text = 0
    for session_id, session_events in by_session.items():
        ledger = Session()
        ordered = sorted(session_events, key=lambda e: e.ts_ms)
        for position, event in enumerate(ordered):
            if event.kind is EventKind.COMPACT:
                ledger.rearm()
                continue
            if event.kind is EventKind.USE:
                ledger.mark_loaded(event.skill)
                continue
            before = tuple(ranked.id for ranked in event.injected)
            if not event.prompt:
                without_text += 1
                for ranked in event.injected:
                    ledger.mark_recommended(ranked.id, ranked.value)
                continue
            replayed += 1
            context = tuple(ledger.recent_prompts[-depth:]) if depth > 0 else ()
            injected = tuple(decide_turn(event.prompt, context, ledger))
            after = tuple(skill_id for skill_id, _ in injected)
            ledger.push_prompt(event.prompt, depth)
            for skill_id, confidence in injected:
                ledger.mark_recommended(skill_id, confidence)
            if set(after) != set(before):
                loaded = _loaded_after(ordered, position)
                change = ReplayChange(event.prompt, session_id, before, after, loaded)
                changes.append((event.ts_ms, change))
    changes.sort(key=lambda item: item[0])
    return Replay(replayed, without_text, tuple(change for _, change in changes))


def _loaded_after(ordered: Sequence[Event], position: int) -> tuple[str, ...]:
    """The skills the model loaded after the recommend at `position`, before the next one."""
    loaded: list[str] = []
    for event in ordered[position + 1 :]:
        if event.kind is EventKind.RECOMMEND:
            break
        if event.kind is EventKind.USE and event.skill not in loaded:
            loaded.append(event.skill)
    return tuple(loaded)


def report_json(report: UsageReport) -> dict[str, object]:
    """The usage report as `history --json` prints it."""

    def counts(usage: SkillUsage) -> dict[str, int]:
        return {
            "injected": usage.injected,
            "loaded_after_injection": usage.loaded_after_injection,
            "body_given": usage.body_given,
            "ignored": usage.ignored,
            "near_miss": usage.near_miss,
            "never_surfaced": usage.never_surfaced,
        }

    return {
        "turns": report.turns,
        "turns_with_injection": report.turns_with_injection,
        "uses_without_prompt": report.uses_without_prompt,
        "skills": {skill: counts(report.skills[skill]) for skill in sorted(report.skills)},
        "totals": counts(report.totals()),
    }


def replay_json(result: Replay) -> dict[str, object]:
    """The replay as `history --json` prints it."""
    return {
        "replayed": result.replayed,
        "without_text": result.without_text,
        "counts": dict(sorted(result.counts().items())),
        "changes": [
            {
                "session": change.session,
                "prompt": change.prompt,
                "before": list(change.before),
                "after": list(change.after),
                "loaded": list(change.loaded),
                "verdict": change.verdict,
            }
            for change in result.changes
        ],
    }


def pipeline_decider(index: Index, config: Config) -> TurnDecider:
    """The hook's own decision over `index` and `config`, as replay_sessions calls it."""
    from explorer.engine.route.pipeline import decide

    def decide_turn(prompt: str, context: tuple[str, ...], ledger: Session) -> list[Any]:
        decision = decide(prompt, index, config, context=context, ledger=ledger)
        return [(injection.id, injection.confidence) for injection in decision.injected]

    return decide_turn
