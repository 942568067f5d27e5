"""Writing a new description into a SKILL.md, and nothing else (the explorer's what-if).

Only the lines of the `description:` value are replaced: every other byte of the file
(the other keys, comments, quoting, line endings, the body) stays as it was. The value is
written in the file's own style when it can be (a block scalar stays a block scalar with
its indentation; a quoted value keeps its quotes), otherwise in the first style that both
readers read alike: YAML (what Claude Code and lint read) and the reference's line reader
(what routing reads, routing.md §1.3). Every candidate is checked by parsing the whole new
file with the same `parse_skill` the live index uses; a file that would not parse, whose
YAML would break, or whose other keys or body would change is never offered for writing:
the edit carries the reason instead.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from explorer.engine.base.files import write_atomically
from explorer.engine.discovery.line_reader import FENCE, read_frontmatter, trim
from explorer.engine.discovery.skills import (
    YAML_VALUE_ERRORS,
    Problem,
    Skill,
    parse_skill,
    read_skill_bytes,
    yaml_value_reason,
)

WRAP_WIDTH = 80  # a folded (>) value is wrapped here: folding makes the breaks invisible
_KEY = "description:"


@dataclass(frozen=True)
class Edit:
    """A SKILL.md with a new description: the text to write and its parse, or why not."""

    path: str
    original: str  # the file as read when the edit began
    description: str  # what the author typed
    text: str | None  # the new file; None when it must not be written
    skill: Skill | None  # `text` parsed exactly as the live index will parse it
    problem: str | None  # why there is no text (shown to the author; nothing is written)
    # The problem is the file's, not the new description's: the file must be fixed first.
    file_broken: bool = False

    @property
    def ok(self) -> bool:
        return self.text is not None and self.skill is not None


@dataclass(frozen=True)
class _Span:
    """Where the description's value sits: lines [start, stop) of the file."""

    start: int
    stop: int
    head: str  # what follows `description:` on its line, trimmed
    indent: str  # a block's content indentation
    newline: str  # the line ending the file uses there


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else ""


def _find_span(lines: list[str]) -> _Span | str:
    """The last column-0 `description:` of the frontmatter (the one both readers keep)."""
    if not lines or trim(lines[0].removeprefix("\ufeff")) != FENCE:
        return "no frontmatter: line 1 must be '---'"
    end = next((i for i in range(1, len(lines)) if trim(lines[i]) == FENCE), len(lines))
    starts = [i for i in range(1, end) if lines[i].startswith(_KEY)]
    if not starts:
        return "no 'description:' line at column 0 in the frontmatter"
    start = starts[-1]
    head = trim(lines[start][len(_KEY) :])
    block = bool(head) and head[0] in "|>"
    stop = start + 1
    last = start + 1  # one past the last line that belongs to the value
    while stop < end:
        line = lines[stop]
        stripped = trim(line)
        if stripped and not line.startswith((" ", "\t")):
            break  # the next key (or a comment at column 0)
        if not stripped and not block:
            break  # a blank line ends a plain value
        stop += 1
        if stripped:
            last = stop
    indent = "  "
    for line in lines[start + 1 : last]:
        if trim(line):
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            break
    newline = _ending(lines[start]) or (_ending(lines[0]) or "\n")
    return _Span(start, last, head, indent, newline)


def _block_lines(text: str, indent: str, *, wrap: bool) -> list[str]:
    """A block scalar's content lines: the author's lines, trimmed, wrapped when folded."""
    out: list[str] = []
    for line in text.strip().split("\n"):
        line = line.strip()
        if not line:
            out.append("")
            continue
        if wrap and len(indent) + len(line) > WRAP_WIDTH:
            pieces = textwrap.wrap(
                line,
                WRAP_WIDTH - len(indent),
                break_long_words=False,
                break_on_hyphens=False,
            )
            out.extend(_no_fence(pieces))
        else:
            out.append(line)
    return [indent + line if line else "" for line in out]


def _no_fence(pieces: list[str]) -> list[str]:
    """A wrapped line that is `---` alone would end the frontmatter for the line reader."""
    merged: list[str] = []
    for piece in pieces:
        if trim(piece) == FENCE and merged:
            merged[-1] += " " + piece
        else:
            merged.append(piece)
    return merged


def _candidates(span: _Span, description: str) -> list[list[str]]:
    """Ways to write the value, the file's own style first."""
    one_line = " ".join(description.split())
    plain = [f"{_KEY} {one_line}"]
    single = [f"{_KEY} '{one_line}'"] if "'" not in one_line else []
    double = [f'{_KEY} "{one_line}"'] if '"' not in one_line and "\\" not in one_line else []
    folded = [f"{_KEY} >-", *_block_lines(description, "  ", wrap=True)]
    head = span.head
    if head[:1] in ("|", ">"):
        own = [f"{_KEY} {head}", *_block_lines(description, span.indent, wrap=head[0] == ">")]
        ordered = [own, folded, plain, single, double]
    elif head[:1] == "'":
        ordered = [single, double, folded]
    elif head[:1] == '"':
        ordered = [double, single, folded]
    else:
        ordered = [plain, single, double, folded]
    return [candidate for candidate in ordered if candidate]


