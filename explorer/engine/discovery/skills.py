"""Skill discovery and parsing (spec §1): every file gets a Skill or a reason.

A broken file never stops discovery. Invalid YAML is recorded with its line, and a
lenient line reader still recovers `name` and `description`, so the skill keeps routing
and carries a visible warning.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from explorer.engine.base.text import match_tokens, shared_prefix, tokenize, trigger_phrases
from explorer.engine.discovery.line_reader import LineReading, is_placeholder, read_frontmatter
from explorer.engine.discovery.line_reader import body_head as reference_body_head

SKILL_FILE = "SKILL.md"
MAX_DEPTH = 12  # §1.2: directories deeper than this are not entered
SKIPPED_DIRS = frozenset(
    {".git", "target", "node_modules", "tests", "fixtures", "examples", "template", "templates"}
)
BODY_HEAD_LINES = 8
BODY_HEAD_CHARS = 600
# The spec caps a description at 1,024 characters and advises a body under 500 lines: a
# megabyte is generous, and a cap keeps a link to /dev/zero or a huge file from eating memory.
MAX_SKILL_BYTES = 1 << 20
PARSE_CHUNK = 1024  # skills whose cached parse records are held at once during a walk
# Frontmatter is copied into the parse cache and shown by lint and the explorer. An alias
# bomb expands to billions of nodes and a 10,000-deep list overflows the stack, so only
# this much of it is kept; name and description are read before the cut.
FRONTMATTER_BUDGET = 10_000  # values, plus one per 64 characters of text (see bounded)
FRONTMATTER_MAX_DEPTH = 16
# Flow collections ("[[[...]]]") deeper than this are not handed to YAML at all: no real
# frontmatter comes near it, and each YAML library stops at a depth and wording of its own
# (PyYAML 6.0.4 refuses at 1,000 levels, older releases recurse), so the product says why.
FLOW_NESTING_LIMIT = 256


@dataclass(frozen=True)
class Problem:
    """A reason a file was rejected, or a warning on a skill that still routes."""

    path: str
    message: str
    line: int | None = None
    rule: str = ""  # a lint rule id when the problem has its own (e.g. parse/reading-differs)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Skill:
    """One routable skill and every field the cascade derives from it (§1.4)."""

    id: str
    name: str
    description: str
    path: str
    keywords: tuple[str, ...]
    trigger_phrases: tuple[str, ...]
    body_head: str
    body: str
    description_tokens: tuple[str, ...]  # §2.5 match tokens: what BM25 indexes
    hash: str
    frontmatter: dict[str, Any] = field(default_factory=dict, compare=False)
    warnings: tuple[Problem, ...] = ()

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


SKILL_FIELDS = tuple(item.name for item in dataclasses.fields(Skill))


@dataclass(frozen=True)
class Discovery:
    """The outcome of reading the roots: skills in path order, and what was rejected."""

    skills: tuple[Skill, ...]
    rejected: tuple[Problem, ...]
    linked_dirs: tuple[str, ...] = ()  # real paths of directories reached through symlinks


def path_order(path: str) -> list[str]:
    """Sort key: paths compared component by component, as the reference sorts them
    (Rust's PathBuf order), so `a/b/SKILL.md` comes before `a-b/SKILL.md` and the same
    duplicate wins (§1.2)."""
    return path.split(os.sep)


def content_hash(data: bytes) -> str:
    """A stable 64-bit content hash (§1.4 names FNV-1a 64; any stable 64-bit hash serves)."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def find_skill_files(
    roots: Sequence[str | os.PathLike[str]],
    linked: list[str] | None = None,
    visited: list[tuple[str, os.stat_result]] | None = None,
) -> tuple[list[str], list[Problem]]:
    """§1.2: sorted SKILL.md paths under the roots, following symlinks without looping.

    `linked` collects the real paths of directories entered through a symlink: a watcher
    must watch those too, since events inside them do not surface under the root.
    `visited` collects every directory listed, with its stat taken before the listing:
    the persisted index (store.py) re-validates a walk by those stats alone.
    """
    found: list[str] = []
    problems: list[Problem] = []
    # A link to a directory that holds any root would walk the library again (§1.2).
    held = tuple(os.path.realpath(os.path.abspath(os.fspath(root))) for root in roots)
    for root in roots:
        root_path = os.path.abspath(os.fspath(root))
        if os.path.isfile(root_path) and os.path.basename(root_path) == SKILL_FILE:
            found.append(root_path)
            continue
        if not os.path.isdir(root_path):
            problems.append(Problem(root_path, _not_a_root(root_path)))
            continue
        found.extend(_walk_root(root_path, problems, linked, visited, held))
    return sorted(dict.fromkeys(found), key=path_order), problems


