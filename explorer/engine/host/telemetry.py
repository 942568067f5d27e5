"""Opt-in local telemetry: what the hook decided, and what the model then loaded.

Off unless the user turns it on (`telemetry = true` in a config file, or
`SKILL_EXPLORER_TELEMETRY=1`). Events are appended, one JSON object a line, to
`telemetry.jsonl` under the state directory, on this machine only. The prompt's text is a
second opt-in (`telemetry_prompts = true` or `SKILL_EXPLORER_TELEMETRY_PROMPTS=1`): without
it an event keeps a short hash of the prompt, enough to join a `use` to its `recommend`
but not to read what was typed.

The event shapes are the reference router's (reference: src/telemetry.rs, kinds `recommend`
and `use`), so `skill-explorer history` reads a log written by either router. Writing is
best-effort: an I/O error is swallowed, because telemetry must never fail a prompt.
See docs/routing.md, §10.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from explorer.engine.route.query import prompt_read

TELEMETRY_FILE = "telemetry.jsonl"
ENABLE_VARIABLE = "SKILL_EXPLORER_TELEMETRY"
PROMPTS_VARIABLE = "SKILL_EXPLORER_TELEMETRY_PROMPTS"
REFERENCE_ENABLE_VARIABLE = "SKI_TELEMETRY"
_TRUTHY = frozenset({"1", "true", "yes", "on"})
CONSIDERED_TOP_K = 5  # how much of the ranking a recommend event keeps


class EventKind(StrEnum):
    RECOMMEND = "recommend"  # the hook's decision on a prompt, injected or not
    USE = "use"  # the model loaded a skill itself (PostToolUse: Read of SKILL.md, Skill)
    # Ours only (the reference does not log it): the session was compacted, so the ledger
    # was re-armed; replay needs it to re-arm its own ledger at the same point.
    COMPACT = "compact"


def switched_on(config_value: bool, variable: str, environ: dict[str, str] | None = None) -> bool:
    """A config flag or a truthy environment variable (either turns the feature on)."""
    value = (environ if environ is not None else os.environ).get(variable, "")
    return config_value or value.strip().lower() in _TRUTHY


def prompt_digest(prompt: str) -> str:
    """A short, stable stand-in for a prompt whose text the user did not opt to keep."""
    return hashlib.blake2b(prompt.strip().encode("utf-8", "replace"), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class Ranked:
    """A skill and a number: its stage score (considered) or its confidence (injected)."""

    id: str
    value: float


@dataclass(frozen=True)
class Event:
    """One line of the log, in either router's shape."""

    kind: EventKind
    session: str
    ts_ms: int
    prompt: str = ""  # empty when the text was not kept
    prompt_sha: str = ""
    stage: str = ""
    considered: tuple[Ranked, ...] = ()
    injected: tuple[Ranked, ...] = ()
    abstained: str = ""
    skill: str = ""  # a use event's skill
    via: str = ""  # "read" or "skill"
    # Ours only: why the hook answered with less than every channel (its time budget ran
    # out before the library's new descriptions were embedded: lexical channels alone).
    budget: str = ""
    # Ours only: the injected skills whose SKILL.md body the hook gave whole, which the
    # model then has no reason to read: not loading one is no sign it was ignored.
    bodies: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"ts": self.ts_ms, "kind": self.kind.value, "session": self.session}
        if self.prompt:
            data["prompt"] = self.prompt
        if self.prompt_sha:
            data["prompt_sha"] = self.prompt_sha
        if self.kind is EventKind.RECOMMEND:
            data["stage"] = self.stage
            data["considered"] = [{"id": r.id, "score": r.value} for r in self.considered]
            data["injected"] = [{"id": r.id, "confidence": r.value} for r in self.injected]
            if self.abstained:
                data["abstained"] = self.abstained
            if self.budget:
                data["budget"] = self.budget
            if self.bodies:
                data["bodies"] = list(self.bodies)
        elif self.kind is EventKind.USE:
            data["skill"] = self.skill
            data["via"] = self.via
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        kind = EventKind(data["kind"])

        def ranked(key: str, value_key: str) -> tuple[Ranked, ...]:
            return tuple(
                Ranked(str(item["id"]), float(item.get(value_key, 0.0)))
                for item in data.get(key) or []
                if isinstance(item, dict) and "id" in item
            )

        return cls(
            kind=kind,
            session=str(data.get("session", "")),
            ts_ms=int(data.get("ts", 0)),
            prompt=str(data.get("prompt", "")),
            prompt_sha=str(data.get("prompt_sha", "")),
            stage=str(data.get("stage", "")),
            considered=ranked("considered", "score"),
            injected=ranked("injected", "confidence"),
            abstained=str(data.get("abstained") or ""),
            skill=str(data.get("skill", "")),
            via=str(data.get("via", "")),
            budget=str(data.get("budget") or ""),
            bodies=tuple(str(item) for item in data.get("bodies") or [] if isinstance(item, str)),
        )


@dataclass(frozen=True)
class TelemetryLog:
    """The append-only log file; `keep_prompts` says whether prompt text may be written."""

    path: Path
    keep_prompts: bool = False

    def recommend(
        self,
        session: str,
        prompt: str,
        stage: str,
        considered: Sequence[Ranked],
        injected: Sequence[Ranked],
        abstained: str = "",
        budget: str = "",
        bodies: Sequence[str] = (),
    ) -> None:
        self._append(
            Event(
                EventKind.RECOMMEND,
                session,
                _now_ms(),
                # What the router read of it (routing.md §2.6): a replay decides the same,
                # and a pasted 7 MB log is not written whole at every turn.
                prompt=prompt_read(prompt) if self.keep_prompts else "",
                prompt_sha=prompt_digest(prompt),
                stage=stage,
                considered=tuple(considered[:CONSIDERED_TOP_K]),
                injected=tuple(injected),
                abstained=abstained,
                budget=budget,
                bodies=tuple(bodies),
            )
        )

    def use(self, session: str, skill: str, via: str, prompt: str = "") -> None:
        self._append(
            Event(
                EventKind.USE,
                session,
                _now_ms(),
                prompt=prompt if self.keep_prompts else "",
                prompt_sha=prompt_digest(prompt) if prompt else "",
                skill=skill,
                via=via,
            )
        )

    def compact(self, session: str) -> None:
        """The session was compacted and its ledger re-armed (SessionStart, source compact)."""
        self._append(Event(EventKind.COMPACT, session, _now_ms()))

    def _append(self, event: Event) -> None:
        line = (json.dumps(event.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One write of one line to a file opened O_APPEND: concurrent hooks interleave
            # whole lines, never parts of them.
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(descriptor, line)
            finally:
                os.close(descriptor)


@dataclass(frozen=True)
class ReadResult:
    events: tuple[Event, ...]
    skipped: tuple[str, ...]  # "file:line: reason" for each line that could not be read


def read_events(paths: Sequence[Path]) -> ReadResult:
    """Every event of every file (ours or the reference's), in time order; bad lines listed."""
    events: list[Event] = []
    skipped: list[str] = []
    for path in paths:
        for number, line in _lines(path):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not an object")
                events.append(Event.from_json(data))
            except (ValueError, KeyError, TypeError) as error:
                skipped.append(f"{path}:{number}: {type(error).__name__}: {error}")
    events.sort(key=lambda event: event.ts_ms)
    return ReadResult(tuple(events), tuple(skipped))


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as file:
        yield from enumerate(file, start=1)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
