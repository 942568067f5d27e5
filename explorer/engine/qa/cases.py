"""Labelled routing cases: how a library *should* route, read from TOML or the reference's TSV.

A case is one prompt with the skill ids that should be injected (none for a negative).
Both formats give the same `Case` records, each remembering its file and line, so that
every later message (a bad row, a failing case) can point at the line to edit.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from explorer.engine.base.text import scrub_surrogates
from explorer.engine.base.toml_reading import TomlUnreadable, read_toml_text

# Ours (direct, indirect, confusable, negative), the reference's TSV corpora's (task,
# followup, distract, borderline; reference: tests/data/README.md and examples/eval.rs) and
# skill-creator's trigger evals (should-trigger / should-not-trigger, one skill each).
SHOULD_TRIGGER, SHOULD_NOT_TRIGGER = "should-trigger", "should-not-trigger"
KINDS = (
    "direct",
    "indirect",
    "task",
    "followup",
    "distract",
    "confusable",
    "negative",
    "borderline",
    SHOULD_TRIGGER,
    SHOULD_NOT_TRIGGER,
)
# Observed and reported, never counted in the headline figures (the reference's rule for
# `borderline`: a prompt that plausibly matches a skill, but need not).
OBSERVE_ONLY = frozenset({"borderline"})
SPLITS = ("train", "validation")
NONE_MARK = "(none)"  # the TSV format's expected id for a negative
# A TSV comment line `# group: near-miss` names the sub-kind of the cases below it. A
# near-miss is a negative that brushes a skill's topic or name but asks nothing of it
# ("who makes Chromecast"); calibration holds it to its own budget (docs/routing.md,
# "§9.9 Calibration over real libraries").
NEAR_MISS = "near-miss"
GROUPS = ("direct", "indirect", "confusable", NEAR_MISS, "negative")
_GROUP_RE = re.compile(r"^#\s*group:\s*(\S+)\s*$")
TOML_KEYS = frozenset({"prompt", "expect", "kind", "note", "split", "context", "cwd"})
_CASE_HEADER_RE = re.compile(r"^\s*\[\[\s*case\s*\]\]\s*(?:#.*)?$")


class CaseError(ValueError):
    """A cases file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class Case:
    """One labelled prompt. `expect` empty means nothing should be injected."""

    prompt: str
    expect: tuple[str, ...]
    kind: str
    note: str = ""
    split: str | None = None
    source: str = ""
    line: int | None = None
    context: tuple[str, ...] = ()  # earlier prompts of the conversation, oldest first
    cwd: str = ""  # the working directory for the project channel (§3.5); "" = none
    reject: tuple[str, ...] = ()  # skills that must not be injected (should-not-trigger)
    group: str = ""  # the sub-kind from a TSV `# group:` comment; "" = the kind itself

    @property
    def positive(self) -> bool:
        return bool(self.expect)

    @property
    def category(self) -> str:
        """The finer of group and kind: what reports break figures down by."""
        return self.group or self.kind

    @property
    def near_miss(self) -> bool:
        return self.group == NEAR_MISS

    @property
    def observe_only(self) -> bool:
        return self.kind in OBSERVE_ONLY

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "expect": list(self.expect),
            "kind": self.kind,
            "note": self.note,
            "split": self.split,
            "source": self.source,
            "line": self.line,
            "context": list(self.context),
            "cwd": self.cwd,
            "reject": list(self.reject),
        }


@dataclass(frozen=True)
class CaseSet:
    """The cases of one file, plus warnings worth showing (duplicates, unknown keys)."""

    cases: tuple[Case, ...]
    warnings: tuple[str, ...] = ()
    source: str = ""

    def __len__(self) -> int:
        return len(self.cases)