def _yaml_mapping(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The frontmatter as YAML reads it, or YAML's complaint (with the file's line)."""
    import yaml

    reading = read_frontmatter(text.removeprefix("\ufeff"))
    if reading is None:
        return None, "no frontmatter"
    parts = text.removeprefix("\ufeff").split("\n")
    stop = reading.end if reading.end is not None else len(parts)
    try:
        loaded = yaml.load(
            "\n".join(parts[1:stop]), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except YAML_VALUE_ERRORS as error:
        return None, yaml_value_reason(error)
    except (yaml.YAMLError, RecursionError) as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        return None, f"{where}{reason}"
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return None, "the frontmatter is not a mapping of keys to values"
    return loaded, None


def _collapse(text: str) -> str:
    return " ".join(text.split())


def edit_description(path: str, original: str, description: str) -> Edit:
    """`original` (a SKILL.md's text) with its description replaced by `description`.

    The result's `skill` is what the live index will read once the text is saved; `problem`
    says why the edit cannot be saved (an empty description, YAML that was already broken,
    no `description:` line), and then `text` is None.
    """

    def refused(reason: str, file_broken: bool = False) -> Edit:
        return Edit(path, original, description, None, None, reason, file_broken)

    if not description.strip():
        return refused("the description is empty: a skill without one is rejected")
    old_yaml, complaint = _yaml_mapping(original)
    if old_yaml is None:
        return refused(
            f"the frontmatter is not valid YAML before this edit ({complaint}); fix the file first",
            file_broken=True,
        )
    lines = _lines(original)
    span = _find_span(lines)
    if isinstance(span, str):
        return refused(span)
    old = parse_skill(path, original.encode("utf-8"))
    wanted = _collapse(description)
    last_reason = "no way of writing it keeps the rest of the frontmatter as it was"
    for candidate in _candidates(span, description):
        value = "".join(line + span.newline for line in candidate)
        text = "".join(lines[: span.start]) + value + "".join(lines[span.stop :])
        new_yaml, complaint = _yaml_mapping(text)
        if new_yaml is None:
            last_reason = f"the edit would break the YAML ({complaint})"
            continue
        read_back = new_yaml.get("description")
        if not isinstance(read_back, str) or _collapse(read_back) != wanted:
            last_reason = "YAML would read a different description"
            continue
        if {k: v for k, v in new_yaml.items() if k != "description"} != {
            k: v for k, v in old_yaml.items() if k != "description"
        }:
            last_reason = "the edit would change another frontmatter key"
            continue
        parsed = parse_skill(path, text.encode("utf-8"))
        if isinstance(parsed, Problem):
            return refused(parsed.message)
        if _collapse(parsed.description) != wanted:
            last_reason = "the reference router would read a different description"
            continue
        if isinstance(old, Skill) and (parsed.name, parsed.keywords, parsed.body) != (
            old.name,
            old.keywords,
            old.body,
        ):
            last_reason = "the edit would change the name, keywords or body"
            continue
        return Edit(path, original, description, text, parsed, None)
    return refused(last_reason)


class SaveError(Exception):
    """The edit was not written: the reason names the file."""


def read_skill_text(path: str) -> str:
    """A SKILL.md's text as the what-if editor starts from (raises SaveError on failure)."""
    data = read_skill_bytes(path)
    if isinstance(data, Problem):
        raise SaveError(str(data))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SaveError(f"{path}: not UTF-8 (byte {error.start}); edit it in $EDITOR") from error


def changed_on_disk(edit: Edit) -> str | None:
    """Why the edit must not be written because its file is no longer the one it began
    from (another editor, a `git checkout`, a fix made outside), or None. Said before any
    problem of the edit's own: that problem was found in the old file."""
    try:
        current = read_skill_text(edit.path)
    except SaveError as error:
        return str(error)
    if current == edit.original:
        return None
    return (
        f"{edit.path}: changed on disk since the editor opened; nothing written "
        "(close the editor and open it again to start from the new file)"
    )


def save(edit: Edit) -> None:
    """Write the edit, atomically, if the file on disk is still the one the edit began from.

    A file changed meanwhile is never overwritten (`changed_on_disk`)."""
    changed = changed_on_disk(edit)
    if changed is not None:
        raise SaveError(changed)
    if edit.text is None:
        raise SaveError(f"{edit.path}: not written: {edit.problem}")
    try:
        write_atomically(edit.path, edit.text)
    except OSError as error:
        raise SaveError(f"{edit.path}: cannot write: {error.strerror or error}") from error
