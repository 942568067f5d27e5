"""F3: every problem the explorer knows of, grouped by kind (explorer/tui/health.py), with a
filter that narrows the list as you type; Enter or ctrl+o opens the file."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from explorer.terminal import Hanging, plain
from explorer.tui.health import Issue
from explorer.tui.keys import HELP_BINDING
from explorer.tui.widgets.eager_input import EagerInput
from explorer.tui.widgets.footer import QuietFooter


class ProblemsScreen(ModalScreen[None]):
    """F3: problems grouped by kind, a filter, and the file one key away."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="problems-close"),
        HELP_BINDING,
        Binding("ctrl+o", "open", "Open file", id="problems-open"),
        Binding("down", "list_move(1)", "Down", show=False, id="problems-down"),
        Binding("up", "list_move(-1)", "Up", show=False, id="problems-up"),
    ]

    def __init__(
        self,
        found: Iterable[Issue],
        open_file: Callable[[str, int | None], None],
        roots: Sequence[str] = (),
    ):
        super().__init__()
        # One root: each file is shown from it (the title names it). Several: whole paths,
        # since two of them may hold the same relative path.
        self.roots = tuple(roots) if len(roots) == 1 else ()
        self.all = list(found)
        self.shown: list[Issue] = []
        self.open_file = open_file

    def compose(self) -> ComposeResult:
        with Vertical(id="problems"):
            yield Static(id="problems-title")
            yield EagerInput(placeholder="filter: kind, path or message", id="problems-filter")
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
            if all(w in f"{issue.kind} {issue.text(self.roots)}".lower() for w in words)
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
            options.append(Option(Hanging(plain(issue.text(self.roots))), id=str(number)))
        if self.all and not self.shown:  # an empty box read as a list still loading
            nothing = f"Nothing matches {query.strip()!r}: ctrl+u clears the filter."
            options.append(Option(plain(nothing, style="italic"), disabled=True))
        listing = self.query_one("#problems-list", OptionList)
        listing.display = bool(self.all)  # none at all: the title says so
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
        if self.roots:
            title.append_text(plain(f"\npaths from {self.roots[0]}", style="dim"))
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
