"""Lint a skill library: the Agent Skills spec, and the retrieval problems no spec linter sees.

Spec rules follow the Agent Skills validator and Anthropic's platform rules (names,
lengths, allowed keys, XML tags, reserved words). Retrieval rules look at the library
the way the router does (§2-§5): near-duplicate descriptions, descriptions made only of
common words, missing trigger language, keywords that can never match, and how Claude
Code's skill listing would truncate or drop descriptions.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, astuple, dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from explorer.engine.author.languages import says_when_to_use
from explorer.engine.base.config import PRESET_MODEL, Config, dense_model
from explorer.engine.base.text import STOPWORDS, counted, norm_token, tokenize
from explorer.engine.base.turns import checkpoint
from explorer.engine.discovery.skills import (
    INVALID_YAML,
    READING_RULE,
    SKILL_FILE,
    Problem,
    Skill,
    discover,
    read_skill_bytes,
)
from explorer.engine.index.lexical import CrossScorer
from explorer.engine.index.rows import DenseRows
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.inference.models import (
    CALIBRATION,
    UNCALIBRATED,
    assemble_models,
)
from explorer.engine.route.presets import GENERIC_WORDS, Tuning, resolve
from explorer.engine.route.relevance import script_tokens

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)

# Agent Skills spec (validator `skills-ref validate`).
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
SPEC_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
# Claude Code's own frontmatter keys, accepted with --claude-code.
CLAUDE_CODE_KEYS = frozenset(
    {
        "when_to_use",
        "argument-hint",
        "arguments",
        "disable-model-invocation",
        "user-invocable",
        "model",
        "effort",
        "context",
        "agent",
        "hooks",
        "paths",
        "shell",
    }
)
ROUTER_KEYS = frozenset({"keywords", "aliases"})  # this router's extension (§1.1)
RESERVED_WORDS = ("anthropic", "claude")
_NAME_CHARSET_RE = re.compile(r"^[a-z0-9-]+$")
_XML_RE = re.compile(r"[<>]")

# Retrieval rules.
NEAR_DUPLICATE_COSINE = 0.85
NEAR_DUPLICATE_BM25 = 0.5  # both normalised cross-scores (raw / Σ idf, §5.2) at least this
# Near-duplicate partners reported per skill (its closest); the rest are counted in one
# summary finding. None reports every pair.
NEAR_DUPLICATE_SHOWN = 3
GENERIC_DF_FRACTION = 0.25  # a term in at least a quarter of the library is common
GENERIC_TERMS_FRACTION = 0.80  # ... and a description made 80 % of such terms is generic
GENERIC_MIN_LIBRARY = 8  # below this, document frequencies say nothing
SHORT_DESCRIPTION_TERMS = 8  # distinct match terms
# Claude Code's skill listing.
LISTING_ENTRY_MAX = 1536  # characters of description (+ when_to_use) per entry
LISTING_SHARE = 0.01  # of the context window
CHARS_PER_TOKEN = 4
DEFAULT_CONTEXT_TOKENS = 200_000


# Every rule a finding can name (`lint --ignore` takes one, or a family: the part before
# the slash).
RULES = (
    "claude-code/listing-budget",
    "claude-code/name-only",
    "claude-code/truncated",
    "discovery/not-walked",
    INVALID_YAML,
    READING_RULE,
    "parse/rejected",
    "parse/warning",
    "retrieval/dead-keyword",
    "retrieval/double-keyword",
    "retrieval/generic-name-token",
    "retrieval/generic-terms",
    "retrieval/near-duplicate",
    "retrieval/no-trigger-language",
    "retrieval/short-description",
    "router/extension-keys",
    "spec/compatibility",
    "spec/description-blank",
    "spec/description-length",
    "spec/duplicate-key",
    "spec/field-type",
    "spec/metadata",
    "spec/name-charset",
    "spec/name-directory",
    "spec/name-hyphens",
    "spec/name-length",
    "spec/reserved-word",
    "spec/unknown-key",
    "spec/xml-tags",
)


_FindingRow = tuple[str, str, str, str, int | None]  # Finding's fields, in order
_KeptFindings = tuple[str, tuple[_FindingRow, ...]]  # content hash, findings


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: which rule, how bad, where, and what to do about it."""

    rule: str
    severity: str  # error | warning | info
    path: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.severity}: {self.message} [{self.rule}]"


def lint(
    roots: Sequence[str | os.PathLike[str]],
    *,
    claude_code: bool = False,
    index: Index | None = None,
    config: Config | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    near_duplicate: float = NEAR_DUPLICATE_COSINE,
    near_duplicate_shown: int | None = NEAR_DUPLICATE_SHOWN,
    memo: LintMemo | None = None,
) -> list[Finding]:
    """Every finding for the library under `roots`, sorted by path, line and rule.

    Pass the `index` the router uses to get the dense near-duplicate check; without one,
    a lexical-only index is built and that check is skipped (and said so). Each skill
    gets a near-duplicate finding for at most `near_duplicate_shown` of its partners (the
    closest) and one counting the rest; None reports every pair. A `memo` kept from the
    lint of an earlier version of the same library saves what did not change (`LintMemo`).
    """
    files = lint_files(
        roots,
        claude_code=claude_code,
        index=index,
        config=config,
        context_tokens=context_tokens,
        near_duplicate=near_duplicate,
        near_duplicate_shown=near_duplicate_shown,
        memo=memo,
    )
    return [finding for _path, findings in files for finding in findings]


