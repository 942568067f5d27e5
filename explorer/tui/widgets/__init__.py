"""One widget per screen area."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


def update_text(widget: Static, text: Text, *, layout: bool = True) -> None:
    """`widget.update(text)` unless it shows that text already. An update lays out the
    whole screen again (its height may change), and after a save the same panels are
    drawn again with what they already show (the decision's reason and terms, once for
    the save's decision and once when lint ends): each layout was 30-60 ms of the event
    loop. `layout=False` for a widget of a fixed height."""
    shown = widget.content
    if isinstance(shown, Text) and shown == text and shown.style == text.style:
        return  # Text's == compares the characters and spans, not the base style
    widget.update(text, layout=layout)
