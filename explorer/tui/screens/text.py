"""A page of text over the main screen: help (F1), and the parse errors as a list."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from explorer.engine.discovery import Problem
from explorer.terminal import plain
from explorer.tui.widgets.footer import QuietFooter


class TextScreen(ModalScreen[None]):
    """A scrollable page of text (help, errors); any of esc, q, enter closes it."""

    BINDINGS = [
        Binding("escape,q,enter", "close", "Close", id="page-close"),
    ]

    def __init__(self, title: str, body: RenderableType) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="page"):
            yield Static(plain(self.title_text, style="bold"), id="page-title")
            yield Static(self.body, id="page-body")
        yield QuietFooter()  # this page's keys: the app's are not active over a modal

    def action_close(self) -> None:
        self.dismiss()


def errors_text(problems: list[Problem]) -> Text:
    out = Text()
    if not problems:
        out.append("No parse errors.", style="green")
    for problem in problems:
        out.append("• ", style="red")
        out.append_text(plain(str(problem)))
        out.append("\n")
    return out
