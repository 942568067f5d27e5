"""The library's health: its problems grouped by kind (F3 lists them), the config layers in
effect.

Grouped so that 271 duplicate names do not bury the one broken SKILL.md: watcher failures,
rejected files (broken, then duplicate names), directories and links the walk did not
enter, parse warnings, then lint findings by rule.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from explorer.engine import Index, LoadedConfig
from explorer.engine.discovery import SKILL_FILE, Problem

DUPLICATE_MARK = "duplicate skill id"
WATCHER = "watcher failure"
BROKEN = "rejected: broken SKILL.md"
DUPLICATE = "rejected: duplicate name"
NOT_WALKED = "not walked: a directory or link"
WARNING = "parse warning"
KIND_ORDER = (WATCHER, BROKEN, DUPLICATE, NOT_WALKED, WARNING)
_LINE = re.compile(r"^(.*) \(line (\d+)\)$")  # a kept finding's rule and its line


@dataclass(frozen=True)
class Issue:
    """One line of F3: its kind (the group), the file, the line and what is wrong."""

    kind: str
    path: str
    message: str
    line: int | None = None

    def text(self, roots: Sequence[str] = ()) -> str:
        """The line; with `roots`, a path under one of them is given from that root, so a
        narrow screen wraps the message rather than the root's long path."""
        path = self.path
        for root in roots:
            base = root.rstrip(os.sep) + os.sep
            if path.startswith(base):
                path = path[len(base) :]
                break
        where = f"{path}:{self.line}" if self.line else path
        return f"{where}: {self.message}"


def issues(
    snapshot: Index | None,
    failures: Sequence[str] = (),
    findings: Mapping[str, Sequence[str]] | None = None,
) -> list[Issue]:
    """Every problem, in group order; lint findings last, grouped by rule."""
    found = [Issue(WATCHER, "(watcher)", failure) for failure in failures]
    if snapshot is not None:
        for problem in snapshot.rejected:
            kind = (
                NOT_WALKED
                if not problem.path.endswith(SKILL_FILE)
                else DUPLICATE
                if DUPLICATE_MARK in problem.message
                else BROKEN
            )
            found.append(Issue(kind, problem.path, problem.message, problem.line))
        found += [Issue(WARNING, p.path, _warning(p.message), p.line) for p in snapshot.warnings]
    lint = [
        Issue(f"lint {severity}: {rule}", path, message, line)
        for path, severity, rule, message, line in _kept_findings(findings or {})
    ]
    order = {kind: place for place, kind in enumerate(KIND_ORDER)}
    found.sort(key=lambda issue: order[issue.kind])
    lint.sort(key=lambda issue: (not issue.kind.startswith("lint error"), issue.kind, issue.path))
    return found + lint


def _warning(message: str) -> str:
    """A parse warning as F3 lists it: invalid YAML routes here, yet lint counts it an
    error (as `skill-explorer lint` does, and the status bar's lint count with it)."""
    if "invalid YAML" in message:
        return f"{message}; a lint error: other hosts' parsers reject the file"
    return message


def kept_finding(severity: str, rule: str, message: str, line: int | None) -> str:
    """A lint finding as the explorer keeps it, "severity rule (line N): message": one
    string, which the collector does not track (170,000 of them at 26,000 skills), and
    which the Skill tab shows as it is."""
    where = f" (line {line})" if line else ""
    return f"{severity} {rule}{where}: {message}"


def _kept_findings(
    findings: Mapping[str, Sequence[str]], *, parse_rules: bool = False
) -> list[tuple[str, str, str, str, int | None]]:
    """(path, severity, rule, message, line) of each of kept_finding's strings. Without
    `parse_rules`, as F3 lists them: the parse rules are the rejected files and parse
    warnings, listed once, above."""
    out = []
    for path, kept in findings.items():
        for finding in kept:
            head, _, message = finding.partition(": ")
            severity, _, rule = head.partition(" ")
            at = _LINE.match(rule)
            line = int(at.group(2)) if at else None
            rule = at.group(1) if at else rule
            if parse_rules or not rule.startswith("parse/"):
                out.append((path, severity, rule, message, line))
    return out


def lint_errors(findings: Mapping[str, Sequence[str]]) -> int:
    """Lint's errors, as `skill-explorer lint` counts them, but for the files that failed
    to parse (the status bar counts those as its errors: not lint's to count twice).
    Invalid YAML a recovery read is one: it routes here, and other hosts reject it."""
    return sum(
        severity == "error" and rule != "parse/rejected"
        for _, severity, rule, _, _ in _kept_findings(findings, parse_rules=True)
    )


def warned_reasons(snapshot: Index, warnings: Sequence[Problem]) -> dict[str, str]:
    """Skill id -> its file's first warning (invalid YAML recovered by the line reader,
    say): the skill routes, and its row carries a ⚠. `warnings`: the snapshot's, read
    once by the caller (reading them walks every skill)."""
    if not warnings:
        return {}
    at = {path: position for position, path in enumerate(snapshot.paths)}
    warned: dict[str, str] = {}
    for problem in warnings:
        position = at.get(problem.path)
        if position is not None:
            warned.setdefault(snapshot.ids[position], problem.message)
    return warned


def layers_text(loaded: LoadedConfig, cwd: str | None = None) -> str:
    """`config: defaults < ~/.config/skill-explorer/config.toml < skill-explorer.toml < --set`:
    the layers that set something, lowest first, as the user would type their paths."""
    parts = ["defaults", *(short_path(path, cwd) for path in loaded.files)]
    if any(source == "--set" for source in loaded.sources.values()):
        parts.append("--set")
    return "config: " + " < ".join(parts)


def short_path(path: str | os.PathLike[str], cwd: str | None = None) -> str:
    """A path as the user would type it: `./x` under the working directory, `~/x` under
    the home, else whole (a notice's toast wraps a long path inside its words)."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, cwd or os.getcwd())
    if not relative.startswith(".."):
        return relative if os.sep in relative else f"./{relative}"
    home = os.path.expanduser("~")
    if absolute.startswith(home + os.sep):
        return "~" + absolute[len(home) :]
    return absolute
