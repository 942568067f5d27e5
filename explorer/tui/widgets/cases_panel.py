"""The cases file, re-run on every re-index: what passes, and what flipped on the last save
and why (the skill that took or lost each flipped case, the gate, the numbers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Offset, Region
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from explorer.engine.base import clipped, counted
from explorer.engine.qa import CaseResult, Comparison, EvalReport, Flip, FlipCause
from explorer.terminal import plain, visible


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


NO_CASES = (
    "No cases: add cases.toml to the library, or start with --cases FILE (TOML, TSV or "
    "skill-creator evals JSON)."
)
PROMPT_LIMIT = 400  # a prompt longer than this is cut, with an ellipsis; shorter, whole


def fit_path(path: str, width: int) -> str:
    """`path` whole when it fits in `width` cells, else its end from a "/" on, after an
    ellipsis ("…/suite/cases.toml"): the file's name is what tells cases files apart."""
    if cell_len(path) <= width:
        return path
    for at, char in enumerate(path):
        if char == "/" and cell_len(path[at:]) + 1 <= width:
            return "…" + path[at:]
    tail = path
    while tail and cell_len(tail) + 1 > width:  # even the name is too long: its end
        tail = tail[1:]
    return "…" + tail


class Headline:
    """The head line, "105 cases  /the/cases/file.toml", on one line: a path too long for
    the panel keeps its end, cut at a "/" (fit_path); Rich folded it at the edge, mid-word."""

    def __init__(self, lead: str | Text, source: str) -> None:
        """`lead`: the count ("105 cases", bold), or a Text styled its own way."""
        self.lead, self.source = lead, visible(source)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lead = self.lead
        line = lead.copy() if isinstance(lead, Text) else Text(lead, style="bold")
        line.no_wrap, line.overflow = True, "ellipsis"
        room = options.max_width - line.cell_len - 2
        if self.source:
            line.append(f"  {fit_path(self.source, max(room, 2))}", style="dim")
        yield line


def with_flips(
    before: Text, flips: Sequence[Flip], causes: Mapping[str, FlipCause], after: Text
) -> RenderableType:
    """`before`, then each flipped case: BROKE or FIXED, its whole prompt, and under it its
    cause (the skill that took or lost it, the gate, the number before → after), then
    `after`. The flips are a grid, so a prompt or a cause too long for the line wraps under
    itself, not under the marks at the left; with no flip it is all one Text."""
    if not flips:
        return Text.assemble(before, after)
    grid = Table.grid()
    grid.add_column(width=len("  FIXED  "), no_wrap=True)
    grid.add_column(ratio=1)
    for flip in flips:
        fixed = flip.passed_b and not flip.passed_a
        mark = Text(
            "  FIXED  " if fixed else "  BROKE  ", style="bold green" if fixed else "bold red"
        )
        grid.add_row(mark, plain(f"{clipped(flip.prompt, PROMPT_LIMIT)}  ({flip.kind})"))
        cause = causes.get(flip.prompt)
        if cause is not None:
            grid.add_row("", plain(cause.text(), style="italic"))
    before = before.copy()
    before.rstrip()  # a Text that ends in a newline would leave a blank line in the group
    after = after.copy()
    after.rstrip()
    return Group(before, grid, *([after] if after else []))


def cases_status(
    report: EvalReport | None,
    comparison: Comparison | None,
    *,
    first: bool = False,
    compact: bool = False,
    problem: str | None = None,
) -> Text:
    """The cases in one status-bar cell: the last re-index's flips, then recall and,
    when the cases have should-not-trigger prompts, the false-inject rate; before
    the first run of a cases file (`first`) has ended, "cases" (the bar marks it running);
    a cases file that does not read (`problem`, which the Cases tab gives whole), "cases
    unread". `compact`, for a bar too narrow for the words: "✗7 ✓17" for "BROKE 7 FIXED 17"."""
    out = Text()
    if report is None:
        if problem is not None:
            return Text("cases unread" if not compact else "cases ✗", style="bold red")
        return Text("cases", style="dim") if first else out
    if comparison is not None and comparison.flipped:
        broke, fixed = len(comparison.regressions), len(comparison.fixes)
        if broke:
            out.append(f"✗{broke} " if compact else f"BROKE {broke} ", style="bold red")
        if fixed:
            out.append(f"✓{fixed} " if compact else f"FIXED {fixed} ", style="bold green")
    out.append(f"recall {_rate(report.rates.recall)}")
    if report.rates.false_inject_rate is not None and not compact:  # only with negatives
        out.append(f" false-inject {_rate(report.rates.false_inject_rate)}")
    return out


def cases_text(
    report: EvalReport,
    comparison: Comparison | None,
    source: str,
    causes: Mapping[str, FlipCause] | None = None,
) -> RenderableType:
    rates = report.rates
    out = Text()
    out.append(
        f"recall {_rate(rates.recall)}  false-inject {_rate(rates.false_inject_rate)}  "
        f"host value {_rate(rates.host_value)}\n"
    )
    for warning in report.warnings:  # a case naming a skill the library lacks, say
        out.append_text(plain(f"⚠ {warning}\n", style="yellow"))
    if comparison is not None:
        out.append("\nthe last re-index or edit that changed a case: ", style="bold")
        if not comparison.flipped:
            changed = counted(comparison.changed, "case")
            out.append(f"none changed outcome; {changed} inject other skills\n", style="dim")
        else:
            out.append("\n")
    failures = report.failures
    tail = Text()
    tail.append(f"\nfailing ({len(failures)})", style="bold")
    if failures:
        tail.append("  enter on one loads it into the prompt", style="dim")
    flips = with_flips(out, comparison.flipped if comparison else (), causes or {}, tail)
    return Group(Headline(counted(len(report.results), "case"), source), flips)