def lint_files(
    roots: Sequence[str | os.PathLike[str]],
    *,
    claude_code: bool = False,
    index: Index | None = None,
    config: Config | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    near_duplicate: float = NEAR_DUPLICATE_COSINE,
    near_duplicate_shown: int | None = NEAR_DUPLICATE_SHOWN,
    memo: LintMemo | None = None,
) -> Iterator[tuple[str, list[Finding]]]:
    """What `lint` finds, a file at a time: (path, its findings) for each path with any,
    in path order, each file's findings sorted by line, rule and message.

    The library-wide checks run first, into arrays; a file's findings are made when its
    turn comes. The explorer lints after every save, and the whole list was that run's
    high-water mark: 172,000 findings at 26,000 skills, most of them near-duplicate
    messages, about 40 MB of objects made and dropped at each save. Arguments as for
    `lint`; a `memo` is updated once the last file has been read.
    """
    config = config or Config()
    if index is None:
        found = discover(roots)
        index = index_skills(found, roots, config, assemble_models(None))
    status = index.models.status
    if index.models.embedder is None and status.dense_error is None:
        # A lexical-only index for lint: the guards described are those of the dense model
        # the router will load, as they follow it (presets.resolve_guards).
        dense = "custom" if config.model_path else dense_model(config)
        dense = PRESET_MODEL[config.preset] if dense == "auto" else dense
        status = replace(status, dense=dense, calibration=CALIBRATION.get(dense, UNCALIBRATED))
    tuning = resolve(config, status, len(index))

    def own(skill: Skill) -> list[Finding]:
        places = _key_places(skill.path)
        lines = {key: found[0] for key, found in places.items()}
        return [
            *_parse_warnings(skill),
            *_duplicate_keys(skill.path, places),
            *spec_findings(skill, claude_code=claude_code, lines=lines),
            *trigger_findings(skill, lines),
            *keyword_findings(skill, lines),
            *generic_name_findings(skill, config, tuning, lines),
        ]

    skills = index.skills
    near = NearDuplicates(index, threshold=near_duplicate, shown=near_duplicate_shown, memo=memo)
    generic = GenericTerms(index)
    listing = Listing(skills, context_tokens, _library_path(index, roots))
    # Findings not of one skill: rejected files, and the library's own.
    elsewhere: dict[str, list[Finding]] = {}
    for finding in [*map(_rejected, index.rejected), *near.library, *listing.library]:
        elsewhere.setdefault(finding.path, []).append(finding)
    # Positions in path order, as an array (a sorted list of them is one object each,
    # held to the end of the run).
    order = np.argsort(np.array([skill.path for skill in skills], dtype=str), kind="stable")
    owns = (memo or LintMemo()).skill_findings(
        (claude_code, config, tuning), [skills[position] for position in order], own
    )
    # Every path once in order; a skill's path after a finding elsewhere of the same path.
    paths = heapq.merge(
        ((path, -1) for path in sorted(elsewhere)),
        ((skills[position].path, position) for position in order),
    )
    current, group = "", list[Finding]()
    for path, position in paths:
        checkpoint()
        if path != current:
            if group:
                yield current, sorted(group, key=_within_file)
            current, group = path, []
        if position < 0:
            group += elsewhere[path]
        else:
            group += next(owns)
            group += near.of(position)
            group += generic.of(skills[position])
            group += listing.of(position)
    if group:
        yield current, sorted(group, key=_within_file)
    next(owns, None)  # the memo keeps this run's findings once every skill has been read


def _within_file(finding: Finding) -> tuple[int, str, str]:
    return (finding.line or 0, finding.rule, finding.message)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.severity == ERROR for finding in findings)


def unknown_rules(names: Iterable[str]) -> list[str]:
    """The names that are neither a rule of RULES nor a family of them ("claude-code")."""
    families = {rule.split("/")[0] for rule in RULES}
    return [name for name in names if name not in RULES and name not in families]


def ignoring(findings: Iterable[Finding], names: Iterable[str]) -> list[Finding]:
    """`findings` less those of the rules `names` names, each a rule or a family: a
    library over Claude Code's listing budget has a name-only warning per skill past it,
    and the rest are hard to find among them."""
    ignored = tuple(names)
    return [
        finding
        for finding in findings
        if finding.rule not in ignored and finding.rule.split("/")[0] not in ignored
    ]


def _library_path(index: Index, roots: Sequence[str | os.PathLike[str]]) -> str:
    paths = index.roots or tuple(os.path.abspath(os.fspath(root)) for root in roots)
    return paths[0] if len(paths) == 1 else os.path.commonpath(paths) if paths else "."


def _key_places(path: str) -> dict[str, list[int]]:
    """The lines of each top-level frontmatter key, in order (line 1 is the opening `---`)."""
    places: dict[str, list[int]] = {}
    data = read_skill_bytes(path)  # regular files only, size-capped: never a FIFO
    if isinstance(data, Problem):
        return places
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines()[1:], start=2):
        if line.strip() == "---":
            break
        match = re.match(r"^([A-Za-z_][\w-]*)[ \t]*:", line)
        if match:
            places.setdefault(match.group(1), []).append(number)
    return places


def _duplicate_keys(path: str, places: dict[str, list[int]]) -> list[Finding]:
    """A key set twice: PyYAML and this router's line reader keep the last value, but a
    YAML reader that refuses duplicate keys (js-yaml's default) rejects the whole file."""
    return [
        Finding(
            "spec/duplicate-key",
            ERROR,
            path,
            f"frontmatter key {key!r} is set {len(found)} times (lines "
            f"{', '.join(map(str, found))}): YAML readers that refuse duplicate keys reject "
            "the file, and the others read the last",
            found[1],
        )
        for key, found in places.items()
        if len(found) > 1
    ]


def _rejected(problem: Problem) -> Finding:
    """A SKILL.md that did not parse is an error; a directory or link the walk did not
    enter (one it cannot list, a link to a folder holding the library) a warning: every
    skill routes, and it names what was left out."""
    if not problem.path.endswith(SKILL_FILE):
        return Finding("discovery/not-walked", WARNING, problem.path, problem.message)
    return Finding("parse/rejected", ERROR, problem.path, problem.message, problem.line)


