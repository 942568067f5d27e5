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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from explorer.engine.text import match_tokens, tokenize, trigger_phrases

SKILL_FILE = "SKILL.md"
MAX_DEPTH = 12  # §1.2: directories deeper than this are not entered
SKIPPED_DIRS = frozenset(
    {".git", "target", "node_modules", "tests", "fixtures", "examples", "template", "templates"}
)
BODY_HEAD_LINES = 8
BODY_HEAD_CHARS = 600


@dataclass(frozen=True)
class Problem:
    """A reason a file was rejected, or a warning on a skill that still routes."""

    path: str
    message: str
    line: int | None = None

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
    stale: Problem | None = None  # the live index kept this last good version: why

    @property
    def directory(self) -> str:
        return os.path.dirname(self.path)


@dataclass(frozen=True)
class Discovery:
    """The outcome of reading the roots: skills in path order, and what was rejected."""

    skills: tuple[Skill, ...]
    rejected: tuple[Problem, ...]
    linked_dirs: tuple[str, ...] = ()  # real paths of directories reached through symlinks


def content_hash(data: bytes) -> str:
    """A stable 64-bit content hash (§1.4 names FNV-1a 64; any stable 64-bit hash serves)."""
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def find_skill_files(
    roots: Sequence[str | os.PathLike[str]], linked: list[str] | None = None
) -> tuple[list[str], list[Problem]]:
    """§1.2: sorted SKILL.md paths under the roots, following symlinks without looping.

    `linked` collects the real paths of directories entered through a symlink: a watcher
    must watch those too, since events inside them do not surface under the root.
    """
    found: list[str] = []
    problems: list[Problem] = []
    for root in roots:
        root_path = os.path.abspath(os.fspath(root))
        if os.path.isfile(root_path) and os.path.basename(root_path) == SKILL_FILE:
            found.append(root_path)
            continue
        if not os.path.isdir(root_path):
            problems.append(Problem(root_path, "skills root does not exist or is not a directory"))
            continue
        found.extend(_walk_root(root_path, problems, linked))
    return sorted(dict.fromkeys(found)), problems


def _walk_root(root: str, problems: list[Problem], linked: list[str] | None) -> Iterable[str]:
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
        try:
            # Reverse-sorted onto the stack, so directories are entered in path order and
            # the first of two links to one directory is the one kept (§1.2).
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name, reverse=True)
        except OSError as error:
            problems.append(Problem(directory, f"cannot list directory: {error.strerror}"))
            continue
        for entry in entries:
            if entry.name == SKILL_FILE:
                if entry.is_dir():
                    problems.append(Problem(entry.path, "SKILL.md is a directory, not a file"))
                else:
                    yield entry.path
            elif entry.name not in SKIPPED_DIRS and depth + 1 < MAX_DEPTH:
                try:
                    if entry.is_dir():
                        stack.append((entry.path, depth + 1))
                        if linked is not None and entry.is_symlink():
                            linked.append(os.path.realpath(entry.path))
                except OSError:
                    continue


class SkillMemo(Protocol):
    """Skills parsed before, by path and content hash: an unchanged file is never re-parsed."""

    def prepare(self, paths: Sequence[str]) -> None: ...

    def recall(self, path: str, digest: str) -> Skill | None: ...

    def remember(self, skill: Skill) -> None: ...


@dataclass(frozen=True)
class Scan:
    """Every SKILL.md under the roots with its own load result, before de-duplication.

    The live index keeps this per path, so a duplicate that becomes the winner when the
    first copy is deleted is already parsed and at hand.
    """

    results: dict[str, Skill | Problem]
    problems: tuple[Problem, ...]  # about roots and directories, not about one file
    linked_dirs: tuple[str, ...]


def scan(roots: Sequence[str | os.PathLike[str]], memo: SkillMemo | None = None) -> Scan:
    linked: list[str] = []
    paths, problems = find_skill_files(roots, linked)
    if memo is not None:
        memo.prepare(paths)
    results = {path: load_skill(path, memo) for path in paths}
    return Scan(results, tuple(problems), tuple(dict.fromkeys(linked)))


def assemble(
    results: dict[str, Skill | Problem],
    problems: Sequence[Problem] = (),
    linked_dirs: Sequence[str] = (),
) -> Discovery:
    """Skills in path order, de-duplicated by id, first path wins (§1.2)."""
    skills: list[Skill] = []
    rejected = list(problems)
    first_path: dict[str, str] = {}
    for path in sorted(results):
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


def discover(roots: Sequence[str | os.PathLike[str]], memo: SkillMemo | None = None) -> Discovery:
    """Read every skill under the roots (§1.2-§1.4)."""
    found = scan(roots, memo)
    return assemble(found.results, found.problems, found.linked_dirs)