def _not_a_root(path: str) -> str:
    """Why a root cannot be walked, in the words that fix it."""
    if os.path.isfile(path):
        return f"skills root is a file, not a directory (nor a {SKILL_FILE})"
    return "skills root does not exist or is not a directory"


def _walk_root(
    root: str,
    problems: list[Problem],
    linked: list[str] | None,
    visited: list[tuple[str, os.stat_result]] | None = None,
    held: tuple[str, ...] = (),
) -> Iterable[str]:
    seen_dirs: set[tuple[int, int]] = set()
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            info = os.stat(directory)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen_dirs:
            continue  # a symlink loop, or the same directory reached twice
        seen_dirs.add((info.st_dev, info.st_ino))
        if visited is not None:
            visited.append((directory, info))
        try:
            # Reverse-sorted onto the stack, so directories are entered in path order and
            # the first of two links to one directory is the one kept (§1.2).
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name, reverse=True)
        except OSError as error:
            problems.append(Problem(directory, f"cannot list directory: {error.strerror}"))
            continue
        real: str | None = None  # the directory's real path, once a link in it needs it
        for entry in entries:
            if entry.name == SKILL_FILE:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False  # a symlink loop: load_skill says so, with the path
                if is_dir:
                    problems.append(Problem(entry.path, "SKILL.md is a directory, not a file"))
                else:
                    yield entry.path
            elif entry.name not in SKIPPED_DIRS and depth + 1 < MAX_DEPTH:
                try:
                    if not entry.is_dir():
                        continue
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        real = real or os.path.realpath(directory)
                        if any(_holds(target, place) for place in (real, *held)):
                            problems.append(Problem(entry.path, _ancestor_link(target)))
                            continue
                        if linked is not None:
                            linked.append(target)
                    stack.append((entry.path, depth + 1))
                except OSError:
                    continue


def _holds(ancestor: str, path: str) -> bool:
    return path == ancestor or path.startswith(ancestor.rstrip(os.sep) + os.sep)


def _ancestor_link(target: str) -> str:
    """§1.2: a link to a directory that holds the link or a root (`/`, `..`, the home
    folder) would walk the library again and everything beside it: at `/`, every skill
    on the machine and minutes of walking, in a hook with a budget of seconds."""
    return (
        f"a link to {target}, a directory that holds it or the library: not followed (it "
        "would walk the library again and everything beside it)"
    )


class SkillMemo(Protocol):
    """Skills parsed before, by path and content hash: an unchanged file is never re-parsed;
    by path and `file_stamp`, never even read."""

    def prepare(self, paths: Sequence[str]) -> None: ...

    def recall_unchanged(self, path: str, stamp: str) -> Skill | None: ...

    def recall(self, path: str, digest: str, stamp: str | None) -> Skill | None: ...

    def remember(self, skill: Skill, stamp: str | None) -> None: ...


RACY_NS = 1_000_000_000  # a file this fresh is re-read even when its stat looks unchanged


