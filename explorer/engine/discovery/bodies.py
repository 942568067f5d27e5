"""Skill bodies kept on disk: a long-lived index holds every field but the body.

Only descriptions route (§3, §5); a body is needed when a skill is injected in body mode
(§5.7), reranked (its head, `body_head`, stays in memory) or shown in the explorer's
skill panel. At 26,000 skills the bodies are most of a library's text, so the live
index (`watch`, the explorer) and the persisted store read a body from its file when it
is asked for, and check it against the content hash the skill was parsed from.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from explorer.engine.discovery.line_reader import read_frontmatter
from explorer.engine.discovery.skills import (
    Problem,
    Skill,
    content_hash,
    parse_skill,
    read_skill_bytes,
)


def read_body(path: str, digest: str) -> str:
    """The body of the file `digest` was taken from; the newest one if it changed since
    ("" when the file is gone or no longer parses)."""
    data = read_skill_bytes(path)
    if isinstance(data, Problem):
        return ""
    if content_hash(data) == digest:
        # The same split as skills.parse_skill, without YAML: only the body is wanted.
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
        reading = read_frontmatter(text)
        if reading is None or reading.end is None:
            return ""
        return "\n".join(text.split("\n")[reading.end + 1 :]).strip()
    reparsed = parse_skill(path, data)
    return reparsed.body if isinstance(reparsed, Skill) else ""


class BodyOnDisk(Skill):
    """A Skill whose `body` is read from its file on each use, never held.

    Equal to the Skill it was made from (dataclass equality compares the fields, body
    included, and `body` reads the same text back while the file is unchanged).
    """

    @property
    def body(self) -> str:
        return read_body(self.path, self.hash)

    @body.setter
    def body(self, value: str) -> None:  # the dataclass __init__ sets it: dropped
        pass

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Skill):
            return NotImplemented
        return _fields(self) == _fields(other)

    __hash__ = Skill.__hash__


def _fields(skill: Skill) -> tuple[Any, ...]:
    return tuple(getattr(skill, f.name) for f in dataclasses.fields(Skill) if f.compare)


def _rebuilt(skill: Skill, kind: type[Skill], body: str) -> Skill:
    values = {f.name: getattr(skill, f.name) for f in dataclasses.fields(Skill) if f.init}
    values["body"] = body
    return kind(**values)


def body_on_disk(skill: Skill) -> Skill:
    """`skill` without its body in memory."""
    if isinstance(skill, BodyOnDisk):
        return skill
    return _rebuilt(skill, BodyOnDisk, "")