def _parse_warnings(skill: Skill) -> list[Finding]:
    """Discovery's warnings: invalid YAML is an error even though the skill still routes,
    because every other host's parser rejects the file."""
    findings = []
    for problem in skill.warnings:
        if problem.rule == INVALID_YAML:
            findings.append(
                Finding(
                    INVALID_YAML,
                    ERROR,
                    problem.path,
                    f"{problem.message}; this router still routes it, other hosts will not",
                    problem.line,
                )
            )
        else:
            findings.append(
                Finding(
                    problem.rule or "parse/warning",
                    WARNING,
                    problem.path,
                    problem.message,
                    problem.line,
                )
            )
    return findings


def spec_findings(
    skill: Skill, *, claude_code: bool = False, lines: dict[str, int] | None = None
) -> list[Finding]:
    """The Agent Skills spec and Anthropic's platform rules for one skill."""
    lines = lines or {}
    path, front = skill.path, skill.frontmatter
    raw_name = front.get("name")
    name = raw_name if isinstance(raw_name, str) else skill.name
    description = skill.description
    found: list[Finding] = []

    def add(rule: str, message: str, key: str | None = None, severity: str = ERROR) -> None:
        found.append(Finding(rule, severity, path, message, lines.get(key) if key else None))

    _name_rules(name, os.path.basename(os.path.dirname(path)), add)
    if not description.strip():
        add(
            "spec/description-blank",
            "description is blank: the spec asks for one that says what the skill does and "
            "when to use it, and no prompt can match spaces",
            "description",
        )
    if len(description) > DESCRIPTION_MAX:
        add(
            "spec/description-length",
            f"description is {len(description):,} characters; at most {DESCRIPTION_MAX:,} allowed",
            "description",
        )
    for key, value in (("name", name), ("description", description)):
        if _XML_RE.search(value):
            add("spec/xml-tags", f"{key} contains '<' or '>' (XML tags are not allowed)", key)
    _key_rules(front, claude_code, lines, add)
    return found


# Unknown keys named one by one; past these, one finding counts the rest (a frontmatter of
# 10,000 keys made 5,000 lines of lint).
UNKNOWN_KEYS_LISTED = 5

# What a spec rule reports through: rule, message, the frontmatter key, severity.
Add = Callable[..., None]


def _name_rules(name: str, directory: str, add: Add) -> None:
    """The spec's rules for `name`: length, characters, hyphens, its directory, reserved words."""
    if not 1 <= len(name) <= NAME_MAX:
        add("spec/name-length", f"name is {len(name)} characters; 1-{NAME_MAX} allowed", "name")
    if not _NAME_CHARSET_RE.match(name):
        bad = sorted({char for char in name if not re.match(r"[a-z0-9-]", char)})
        add(
            "spec/name-charset",
            f"name {name!r} may only hold lowercase letters, digits and hyphens "
            f"(found {' '.join(repr(char) for char in bad)})",
            "name",
        )
    if name.startswith("-") or name.endswith("-") or "--" in name:
        add("spec/name-hyphens", f"name {name!r}: no leading or trailing hyphen, no '--'", "name")
    if name != directory:
        add(
            "spec/name-directory",
            f"name {name!r} must equal its directory name {directory!r}",
            "name",
        )
    lowered = name.lower()
    for word in RESERVED_WORDS:
        if word in lowered:
            add("spec/reserved-word", f"name {name!r} contains the reserved word {word!r}", "name")


def _key_rules(front: dict[str, Any], claude_code: bool, lines: dict[str, int], add: Add) -> None:
    """The spec's rules for the frontmatter's keys: which are known, and each value's type."""
    allowed = SPEC_KEYS | ROUTER_KEYS | (CLAUDE_CODE_KEYS if claude_code else frozenset())
    unknown = [key for key in front if key not in allowed]
    for key in unknown[:UNKNOWN_KEYS_LISTED]:
        hint = (
            " (a Claude Code key: lint with --claude-code)"
            if key in CLAUDE_CODE_KEYS
            else f"; the spec's place for other fields is metadata, a map of strings "
            f'(metadata: {{{key}: "…"}})'
        )
        add("spec/unknown-key", f"frontmatter key {key!r} is not in the spec{hint}", key)
    if len(unknown) > UNKNOWN_KEYS_LISTED:
        rest = unknown[UNKNOWN_KEYS_LISTED:]
        claude = [key for key in rest if key in CLAUDE_CODE_KEYS]
        hint = (
            f" ({', '.join(map(repr, claude))}: Claude Code's, lint with --claude-code)"
            if claude
            else ""
        )
        add(
            "spec/unknown-key",
            f"{len(rest):,} more frontmatter keys are not in the spec, from {rest[0]!r} on" + hint,
            rest[0],
        )
    extensions = sorted(ROUTER_KEYS & set(front), key=lambda key: (lines.get(key, 0), key))
    if extensions:
        add(
            "router/extension-keys",
            f"{' and '.join(extensions)}: this router's extension (§1.1), accepted here; "
            "the Agent Skills validator rejects them",
            extensions[0],
            INFO,
        )
    if "compatibility" in front:
        value = front["compatibility"]
        if not isinstance(value, str) or not 1 <= len(value) <= COMPATIBILITY_MAX:
            add(
                "spec/compatibility",
                f"compatibility must be a string of 1-{COMPATIBILITY_MAX} characters",
                "compatibility",
            )
    if "metadata" in front:
        value = front["metadata"]
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            add("spec/metadata", "metadata must map strings to strings", "metadata")
    if "license" in front and not isinstance(front["license"], str):
        add("spec/field-type", "license must be a string", "license")
    if "allowed-tools" in front:
        tools = front["allowed-tools"]
        if not (
            isinstance(tools, str)
            or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
        ):
            add(
                "spec/field-type",
                "allowed-tools must be a string or a list of strings",
                "allowed-tools",
            )