def file_stamp(path: str) -> str | None:
    """What tells that a file did not change without reading it: its size, modification and
    change times and inode. None when it cannot be had, or for a file changed within the
    last RACY_NS: a write in the same tick of the file system's clock could leave all four
    as they were, so such a file is read again next time."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SKILL_BYTES:
        return None
    if max(info.st_mtime_ns, info.st_ctime_ns) > time.time_ns() - RACY_NS:
        return None
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


@dataclass(frozen=True)
class Scan:
    """Every SKILL.md under the roots with its own load result, before de-duplication.

    The live index keeps this per path, so a duplicate that becomes the winner when the
    first copy is deleted is already parsed and at hand.
    """

    results: dict[str, Skill | Problem]
    problems: tuple[Problem, ...]  # about roots and directories, not about one file
    linked_dirs: tuple[str, ...]


def scan(
    roots: Sequence[str | os.PathLike[str]],
    memo: SkillMemo | None = None,
    keep: Callable[[Skill], Skill] | None = None,
) -> Scan:
    """Every SKILL.md under the roots, loaded (`load_skills`)."""
    linked: list[str] = []
    paths, problems = find_skill_files(roots, linked)
    results = load_skills(paths, memo, keep)
    return Scan(results, tuple(problems), tuple(dict.fromkeys(linked)))


def load_skills(
    paths: Sequence[str],
    memo: SkillMemo | None = None,
    keep: Callable[[Skill], Skill] | None = None,
) -> dict[str, Skill | Problem]:
    """Each path's load result; `keep(skill)` is what is kept of each skill
    (bodies.body_on_disk: all but the body).

    In chunks of `PARSE_CHUNK` files, each skill kept as soon as it is read: at 26,000
    skills, holding every cached record and every body at once is a peak of some 300 MB,
    and what is kept would lie scattered among the freed records, in pages the allocator
    cannot give back."""
    results: dict[str, Skill | Problem] = {}
    for start in range(0, len(paths), PARSE_CHUNK):
        chunk = paths[start : start + PARSE_CHUNK]
        if memo is not None:
            memo.prepare(chunk)
        for path in chunk:
            result = load_skill(path, memo)
            results[path] = keep(result) if keep and isinstance(result, Skill) else result
    return results


def assemble(
    results: dict[str, Skill | Problem],
    problems: Sequence[Problem] = (),
    linked_dirs: Sequence[str] = (),
    *,
    order: Sequence[str] | None = None,
) -> Discovery:
    """Skills in path order, de-duplicated by id, first path wins (§1.2).

    `order`: the keys of `results` already in path order (the live index keeps it between
    saves, which sorting 26,000 paths again would cost 30-80 ms each)."""
    skills: list[Skill] = []
    rejected = list(problems)
    first_path: dict[str, str] = {}
    for path in sorted(results, key=path_order) if order is None else order:
        result = results[path]
        if isinstance(result, Problem):
            rejected.append(result)
        elif result.id in first_path:
            rejected.append(
                Problem(path, f"duplicate skill id {result.id!r}; {first_path[result.id]} wins")
            )
        else:
            first_path[result.id] = path
            skills.append(result)
    return Discovery(tuple(skills), tuple(rejected), tuple(linked_dirs))


def discover(
    roots: Sequence[str | os.PathLike[str]],
    memo: SkillMemo | None = None,
    keep: Callable[[Skill], Skill] | None = None,
) -> Discovery:
    """Read every skill under the roots (§1.2-§1.4); `keep` as for `scan`."""
    found = scan(roots, memo, keep)
    return assemble(found.results, found.problems, found.linked_dirs)


def load_skill(path: str, memo: SkillMemo | None = None) -> Skill | Problem:
    """Read one SKILL.md; any failure is returned as a Problem, never raised.

    With a memo, a file whose stamp is the one its skill was parsed with is not read at
    all: at 26,000 skills the reads were 0.5 s of opening a library from a warm page
    cache and 2.3 s from a cold one. The stamp is taken before the read, so a write
    racing the read leaves a stamp that no longer matches."""
    stamp = None
    if memo is not None:
        stamp = file_stamp(path)
        known = memo.recall_unchanged(path, stamp) if stamp is not None else None
        if known is not None:
            return known
    data = read_skill_bytes(path)
    if isinstance(data, Problem):
        return data
    digest = content_hash(data)
    if memo is not None:
        known = memo.recall(path, digest, stamp)
        if known is not None:
            return known
    result = parse_skill(path, data, digest)
    if memo is not None and isinstance(result, Skill):
        memo.remember(result, stamp)
    return result


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return f"not a regular file ({kind}); not read"


def read_skill_bytes(path: str, limit: int = MAX_SKILL_BYTES) -> bytes | Problem:
    """The bytes of a regular file of at most `limit` bytes, or why not.

    A FIFO would block the reader forever and a device or a huge file would fill memory,
    so the kind is checked before opening, the open never blocks (O_NONBLOCK), the kind is
    checked again on the open descriptor (the path may have been swapped in between), and
    no more than limit + 1 bytes are ever read.
    """
    try:
        info = os.stat(path)
    except OSError as error:
        return Problem(path, _os_reason(error))
    reason = _not_regular(info.st_mode)
    if reason:
        return Problem(path, reason)
    if info.st_size > limit:
        return Problem(path, _too_large(info.st_size, limit))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        return Problem(path, _os_reason(error))
    try:
        reason = _not_regular(os.fstat(fd).st_mode)
        if reason:
            return Problem(path, reason)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        return Problem(path, _os_reason(error))
    finally:
        os.close(fd)
    if size > limit:
        return Problem(path, _too_large(size, limit, grew=True))
    return b"".join(chunks)


def _os_reason(error: OSError) -> str:
    import errno

    if error.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links); not read"
    if error.errno == errno.ENOENT:
        return "cannot read file: no such file (a dangling symlink?)"
    return f"cannot read file: {error.strerror or error}"


def _too_large(size: int, limit: int, *, grew: bool = False) -> str:
    what = "more than" if grew else f"{size:,} bytes,"
    return f"file too large ({what} {limit:,} bytes allowed = {limit // (1 << 20)} MB); not read"


def flow_nesting_depth(text: str) -> int:
    """The deepest run of open '[' and '{' in `text`, brackets inside quotes not counted.

    A cheap over-estimate is fine: it only decides whether YAML is asked at all.
    """
    depth = deepest = 0
    quote = ""
    for char in text:
        if quote:
            if char == quote or char == "\n":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


def bounded(value: Any, budget: list[int], depth: int = 0) -> Any:
    """A plain copy of parsed YAML that costs at most FRONTMATTER_BUDGET in all.

    Each value costs 1, plus 1 per 64 characters of text. Shared references (YAML
    aliases) are paid for each time they occur, which is what an expansion would cost, so
    an alias bomb stops after a few thousand values instead of expanding to billions.
    Depth is capped before recursing, so deep nesting never reaches Python's stack limit.
    `budget` is a one-item list, so the caller sees whether anything was cut (it is < 0).
    """
    cost = 1 + (len(value) // 64 if isinstance(value, str) else 0)
    budget[0] -= cost
    if budget[0] < 0 or depth >= FRONTMATTER_MAX_DEPTH:
        budget[0] = min(budget[0], -1)
        return "…"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if budget[0] < 0:
                break
            out[str(key)] = bounded(item, budget, depth + 1)
        return out
    if isinstance(value, (list, tuple, set)):
        items: list[Any] = []
        for item in value:
            if budget[0] < 0:
                break
            items.append(bounded(item, budget, depth + 1))
        return items
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)  # dates and the like: text, as the parse cache keeps them


def parse_skill(path: str, data: bytes, digest: str | None = None) -> Skill | Problem:
    """§1.3: decode, read the frontmatter as the reference does, derive the §1.4 fields.

    Routing follows the reference router's lenient line reader (`line_reader`), so a file
    routes here exactly as it routes there. YAML reads the same lines for the metadata the
    explorer shows and lint checks; where the two readings differ, the skill carries a
    `reading-differs` warning naming both, so the author can fix the file for every host.
    """
    warnings: list[Problem] = []
    text = _decode(path, data, warnings)
    if "\x00" in text:
        return Problem(path, "binary file (contains NUL bytes)")
    reading = read_frontmatter(text)
    if reading is None:
        return Problem(path, "no frontmatter: line 1 must be '---'")
    frontmatter_text, body = _split_frontmatter(path, text, reading, warnings)
    frontmatter, yaml_read, not_mapping = _yaml_frontmatter(path, frontmatter_text, warnings)

    name, description = reading.name, reading.description
    if not name:
        if not_mapping:
            return Problem(path, "frontmatter is not a mapping of keys to values", 2)
        hint = _yaml_hint(yaml_read, "name") or _indented_hint(frontmatter_text, "name")
        return Problem(path, "missing or empty 'name'" + hint)
    if not description:
        hint = _yaml_hint(yaml_read, "description")
        return Problem(
            path,
            "missing or empty 'description'"
            + (hint or _indented_hint(frontmatter_text, "description")),
        )
    if is_placeholder(description):
        return Problem(path, "description is a template placeholder ('replace with …')")
    if yaml_read is not None:
        warnings += _reading_differences(path, yaml_read, reading)

    keywords = list(reading.keywords)
    for token in tokenize(name):  # §1.4: name tokens join unless already a keyword
        if token not in keywords:
            keywords.append(token)
    return Skill(
        id=name,
        name=name,
        description=description,
        path=path,
        keywords=interned(keywords),
        trigger_phrases=tuple(trigger_phrases(description)),
        body_head=reference_body_head(text, BODY_HEAD_LINES, BODY_HEAD_CHARS),
        body=body.strip(),
        description_tokens=interned(match_tokens(description)),
        hash=digest or content_hash(data),
        frontmatter=frontmatter,
        warnings=tuple(warnings),
    )


def _decode(path: str, data: bytes, warnings: list[Problem]) -> str:
    """UTF-8 without a BOM; bytes that are not UTF-8 are replaced, with a warning."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", errors="replace")
        warnings.append(
            Problem(path, f"not valid UTF-8 (byte {error.start}); decoded with replacement")
        )
    return text.removeprefix("\ufeff")