def load_cases(path: str | os.PathLike[str], *, skill: str | None = None) -> CaseSet:
    """Read a cases file: `.toml` as TOML, `.tsv`/`.txt` as the reference's TSV, `.json` as
    a skill-creator trigger eval set for `skill`, else sniff."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise CaseError(f"{file}: cannot read cases file: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise CaseError(f"{file}: not UTF-8 text (byte {error.start})") from error
    suffix = file.suffix.lower()
    if suffix == ".json" or (suffix not in (".toml", ".tsv", ".txt") and text.lstrip()[:1] in "[{"):
        return parse_trigger_evals(text, str(file), skill)
    if skill is not None:
        raise CaseError(f"{file}: --skill is for skill-creator trigger eval sets (.json)")
    if suffix == ".toml":
        return parse_toml_cases(text, str(file))
    if suffix in (".tsv", ".txt"):
        return parse_tsv_cases(text, str(file))
    return (
        parse_toml_cases(text, str(file))
        if "[[case]]" in text
        else parse_tsv_cases(text, str(file))
    )


def parse_toml_cases(text: str, source: str = "<cases>") -> CaseSet:
    """`[[case]]` tables with prompt, expect (list), kind, optional note and split."""
    try:
        data = read_toml_text(text)
    except TomlUnreadable as error:
        raise CaseError(f"{source}: {error}") from error
    tables = data.get("case", [])
    if not isinstance(tables, list) or not all(isinstance(item, dict) for item in tables):
        raise CaseError(f"{source}: 'case' must be an array of tables ([[case]])")
    unexpected = sorted(key for key in data if key != "case")
    warnings = [f"{source}: top-level key {key!r} ignored" for key in unexpected]
    # tomllib keeps no positions: the n-th `[[case]]` header line is the n-th table.
    header_lines = [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if _CASE_HEADER_RE.match(line)
    ]
    cases: list[Case] = []
    for position, table in enumerate(tables):
        line = header_lines[position] if position < len(header_lines) else None
        cases.append(_case_from_table(table, source, line, warnings))
    return CaseSet(tuple(cases), tuple(warnings + _duplicate_warnings(cases)), source)


def _case_from_table(
    table: Mapping[str, Any], source: str, line: int | None, warnings: list[str]
) -> Case:
    where = f"{source}:{line}" if line else source
    for key in sorted(set(table) - TOML_KEYS):
        warnings.append(f"{where}: unknown key {key!r} ignored")
    prompt = table.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise CaseError(f"{where}: 'prompt' is missing or empty")
    if "expect" not in table:
        raise CaseError(f"{where}: 'expect' is missing (use expect = [] for a negative)")
    expect = table["expect"]
    if isinstance(expect, str):
        expect = [expect]
    if not isinstance(expect, list) or not all(isinstance(item, str) for item in expect):
        raise CaseError(f"{where}: 'expect' must be a list of skill ids, got {expect!r}")
    kind = table.get("kind")
    if not isinstance(kind, str):
        raise CaseError(f"{where}: 'kind' is missing; expected one of {', '.join(KINDS)}")
    note = table.get("note", "")
    if not isinstance(note, str):
        raise CaseError(f"{where}: 'note' must be a string")
    split = table.get("split")
    if split is not None and split not in SPLITS:
        raise CaseError(f"{where}: split = {split!r}; expected one of {', '.join(SPLITS)}")
    context = table.get("context", [])
    if isinstance(context, str):
        context = [context]
    if not isinstance(context, list) or not all(isinstance(item, str) for item in context):
        raise CaseError(f"{where}: 'context' must be a list of earlier prompts")
    cwd = table.get("cwd", "")
    if not isinstance(cwd, str):
        raise CaseError(f"{where}: 'cwd' must be a directory path")
    case = _checked(prompt, expect, kind, note, split, source, line)
    return replace(case, context=tuple(context), cwd=cwd)


def parse_tsv_cases(text: str, source: str = "<cases>") -> CaseSet:
    """The reference router's format: `expected-id TAB kind TAB prompt`, one case a line,
    with two optional columns (reference: tests/data/README.md, examples/eval.rs): the
    earlier turns, oldest first, separated by `|`, and a working directory.

    `(none)` marks a negative, several ids are comma-separated, `#` starts a comment
    line, blank lines are skipped, and so is a first line of column names (its kind
    column reads `kind`, as a spreadsheet exports it). TSV has no split column: every
    case gets split None. A `# group: NAME` comment gives the cases below it that group
    (NAME one of GROUPS).
    """
    cases: list[Case] = []
    group = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        named = _GROUP_RE.match(line.strip())
        if named:
            group = named.group(1)
            if group not in GROUPS:
                raise CaseError(
                    f"{source}:{number}: unknown group {group!r}; expected one of "
                    f"{', '.join(GROUPS)}"
                )
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t", 4)
        if len(fields) < 3:
            raise CaseError(
                f"{source}:{number}: expected 3 tab-separated fields "
                f"(expected-id, kind, prompt), found {len(fields)}"
            )
        ids_field, kind, prompt = (field.strip() for field in fields[:3])
        if not cases and kind.lower() == "kind":  # column names, above the first case
            continue
        context = tuple(turn.strip() for turn in (fields[3] if len(fields) > 3 else "").split("|"))
        cwd = fields[4].strip() if len(fields) > 4 else ""
        if not ids_field:
            raise CaseError(f"{source}:{number}: empty expected id (use {NONE_MARK} for none)")
        if not prompt:
            raise CaseError(f"{source}:{number}: empty prompt")
        if ids_field == NONE_MARK:
            expect: list[str] = []
        else:
            expect = [part.strip() for part in ids_field.split(",")]
            if not all(expect):
                raise CaseError(f"{source}:{number}: empty id in {ids_field!r}")
        case = _checked(prompt, expect, kind, "", None, source, number)
        if group == NEAR_MISS and case.positive:
            raise CaseError(f"{source}:{number}: a near-miss expects no skill")
        cases.append(replace(case, context=tuple(t for t in context if t), cwd=cwd, group=group))
    return CaseSet(tuple(cases), tuple(_duplicate_warnings(cases)), source)


def parse_trigger_evals(text: str, source: str = "<cases>", skill: str | None = None) -> CaseSet:
    """A trigger eval set for one skill, in the layouts authors write them (skill-creator's
    two, and the others found in public skills' repositories):

    * a JSON list of items, or an object holding one under `evals`, `queries`, `cases`,
      `test_cases`, `tests`, `prompts` or `items` (`train` and `validation` keep their split);
    * an item: its text under `query`, `prompt`, `input`, `utterance`, `text` or `request`,
      its label under `should_trigger` (true/false), or `expect`/`expected`/
      `expected_trigger` ("trigger", "select", "no-trigger", "do_not_trigger", "skip", ...),
      or the skills it should load under `expectedSkills`;
    * or an object of lists labelled by their key: `should_trigger`/`positive`/`should` and
      `should_not_trigger`/`negative`/`should_not`/`near_neighbor`, each of texts or items.

    The skill is `skill` (--skill), else the file's `skill_name` or `skill`. A
    should-trigger query passes when the skill is injected; a should-not-trigger one when
    it is not (other skills may be). Anything else an item holds is the author's and is
    read past.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        # "Invalid control character at": the position is the line and column before it.
        reason = error.msg.removesuffix(" at")
        where = f"{source}:{error.lineno}:{error.colno}"
        raise CaseError(f"{where}: invalid JSON ({reason})") from error
    except RecursionError as error:
        raise CaseError(f"{source}: invalid JSON (nested too deeply)") from error
    except ValueError as error:  # an integer of more digits than Python converts
        raise CaseError(f"{source}: invalid JSON ({str(error).split(':')[0]})") from error
    wanted = skill  # --skill: in a set over several skills, only this one's items
    named = _skill_named(data) if isinstance(data, dict) else None
    if not skill:
        skill = named
    # The file says whose evals it holds, and it is not the skill asked for: a wrong file,
    # most likely (a display name such as "Plan Grill" for plan-grill is the same skill).
    mismatch = bool(named and wanted and _slug(named) != _slug(wanted))
    try:
        entries = _trigger_entries(data, source)
    except RecursionError as error:  # one call per level of objects in objects
        raise CaseError(f"{source}: skill sets nested too deeply") from error
    locate = _ItemLines(text)
    cases: list[Case] = []
    skipped: list[str] = []  # an item the set cannot use is reported; the others are kept
    others: set[str] = set()  # skills of the items left out for --skill
    for position, (item, label, split, owner) in enumerate(entries):
        query = _item_text(item)
        line = locate.next(query) if query else None
        where = f"{source}:{line}" if line else f"{source} item {position + 1}"
        about = (_skill_named(item) if isinstance(item, dict) else None) or owner
        subject = about or skill  # the skill this item is about
        if wanted and about and about != wanted:
            others.add(about)
            continue
        if query is None:
            keys = "', '".join(TEXT_KEYS)
            skipped.append(f"{where}: skipped: no prompt text (one of '{keys}')")
            continue
        try:
            expect, trigger = _item_label(item, label, subject, where)
        except CaseError as error:
            skipped.append(f"{error}; skipped")
            continue
        if trigger is None:
            hint = "an output eval, with no should_trigger, is not a trigger eval"
            skipped.append(f"{where}: skipped: 'should_trigger' must be true or false ({hint})")
            continue
        if trigger and not expect:
            raise CaseError(f"{source}: a trigger eval set is about one skill: pass --skill ID")
        # Should not trigger, about no skill in particular (`"expectedSkills": []` in a set
        # over several): nothing at all should be injected, a plain negative.
        quiet_kind = SHOULD_NOT_TRIGGER if subject else "negative"
        cases.append(
            Case(
                prompt=query,
                expect=expect if trigger else (),
                kind=SHOULD_TRIGGER if trigger else quiet_kind,
                split=split,
                source=source,
                line=line,
                reject=(subject,) if subject and not trigger else (),
            )
        )
    if others and cases:
        names = ", ".join(sorted(others))
        skipped.append(f"{source}: the items about other skills ({names}) are left out")
    if mismatch:
        skipped.insert(
            0,
            f"{source}: the file's skill_name is {named!r}, yet its cases are read as those of "
            f"{wanted!r}, the skill asked for",
        )
    if not cases:
        first = f" ({skipped[0]})" if skipped else ""
        raise CaseError(f"{source}: no trigger eval in it that can be run{first}")
    return CaseSet(tuple(cases), tuple(skipped + _duplicate_warnings(cases)), source)


OWN_EVAL_DIRS = ("evals", "eval")  # beside SKILL.md, where skills' repositories keep them


def own_trigger_evals(skills: Iterable[tuple[str, str]]) -> CaseSet:
    """The trigger eval sets skills ship in their own folders (`evals/*.json` beside
    SKILL.md), each read for its skill: `skills` gives (id, directory). A JSON file there
    that is no trigger eval set (skill-creator's output evals live in evals/evals.json too)
    is passed over with a warning; so is a set naming another skill's items only."""
    cases: list[Case] = []
    warnings: list[str] = []
    for skill, directory in skills:
        for folder in OWN_EVAL_DIRS:
            for path in sorted((Path(directory) / folder).glob("*.json")):
                try:
                    found = load_cases(path, skill=skill)
                except CaseError as error:
                    warnings.append(f"{error}; not read as {skill}'s trigger evals")
                    continue
                cases += found.cases
                warnings += found.warnings
    return CaseSet(tuple(cases), tuple(warnings), "the skills' own trigger evals")


# Where authors put each part of a trigger eval (see parse_trigger_evals).
ITEM_LISTS = ("evals", "queries", "cases", "test_cases", "tests", "prompts", "items")
SPLIT_LISTS = ("train", "validation")
POSITIVE_LISTS = ("should_trigger", "positive", "positives", "should", "intended_activations")
NEGATIVE_LISTS = (
    "should_not_trigger",
    "negative",
    "negatives",
    "should_not",
    "non_activations",
    "near_neighbor",
    "near_neighbors",
    "near_miss",
    "near_misses",
)
TEXT_KEYS = ("query", "prompt", "input", "utterance", "text", "request")
LABEL_KEYS = ("should_trigger", "expect", "expected", "expected_trigger", "trigger")
POSITIVE_WORDS = {"trigger", "true", "yes", "select", "selected", "positive", "load", "activate"}
NEGATIVE_PREFIXES = ("no", "not", "do_not", "dont", "skip", "negative", "false", "none", "never")

SKILL_KEYS = ("skill_name", "skill", "expected_skill", "expect_skill")
# An item, the label and the split its list gives it, and the skill a set over several
# skills files it under ({"skills": {"pdf": {...}}} or {"pdf": {...}, "xlsx": {...}}).
Entry = tuple[Any, bool | None, str | None, str | None]


def _slug(name: str) -> str:
    """A skill's name as an id would spell it: "Plan Grill" and plan-grill are one skill."""
    return "-".join(name.lower().replace("_", " ").split())


def _skill_named(data: Mapping[str, Any]) -> str | None:
    for key in SKILL_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _trigger_entries(data: Any, source: str) -> list[Entry]:
    """Every item of the set with the label, split and skill its enclosing lists give it."""
    if isinstance(data, dict):
        wrapped = isinstance(data.get("skills"), dict)
        sets = data["skills"] if wrapped else data
        kinds = (dict, list) if wrapped else dict
        if sets and all(isinstance(value, kinds) for value in sets.values()):
            return [
                (item, label, split, name)
                for name, value in sets.items()
                for item, label, split, _ in _trigger_entries(value, source)
            ]
    return [(item, label, split, None) for item, label, split in _listed_entries(data, source)]


def _listed_entries(data: Any, source: str) -> list[tuple[Any, bool | None, str | None]]:
    layouts = (
        f'{source}: expected a list of {{"query": ..., "should_trigger": ...}}, '
        '{"evals": [{"prompt": ..., "should_trigger": ...}]} or '
        '{"should_trigger": [...], "should_not_trigger": [...]}'
    )
    if isinstance(data, list):
        return [(item, None, None) for item in data]
    if not isinstance(data, dict):
        raise CaseError(layouts)
    for key in ITEM_LISTS:
        if isinstance(data.get(key), list):
            return [(item, None, None) for item in data[key]]
    entries: list[tuple[Any, bool | None, str | None]] = []
    for key in SPLIT_LISTS:
        if isinstance(data.get(key), list):
            entries += [(item, None, key) for item in data[key]]
    for keys, label in ((POSITIVE_LISTS, True), (NEGATIVE_LISTS, False)):
        for key in keys:
            if isinstance(data.get(key), list):
                entries += [(item, label, None) for item in data[key]]
    if not entries:
        raise CaseError(layouts)
    return entries


def _item_text(item: Any) -> str | None:
    """The item's prompt; half a surrogate pair in its JSON escapes reads as U+FFFD."""
    if isinstance(item, str):
        return scrub_surrogates(item.strip()) or None
    if isinstance(item, dict):
        for key in TEXT_KEYS:
            value = item.get(key)
            if isinstance(value, str) and value.strip():
                return scrub_surrogates(value.strip())
    return None


def _item_label(
    item: Any, label: bool | None, skill: str | None, where: str
) -> tuple[tuple[str, ...], bool | None]:
    """The skills a should-trigger item expects, and whether it should trigger (None: the
    item says nothing a trigger eval can use)."""
    own = (skill,) if skill else ()
    if not isinstance(item, dict) or label is not None:
        return own, label  # a list named by its label: an item's "expected" is prose then
    listed = item.get("expectedSkills", item.get("expected_skills"))
    if isinstance(listed, list) and all(isinstance(name, str) for name in listed):
        return _expected_skills(listed, skill)
    for key in LABEL_KEYS:
        value = item.get(key)
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            return _expected_skills(value, skill)
        if key in item:
            return own, _trigger_word(value, key, where)
    return own, label


def _expected_skills(names: list[str], skill: str | None) -> tuple[tuple[str, ...], bool]:
    """An item that lists the skills it should load: for one skill's set, whether that
    skill is among them; for a set over several, all of them."""
    listed = tuple(name.strip() for name in names if name.strip())
    if skill:
        return (skill,), skill in listed
    return listed, bool(listed)


def _trigger_word(value: Any, key: str, where: str) -> bool:
    """true/false, or an author's word for them ("trigger", "no-trigger", "do_not_select")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = re.sub(r"[^a-z]+", "_", value.strip().lower()).strip("_")
        if word in POSITIVE_WORDS or word.startswith(("trigger_", "should_trigger", "select_")):
            return True
        if word.startswith(NEGATIVE_PREFIXES) or word.startswith("should_not"):
            return False
    raise CaseError(f"{where}: {key!r} = {value!r} says neither trigger nor not")


class _ItemLines:
    """The line where each item's text sits, found in order (None when the file spells it
    with escapes): error messages and failures point at the author's line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0

    def next(self, query: str) -> int | None:
        found = self.text.find(query, self.offset)
        if found < 0:
            return None
        self.offset = found + len(query)
        return self.text.count("\n", 0, found) + 1