def trigger_findings(skill: Skill, lines: dict[str, int] | None = None) -> list[Finding]:
    """A description that never says when to use the skill gives prompts little to match.
    A blank one is spec/description-blank's alone: there is nothing here to say of it."""
    line = (lines or {}).get("description")
    found: list[Finding] = []
    if not skill.description.strip():
        return found
    if not says_when_to_use(skill.description):
        when = skill.frontmatter.get("when_to_use")
        told = (
            "; its when_to_use field does, which Claude Code lists beside it, but a router "
            "that reads the description alone never sees it"
            if isinstance(when, str) and when.strip()
            else "; name the situations and the words users type"
        )
        found.append(
            Finding(
                "retrieval/no-trigger-language",
                WARNING,
                skill.path,
                f"the description never says when to use the skill ('Use when ...'){told}",
                line,
            )
        )
    terms = set(skill.description_tokens)
    if len(terms) < SHORT_DESCRIPTION_TERMS:
        listed = f"({', '.join(sorted(terms)) or 'none'})"
        if len(script_tokens(skill.description)) >= SHORT_DESCRIPTION_TERMS:
            # Written mostly in another script: its words are there, BM25 cannot read them.
            message = (
                f"the description has {counted(len(terms), 'term')} BM25 reads {listed}: "
                "BM25 reads ASCII words only, so a prompt in the description's own script "
                "is matched by the multilingual encoder and the script overlap alone "
                "(routing.md §9.14); the English words users type for it give BM25 more"
            )
        else:
            message = (
                f"the description has {counted(len(terms), 'distinct term')} {listed}; "
                "too few for BM25 or an embedding to match real prompts"
            )
        found.append(Finding("retrieval/short-description", WARNING, skill.path, message, line))
    return found


def authored_keywords(skill: Skill) -> list[tuple[str, str]]:
    """(key, entry) for each keyword and alias as written, read like §1.4 reads them."""
    entries: list[tuple[str, str]] = []
    for key in ("keywords", "aliases"):
        value = skill.frontmatter.get(key)
        if isinstance(value, str):
            value = value.strip("[]").split(",")
        if isinstance(value, list):
            entries += [(key, str(item).strip().strip("'\"").lower()) for item in value]
    return [(key, entry) for key, entry in entries if entry]


def keyword_findings(skill: Skill, lines: dict[str, int] | None = None) -> list[Finding]:
    """Keywords that can never match, and keywords that count twice.

    §2.5 compares each whole keyword, singularised (§2.4), with the singularised single
    tokens of the prompt (reference: src/rank.rs), so an entry matches only when it is one
    token of ASCII letters and digits. Plurals match. Two entries that singularise alike
    each count, so one prompt word earns two boosts.
    """
    lines = lines or {}
    found: list[Finding] = []
    seen: dict[str, str] = {}
    for key, entry in authored_keywords(skill):
        tokens = tokenize(entry)
        if tokens != [entry]:
            split = ", ".join(repr(token) for token in tokens) or "nothing"
            found.append(
                Finding(
                    "retrieval/dead-keyword",
                    WARNING,
                    skill.path,
                    f"{key} entry {entry!r} can never match: keywords are compared with single "
                    f"prompt tokens (§2.5) and this one tokenizes to {split}",
                    lines.get(key),
                )
            )
            continue
        normal = norm_token(entry)
        if normal in seen:
            found.append(
                Finding(
                    "retrieval/double-keyword",
                    INFO,
                    skill.path,
                    f"{key} entry {entry!r} matches the same prompt word as {seen[normal]!r} "
                    f"({normal!r} after §2.4), so that word earns the keyword boost twice",
                    lines.get(key),
                )
            )
        else:
            seen[normal] = entry
    return found


def generic_name_findings(
    skill: Skill, config: Config, tuning: Tuning, lines: dict[str, int] | None = None
) -> list[Finding]:
    """Name tokens (and keywords) that are stopwords or generic words: §1.4 makes every name
    token a keyword, so `before-you-build` matches any prompt with "you" in it (§3.2).

    The message says what the boost does under the config in force: with the §9 word
    guard on it earns nothing here (but still does under the reference's cascade); with
    only the cosine guard it needs that cosine; with neither it is added to every prompt
    that has the word.
    """
    lines = lines or {}
    names = {norm_token(token) for token in tokenize(skill.name)}
    found: list[Finding] = []
    for key in dict.fromkeys(norm_token(keyword) for keyword in skill.keywords):
        if not tokenize(key):
            continue  # it can never match, in any cascade: keyword_findings says so
        if key in STOPWORDS:
            kind = "a stopword"
        elif key in GENERIC_WORDS:
            kind = "a generic word"
        else:
            continue
        where = "name token" if key in names else "keyword"
        boost = f"keyword_boost {config.keyword_boost:g}"
        if tuning.keyword_generic_guard:
            effect = (
                f"earns nothing under the active config (preset {tuning.preset!r}, "
                "keyword_generic_guard on), but the reference's cascade adds "
                f'{boost} to any prompt containing "{key}"'
            )
            severity = INFO
        elif tuning.keyword_min_cosine > 0:
            effect = (
                f'adds {boost} to any prompt containing "{key}" whose cosine with this skill '
                f"is at least keyword_min_cosine {tuning.keyword_min_cosine:.3g} (preset "
                f"{tuning.preset!r}, {tuning.origin('keyword_min_cosine') or 'pinned'})"
            )
            severity = WARNING
        else:
            effect = (
                f'adds {boost} to any prompt containing "{key}" (preset {tuning.preset!r} '
                "has no keyword guard; keyword_generic_guard = true would drop it)"
            )
            severity = WARNING
        found.append(
            Finding(
                "retrieval/generic-name-token",
                severity,
                skill.path,
                f"{where} {key!r} is {kind}: it {effect}; "
                + (
                    "a name of telling words avoids it"
                    if where == "name token"
                    else "keywords of telling words avoid it"
                ),
                lines.get("name" if where == "name token" else "keywords"),
            )
        )
    return found