def _split_frontmatter(
    path: str, text: str, reading: LineReading, warnings: list[Problem]
) -> tuple[str, str]:
    """The frontmatter's lines and the body, as the line reader fenced them; a fence the
    reference accepts and other hosts may not is a `reading-differs` warning."""
    parts = text.split("\n")
    if reading.end is None:
        frontmatter_text, body = "\n".join(parts[1:]), ""
        warnings.append(
            Problem(
                path,
                "the frontmatter is never closed by a '---' line: the reference router reads "
                "to the end of the file, so the skill has no body; other hosts reject it",
                len(parts),
                rule=READING_RULE,
            )
        )
    else:
        frontmatter_text = "\n".join(parts[1 : reading.end])
        body = "\n".join(parts[reading.end + 1 :])
    for indented, line, which in (
        (reading.opening_indented, 1, "opening"),
        (reading.closing_indented, (reading.end or 0) + 1, "closing"),
    ):
        if indented:
            warnings.append(
                Problem(
                    path,
                    f"the {which} '---' fence has spaces around it: the reference router "
                    "accepts it, strict YAML front-matter readers may not",
                    line,
                    rule=READING_RULE,
                )
            )
    return frontmatter_text, body


# What PyYAML raises, instead of its own YAMLError, for a scalar it parsed but whose
# constructor cannot convert it: an impossible date (`2020-13-45`), a tag on the wrong
# text (`!!bool abc`), an integer of more digits than Python converts.
YAML_VALUE_ERRORS = (ValueError, KeyError, TypeError, AttributeError, IndexError)


