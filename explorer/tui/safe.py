"""Skill text is data, never markup: everything from a SKILL.md goes through here."""

from __future__ import annotations

import re

from rich.text import Text

# C0 and C1 control characters other than newline and tab: shown, never sent to the terminal.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Control characters (an ESC starting an ANSI sequence, say) as visible pictures."""
    return _CONTROL_RE.sub(lambda match: _picture(match.group()), text)


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␀ for NUL, …
    return "␡" if code == 0x7F else f"\\x{code:02x}"


def plain(text: str, style: str = "") -> Text:
    """A Text that shows `text` literally: `[bold]` stays `[bold]`, ESC shows as ␛."""
    return Text(visible(text), style=style, no_wrap=False)


def one_line(text: str, limit: int = 200) -> Text:
    """A single-line, truncated Text for table cells."""
    flat = " ".join(visible(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return Text(flat, no_wrap=True, overflow="ellipsis")