BLOCK_ROWS = 512  # new rows whose cosines are computed together, against each stored block


class LintMemo:
    """What one lint of a library keeps for the next lint of a later version of it.

    The explorer lints after every save; at 26,000 skills a lint from nothing took about
    40 s of CPU, most of it on what the save did not touch. With a memo, a lint

    * takes each skill's own findings (spec, trigger language, keywords, name tokens, its
      parse warnings) from the last run when its file's content hash is the same and the
      settings they depend on (config, tuning, `claude_code`) are too;
    * takes the dense near-duplicate pairs between skills it has seen (by their files'
      content hashes, with the dense model and the part of the body it reads in the
      key: a vector is a function of its text, and the text of its file) from the last
      run, and computes cosines only for the rows of new files against all.

    Library-wide figures that move with every edit (BM25 statistics, document
    frequencies, the listing budget) are computed again each time, exactly. The answer
    equals a lint without a memo. Only one lint may use a memo at a time.
    """

    def __init__(self) -> None:
        self._settings: object = None
        # Each file's findings as plain rows (Finding's fields): see skill_findings.
        self._skills: dict[str, _KeptFindings] = {}  # SKILL.md path -> its findings
        self._dense_key: object = None
        self._hash_ids: dict[str, int] = {}  # file content hash -> a number of its own
        # Pairs of numbered descriptions over the threshold: first < second, and cosine.
        self._pairs: tuple[np.ndarray, np.ndarray, np.ndarray] = _no_pairs()

    def skill_findings(
        self, settings: object, skills: Sequence[Skill], make: Any
    ) -> Iterator[list[Finding]]:
        """Each skill's own findings in turn, from the last run where its file is
        unchanged; the memo keeps this run's once the last has been read.

        They are kept between runs as tuples of strings, which the cyclic collector stops
        tracking: a memo of 26,000 skills' findings kept as lists of Finding objects was
        about half of what each full collection walked, and a collection runs on whichever
        thread allocates, often the explorer's event loop. An unchanged file keeps its
        entry, the same tuple, rather than a new key made at every run to outlive it."""
        if settings != self._settings:
            self._settings, self._skills = settings, {}
        out: dict[str, _KeptFindings] = {}
        for skill in skills:
            kept = self._skills.get(skill.path)
            if kept is None or kept[0] != skill.hash:
                findings = make(skill)
                kept = (skill.hash, tuple(astuple(finding) for finding in findings))
                yield findings
            else:
                yield [Finding(*row) for row in kept[1]]
            out[skill.path] = kept
        self._skills = out  # only the current files: a save never leaves its old ones behind

    def dense_pairs(
        self,
        key: object,
        hashes: Sequence[str],
        vectors: DenseRows | np.ndarray,
        threshold: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(i, j, cosine) with i < j over positions, for every pair at or over `threshold`."""
        if key != self._dense_key:
            self._dense_key, self._hash_ids, self._pairs = key, {}, _no_pairs()
        ids = self._hash_ids
        known = len(ids)
        row_ids = np.fromiter(
            (ids.setdefault(digest, len(ids)) for digest in hashes),
            dtype=np.int64,
            count=len(hashes),
        )
        alive = np.zeros(len(ids), dtype=bool)
        alive[row_ids] = True
        first, second, cosine = self._pairs
        keep = alive[first] & alive[second]
        first, second, cosine = first[keep], second[keep], cosine[keep]
        # Rows of files not seen before (one row per content): cosines against all.
        new_rows = np.flatnonzero(row_ids >= known)
        if len(new_rows):
            # One row and one column per content: its first position.
            _, first_at = np.unique(row_ids, return_index=True)
            is_column = np.zeros(len(row_ids), dtype=bool)
            is_column[first_at] = True
            new_rows = np.flatnonzero(is_column & (row_ids >= known))
            parts = [(first, second, cosine)]
            # Against the snapshot's own row blocks, one at a time: a product of these rows
            # with the whole matrix, and the gathered copy of it, were 93 MB at 26,000
            # skills, the explorer's peak memory while its first lint ran.
            blocks = DenseRows.of(vectors).blocks
            for start in range(0, len(new_rows), BLOCK_ROWS):
                rows = new_rows[start : start + BLOCK_ROWS]
                queries = vectors[rows]
                offset = 0
                for block in blocks:
                    checkpoint()
                    product = queries @ block.T
                    at_row, at_col = np.nonzero(product >= threshold)
                    value = product[at_row, at_col].astype(np.float64)
                    at_col += offset
                    offset += len(block)
                    keep = is_column[at_col]
                    a, b = row_ids[rows[at_row[keep]]], row_ids[at_col[keep]]
                    value = value[keep]
                    # A pair of two new files is found from both rows: keep it once. A file
                    # with itself is kept too: it pairs the skills that share it, now or later.
                    once = (b < known) | (b >= a)
                    a, b, value = a[once], b[once], value[once]
                    parts.append((np.minimum(a, b), np.maximum(a, b), value))
            first = np.concatenate([part[0] for part in parts])
            second = np.concatenate([part[1] for part in parts])
            cosine = np.concatenate([part[2] for part in parts])
        # Forget contents no row holds any more, renumbering the rest compactly.
        if len(ids) > 2 * len(hashes) + 64:
            live = np.flatnonzero(alive)
            renumber = np.full(len(ids), -1, dtype=np.int64)
            renumber[live] = np.arange(len(live))
            self._hash_ids = {
                digest: int(renumber[number]) for digest, number in ids.items() if alive[number]
            }
            first, second, row_ids = renumber[first], renumber[second], renumber[row_ids]
        self._pairs = (first, second, cosine)
        return _positions(first, second, cosine, row_ids)


def _no_pairs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty.copy(), np.zeros(0, dtype=np.float64)


def _positions(
    first: np.ndarray, second: np.ndarray, cosine: np.ndarray, row_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of numbered contents as pairs of positions: a file's content held by several
    skills (copies) stands for each of them (two copies: a pair of their own, cosine of
    the vector with itself)."""
    order = np.argsort(row_ids, kind="stable")
    sorted_ids = row_ids[order]
    starts = np.searchsorted(sorted_ids, np.arange(int(row_ids.max(initial=-1)) + 2))
    counts = np.diff(starts)
    single = (counts[first] == 1) & (counts[second] == 1)
    simple = single & (first != second)
    shared = ~single  # a content that several skills hold
    i = order[starts[first[simple]]]
    j = order[starts[second[simple]]]
    out_i, out_j, out_c = [np.minimum(i, j)], [np.maximum(i, j)], [cosine[simple]]
    for a, b, value in zip(
        first[shared].tolist(), second[shared].tolist(), cosine[shared].tolist(), strict=True
    ):
        rows_a = order[starts[a] : starts[a + 1]].tolist()
        rows_b = order[starts[b] : starts[b + 1]].tolist()
        pairs = {(min(x, y), max(x, y)) for x in rows_a for y in rows_b if x != y}
        if pairs:
            out_i.append(np.array([p[0] for p in pairs], dtype=np.int64))
            out_j.append(np.array([p[1] for p in pairs], dtype=np.int64))
            out_c.append(np.full(len(pairs), value))
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_c)


