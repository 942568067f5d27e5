"""The prompt bar: type a prompt, walk the history with up/down."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from explorer.tui.history import PromptHistory


class PromptBar(Input):
    BINDINGS = [
        Binding("up", "history_older", "Older prompt", show=False, id="history-older"),
        Binding("down", "history_newer", "Newer prompt", show=False, id="history-newer"),
    ]

    def __init__(self, history: PromptHistory, **kwargs: object) -> None:
        super().__init__(placeholder="Type a prompt, as a user would…", **kwargs)  # type: ignore[arg-type]
        self.history = history

    def action_history_older(self) -> None:
        entry = self.history.older()
        if entry is not None:
            self.value = entry
            self.cursor_position = len(entry)

    def action_history_newer(self) -> None:
        entry = self.history.newer()
        if entry is not None:
            self.value = entry
            self.cursor_position = len(entry)