def yaml_value_reason(error: Exception) -> str:
    """One of YAML_VALUE_ERRORS in words: the value's own complaint where it has one
    ('month must be in 1..12'); the others say something of PyYAML's insides only."""
    detail = ""
    if isinstance(error, (ValueError, KeyError)) and error.args:
        detail = f": {str(error.args[0]).split('; ')[0]}"
    return f"a value it cannot convert{detail}"


def _yaml_frontmatter(
    path: str, frontmatter_text: str, warnings: list[Problem]
) -> tuple[dict[str, Any], dict[str, Any] | None, bool]:
    """The frontmatter as YAML reads it, bounded; the line reader's reading where YAML
    cannot read it. Returns the metadata kept, YAML's own reading (None when it failed)
    and whether YAML read something that is not a mapping."""
    import yaml  # here, not at the top: a warm cache starts the hook without YAML at all

    try:
        if flow_nesting_depth(frontmatter_text) > FLOW_NESTING_LIMIT:
            raise RecursionError
        loaded = yaml.load(frontmatter_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        # The pure-Python loader recurses per nesting level; libyaml does not.
        warnings.append(Problem(path, "frontmatter nested too deeply; recovered by line reader"))
        return lenient_frontmatter(frontmatter_text), None, False
    except yaml.YAMLError as error:
        error_line, reason = _yaml_error_line(error), _yaml_reason(error)
        warnings.append(
            Problem(
                path,
                f"invalid YAML frontmatter ({reason}); recovered by line reader",
                error_line,
                INVALID_YAML,
            )
        )
        return lenient_frontmatter(frontmatter_text), None, False
    except YAML_VALUE_ERRORS as error:
        warnings.append(
            Problem(
                path,
                f"invalid YAML frontmatter ({yaml_value_reason(error)}); recovered by line reader",
                rule=INVALID_YAML,
            )
        )
        return lenient_frontmatter(frontmatter_text), None, False
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return {}, None, True
    budget = [FRONTMATTER_BUDGET]
    frontmatter = bounded(loaded, budget)
    if budget[0] < 0:
        warnings.append(
            Problem(
                path,
                "frontmatter too large once YAML aliases are expanded, or nested "
                f"deeper than {FRONTMATTER_MAX_DEPTH} levels; only its first part is kept",
            )
        )
    return frontmatter, frontmatter, False


READING_RULE = "parse/reading-differs"
# Frontmatter YAML cannot read: routed here by the line reader, rejected by other hosts.
INVALID_YAML = "parse/invalid-yaml"


def _yaml_hint(yaml_read: dict[str, Any] | None, key: str) -> str:
    value = _scalar_text((yaml_read or {}).get(key))
    if value and value.strip():
        return (
            f"; YAML reads {key} {value.strip()!r}, but the reference router only reads a "
            f"'{key}:' line starting at column 0"
        )
    return ""


def _indented_hint(frontmatter: str, key: str) -> str:
    """Where YAML cannot say it (a tab before the key makes the whole block invalid), the
    line that holds `key:` indented: the author sees the key there, and the message said
    only that it was missing."""
    for number, line in enumerate(frontmatter.split("\n"), start=2):
        stripped = line.lstrip(" \t")
        if stripped != line and stripped.startswith(f"{key}:"):
            return (
                f"; line {number} holds '{key}:' indented, and the frontmatter's keys start "
                "at column 0"
            )
    return ""


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"'{_collapse(str(value))}'"


EXCERPT_BEFORE, EXCERPT_AFTER = 20, 40  # characters around where two readings part


def _excerpts(first: str, second: str) -> tuple[str, str]:
    """Both texts quoted as they are (no escapes added, so the author's backslash shows
    once), each cut to the stretch where they part when either is long, so a
    1,000-character description is not printed twice on every command."""
    if max(len(first), len(second)) <= EXCERPT_BEFORE + EXCERPT_AFTER:
        return f"'{first}'", f"'{second}'"
    at = shared_prefix(first, second)
    start = max(0, at - EXCERPT_BEFORE)

    def cut(text: str) -> str:
        end = at + EXCERPT_AFTER
        return f"'{'…' if start else ''}{text[start:end]}{'…' if end < len(text) else ''}'"

    return cut(first), cut(second)


def _advice(value: Any, routed: str) -> str:
    """How to write a value so YAML and the reference's line reader agree."""
    if isinstance(value, str) and "\\" in routed and "\\" not in value:
        return (
            'The reference does not undo YAML escapes such as \\": single-quote the value '
            "or write it without escapes"
        )
    if isinstance(value, str) and "#" in routed and "#" not in value:
        return "YAML ends a plain value at ' #': quote the value"
    if isinstance(value, (bool, dict, list)) or value is None:
        return "Quote the value so every reader reads text"
    return "Write the value so both read the same text (quoted, on one line)"


def _reading_differences(
    path: str, yaml_read: dict[str, Any], reading: LineReading
) -> list[Problem]:
    """Where YAML and the reference's line reader disagree about a routing field."""
    found: list[Problem] = []
    for key, routed in (("name", reading.name), ("description", reading.description)):
        value = yaml_read.get(key)
        if isinstance(value, str) and _collapse(value) == _collapse(routed):
            continue
        if (
            not isinstance(value, (str, bool, dict, list))
            and value is not None
            and _collapse(str(value)) == _collapse(routed)
        ):
            continue  # a number reads the same either way
        said, routed_said = _describe(value), f"'{_collapse(routed)}'"
        if isinstance(value, str):
            said, routed_said = _excerpts(_collapse(value), _collapse(routed))
        found.append(
            Problem(
                path,
                f"YAML reads {key} as {said}, the reference router as {routed_said}; "
                f"routing follows the reference. {_advice(value, routed)}",
                rule=READING_RULE,
            )
        )
    yaml_keywords: list[str] = []
    for key in ("keywords", "aliases"):
        value = yaml_read.get(key)
        if isinstance(value, str):
            value = value.strip("[]").split(",")
        if isinstance(value, list):
            yaml_keywords += [str(item).strip().strip("'\"").lower() for item in value]
        elif value is not None:
            found.append(Problem(path, f"'{key}' should be a list; YAML reads {_describe(value)}"))
    yaml_keywords = [keyword for keyword in yaml_keywords if keyword]
    if sorted(yaml_keywords) != sorted(reading.keywords):
        found.append(
            Problem(
                path,
                f"YAML reads keywords and aliases as {yaml_keywords}, the reference router as "
                f"{list(reading.keywords)}; routing follows the reference (a later 'keywords:' "
                "replaces earlier aliases there)",
                rule=READING_RULE,
            )
        )
    return found


def record_fields(skill: Skill, *, body: bool = True) -> dict[str, Any]:
    """A Skill's fields as `json.dumps` takes them, in field order; without the body for
    the index store (it reads bodies from the files). Shallow: `dataclasses.asdict` deep-
    copies every field (the body and the frontmatter included) only for json.dumps to read
    the copy once, which was most of writing a 2,000-skill store."""
    data = {name: getattr(skill, name) for name in SKILL_FIELDS if body or name != "body"}
    data["warnings"] = [dataclasses.asdict(problem) for problem in skill.warnings]
    return data


def skill_record(skill: Skill, *, body: bool = True) -> str:
    """A Skill as JSON, for the persistent parse cache and the index store (frontmatter
    values that JSON has no type for are kept as text)."""
    return json.dumps(record_fields(skill, body=body), default=str, ensure_ascii=False)


def skill_from_record(record: str) -> Skill:
    return skill_from_data(json.loads(record))


def skill_from_data(data: dict[str, Any], kind: type[Skill] = Skill) -> Skill:
    """A Skill (or a subclass: `kind`) from a decoded record (`record_fields` after a JSON
    round trip); takes ownership of `data`."""
    data["warnings"] = tuple(Problem(**problem) for problem in data["warnings"])
    data["trigger_phrases"] = tuple(data["trigger_phrases"])
    for key in ("keywords", "description_tokens"):
        data[key] = interned(data[key])
    return kind(**data)


def interned(tokens: Iterable[str]) -> tuple[str, ...]:
    """One string object per distinct token across the library: 26,000 descriptions
    hold some 600,000 tokens but only tens of thousands of distinct ones, and a copy of
    each costs ~50 bytes for as long as the index lives."""
    return tuple(map(sys.intern, tokens))


def _yaml_error_line(error: Exception) -> int | None:
    """The file's line of a YAML error: where YAML noticed it, except for a quote left
    open, which it notices only where the frontmatter ends (often its last line) and
    whose slip is the line that opened it."""
    mark = getattr(error, "problem_mark", None)
    if _unclosed_quote(error) or mark is None:
        mark = getattr(error, "context_mark", None) or mark
    # +2: the frontmatter starts on the file's second line, and marks count from 0.
    return mark.line + 2 if mark is not None else None


def _unclosed_quote(error: Exception) -> bool:
    problem = getattr(error, "problem", None) or ""
    context = getattr(error, "context", None) or ""
    return context == "while scanning a quoted scalar" and "end of stream" in problem


def _yaml_reason(error: Exception) -> str:
    """YAML's problem, and where the construct it was in began when that is elsewhere: a
    [list] or {mapping} left open (or with a bad item) is noticed lines later."""
    reason = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None) or ""
    opened = getattr(error, "context_mark", None)
    if _unclosed_quote(error):
        return f"a quote opened on this line is not closed: {reason}"
    kind = {"while parsing a flow sequence": "[list]", "while parsing a flow mapping": "{mapping}"}
    mark = getattr(error, "problem_mark", None)
    if context in kind and opened is not None and mark is not None and mark.line != opened.line:
        return f"{reason}, in the {kind[context]} opened on line {opened.line + 2}"
    return reason