class _Growing:
    """An array appended to in place, doubling its room when full: one buffer however
    many pieces are added."""

    def __init__(self, dtype: type) -> None:
        self._data: np.ndarray = np.zeros(1024, dtype=dtype)
        self._size = 0

    def extend(self, piece: np.ndarray) -> None:
        end = self._size + len(piece)
        if end > len(self._data):
            grown = np.zeros(max(end, 2 * len(self._data)), dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : end] = piece
        self._size = end

    def array(self) -> np.ndarray:
        """The pieces joined, in a buffer of their size (the room left over is freed)."""
        return self._data[: self._size].copy()


class Pairs(NamedTuple):
    """Near-duplicate pairs as parallel arrays, in (first, second) order, first < second."""

    first: np.ndarray  # int64
    second: np.ndarray  # int64
    dense: np.ndarray  # float64 cosine; NaN without a dense model
    forward: np.ndarray  # float64 normalised BM25 of first's description on second
    backward: np.ndarray  # ... and of second's on first


def near_duplicate_pairs(
    index: Index, *, threshold: float = NEAR_DUPLICATE_COSINE, memo: LintMemo | None = None
) -> list[tuple[int, int, float | None, float, float]]:
    """(i, j, dense cosine, cross[i, j], cross[j, i]) for i < j, in (i, j) order."""
    pairs = near_duplicate_arrays(index, threshold=threshold, memo=memo)
    return [
        (i, j, None if dense != dense else dense, forward, backward)
        for i, j, dense, forward, backward in zip(
            pairs.first.tolist(),
            pairs.second.tolist(),
            pairs.dense.tolist(),
            pairs.forward.tolist(),
            pairs.backward.tolist(),
            strict=True,
        )
    ]


def near_duplicate_arrays(
    index: Index, *, threshold: float = NEAR_DUPLICATE_COSINE, memo: LintMemo | None = None
) -> Pairs:
    """Every pair with a dense cosine over `threshold`, or whose descriptions each score
    at least `NEAR_DUPLICATE_BM25` as a BM25 query on the other.

    Never all pairs in memory, and no Python object per pair: the cosines come
    `BLOCK_ROWS` rows at a time from the vectors already computed (with a `memo`, only
    rows of descriptions it has not seen), keeping the pairs over `threshold`; each
    description is scored as a BM25 query on every document (`CrossScorer`), keeping the
    scores over the bar and those of its dense partners. Exact, not sampled: the pairs
    and scores of the n x n matrices, to the last few bits of a score (26,000 skills:
    tens of MB instead of 8 GB)."""
    n = len(index)
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return Pairs(empty, empty, np.zeros(0), np.zeros(0), np.zeros(0))
    vectors = index.vectors
    dense_i, dense_j, dense_c = empty, empty, np.zeros(0)
    if vectors is not None:
        key = (index.models.status.dense, vectors.shape[1], index.dense_body_chars, threshold)
        # The hash each skill holds already, not a new string per skill held through the
        # pass (see CrossScorer on objects that outlive a step).
        hashes = [skill.hash for skill in index.skills]
        dense_i, dense_j, dense_c = (memo or LintMemo()).dense_pairs(
            key, hashes, vectors, threshold
        )
    # Each skill's dense partners, both ways, as CSR.
    ends = np.concatenate([dense_i, dense_j])
    others = np.concatenate([dense_j, dense_i])
    order = np.argsort(ends, kind="stable")
    partner_of = others[order]
    partner_at = np.searchsorted(ends[order], np.arange(n + 1))
    # Cross-scores wanted: (query, document, score), keyed query * n + document, each
    # query's appended to two growing arrays rather than kept as two arrays of its own
    # until the pass ends (see CrossScorer on objects that outlive a query).
    keys, values = _Growing(np.int64), _Growing(np.float64)
    scorer = CrossScorer(index.lexical)
    for i, skill in enumerate(index.skills):
        checkpoint()
        terms = tuple(dict.fromkeys(skill.description_tokens))  # LexicalIndex.query_terms
        partners = np.unique(partner_of[partner_at[i] : partner_at[i + 1]])
        hits, scores = scorer.hits(terms, NEAR_DUPLICATE_BM25, partners)
        other = hits != i
        keys.extend(i * n + hits[other])
        values.extend(scores[other])
    del scorer
    cross_keys, cross = keys.array(), values.array()
    del keys, values

    def lookup(query: np.ndarray, document: np.ndarray) -> np.ndarray:
        wanted = query * n + document
        at = np.minimum(np.searchsorted(cross_keys, wanted), max(len(cross_keys) - 1, 0))
        hit = cross_keys[at] == wanted if len(cross_keys) else np.zeros(len(wanted), bool)
        return np.where(hit, cross[at] if len(cross) else 0.0, 0.0)

    # Keys are ascending already: queries in order, each one's documents ascending. Only
    # the keys over the bar are split into (query, document).
    query, document = np.divmod(cross_keys[cross >= NEAR_DUPLICATE_BM25], n)
    lower = query < document
    lexical_i, lexical_j = query[lower], document[lower]
    del query, document, lower
    both = lookup(lexical_j, lexical_i) >= NEAR_DUPLICATE_BM25
    first = np.concatenate([dense_i, lexical_i[both]])
    second = np.concatenate([dense_j, lexical_j[both]])
    cosine = np.concatenate([dense_c, np.full(int(both.sum()), np.nan)])
    pair_keys, at = np.unique(first * n + second, return_index=True)  # a dense pair first
    first, second = np.divmod(pair_keys, n)
    cosine = cosine[at]
    if vectors is not None:
        for k in np.flatnonzero(np.isnan(cosine)).tolist():  # lexical pairs: their cosine
            cosine[k] = float(vectors[first[k]] @ vectors[second[k]])
    return Pairs(first, second, cosine, lookup(first, second), lookup(second, first))


