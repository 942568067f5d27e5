"""Every skill for the current prompt: its channels, BM25, rerank, overlap and verdict."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from explorer.engine.decision import Decision, Row, Verdict
from explorer.terminal import one_line

# (key, label, width). Fixed widths: measuring every cell of every row to size the
# columns was most of the cost of a keystroke at 1,000 skills. 118 columns in all.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("rank", "#", 3),
    ("skill", "skill", 20),
    ("verdict", "verdict", 15),
    ("hybrid", "hybrid  cos+kw+ph+file", 27),
    ("cosine", "cos", 6),
    ("bm25", "bm25 norm #", 13),
    ("rerank", "rerank σ", 10),
    ("overlap", "overlap J", 8),
)
DELTA_EPSILON = 0.0005


@dataclass(frozen=True)
class Limits:
    """Thresholds the numbers are coloured against (from the decision and the config)."""

    min_similarity: float
    score_margin: float
    rerank_min: float
    lexical_min: float
    reranker: bool


def _coloured(good: bool, near: bool, text: str) -> Text:
    style = "bold green" if good else ("yellow" if near else "dim")
    return Text(text, style=style)


def _join(cells: list[Text], columns: list[tuple[str, str, int]]) -> Text:
    """Cells into one line, each cut or padded to its column's width, one space apart."""
    line = Text(no_wrap=True, end="")
    for cell, (_, _, width) in zip(cells, columns, strict=True):
        piece = cell.copy()
        piece.truncate(width, overflow="ellipsis", pad=True)
        line.append_text(piece)
        line.append(" ")
    return line


def _short(value: float, digits: int = 2) -> str:
    """0.47 as .47: the breakdown columns stay narrow enough for 120 columns."""
    text = f"{value:.{digits}f}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


def _delta(now: float, before: float | None) -> Text:
    if before is None:
        return Text(" new", style="bold cyan")
    change = now - before
    if abs(change) < DELTA_EPSILON:
        return Text("")
    return Text(
        f" ▲{change:.3f}" if change > 0 else f" ▼{-change:.3f}",
        style="green" if change > 0 else "red",
    )


