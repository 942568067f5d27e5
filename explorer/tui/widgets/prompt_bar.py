"""The prompt bar: type a prompt; up/down move the table's cursor; alt+up/down walk history."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding

from explorer.engine.route import PROMPT_READ_CHARS, prompt_read
from explorer.terminal import visible
from explorer.tui.history import PromptHistory
from explorer.tui.widgets.eager_input import EagerInput

NEWLINE_MARK = "⏎"  # a line break of the prompt, on the one-line bar


class PromptBar(EagerInput):
    """The prompt keeps the focus while the user moves through the table: up/down and
    page up/down move the table's cursor, so typing and looking at a row go together."""

    BINDINGS = [
        Binding("up", "screen.table_move(-1)", "Row up", show=False, id="prompt-row-up"),
        Binding("down", "screen.table_move(1)", "Row down", show=False, id="prompt-row-down"),
        Binding("pageup", "screen.table_page(-1)", "Page up", show=False, id="prompt-page-up"),
        Binding("pagedown", "screen.table_page(1)", "Page down", show=False, id="prompt-page-down"),
        Binding("alt+up,ctrl+up", "history_older", "Older prompt", show=False, id="history-older"),
        Binding(
            "alt+down,ctrl+down", "history_newer", "Newer prompt", show=False, id="history-newer"
        ),
    ]

    def __init__(self, history: PromptHistory, **kwargs: Any) -> None:
        # select_on_focus off: coming back from F2, the table or the filter, the next key
        # must add to the prompt, not replace the selected prompt with one letter.
        super().__init__(
            placeholder="Type a prompt, as a user would…",
            select_on_focus=False,
            **kwargs,
        )
        self.history = history
        self.walked_to: str | None = None  # the value a history walk set (not typed)

    def validate_value(self, value: str) -> str:
        """A pasted or remembered prompt is shown, never sent: a control character becomes
        its visible picture (ESC as ␛), in what is decided too, so the prompt routed is the
        prompt on screen. A line break shows as NEWLINE_MARK on the one-line bar and is
        routed as a line break (`routed`); past PROMPT_READ_CHARS the bar keeps what the
        router reads (routing.md §2.6): the bar redraws its whole value at each key."""
        lines = value.replace("\r\n", "\n").replace("\r", "\n")
        return visible(prompt_read(lines)).replace("\n", NEWLINE_MARK)

    @property
    def routed(self) -> str:
        """The prompt the explorer routes: the bar's text with its line breaks back."""
        return self.value.replace(NEWLINE_MARK, "\n")

    def _on_paste(self, event: events.Paste) -> None:
        """A paste keeps every line, where Input keeps the first: the hook routes a pasted
        prompt whole, and a request often follows the text it is about."""
        event.stop()
        event.prevent_default()  # Input's own handler would paste the first line again
        if not event.text:
            return
        pasted = len(event.text)
        if self.selection.is_empty:
            self.insert_text_at_cursor(event.text)
        else:
            self.replace(event.text, *self.selection)
        if pasted > PROMPT_READ_CHARS:
            half = f"{PROMPT_READ_CHARS // 2:,}"
            self.notify(
                f"pasted {pasted:,} characters: the router reads the first and last {half} "
                "(routing.md §2.6), and the prompt keeps those"
            )

    def action_history_older(self) -> None:
        self._walk_to(self.history.older(self.value))

    def action_history_newer(self) -> None:
        self._walk_to(self.history.newer())

    def _walk_to(self, entry: str | None) -> None:
        if entry is not None:
            self.walked_to = entry
            self.value = entry
            self.cursor_position = len(entry)


class FilterBar(EagerInput):
    """The `/` filter over the table (fuzzy over id and description); the ranking stays."""

    BINDINGS = [
        Binding("up", "screen.table_move(-1)", "Row up", show=False, id="filter-row-up"),
        Binding("down", "screen.table_move(1)", "Row down", show=False, id="filter-row-down"),
        Binding("escape", "screen.clear_filter", "Clear filter", id="filter-clear"),
    ]

    def validate_value(self, value: str) -> str:
        """As the prompt's: a pasted control character is shown as its picture."""
        return visible(value)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            placeholder="filter: words of the id or description (enter: table, esc: clear)",
            **kwargs,
        )