def _checked(
    prompt: str,
    expect: Iterable[str],
    kind: str,
    note: str,
    split: str | None,
    source: str,
    line: int | None,
) -> Case:
    """Both formats share one rule set: a known kind, and negatives expect nothing. The
    ids a should-not-trigger case names are the skills it must not take (its `reject`),
    as a trigger eval set's `should_trigger: false` reads."""
    where = f"{source}:{line}" if line else source
    ids = tuple(dict.fromkeys(item.strip() for item in expect))
    if kind not in KINDS:
        raise CaseError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "negative" and ids:
        raise CaseError(f"{where}: a negative case expects no skill, got {', '.join(ids)}")
    if kind == SHOULD_NOT_TRIGGER:
        return Case(prompt, (), kind, note, split, source, line, reject=ids)
    if kind != "negative" and not ids:
        raise CaseError(f"{where}: a {kind} case needs at least one expected skill id")
    return Case(prompt, ids, kind, note, split, source, line)


def _duplicate_warnings(cases: Iterable[Case]) -> list[str]:
    """The same prompt twice counts twice in every metric; almost always a copy-paste slip."""
    first: dict[str, Case] = {}
    warnings: list[str] = []
    for case in cases:
        key = " ".join(case.prompt.lower().split())
        if key in first:
            warnings.append(
                f"{case.where}: duplicate prompt (first at line {first[key].line}): {case.prompt!r}"
            )
        else:
            first[key] = case
    return warnings
