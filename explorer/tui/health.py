"""The library's health on screen: problems grouped by kind (F3), the config layers in effect.

F3 lists every problem the explorer knows of, grouped so that 271 duplicate names do not
bury the one broken SKILL.md: watcher failures, rejected files (broken, then duplicate
names), stale skills (the last good version still routes), parse warnings, then lint
findings by rule. A filter narrows the list as you type; Enter or ctrl+o opens the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from explorer.engine.config import LoadedConfig
from explorer.engine.snapshot import Index
from explorer.terminal import plain
from explorer.tui.widgets.footer import QuietFooter

DUPLICATE_MARK = "duplicate skill id"
WATCHER = "watcher failure"
BROKEN = "rejected: broken SKILL.md"
DUPLICATE = "rejected: duplicate name"
STALE = "stale: the last good version routes"
WARNING = "parse warning"
KIND_ORDER = (WATCHER, BROKEN, DUPLICATE, STALE, WARNING)


@dataclass(frozen=True)
class Issue:
    """One line of F3: its kind (the group), the file, the line and what is wrong."""

    kind: str
    path: str
    message: str
    line: int | None = None

    def text(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
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
            kind = DUPLICATE if DUPLICATE_MARK in problem.message else BROKEN
            found.append(Issue(kind, problem.path, problem.message, problem.line))
        for skill in snapshot.skills:
            if skill.stale is not None:
                stale = skill.stale
                found.append(Issue(STALE, stale.path, stale.message, stale.line))
        found += [Issue(WARNING, p.path, p.message, p.line) for p in snapshot.warnings]
    lint: list[Issue] = []
    for path, lines in (findings or {}).items():
        for line in lines:
            # "severity rule: message", as the explorer keeps lint findings
            head, _, message = line.partition(": ")
            severity, _, rule = head.partition(" ")
            if rule.startswith("parse/"):
                continue  # the rejected files and parse warnings above, said once
            lint.append(Issue(f"lint {severity}: {rule}", path, message))
    order = {kind: place for place, kind in enumerate(KIND_ORDER)}
    found.sort(key=lambda issue: order[issue.kind])
    lint.sort(key=lambda issue: (not issue.kind.startswith("lint error"), issue.kind, issue.path))
    return found + lint


def stale_reasons(snapshot: Index) -> dict[str, str]:
    """Skill id -> why its file no longer parses (the row is its last good version)."""
    return {s.id: s.stale.message for s in snapshot.skills if s.stale is not None}


def layers_text(loaded: LoadedConfig, cwd: str | None = None) -> str:
    """`config: defaults < ~/.config/skill-explorer/config.toml < skill-explorer.toml < --set`:
    the layers that set something, lowest first, as the user would type their paths."""
    parts = ["defaults", *(_short_path(path, cwd) for path in loaded.files)]
    if any(source == "--set" for source in loaded.sources.values()):
        parts.append("--set")
    return "config: " + " < ".join(parts)


def _short_path(path: str, cwd: str | None = None) -> str:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, cwd or os.getcwd())
    if not relative.startswith(".."):
        return relative if os.sep in relative else f"./{relative}"
    home = os.path.expanduser("~")
    if absolute.startswith(home + os.sep):
        return "~" + absolute[len(home) :]
    return absolute


class ProblemsScreen(ModalScreen[None]):
    """F3: problems grouped by kind, a filter, and the file one key away."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="problems-close"),
        Binding("ctrl+o", "open", "Open file", id="problems-open"),
        Binding("down", "list_move(1)", "Down", show=False, id="problems-down"),
        Binding("up", "list_move(-1)", "Up", show=False, id="problems-up"),
    ]

    def __init__(self, found: Iterable[Issue], open_file: Callable[[str, int | None], None]):
        super().__init__()
        self.all = list(found)
        self.shown: list[Issue] = []
        self.open_file = open_file

    def compose(self) -> ComposeResult:
        with Vertical(id="problems"):
            yield Static(id="problems-title")
            yield Input(placeholder="filter: kind, path or message", id="problems-filter")
            yield OptionList(id="problems-list")
        yield QuietFooter()  # this screen's keys: the app's are not active over a modal

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#problems-filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open()

    def _fill(self, query: str) -> None:
        words = query.lower().split()
        self.shown = [
            issue
            for issue in self.all
            if all(w in f"{issue.kind} {issue.text()}".lower() for w in words)
        ]
        options: list[Option | None] = []
        counts: dict[str, int] = {}
        for issue in self.shown:
            counts[issue.kind] = counts.get(issue.kind, 0) + 1
        kind = None
        for number, issue in enumerate(self.shown):
            if issue.kind != kind:
                kind = issue.kind
                heading = plain(f"{kind} ({counts[kind]})", style="bold")
                options.append(Option(heading, disabled=True))
            options.append(Option(plain(f"  {issue.text()}"), id=str(number)))
        listing = self.query_one("#problems-list", OptionList)
        listing.clear_options()
        listing.add_options(options)
        first = next((i for i, o in enumerate(options) if o and not o.disabled), None)
        listing.highlighted = first
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append("Problems", style="bold")
        kinds = len(counts)
        title.append(
            f"  {len(self.shown)} of {len(self.all)} in {kinds} kind{'s' if kinds != 1 else ''}; "
            "enter or ctrl+o opens the file in $EDITOR; esc closes",
            style="dim",
        )
        if not self.all:
            title.append("\nNo problems: every SKILL.md parses.", style="green")
        self.query_one("#problems-title", Static).update(title)

    def highlighted_issue(self) -> Issue | None:
        listing = self.query_one("#problems-list", OptionList)
        if listing.highlighted is None:
            return None
        option = listing.get_option_at_index(listing.highlighted)
        return self.shown[int(option.id)] if option.id is not None else None

    def action_list_move(self, step: int) -> None:
        listing = self.query_one("#problems-list", OptionList)
        listing.action_cursor_down() if step > 0 else listing.action_cursor_up()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        issue = self.highlighted_issue()
        if issue is None or issue.path.startswith("("):
            self.notify("no file to open", severity="warning")
            return
        self.open_file(issue.path, issue.line)

    def action_close(self) -> None:
        self.dismiss()
