"""One line: roots and count, the errors and warnings (F3), the cases, the last re-index,
the config layers and the models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from explorer.engine.base import counted
from explorer.terminal import visible
from explorer.tui.widgets import update_text


@dataclass(frozen=True)
class Status:
    """What the bar says (`text` lays it out in the order a narrow terminal keeps it)."""

    roots: str
    skills: int
    dense: str
    reranker: str
    last: str
    errors: int
    warnings: int = 0
    lint_errors: int = 0  # lint's errors (F3 lists them, and its warnings, too)
    config: str = ""
    loading: str = ""
    cases: Text | None = None
    cases_compact: Text | None = None  # `cases` with signs for words, for 80 columns
    cases_running: bool = False  # `cases` is the last run's; a run for what is on screen goes on
    edits: str = ""
    short_roots: str = ""  # each root by its last name, for a bar too narrow for `roots`

    def text(self, width: int = 0) -> Text:
        """The line; when its first part (through the cases and F2's edits) is wider than
        `width`, with the roots by their last names, then the counts in short ("1 warning
        · lint 2"), then the flips as signs ("✗7 ✓17"), so at 80 columns the counts and
        the cases' recall still show."""
        text, first_part = self._text(self.roots)
        if not width or first_part <= width:
            return text
        roots = self.short_roots or self.roots
        shorter, first_part = self._text(roots)
        if first_part <= width:
            return shorter
        short, first_part = self._text(roots, short=True)
        # Still too wide (flips and F2's edits beside the counts): the flips as signs,
        # and no "(F3)", rather than a recall cut mid-number.
        return short if first_part <= width else self._text(roots, short=True, compact=True)[0]

    def _text(self, roots: str, *, short: bool = False, compact: bool = False) -> tuple[Text, int]:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(visible(f" {roots} "), style="bold")
        text.append(counted(self.skills, "skill"), style="bold cyan")
        if self.loading:  # the models still loading, or the embedding's progress
            text.append(" │ ")
            text.append(visible(self.loading), style="bold yellow")
        text.append(" │ ")
        # Errors (a file rejected, the watcher) and warnings (a file read
        # with a recovery) are counted apart: a recovered file still routes. Lint's errors
        # apart again: a file that fails to parse and a description over a lint rule's
        # limit are not the same trouble. Lint's warnings, most libraries' commonest
        # finding, are left to F3.
        # Short: "0 errors" left out beside other counts, "lint 2" for "lint 2 errors".
        said_errors = bool(self.errors or not short or not (self.warnings or self.lint_errors))
        if said_errors:
            text.append(counted(self.errors, "error"), style="bold red" if self.errors else "dim")
        if self.warnings:
            space = " " if said_errors else ""
            text.append(f"{space}{counted(self.warnings, 'warning')}", style="bold yellow")
        if self.lint_errors:  # after another count, a separator; alone, none
            text.append(" · lint " if said_errors or self.warnings else "lint ", style="dim")
            lint = str(self.lint_errors) if short else counted(self.lint_errors, "error")
            text.append(lint, style="red")
        if (self.errors or self.warnings or self.lint_errors) and not compact:
            text.append(" (F3)", style="dim")
        cases = self.cases_compact if compact and self.cases_compact is not None else self.cases
        if cases is not None and cases.plain:
            text.append(" │ ")
            text.append_text(cases)
            if self.cases_running:  # short: the F2 edits after it must fit at 80 columns
                text.append(" …", style="dim")
        if self.edits:  # F2's live edits: the numbers on screen are not the files' alone
            text.append(" │ ")
            text.append(visible(f"F2: {self.edits}"), style="bold yellow")
        first_part = text.cell_len
        text.append(visible(f" │ {self.last}"), style="")
        if self.config:  # the layers in effect: which files this screen's numbers come from
            text.append(f" │ {visible(self.config)}", style="dim")
        text.append(visible(f" │ {self.dense} │ {self.reranker}"), style="")
        return text, first_part


class StatusBar(Static):
    """What is loaded and what is wrong, in the order a narrow terminal keeps it: the
    library, the counts of errors and warnings (F3), the cases' last flips and recall, F2's
    live edits by name, the last re-index, the config layers in force, then the models."""

    class ErrorsClicked(Message):
        pass

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("starting…", **kwargs)
        self.shown: Status | None = None  # laid out again on a resize
        self.error_count = 0
        self.f3_has_more = False  # warnings or lint errors: a click opens F3 for them too

    def show(self, status: Status) -> None:
        self.shown = status
        self.error_count = status.errors
        self.f3_has_more = bool(status.warnings or status.lint_errors)
        # One line, always (explorer.tcss), laid out for the bar's width.
        update_text(self, status.text(self.size.width), layout=False)

    def on_resize(self) -> None:
        if self.shown is not None:
            self.show(self.shown)

    def on_click(self) -> None:
        if self.error_count or self.f3_has_more:
            self.post_message(self.ErrorsClicked())
