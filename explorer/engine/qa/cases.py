"""Labelled routing cases: how a library *should* route, read from TOML or the reference's TSV.

A case is one prompt with the skill ids that should be injected (none for a negative).
Both formats give the same `Case` records, each remembering its file and line, so that
every later message (a bad row, a failing case) can point at the line to edit.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

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
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise CaseError(f"{source}: invalid TOML: {error}") from error
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
    line, blank lines are skipped. TSV has no split column: every case gets split None.
    A `# group: NAME` comment gives the cases below it that group (NAME one of GROUPS).
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
    """A trigger eval set as Anthropic's skill-creator has authors write it, for one skill
    (given as `skill`, or named by the file's `skill_name`). Both of its layouts:

    * a JSON list of `{"query": ..., "should_trigger": true|false}`;
    * `{"skill_name": ..., "evals": [{"id": ..., "prompt": ..., "should_trigger": ...}]}`
      (`"queries"` is read as `"evals"`; an item may say `query` or `prompt`).

    A should-trigger query passes when the skill is injected; a should-not-trigger one
    when it is not (other skills may be).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CaseError(f"{source}:{error.lineno}: invalid JSON ({error.msg})") from error
    if isinstance(data, dict):
        named = data.get("skill_name")
        if not skill and isinstance(named, str) and named.strip():
            skill = named.strip()
        data = data.get("evals", data.get("queries"))
    if not skill:
        raise CaseError(f"{source}: a trigger eval set is about one skill: pass --skill ID")
    if not isinstance(data, list):
        raise CaseError(
            f'{source}: expected a list of {{"query": ..., "should_trigger": ...}} '
            'or {"evals": [{"prompt": ..., "should_trigger": ...}]}'
        )
    lines = _json_item_lines(text)
    cases: list[Case] = []
    warnings: list[str] = []
    for position, item in enumerate(data):
        line = lines[position] if position < len(lines) else None
        where = f"{source}:{line}" if line else f"{source} item {position + 1}"
        if not isinstance(item, dict):
            raise CaseError(f"{where}: each item must be an object with query and should_trigger")
        query = item.get("query", item.get("prompt"))
        trigger = item.get("should_trigger")
        if not isinstance(query, str) or not query.strip():
            raise CaseError(f"{where}: 'query' (or 'prompt') is missing or empty")
        if not isinstance(trigger, bool):
            hint = (
                " (an output eval, with no should_trigger, is not a trigger eval)"
                if "should_trigger" not in item
                else ""
            )
            raise CaseError(f"{where}: 'should_trigger' must be true or false{hint}")
        for key in sorted(set(item) - TRIGGER_EVAL_KEYS):
            warnings.append(f"{where}: key {key!r} ignored")
        kind = SHOULD_TRIGGER if trigger else SHOULD_NOT_TRIGGER
        cases.append(
            Case(
                prompt=query.strip(),
                expect=(skill,) if trigger else (),
                kind=kind,
                source=source,
                line=line,
                reject=() if trigger else (skill,),
            )
        )
    return CaseSet(tuple(cases), tuple(warnings + _duplicate_warnings(cases)), source)


# What an item of either layout may hold: the query, the label, and skill-creator's own
# bookkeeping (read past without a warning).
TRIGGER_EVAL_KEYS = {"query", "prompt", "should_trigger", "id", "expected_output", "files"}
ITEM_START = re.compile(r'"(?:query|prompt)"\s*:')


def _json_item_lines(text: str) -> list[int]:
    """The line of each `"query"` or `"prompt"` key, in order: where each item starts."""
    return [number for number, line in enumerate(text.splitlines(), 1) if ITEM_START.search(line)]


def _checked(
    prompt: str,
    expect: Iterable[str],
    kind: str,
    note: str,
    split: str | None,
    source: str,
    line: int | None,
) -> Case:
    """Both formats share one rule set: a known kind, and negatives expect nothing."""
    where = f"{source}:{line}" if line else source
    ids = tuple(dict.fromkeys(item.strip() for item in expect))
    if kind not in KINDS:
        raise CaseError(f"{where}: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "negative" and ids:
        raise CaseError(f"{where}: a negative case expects no skill, got {', '.join(ids)}")
    if kind not in ("negative", SHOULD_NOT_TRIGGER) and not ids:
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
