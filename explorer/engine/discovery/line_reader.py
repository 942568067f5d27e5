"""The reference router's lenient frontmatter reading (spec §1.3-§1.4), which routing follows.

The reference (skill-inject 0.9.0, src/skill.rs) does not run a YAML parser. It reads
lines: `name:`, `description:`, `keywords:` and `aliases:` at column 0, block scalars and
indented continuations folded into one line, `[a, b]` or `- item` lists. The frontmatter
ends at the first line that is `---` once trimmed (indented or not), or at the end of the
file when no such line comes. YAML reads some files differently (`description: yes` is a
boolean to YAML, a `# comment` is dropped by YAML and kept here). Routing follows this
reading, so the explorer decides what the reference decides; `skills.py` compares it with
YAML's and reports every difference as a warning that lint turns into a finding.

Written from the behaviour only; the reference's code is AGPL and is not copied.
"""

from __future__ import annotations

from dataclasses import dataclass

# Rust's `char::is_whitespace` (Unicode White_Space). Python's str.strip() also strips
# \x1c-\x1f, which Rust keeps: spelling the set out keeps the two readers identical.
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
FENCE = "---"
HEAD_DECORATION = "#-*> "  # stripped from the start of each body_head line (§1.4)


def trim(text: str) -> str:
    return text.strip(WHITESPACE)


def lines_of(text: str) -> list[str]:
    """Rust's `str::lines`: split on \\n, drop one \\r before it, no empty last line."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return [part[:-1] if part.endswith("\r") else part for part in parts]


def ascii_lower(text: str) -> str:
    """Only A-Z are lowered, like Rust's `to_ascii_lowercase`."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class LineReading:
    """What the reference reads from one SKILL.md's frontmatter, and where it ends."""

    name: str
    description: str
    keywords: tuple[str, ...]  # keywords + aliases as written (lower-cased), repeats kept
    end: int | None  # index of the closing fence line; None: never closed (reads to the end)
    opening_indented: bool  # line 1 is `---` only once trimmed
    closing_indented: bool  # the closing fence is `---` only once trimmed


def read_frontmatter(text: str) -> LineReading | None:
    """The reference's reading of a BOM-stripped SKILL.md; None when line 1 is not `---`."""
    lines = lines_of(text.removeprefix("\ufeff"))
    if not lines or trim(lines[0]) != FENCE:
        return None
    name, description = "", ""
    keywords: list[str] = []
    position = 1
    end: int | None = None
    while position < len(lines):
        line = lines[position].rstrip(WHITESPACE)
        position += 1
        if trim(line) == FENCE:
            end = position - 1
            break
        if line.startswith("name:"):
            name, position = _scalar(line[5:], lines, position)
        elif line.startswith("description:"):
            description, position = _scalar(line[12:], lines, position)
        elif line.startswith("keywords:"):
            # A later `keywords:` replaces what came before, aliases included.
            found, position = _list(line[9:], lines, position)
            keywords = found
        elif line.startswith("aliases:"):
            found, position = _list(line[8:], lines, position)
            keywords.extend(found)
    return LineReading(
        name=name,
        description=description,
        keywords=tuple(keywords),
        end=end,
        opening_indented=lines[0] != FENCE,
        closing_indented=end is not None and lines[end].rstrip(WHITESPACE) != FENCE,
    )


def _block_header(head: str) -> bool:
    """`|` or `>`, then only chomping (+/-) and indentation digits."""
    return (
        bool(head)
        and head[0] in "|>"
        and all(char in "+-" or char in "0123456789" for char in head[1:])
    )


def _indented(line: str) -> bool:
    return line.startswith((" ", "\t"))


def _scalar(first: str, lines: list[str], position: int) -> tuple[str, int]:
    """One value, its block or its indented continuation lines folded with single spaces."""
    head = trim(first)
    block = _block_header(head)
    parts = [] if block or not head else [unquote(head)]
    while position < len(lines):
        following = lines[position]
        trimmed = trim(following)
        if trimmed == FENCE or (not _indented(following) and trimmed):
            break  # the closing fence, or the next top-level key
        if not trimmed and not block:
            break  # a blank line ends a plain scalar
        position += 1
        if trimmed:
            parts.append(trimmed)
    return " ".join(parts), position


def _list(first: str, lines: list[str], position: int) -> tuple[list[str], int]:
    """`[a, b]` (or `a, b`) on the key's line, else indented `- item` lines, lower-cased."""
    head = trim(first)
    if head:
        return parse_inline_list(head), position
    items: list[str] = []
    while position < len(lines):
        following = lines[position]
        trimmed = trim(following)
        if not _indented(following) or not trimmed.startswith("-"):
            break
        position += 1
        item = ascii_lower(unquote(trim(trimmed[1:])))
        if item:
            items.append(item)
    return items, position


def parse_inline_list(text: str) -> list[str]:
    stripped = text.lstrip("[").rstrip("]")
    items = (ascii_lower(unquote(trim(part))) for part in stripped.split(","))
    return [item for item in items if item]


def unquote(text: str) -> str:
    """Drop one pair of matching outer quotes (straight, single or double)."""
    text = trim(text)
    if len(text.encode("utf-8")) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def is_placeholder(description: str) -> bool:
    """§1.3: the unfilled template description ("Replace with ...")."""
    return ascii_lower(description.lstrip(WHITESPACE)).startswith("replace with")


def body_head(text: str, max_lines: int = 8, max_chars: int = 600) -> str:
    """§1.4 as the reference reads it: after the frontmatter, the first `max_lines` lines
    that are not empty once trimmed and stripped of leading `#`, `-`, `*`, `>` and spaces,
    joined by spaces and cut to `max_chars` characters."""
    lines = lines_of(text.removeprefix("\ufeff"))
    position = 1 if lines else 0  # line 1 is consumed whether or not it is a fence
    if lines and trim(lines[0]) == FENCE:
        while position < len(lines):
            position += 1
            if trim(lines[position - 1]) == FENCE:
                break
    head: list[str] = []
    for line in lines[position:]:
        cleaned = trim(trim(line).lstrip(HEAD_DECORATION))
        if not cleaned:
            continue
        head.append(cleaned)
        if len(head) >= max_lines:
            break
    return " ".join(head)[:max_chars]