def _scalar_text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else str(value)


def body_head(body: str) -> str:
    """§1.4 for a body without frontmatter: the reference's rule (see line_reader.body_head)."""
    return reference_body_head("\n" + body, BODY_HEAD_LINES, BODY_HEAD_CHARS)


_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_RE = re.compile(r"^([|>])([+-]?)\d?[+-]?$")


def lenient_frontmatter(text: str) -> dict[str, Any]:
    """Recover top-level `key: value` pairs from frontmatter that YAML rejected.

    Everything after the first `: ` is the value, so an unquoted colon inside a
    description (the commonest authoring slip) no longer breaks it. Block scalars and
    indented continuation lines are honoured; lists come back as lists of strings, and a
    key with nothing after it whose indented lines are all `key: value` comes back as a
    mapping of strings (`metadata:` with `author: …` under it), so a slip elsewhere in
    the file does not make a well-formed mapping read as a string.
    """
    result: dict[str, Any] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _KEY_RE.match(lines[index])
        index += 1
        if not match:
            continue
        key, value = match.group(1), (match.group(2) or "").strip()
        continuation: list[str] = []
        while index < len(lines) and (not lines[index].strip() or lines[index][:1] in " \t-"):
            continuation.append(lines[index])
            index += 1
        while continuation and not continuation[-1].strip():
            continuation.pop()
        result[key] = _lenient_value(value, continuation)
    return result


def _lenient_value(value: str, continuation: list[str]) -> Any:
    block = _BLOCK_RE.match(value)
    if block:
        stripped = [line.strip() for line in continuation]
        if block.group(1) == "|":
            return "\n".join(stripped)
        return " ".join(line for line in stripped if line)
    if not value and continuation and continuation[0].lstrip().startswith("-"):
        return [_unquote(line.strip()[1:].strip()) for line in continuation if line.strip()]
    lines = [line for line in continuation if line.strip()]
    entries = [_KEY_RE.match(line.strip()) for line in lines]
    one_level = len({len(line) - len(line.lstrip()) for line in lines}) == 1
    if not value and entries and all(entries) and one_level:
        return {
            entry.group(1): _unquote((entry.group(2) or "").strip())
            for entry in entries
            if entry is not None
        }
    if value.startswith("[") and value.endswith("]"):
        return [_unquote(part.strip()) for part in value[1:-1].split(",") if part.strip()]
    parts = [value, *(line.strip() for line in continuation)]
    return _unquote(" ".join(part for part in parts if part))


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
