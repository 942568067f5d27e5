"""The prompt bar: type a prompt; up/down move the table's cursor; alt+up/down walk history."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding

from explorer.terminal import visible
from explorer.tui.history import PromptHistory
from explorer.tui.widgets.eager_input import EagerInput


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
        prompt on screen."""
        return visible(value)

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