class NearDuplicates:
    """Pairs whose descriptions say nearly the same thing make an unstable winner: a dense
    cosine above `threshold`, or each description scoring high as a BM25 query on the other.

    Every pair is found (exactly, see `near_duplicate_arrays`), but each skill is told
    about at most `shown` partners, its closest (dense cosine, else the lower
    cross-score), and gets one more finding counting the others. A library of families of
    variants has pairs quadratic in the family size: 605,000 findings at 26,000
    replicated skills, which nobody reads and which held about 0.9 GB in the explorer.
    Every skill with a near-duplicate is still flagged, with its closest ones named. The
    pairs are kept as arrays; a skill's findings are made when asked for (`of`)."""

    def __init__(
        self,
        index: Index,
        *,
        threshold: float = NEAR_DUPLICATE_COSINE,
        shown: int | None = NEAR_DUPLICATE_SHOWN,
        memo: LintMemo | None = None,
    ) -> None:
        self._skills, self._shown = index.skills, shown
        dense = index.vectors is not None
        self._what = "dense cosine" if dense else "lower BM25 cross-score"
        self.library: list[Finding] = []  # of the library rather than of one skill
        n = len(index)
        if n < 2:
            self._pairs, self._starts = None, np.zeros(n + 1, dtype=np.int64)
            return
        if not dense:
            self.library.append(
                Finding(
                    "retrieval/near-duplicate",
                    INFO,
                    _library_path(index, index.roots),
                    "no dense model: near-duplicates checked with BM25 cross-scores only",
                )
            )
        pairs = near_duplicate_arrays(index, threshold=threshold, memo=memo)
        closeness = np.where(
            np.isnan(pairs.dense), np.minimum(pairs.forward, pairs.backward), pairs.dense
        )
        # Each pair twice, once for each of its skills: closest partner first, then by index.
        skill = np.concatenate([pairs.first, pairs.second])
        partner = np.concatenate([pairs.second, pairs.first])
        close = np.concatenate([closeness, closeness])
        pair = np.concatenate([np.arange(len(closeness))] * 2)
        order = np.lexsort((partner, -close, skill))
        self._pairs = pairs
        self._partner, self._close, self._pair = partner[order], close[order], pair[order]
        self._starts = np.searchsorted(skill[order], np.arange(n + 1))

    def of(self, position: int) -> list[Finding]:
        """The findings of the skill at `position` in the index."""
        start, end = int(self._starts[position]), int(self._starts[position + 1])
        if start == end:
            return []
        skills, own = self._skills, self._skills[position]
        limit = end - start if self._shown is None else max(self._shown, 1)
        found = [
            Finding("retrieval/near-duplicate", WARNING, own.path, self._message(int(p)))
            for p in self._pair[start : min(end, start + limit)]
        ]
        rest = end - start - limit
        if rest > 0:
            lowest, highest = float(self._close[end - 1]), float(self._close[start + limit])
            examples = ", ".join(
                skills[int(j)].id
                for j in self._partner[start + limit : min(end, start + limit + 3)]
            )
            found.append(
                Finding(
                    "retrieval/near-duplicate",
                    INFO,
                    own.path,
                    f"{own.id} has {rest} more near-duplicate{'s' if rest > 1 else ''} "
                    f"beyond the {limit} closest ({self._what} {lowest:.2f}-{highest:.2f}), "
                    f"e.g. {examples}",
                )
            )
        return found

    def _message(self, p: int) -> str:
        pairs = self._pairs
        assert pairs is not None
        a, b = self._skills[int(pairs.first[p])], self._skills[int(pairs.second[p])]
        dense = float(pairs.dense[p])
        dense_text = "no dense model" if dense != dense else f"dense cosine {dense:.2f}"
        return (
            f"{a.id} and {b.id} have near-duplicate descriptions ({dense_text}, BM25 "
            f"cross-scores {float(pairs.forward[p]):.2f} / {float(pairs.backward[p]):.2f}): "
            "say what makes each one different"
        )


