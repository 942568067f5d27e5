"""One line: roots and count, models, the last re-index, and the parse errors."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from explorer.terminal import visible


class StatusBar(Static):
    class ErrorsClicked(Message):
        pass

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("starting…", **kwargs)
        self.error_count = 0

    def show(
        self,
        *,
        roots: str,
        skills: int,
        dense: str,
        reranker: str,
        last: str,
        errors: int,
        config: str = "",
        loading: str = "",
    ) -> None:
        self.error_count = errors
        # The error count comes right after the library: a narrow terminal cuts the tail
        # (model names, the last re-index), never the count.
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(visible(f" {roots} "), style="bold")
        text.append(f"{skills} skills", style="bold cyan")
        if loading:  # the models still loading, or the embedding's progress: before the cut
            text.append(" │ ")
            text.append(visible(loading), style="bold yellow")
        text.append(" │ ")
        text.append(
            f"{errors} error{'s' if errors != 1 else ''}", style="bold red" if errors else "dim"
        )
        if errors:
            text.append(" (F3)", style="dim")
        if config:  # the layers in effect: which files this screen's numbers come from
            text.append(f" │ {visible(config)}", style="dim")
        text.append(visible(f" │ {dense} │ {reranker} │ {last}"), style="")
        self.update(text)

    def on_click(self) -> None:
        if self.error_count:
            self.post_message(self.ErrorsClicked())