def failure_text(result: CaseResult) -> Text:
    """One failing case: its prompt, what was expected and got, and the gate that dropped it."""
    expected = ", ".join(result.case.expect) or "(none)"
    got = ", ".join(result.injected) or "nothing"
    out = Text()
    out.append("✗ ", style="red")
    out.append_text(plain(clipped(result.case.prompt, PROMPT_LIMIT)))
    out.append(visible(f"\n    expected {expected}, got {got}"), style="dim")
    if result.failure is not None and result.failure.gate:
        out.append(f" [{result.failure.gate}]", style="yellow")
    return out


def _skill_to_show(result: CaseResult) -> str | None:
    """The skill a failing case is about: the expected one it ranked best, else the first
    it should not have taken (one it rejects by name, else any it took)."""
    failure, case = result.failure, result.case
    if failure is not None and failure.expected is not None:
        return failure.expected
    if case.expect:
        return case.expect[0]
    wrong = [skill for skill in result.injected if skill in case.reject] or result.injected
    return wrong[0] if wrong else None


class CaseList(OptionList):
    """The failing cases, as tall as they are: the panel is the one thing that scrolls. A
    list that scrolled inside the scrolling panel drew two scrollbars side by side; here
    the highlighted case is scrolled into view in the panel instead."""

    def scroll_to_region(self, region: Region, *args: Any, **kwargs: Any) -> Offset:
        panel = self.parent
        if not isinstance(panel, VerticalScroll):
            return super().scroll_to_region(region, *args, **kwargs)
        if not self.has_focus:
            # A run's first failing case is highlighted for enter as the run is shown; below
            # a summary taller than the tab, scrolling to it hid the recall and the flips.
            # It is scrolled into view when the list takes the focus (on_focus).
            return Offset()
        # The list's own lines to the panel's: where the list is in it, past its border.
        offset = self.virtual_region.offset + Offset(*self.gutter.top_left)
        return panel.scroll_to_region(region.translate(offset), *args, **kwargs)

    def on_focus(self) -> None:
        # After the focus has moved here: while the event is handled, the list has it not.
        self.call_after_refresh(self.scroll_to_highlight)


class CasesPanel(VerticalScroll, can_focus=False):
    """Rates and flips, then the failing cases as a list: enter loads one into the prompt."""

    DEFAULT_CSS = """
    CasesPanel > CaseList {
        height: auto; max-height: initial; overflow-y: hidden; border: none; padding: 0;
        text-wrap: nowrap; text-overflow: ellipsis;  /* a prompt on its line, after its ✗ */
    }
    """

    class CaseChosen(Message):
        """Enter (or a click) on a failing case: its prompt goes into the prompt bar, and
        the table follows the skill to look at: the one it expects, else the one it
        should not have injected."""

        def __init__(self, prompt: str, skill: str | None) -> None:
            super().__init__()
            self.prompt = prompt
            self.skill = skill

    def __init__(self, source: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failures: list[CaseResult] = []
        self.source = source  # the cases file, if there is one

    def compose(self) -> ComposeResult:
        # Until the first run ends (lint first, then each case through decide(): minutes
        # for a few thousand cases on a large library), say that they run, not that
        # there are none.
        waiting = (
            plain(f"Running the cases of {self.source} (after lint)…") if self.source else NO_CASES
        )
        yield Static(waiting, id="cases-body")
        yield CaseList(id="cases-failures")

    def show(
        self,
        report: EvalReport,
        comparison: Comparison | None,
        source: str,
        causes: Mapping[str, FlipCause] | None = None,
    ) -> None:
        body = cases_text(report, comparison, source, causes)
        self.query_one("#cases-body", Static).update(body)
        listing = self.query_one("#cases-failures", OptionList)
        at = listing.highlighted
        kept = self.failures[at].case.prompt if at is not None and at < len(self.failures) else None
        self.failures = list(report.failures)
        listing.clear_options()
        listing.add_options(
            [Option(failure_text(r), id=str(i)) for i, r in enumerate(self.failures)]
        )
        listing.display = bool(self.failures)
        prompts = [result.case.prompt for result in self.failures]
        if kept in prompts:  # a re-index keeps the highlighted case under the cursor
            listing.highlighted = prompts.index(kept)
        elif prompts:  # enter on the list, once it has the focus, loads the first
            listing.highlighted = 0

    def message(self, text: str) -> None:
        self.query_one("#cases-body", Static).update(plain(text))
        self.failures = []
        self.query_one("#cases-failures", OptionList).display = False

    def on_mount(self) -> None:
        self.query_one("#cases-failures", OptionList).display = False

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        """The tab cannot take the focus, so a scroll that showed the failing cases to the
        focused list stayed, hiding the summary and the flips above them: leaving the list
        (for the prompt, the table, another tab) brings them back."""
        self.scroll_home(animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            result = self.failures[int(event.option.id)]
            self.post_message(self.CaseChosen(result.case.prompt, _skill_to_show(result)))
