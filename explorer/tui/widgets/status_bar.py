"""One line: roots and count, models, the last re-index, and the parse errors."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from explorer.engine.base import counted
from explorer.terminal import visible
from explorer.tui.widgets import update_text


class StatusBar(Static):
    """What is loaded and what is wrong, in the order a narrow terminal keeps it: the
    library, the counts of errors and warnings (F3), the cases' last flips and recall, F2's
    live edits by name, the last re-index, the config layers in force, then the models."""

    class ErrorsClicked(Message):
        pass

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("starting…", **kwargs)
        self.error_count = 0
        self.warning_count = 0

    def show(
        self,
        *,
        roots: str,
        skills: int,
        dense: str,
        reranker: str,
        last: str,
        errors: int,
        warnings: int = 0,
        config: str = "",
        loading: str = "",
        cases: Text | None = None,
        edits: str = "",
    ) -> None:
        self.error_count, self.warning_count = errors, warnings
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(visible(f" {roots} "), style="bold")
        text.append(counted(skills, "skill"), style="bold cyan")
        if loading:  # the models still loading, or the embedding's progress: before the cut
            text.append(" │ ")
            text.append(visible(loading), style="bold yellow")
        text.append(" │ ")
        # Errors (a file rejected, a stale skill, the watcher) and warnings (a file read
        # with a recovery) are counted apart: a recovered file still routes.
        text.append(counted(errors, "error"), style="bold red" if errors else "dim")
        if warnings:
            text.append(f" {counted(warnings, 'warning')}", style="bold yellow")
        if errors or warnings:
            text.append(" (F3)", style="dim")
        if cases is not None and cases.plain:
            text.append(" │ ")
            text.append_text(cases)
        if edits:  # F2's live edits: the numbers on screen are not the files' alone
            text.append(" │ ")
            text.append(visible(f"F2: {edits}"), style="bold yellow")
        text.append(visible(f" │ {last}"), style="")
        if config:  # the layers in effect: which files this screen's numbers come from
            text.append(f" │ {visible(config)}", style="dim")
        text.append(visible(f" │ {dense} │ {reranker}"), style="")
        update_text(self, text, layout=False)  # one line, always (explorer.tcss)

    def on_click(self) -> None:
        if self.error_count or self.warning_count:
            self.post_message(self.ErrorsClicked())
