"""Everything shown to a terminal goes through here: skill text is data, never control.

A SKILL.md is written by someone else. Its name, description or path can hold an ESC
starting a sequence that sets the window title, plants a hyperlink (OSC 8), writes the
clipboard (OSC 52) or clears the screen; a C1 control (0x80-0x9F, CSI is 0x9B) does the
same on terminals that honour 8-bit controls; `[bold]` would be rich markup. The CLI
(`route`, `why`, `watch`, `lint`, `eval`, `calibrate`, messages on stderr) and the
explorer both render through these helpers, so one rule covers every screen:

- control characters other than newline and tab are shown as visible pictures
  (ESC as ␛, NUL as ␀, C1 as \\x9b), never sent;
- Unicode bidirectional marks, embeddings, overrides and isolates, which can make text
  read differently from what it is, and zero-width characters, which make `p\\u200bdf`
  look like `pdf`, are shown as \\u202e, \\u200b and the like (U+200B-U+200F,
  U+202A-U+202E, U+2066-U+2069, U+061C, U+FEFF; the joiners of emoji sequences too);
- text is never parsed as markup (rich `Text`, not markup strings).

`--json` output is not passed through here: it stays exact, and JSON escapes every
control character (the CLI's JSON is ASCII-only).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads on first use: `say` in the hook's process never pays for it
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.table import Table
    from rich.text import Text

# C0 and C1 controls other than newline and tab; the zero-width characters and bidi marks
# (ZWSP, ZWNJ, ZWJ, LRM, RLM, ALM, BOM); the bidi embeddings, overrides and isolates.
_UNSAFE_RE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def visible(text: str) -> str:
    """`text` with every control character as a visible picture; the rest unchanged."""
    return _UNSAFE_RE.sub(lambda match: _picture(match.group()), text)


def is_safe(text: str) -> bool:
    """Whether `text` holds nothing a terminal would act on (besides newline and tab)."""
    return _UNSAFE_RE.search(text) is None


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␀ for NUL, ␍ for CR, …
    if code == 0x7F:
        return "␡"
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def plain(text: str, style: str = "") -> Text:
    """A Text that shows `text` literally: `[bold]` stays `[bold]`, ESC shows as ␛."""
    from rich.text import Text

    return Text(visible(text), style=style, no_wrap=False)


def one_line(text: str, limit: int = 200) -> Text:
    """A single-line, truncated Text for table cells."""
    from rich.text import Text

    flat = " ".join(visible(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return Text(flat, no_wrap=True, overflow="ellipsis")


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str | Text]],
    right: Iterable[int] = (),
    *,
    title: str | None = None,
    clipped: Mapping[int, int] | None = None,
) -> Table:
    """A rich table of literal cells: right-aligned numbers, a rule under the header.

    Cells are made `Text` through `plain`, so a skill id is never read as markup. A
    `clipped` column (position -> cells) stays on one line, that wide, and ends in
    an ellipsis (a prompt), rather than wrapping a word a line.
    """
    from rich.table import Table
    from rich.text import Text

    aligned, one_line = set(right), dict(clipped or {})
    grid = Table(
        box=None,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        header_style="bold",
        title=title,
        title_justify="left",
        show_header=True,
    )
    for position, header in enumerate(headers):
        grid.add_column(
            header,
            justify="right" if position in aligned else "left",
            no_wrap=position in one_line,
            overflow="ellipsis" if position in one_line else "fold",
            width=one_line.get(position),
        )
    for row in rows:
        cells = [cell if isinstance(cell, Text) else plain(cell) for cell in row]
        for position, width in one_line.items():
            cells[position] = cells[position].copy()
            cells[position].no_wrap, cells[position].overflow = True, "ellipsis"
            cells[position].truncate(width, overflow="ellipsis")
        grid.add_row(*cells)
    return grid


class Hanging:
    """Text wrapped with a hanging indent: its first line `first` cells in, the lines it
    wraps onto `rest` cells in, so a wrapped item of a list reads as one item (rich wraps
    a Text back to the left edge)."""

    def __init__(self, text: Text, first: int = 2, rest: int = 4) -> None:
        self.text, self.first, self.rest = text, first, rest

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        from rich.segment import Segment

        lines = self.text.wrap(console, max(1, options.max_width - self.rest))
        for number, line in enumerate(lines):
            yield Segment(" " * (self.rest if number else self.first))
            yield from line.render(console)
            yield Segment.line()


class Phrases:
    """Short texts on one line, two cells apart, wrapped between them and never inside one
    ("ctrl+o $EDITOR" stays whole) unless one alone is wider than the line."""

    def __init__(self, phrases: Sequence[Text]) -> None:
        self.phrases = list(phrases)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        from rich.text import Text

        width, line = options.max_width, Text()
        for phrase in self.phrases:
            if line and line.cell_len + 2 + phrase.cell_len > width:
                yield line
                line = Text()
            if line:
                line.append("  ")
            line.append_text(phrase)
        if line:
            yield line


CLIPPED_MIN = 20  # the cells a clipped column keeps before others are left out


class FittedTable:
    """A `table` that fits the width it is drawn at by leaving columns out, whole, rather
    than cutting every cell to "0.…": first those of `droppable` that say nothing in these
    rows (one value in every row), then the rest of `droppable` in its order, until the
    table fits. A dim line under it names what was left out. At a width the whole table
    fits in (a wide terminal, a pipe, an export) it is `table` itself."""

    def __init__(
        self,
        headers: Sequence[str],
        rows: Iterable[Sequence[str | Text]],
        right: Iterable[int] = (),
        *,
        droppable: Sequence[str] = (),
        clipped: Sequence[str] = (),
    ) -> None:
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]
        self.texts = [
            [cell if isinstance(cell, str) else cell.plain for cell in row] for row in self.rows
        ]
        self.right = set(right)
        self.droppable = [self.headers.index(name) for name in droppable]
        self.clipped = {self.headers.index(name) for name in clipped}
        from rich.cells import cell_len

        # Each column's width with every cell on one line, and the columns that hold one
        # value in every row (they tell the rows nothing apart).
        self.natural = [
            max([cell_len(header), *(cell_len(row[column]) for row in self.texts)])
            for column, header in enumerate(self.headers)
        ]
        self.same = {
            column
            for column in range(len(self.headers))
            if self.texts and len({row[column] for row in self.texts}) == 1
        }

    def left_out(self, width: int) -> list[int]:
        """The columns left out at `width`, in the order they go."""
        # A clipped column gives way by its ellipsis, down to CLIPPED_MIN.
        natural = [
            min(w, CLIPPED_MIN) if c in self.clipped else w for c, w in enumerate(self.natural)
        ]
        order = sorted(self.droppable, key=lambda column: column not in self.same)  # stable
        out: list[int] = []
        for column in order:
            kept = [c for c in range(len(self.headers)) if c not in out]
            if sum(natural[c] for c in kept) + 2 * (len(kept) - 1) <= width:
                break
            out.append(column)
        return out

    def _clip_widths(self, kept: Sequence[int], width: int) -> dict[int, int]:
        """The clipped columns' widths: what the others leave of `width`, shared evenly,
        a column narrower than its share leaving the rest to the others."""
        natural = self.natural
        clipped = sorted((c for c in kept if c in self.clipped), key=lambda c: natural[c])
        fixed = sum(natural[c] for c in kept if c not in self.clipped) + 2 * (len(kept) - 1)
        # One cell spare: rich 14 lays a table of these columns out a cell narrower than
        # the width it is given, and then wraps a column that is not clipped.
        room, widths = max(len(clipped), width - fixed - 1), {}
        for left, column in enumerate(clipped):
            widths[column] = max(1, min(natural[column], room // (len(clipped) - left)))
            room -= widths[column]
        return widths

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        out = self.left_out(options.max_width)
        kept = [c for c in range(len(self.headers)) if c not in out]
        yield table(
            [self.headers[c] for c in kept],
            ([row[c] for c in kept] for row in self.rows),
            right=[position for position, c in enumerate(kept) if c in self.right],
            clipped={
                kept.index(c): w for c, w in self._clip_widths(kept, options.max_width).items()
            },
        )
        if out:
            # The columns of one value, grouped by it ("kw, ph (all 0.00)"), then the rest.
            same: dict[str, list[str]] = {}
            for column in (c for c in out if c in self.same):
                same.setdefault(self.texts[0][column], []).append(self.headers[column])
            groups = [f"{', '.join(names)} (all {value})" for value, names in same.items()]
            rest = [self.headers[c] for c in out if c not in self.same]
            named = "; ".join([*groups, *([", ".join(rest)] if rest else [])])
            yield plain(f"left out to fit {options.max_width} columns: {named}", style="dim")


class ColumnLegend:
    """What a `FittedTable`'s headers stand for, one phrase per column, saying only the
    columns the table keeps at the width both are drawn at: a legend describing a column
    the reader cannot see sends them looking for it."""

    def __init__(self, fitted: FittedTable, phrases: Mapping[str, str], lead: str) -> None:
        self.fitted = fitted
        self.phrases = phrases
        self.lead = lead

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        out = {self.fitted.headers[c] for c in self.fitted.left_out(options.max_width)}
        kept = [phrase for header, phrase in self.phrases.items() if header not in out]
        legend = plain(f"{self.lead}{'; '.join(kept)}")
        if not options.is_terminal:  # a pipe keeps each line whole, as `emit` does
            legend.no_wrap, legend.overflow = True, "ignore"
        yield legend


def _terminal_width(stream: IO[str]) -> int:
    """The columns of the terminal `stream` writes to (stdout's, when it has no file)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def _is_tty(stream: IO[str]) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def console(file: IO[str] | None = None) -> Console:
    """A console that never reads markup or highlights, with colour only on a terminal.

    On a terminal, the terminal's width; in a pipe, $COLUMNS or a wide page, so rows of a
    table are not wrapped for scripts and files.
    """
    from rich.console import Console

    stream = file if file is not None else sys.stdout
    is_tty = _is_tty(stream)
    width: int | None = None
    if not is_tty:
        try:
            width = int(os.environ.get("COLUMNS", "")) or None
        except ValueError:
            width = None
        width = width or 200
    return Console(
        file=stream,
        markup=False,
        highlight=False,
        emoji=False,
        width=width,
        soft_wrap=False,
        no_color=None if is_tty else True,
        force_terminal=is_tty,
    )


HANGING_INDENT = 4  # a wrapped line's continuation, past the line's own indent


class Verbatim(str):
    """Text `emit` prints as it is, never re-wrapped: what the hook would inject is shown
    with its own line breaks, as the agent receives it."""


def hanging(line: str, width: int) -> str:
    """`line` wrapped to `width` at spaces, each continuation indented past the line's own
    indent: a long gate or lint line reads as one item, where the terminal's own wrap
    starts it again at column 0. A word longer than the width is left whole, and so is a
    line with wide characters (CJK, emoji), whose cells its length does not count."""
    if len(line) <= width or any(unicodedata.east_asian_width(c) in "WF" for c in line):
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + HANGING_INDENT)
    return textwrap.fill(
        line,
        width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
        drop_whitespace=True,
    )


