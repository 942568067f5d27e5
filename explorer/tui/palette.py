"""The explorer's two themes, dark and light, and the ANSI colours its texts use in each.

Every pair of colours the explorer draws (text on the table, its cursor row, the panels,
the status bar and the footer; plain, bold and dim) reaches a WCAG contrast of 4.5:1 in
both themes: tests/tui/test_contrast.py renders the screens and measures every pair. The
themes are Textual's own, with what that needed: a light theme whose text is black on
lighter panels (Textual's dims #1F1F1F on #D0D0D0 to 4.4:1), footer keys and tabs that
read, and a cursor row pale enough for coloured text on it. The ANSI colours (the
`green`, `yellow`, `red` of the explorer's rich texts) are Textual's Monokai and
Alabaster, lightened for dark and darkened for light until they reach it on every
background they meet.
"""

from __future__ import annotations

from rich.terminal_theme import TerminalTheme
from textual.app import App
from textual.color import Color
from textual.theme import Theme

DARK, LIGHT = "explorer-dark", "explorer-light"

# Variables both themes set, which the stylesheet uses.
DARK_THEME = Theme(
    name=DARK,
    primary="#0178D4",
    secondary="rgb(0,69,120)",
    accent="#ffa62b",
    warning="#ffa62b",
    error="#ba3c5b",
    success="#4EBF71",
    foreground="#e0e0e0",
    dark=True,
    variables={
        "block-cursor-blurred-background": "#0e2c42",  # the table's cursor row
        "primary-muted": "#0d3a5c",  # ... with the focus in the table
        "footer-key-foreground": "#ffb454",
        "text-muted": "#a8a8a8",
    },
)
LIGHT_THEME = Theme(
    name=LIGHT,
    primary="rgb(0,69,120)",
    secondary="#0178D4",
    accent="#8a5100",
    warning="#8a5100",
    error="#9b2c47",
    success="#2c6a3c",
    foreground="rgb(0,0,0)",
    background="#F0F0F0",
    surface="#E8E8E8",
    panel="#E0E0E0",
    dark=False,
    variables={
        "block-cursor-blurred-background": "#dce6ee",
        "primary-muted": "#cfdde9",
        "footer-key-foreground": "rgb(0,69,120)",
        "text-muted": "#4a4a4a",
    },
)


def _rgb(colour: str) -> tuple[int, int, int]:
    """A colour as CSS writes it (`#8f2e29`, `rgb(0,69,120)`: a hex of digits alone reads
    as an issue number to tests/test_docs.py) as an RGB triplet."""
    return Color.parse(colour).rgb


def _terminal(background: str, foreground: str, normal: list[str]) -> TerminalTheme:
    colours = [_rgb(colour) for colour in normal]
    return TerminalTheme(_rgb(background), _rgb(foreground), colours, colours[:8])


# black, red, green, yellow, blue, magenta, cyan, white; the bright ones are the same.
ANSI_DARK = _terminal(
    "rgb(18,18,18)",
    "#e0e0e0",
    ["#1a1a1a", "#ff7aab", "#98e024", "#fd971f", "#c29cff", "#ff7aab", "#58d1eb", "#e0e0e0"],
)
ANSI_LIGHT = _terminal(
    "#f0f0f0",
    "rgb(0,0,0)",
    [
        "rgb(0,0,0)",
        "#8f2e29",
        "#2c5a19",
        "rgb(104,73,0)",
        "#294b9d",
        "#6d378c",
        "rgb(0,86,117)",
        "#f0f0f0",
    ],
)


def use_measured_themes(app: App[None]) -> None:
    """Give `app` the two themes whose every colour pair is measured, dark first, and
    none of Textual's others: the command palette's theme picker then offers only these."""
    for theme in (DARK_THEME, LIGHT_THEME):
        app.register_theme(theme)
    app.theme = DARK
    for name in set(app.available_themes) - {DARK, LIGHT}:
        app.unregister_theme(name)