class GenericTerms:
    """A description made almost only of terms most skills share gives BM25 nothing to
    tell it apart (§5.2 idf is near zero for each of them)."""

    def __init__(self, index: Index) -> None:
        self._index, self._n = index, len(index)
        self._df: dict[str, int] = {}  # each term's document frequency, read once

    def of(self, skill: Skill) -> list[Finding]:
        n = self._n
        if n < GENERIC_MIN_LIBRARY:
            return []
        terms = sorted(set(skill.description_tokens))  # match_tokens(description)
        if not terms:
            return []
        df = self._df
        for term in terms:
            if term not in df:
                df[term] = self._index.lexical.df(term)
        common = [term for term in terms if df[term] >= GENERIC_DF_FRACTION * n]
        if len(common) < GENERIC_TERMS_FRACTION * len(terms):
            return []
        rare = sorted(set(terms) - set(common))
        return [
            Finding(
                "retrieval/generic-terms",
                WARNING,
                skill.path,
                f"{len(common)} of {len(terms)} description terms appear in at least "
                f"{GENERIC_DF_FRACTION:.0%} of the {n} skills; "
                + (
                    f"only {', '.join(rare)} set it apart" if rare else "none of them sets it apart"
                ),
            )
        ]


def listing_text(skill: Skill) -> str:
    """What Claude Code lists for a skill: the description plus when_to_use, if any."""
    extra = skill.frontmatter.get("when_to_use")
    text = " ".join(skill.description.split())
    if isinstance(extra, str) and extra.strip():
        text += " " + " ".join(extra.split())
    return text


NAMES_SHOWN = 5  # of the skills over the listing budget, in its one finding


def _first_names(names: Sequence[str]) -> str:
    """': a, b' or ', the first five: a, b, c, d, e, and 109 more': a library of 26,000
    skills has that many names past the budget, and each has a name-only finding."""
    if len(names) <= NAMES_SHOWN:
        return f": {', '.join(names)}"
    first = ", ".join(names[:NAMES_SHOWN])
    return f", the first {NAMES_SHOWN}: {first}, and {len(names) - NAMES_SHOWN} more"


class Listing:
    """Simulate Claude Code's skill listing: entries cut at 1,536 characters, the whole
    list in 1 % of the context window x 4 characters, the overflow listed by name only.

    The host drops the least-used skills first; we have no usage data, so the listing is
    taken in path order and the tail overflows. Skills with disable-model-invocation are
    not shown to the model and take no room. The budget is worked out for the whole list
    at once (`library`); a skill's own findings are made when asked for (`of`).
    """

    def __init__(self, skills: Sequence[Skill], context_tokens: int, library_path: str) -> None:
        self._skills = skills
        self._cut: dict[int, int] = {}  # position -> its listing text's length, if cut
        self._dropped = np.zeros(len(skills), dtype=bool)  # listed by name only
        self.library: list[Finding] = []  # the budget's finding, at the library's path
        budget = int(context_tokens * LISTING_SHARE * CHARS_PER_TOKEN)
        # Positions and lengths as arrays: a list of 26,000 numbers is 26,000 objects,
        # held while the rest of lint runs (see CrossScorer on objects that outlive a step).
        listed = np.flatnonzero(
            np.fromiter(
                (skill.frontmatter.get("disable-model-invocation") is not True for skill in skills),
                dtype=bool,
                count=len(skills),
            )
        )
        full = np.zeros(len(listed), dtype=np.int64)
        short = np.zeros(len(listed), dtype=np.int64)
        for k, at in enumerate(listed):
            checkpoint()
            position = int(at)
            skill = skills[position]
            text = listing_text(skill)
            if len(text) > LISTING_ENTRY_MAX:
                self._cut[position] = len(text)
            full[k] = len(f"- {skill.id}: {text[:LISTING_ENTRY_MAX]}")
            short[k] = len(f"- {skill.id}")
        if not len(listed):
            return
        newlines = len(listed) - 1
        total = int(full.sum()) + newlines
        if total <= budget:
            self.library.append(
                Finding(
                    "claude-code/listing-budget",
                    INFO,
                    library_path,
                    f"skill listing is {total:,} characters of a {budget:,}-character budget "
                    f"(1 % of {context_tokens:,} tokens x {CHARS_PER_TOKEN})",
                )
            )
            return
        # keep the first `keep` entries whole and the rest as names: the largest keep that fits
        head = np.concatenate(([0], np.cumsum(full)))
        tail = np.concatenate((np.cumsum(short[::-1])[::-1], [0]))
        fits = np.nonzero(head + tail + newlines <= budget)[0]
        keep = int(fits.max()) if len(fits) else 0
        dropped = listed[keep:]
        self._dropped[dropped] = True
        self.library.append(
            Finding(
                "claude-code/listing-budget",
                WARNING,
                library_path,
                f"skill listing is {total:,} characters, over the {budget:,}-character budget "
                f"(1 % of {context_tokens:,} tokens x {CHARS_PER_TOKEN}); {len(dropped)} of "
                f"{len(listed)} skills would be listed by name only"
                f"{_first_names([skills[position].id for position in dropped.tolist()])}. "
                "Claude Code drops the least-used first; with no usage data we assume path "
                "order, so the tail overflows",
            )
        )

    def of(self, position: int) -> list[Finding]:
        """The findings of the skill at `position`: its entry cut, or listed by name only."""
        path = self._skills[position].path
        found = []
        length = self._cut.get(position)
        if length is not None:
            found.append(
                Finding(
                    "claude-code/truncated",
                    WARNING,
                    path,
                    f"Claude Code lists {length} characters of description cut at "
                    f"{LISTING_ENTRY_MAX}: the last {length - LISTING_ENTRY_MAX} never "
                    "reach the model",
                )
            )
        if self._dropped[position]:
            found.append(
                Finding(
                    "claude-code/name-only",
                    WARNING,
                    path,
                    "over the listing budget, Claude Code would show this skill by name only, "
                    "without its description, so the model rarely picks it (assuming path "
                    "order)",
                )
            )
        return found