def emit(*blocks: str | RenderableType, file: IO[str] | None = None) -> None:
    """Print text and rich renderables; plain strings are made visible first and, on a
    terminal, long lines are wrapped with a hanging indent (`hanging`); a pipe gets them
    whole, for scripts."""
    stream = file if file is not None else sys.stdout
    width = _terminal_width(stream) if _is_tty(stream) else 0
    out: Console | None = None
    for block in blocks:
        if isinstance(block, str):
            text = visible(block)
            if width and not isinstance(block, Verbatim):
                text = "\n".join(hanging(line, width) for line in text.split("\n"))
            stream.write(text + "\n")
            continue
        if out is None:
            out = console(stream)
        out.print(block, crop=bool(width))  # a pipe: a renderable's unwrapped line stays whole
    stream.flush()


def render(block: Any, width: int = 200) -> str:
    """A renderable as plain text (Markdown exports, tests), no colour, no trailing space."""
    if isinstance(block, str):
        return visible(block)
    from rich.console import Console

    sink = Console(
        width=width,
        markup=False,
        highlight=False,
        emoji=False,
        no_color=True,
        color_system=None,  # no style codes either (bold): the text is written to files
        force_terminal=False,
    )
    with sink.capture() as captured:
        sink.print(block)
    return "\n".join(line.rstrip() for line in captured.get().splitlines())