def load_skill(path: str, memo: SkillMemo | None = None) -> Skill | Problem:
    """Read one SKILL.md; any failure is returned as a Problem, never raised."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return Problem(path, f"cannot read file: {error.strerror or error}")
    digest = content_hash(data)
    if memo is not None:
        known = memo.recall(path, digest)
        if known is not None:
            return known
    result = parse_skill(path, data, digest)
    if memo is not None and isinstance(result, Skill):
        memo.remember(result)
    return result


def parse_skill(path: str, data: bytes, digest: str | None = None) -> Skill | Problem:
    """§1.3: decode, split the frontmatter, parse it, and derive the §1.4 fields."""
    warnings: list[Problem] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", errors="replace")
        warnings.append(
            Problem(path, f"not valid UTF-8 (byte {error.start}); decoded with replacement")
        )
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        return Problem(path, "binary file (contains NUL bytes)")
    split = _split_frontmatter(text)
    if split is None:
        return Problem(path, "no frontmatter: line 1 must be '---', closed by another '---'")
    frontmatter_text, body = split

    import yaml  # here, not at the top: a warm cache starts the hook without YAML at all

    frontmatter: dict[str, Any]
    try:
        loaded = yaml.load(frontmatter_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        line = _yaml_error_line(error)
        reason = getattr(error, "problem", None) or str(error).splitlines()[0]
        warnings.append(
            Problem(path, f"invalid YAML frontmatter ({reason}); recovered by line reader", line)
        )
        frontmatter = lenient_frontmatter(frontmatter_text)
    else:
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            return Problem(path, "frontmatter is not a mapping of keys to values", 2)
        frontmatter = {str(key): value for key, value in loaded.items()}

    name = _scalar_text(frontmatter.get("name"))
    description = _scalar_text(frontmatter.get("description"))
    if name is None or not name.strip():
        return Problem(path, "missing or empty 'name'")
    if description is None or not description.strip():
        return Problem(path, "missing or empty 'description'")
    name, description = name.strip(), description.strip()
    if description.lower().startswith("replace with"):
        return Problem(path, "description is a template placeholder ('replace with …')")

    return Skill(
        id=name,
        name=name,
        description=description,
        path=path,
        keywords=derive_keywords(name, frontmatter, path, warnings),
        trigger_phrases=tuple(trigger_phrases(description)),
        body_head=body_head(body),
        body=body.strip(),
        description_tokens=tuple(match_tokens(description)),
        hash=digest or content_hash(data),
        frontmatter=frontmatter,
        warnings=tuple(warnings),
    )


def skill_record(skill: Skill) -> str:
    """A Skill as JSON, for the persistent parse cache (frontmatter values kept as text)."""
    data = dataclasses.asdict(skill)
    data["warnings"] = [dataclasses.asdict(problem) for problem in skill.warnings]
    return json.dumps(data, default=str, ensure_ascii=False)


def skill_from_record(record: str) -> Skill:
    data = json.loads(record)
    data.pop("stale", None)  # staleness belongs to a live index, never to the file
    data["warnings"] = tuple(Problem(**problem) for problem in data["warnings"])
    for key in ("keywords", "trigger_phrases", "description_tokens"):
        data[key] = tuple(data[key])
    return Skill(**data)


_FENCE_RE = re.compile(r"^---[ \t]*\r?$")


def _split_frontmatter(text: str) -> tuple[str, str] | None:
    lines = text.splitlines(keepends=True)
    if not lines or not _FENCE_RE.match(lines[0].rstrip("\n")):
        return None
    for index in range(1, len(lines)):
        if _FENCE_RE.match(lines[index].rstrip("\n")):
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return None


def _yaml_error_line(error: Exception) -> int | None:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    # +2: the frontmatter starts on the file's second line, and marks count from 0.
    return mark.line + 2 if mark is not None else None


def _scalar_text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else str(value)


def derive_keywords(
    name: str, frontmatter: dict[str, Any], path: str, warnings: list[Problem]
) -> tuple[str, ...]:
    """§1.4: keywords + aliases (lower-cased whole strings) + the name's tokens, de-duplicated."""
    keywords: list[str] = []
    for key in ("keywords", "aliases"):
        value = frontmatter.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            value = [part for part in value.strip("[]").split(",")]
        if not isinstance(value, list):
            warnings.append(Problem(path, f"'{key}' should be a list; ignored"))
            continue
        keywords.extend(str(item).strip().strip("'\"").lower() for item in value)
    keywords.extend(tokenize(name))
    return tuple(keyword for keyword in dict.fromkeys(keywords) if keyword)


def body_head(body: str) -> str:
    """§1.4: the first 8 non-blank body lines, de-decorated, joined, cut to 600 characters."""
    head: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            continue
        head.append(line.strip().lstrip("#-*> "))
        if len(head) == BODY_HEAD_LINES:
            break
    return " ".join(head)[:BODY_HEAD_CHARS]


_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_BLOCK_RE = re.compile(r"^([|>])([+-]?)\d?[+-]?$")


def lenient_frontmatter(text: str) -> dict[str, Any]:
    """Recover top-level `key: value` pairs from frontmatter that YAML rejected.

    Everything after the first `: ` is the value, so an unquoted colon inside a
    description (the commonest authoring slip) no longer breaks it. Block scalars and
    indented continuation lines are honoured; lists come back as lists of strings.
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
    if value.startswith("[") and value.endswith("]"):
        return [_unquote(part.strip()) for part in value[1:-1].split(",") if part.strip()]
    parts = [value, *(line.strip() for line in continuation)]
    return _unquote(" ".join(part for part in parts if part))


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