class SkillsTable(ScrollView, can_focus=True):
    """Rows in decision order; ▲/▼ against the previous snapshot for the same prompt.

    Drawn line by line (Textual's line API): each keystroke replaces every row, and a
    DataTable measured and re-rendered every cell of every row to do that, several times
    slower than building one line per visible row.
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False, id="table-up"),
        Binding("down", "cursor(1)", "Down", show=False, id="table-down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table-page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table-page-down"),
        Binding("home", "cursor_to(0)", "First", show=False, id="table-first"),
        Binding("end", "cursor_to(-1)", "Last", show=False, id="table-last"),
    ]
    COMPONENT_CLASSES = {"skills-table--cursor", "skills-table--header", "skills-table--odd"}
    DEFAULT_CSS = """
    SkillsTable > .skills-table--cursor { background: $primary 30%; text-style: bold; }
    SkillsTable:focus > .skills-table--cursor { background: $primary 60%; }
    SkillsTable > .skills-table--header { text-style: bold; background: $panel; }
    SkillsTable > .skills-table--odd { background: $boost; }
    """
    cursor: reactive[int] = reactive(0)

    class Highlighted(Message):
        def __init__(self, skill_id: str) -> None:
            super().__init__()
            self.skill_id = skill_id

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.hidden: set[str] = set()
        self.rows: list[Row] = []
        self._limits: Limits | None = None
        self._before: dict[str, Row] | None = None
        self._lines: dict[int, Text] = {}  # row index -> its line, built when first drawn
        self._strips: dict[tuple[int, int, int, Style], Strip] = {}  # drawn lines, reused

    # -- content -------------------------------------------------------------------------

    @property
    def columns(self) -> list[tuple[str, str, int]]:
        return [column for column in COLUMNS if column[0] not in self.hidden]

    def toggle_column(self, key: str) -> None:
        self.hidden ^= {key}
        self._lines.clear()
        self._strips.clear()
        self._resize()

    def show(
        self,
        decision: Decision,
        limits: Limits,
        before: dict[str, Row] | None = None,
        *,
        keep_cursor: bool = False,
    ) -> None:
        """Replace the rows; `before` (the previous snapshot's rows) adds deltas.

        A new prompt starts at the top; a re-index or a threshold edit for the same
        prompt keeps the cursor on the same skill.
        """
        keep = self.current_id() if keep_cursor else None
        self.rows = list(decision.rows)
        self._limits, self._before = limits, before
        self._lines.clear()
        self._strips.clear()
        ids = [row.id for row in self.rows]
        cursor = ids.index(keep) if keep in ids else 0
        self._resize()
        if keep_cursor and cursor == self.cursor:
            self.refresh()
        self.cursor = cursor
        if not keep_cursor:
            self.scroll_to(y=0, animate=False)
            self._announce()

    def _resize(self) -> None:
        width = sum(width + 1 for _, _, width in self.columns)
        self.virtual_size = Size(width, len(self.rows) + 1)  # + the header line
        self.refresh()

    def current_id(self) -> str | None:
        return self.rows[self.cursor].id if 0 <= self.cursor < len(self.rows) else None

    def line_text(self, index: int) -> Text:
        """Row `index` as one line of text: what the screen shows (tests read it too)."""
        line = self._lines.get(index)
        if line is None:
            assert self._limits is not None
            cells = self._cells(self.rows[index], self._limits, self._before)
            line = self._lines[index] = _join(cells, self.columns)
        return line

    def cell_text(self, skill_id: str, key: str) -> str:
        """The plain text of one cell, by skill id and column key."""
        assert self._limits is not None
        row = next(row for row in self.rows if row.id == skill_id)
        keys = [column[0] for column in self.columns]
        return self._cells(row, self._limits, self._before)[keys.index(key)].plain

    # -- drawing -------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            header = _join([Text(label) for _, label, _ in self.columns], self.columns)
            style = self.get_component_rich_style("skills-table--header")
            return self._strip(header, scroll_x, width, style)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        if index == self.cursor:
            style = self.get_component_rich_style("skills-table--cursor")
        elif index % 2:
            style = self.get_component_rich_style("skills-table--odd")
        else:
            style = self.rich_style
        key = (index, scroll_x, width, style)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._strip(self.line_text(index), scroll_x, width, style)
        return strip

    def _strip(self, text: Text, scroll_x: int, width: int, style: Style) -> Strip:
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width).apply_style(style)

    # -- the cursor ----------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        if self.rows:
            # Keep the cursor's row in view (line 0 is the header).
            top = self.scroll_offset.y
            visible = max(1, self.size.height - 1)
            if new < top:
                self.scroll_to(y=new, animate=False)
            elif new >= top + visible:
                self.scroll_to(y=new - visible + 1, animate=False)
        if old != new:
            self._announce()

    def _announce(self) -> None:
        skill_id = self.current_id()
        if skill_id is not None:
            self.post_message(self.Highlighted(skill_id))

    def action_cursor(self, step: int) -> None:
        if self.rows:
            self.cursor = min(max(self.cursor + step, 0), len(self.rows) - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.size.height - 2))

    def action_cursor_to(self, index: int) -> None:
        if self.rows:
            self.cursor = index % len(self.rows)

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y - 1
        if event.y >= 1 and 0 <= index < len(self.rows):
            self.cursor = index

    def _cells(self, row: Row, limits: Limits, before: dict[str, Row] | None) -> list[Text]:
        previous = before.get(row.id) if before is not None else None
        over_floor = row.score >= limits.min_similarity
        verdict = (
            Text("INJECT", style="bold reverse green")
            if row.verdict is Verdict.INJECT
            else Text(row.verdict, style="red" if over_floor else "dim")
        )
        hybrid = _coloured(
            over_floor,
            row.score >= limits.min_similarity - limits.score_margin,
            f"{row.score:.3f}",
        )
        channels = (row.cosine, row.keyword, row.phrase, row.file)
        if row.project:  # §3.5, when a working directory (--cwd) implies the skill's ecosystem
            channels += (row.project,)
        if row.bm25_fused:  # the §9 fused channel, under a preset that has one
            channels += (row.bm25_fused,)
        parts = "+".join(_short(value) for value in channels)
        hybrid.append(f" {parts}", style="dim")
        if before is not None:
            hybrid.append_text(_delta(row.score, previous.score if previous else None))
        bm25 = _coloured(
            bool(limits.lexical_min and row.bm25 >= limits.lexical_min),
            row.bm25_rank == 1,
            f"{row.bm25:.2f}",
        )
        bm25.append(
            f" {_short(row.bm25_norm)} {'#' + str(row.bm25_rank) if row.bm25_rank else '—'}",
            style="dim",
        )
        if not limits.reranker:
            rerank = Text("off", style="dim italic")
        elif row.rerank is None:
            rerank = Text("—", style="dim")
        else:
            rerank = _coloured(row.rerank >= limits.rerank_min, False, f"{row.rerank:+.2f}")
            rerank.append(f" {_short(row.rerank_prob or 0.0)}", style="dim")
        cells = {
            "rank": Text(str(row.rank), style="dim"),
            "skill": one_line(row.id, 40),
            "verdict": verdict,
            "hybrid": hybrid,
            "cosine": _coloured(
                row.cosine >= limits.min_similarity,
                row.cosine >= limits.min_similarity - limits.score_margin,
                f"{row.cosine:.3f}",
            ),
            "bm25": bm25,
            "rerank": rerank,
            "overlap": Text(
                f"{row.matched_terms}/{row.query_terms} {row.jaccard:.2f}",
                style="bold" if row.matched_terms else "dim",
            ),
        }
        return [cells[key] for key, _, _ in self.columns]
