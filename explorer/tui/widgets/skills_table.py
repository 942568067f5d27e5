"""Every skill for the current prompt: its channels, BM25, rerank, overlap and verdict."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from explorer.engine import Decision, Verdict
from explorer.engine.discovery import SKILL_FILE, Problem
from explorer.engine.route import (
    FEATURE_LABELS,
    LOGIT,
    PROBABILITY,
    Reason,
    Row,
    Rows,
    RowsById,
    p_text,
    reason,
)
from explorer.terminal import one_line

# (key, label): the order on screen. Widths come from the content (see _widths): the
# bounds of each number, the longest id, never a per-cell measurement at every keystroke.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("skill", "skill"),
    ("verdict", "verdict"),
    ("p", "p  moved most"),
    ("delta", "Δ inject"),
    ("hybrid", "hybrid  cos+kw+ph+file"),
    ("cosine", "cos"),
    ("bm25", "bm25 norm #"),
    ("rerank", "rerank σ"),
    ("overlap", "overlap J"),
    ("why", "why"),
)
# When the terminal is too narrow for every column, "why" gives way first, down to WHY_MIN
# cells (the decision panel gives the highlighted row's reason whole, and a cut reason
# ends in an ellipsis). Then these go (they repeat, or add little to, what the others
# show) until "why" has WHY_MIN: cos, rerank, overlap, bm25, "delta" (Δ inject: the why
# cell's numbers and the decision panel say what is missing), then "drivers" folds the p
# column to the probability (the decision panel names what moved it), p, then
# "breakdown" folds the hybrid column to its score; names longer than NAME_KEEP are cut
# to it before any of these, and after them to MIN_NAME. The rank, skill, verdict and
# hybrid score always stay, and "why" takes the room that is left, up to WHY_MAX.
#
# The column that holds the number the highlighted row's gate compared (its deciding
# column: p under the relevance model, rerank for rerank_min, bm25 for the fast path, the
# hybrid score for the floor; engine/route/reasons.py) is never dropped, nor is the column the
# table is sorted by: "why" shortens first.
DROP_ORDER = ("cosine", "rerank", "overlap", "bm25", "delta", "drivers", "p", "breakdown")
# While the dense model loads (Limits.loading) the lexical columns are the only real
# numbers: the breakdown, whose cosine is pending, goes before them.
LOADING_DROP_ORDER = (
    "cosine",
    "rerank",
    "drivers",
    "p",
    "breakdown",
    "delta",
    "overlap",
    "bm25",
)
P_WIDTH = len("0.95")  # the p column folded to the probability (the "drivers" step)
WHY_MIN, WHY_MAX = 24, 80
WHY_SHORTEST = 6  # below this, "why" goes: the decision panel says the highlighted row's
WHY_SAMPLE = 50  # "why" is as wide as the longest reason of the first rows shown
GAP = 2  # spaces between columns: adjacent numbers never run together
MIN_NAME = 12
NAME_KEEP = 24  # longer names are cut to this before any column gives way to "why"
SORT_KEYS = ("decision", "skill", "p", "hybrid", "cosine", "bm25", "rerank", "overlap")
DELTA_EPSILON = 0.0005
# While the dense model loads, the rows come from a lexical-only decision: its cosine is
# 0 for every skill and its floor is the no-model one (0.640 where MiniLM's is 0.414), so
# the cosine, the hybrid total, the verdict and the reason (all of which the model moves)
# show PENDING, and the why cell says what is awaited. BM25, overlap and the boosts stay.
PENDING = "…"
PENDING_WHY = "dense model loading…"


@dataclass(frozen=True)
class Limits:
    """Thresholds the numbers are coloured against (from the decision and the config)."""

    min_similarity: float
    score_margin: float
    rerank_min: float
    lexical_min: float
    reranker: bool
    # The decision was made without the dense model, which is still loading: its numbers
    # that depend on the model are not what the router will use (PENDING on screen).
    loading: bool = False


def _coloured(good: bool, near: bool, text: str) -> Text:
    """A number coloured against its threshold. The colour is the span's, not the cell's:
    what a caller appends (a dim breakdown) is never a dimmed colour, which no theme can
    keep readable on every background."""
    style = "bold green" if good else ("yellow" if near else "dim")
    return Text().append(text, style=style)


def _join(cells: list[Text], widths: list[int]) -> Text:
    """Cells into one line, each cut or padded to its column's width, GAP spaces apart."""
    line = Text(no_wrap=True, end="")
    for cell, width in zip(cells, widths, strict=True):
        piece = cell.copy()
        piece.truncate(width, overflow="ellipsis", pad=True)
        line.append_text(piece)
        line.append(" " * GAP)
    return line


def _short(value: float, digits: int = 2) -> str:
    """0.47 as .47: the breakdown columns stay narrow enough for 120 columns; -0.001 as
    .00 (a minus before zero says nothing)."""
    text = f"{value:.{digits}f}"
    if round(value, digits) == 0:
        text = text.removeprefix("-")
    if text.startswith("0."):
        return text[1:]
    return "-" + text[2:] if text.startswith("-0.") else text


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


def _span(low: float, high: float, fmt: str) -> int:
    """The widest a number between low and high prints as (widths are monotone in |x|)."""
    return max(len(format(low, fmt)), len(format(high, fmt)))


def _short_span(low: float, high: float) -> int:
    return max(len(_short(low)), len(_short(high)))


REJECTED = "rejected"


def _rejected_name(problem: Problem) -> tuple[str, str]:
    """A rejected file as the table lists it: its directory's name, and the reason; a
    directory or link the walk did not enter, by its own name."""
    path = problem.path if not problem.path.endswith(SKILL_FILE) else os.path.dirname(problem.path)
    return os.path.basename(path) or problem.path, problem.message


def matches(query: str, skill_id: str, description: str) -> bool:
    """The `/` filter: every word of the query is in the id as a subsequence (fuzzy, so
    "pdfx" finds "pdf-extract") or in the description as a substring."""
    skill_id, description = skill_id.lower(), description.lower()
    for word in query.lower().split():
        if word in description or word in skill_id:
            continue
        letters = iter(skill_id)
        if not all(char in letters for char in word):
            return False
    return True


def sort_view(
    view: Sequence[int], ranks: np.ndarray, values: np.ndarray | None, *, reverse: bool
) -> list[int]:
    """The rows of `view` by `values`, highest first (NaN last), ties by `ranks` (each
    row's id's alphabetical place); by `ranks` alone without values; `reverse` turns it
    round."""
    at = np.asarray(view, dtype=np.int64)
    if values is None:
        order = np.argsort(ranks[at], kind="stable")
    else:
        highest_first = -np.nan_to_num(values[at], nan=float("-inf"))
        order = np.lexsort((ranks[at], highest_first))
    if reverse:
        order = order[::-1]
    result: list[int] = at[order].tolist()
    return result


def alphabetical_ranks(ids: Sequence[str]) -> np.ndarray:
    """Each id's place among `ids` in alphabetical order."""
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return ranks


class SkillsTable(ScrollView, can_focus=True):
    """Rows in decision order; ▲/▼ against the previous snapshot for the same prompt.

    Drawn line by line (Textual's line API): each keystroke replaces every row, and a
    DataTable measured and re-rendered every cell of every row to do that, several times
    slower than building one line per visible row.

    The `#` column is a row's place in the decision's order (injected first), whatever the
    filter or sort. The cursor follows a skill, not a line: once the user moves it, the same
    skill stays under it as the prompt changes (Home goes back to following the top row).
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False, id="table-up"),
        Binding("down", "cursor(1)", "Down", show=False, id="table-down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table-page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table-page-down"),
        Binding("home", "cursor_to(0)", "First", show=False, id="table-first"),
        Binding("end", "cursor_to(-1)", "Last", show=False, id="table-last"),
        Binding("slash", "screen.filter", "Filter", show=False, id="table-filter"),
        Binding("escape", "screen.focus_prompt", "Prompt", show=False, id="table-prompt"),
    ]
    COMPONENT_CLASSES = {
        "skills-table--cursor",
        "skills-table--header",
        "skills-table--odd",
        "skills-table--sorted",
    }
    DEFAULT_CSS = """
    SkillsTable > .skills-table--cursor {
        background: $block-cursor-blurred-background; text-style: bold;
    }
    SkillsTable:focus > .skills-table--cursor { background: $primary-muted; }
    SkillsTable > .skills-table--header { text-style: bold; background: $panel; }
    SkillsTable > .skills-table--odd { background: $boost; }
    """
    cursor: reactive[int] = reactive(0)

    class Highlighted(Message):
        def __init__(self, skill_id: str) -> None:
            super().__init__()
            self.skill_id = skill_id

    class SortChosen(Message):
        """A click on a header: the screen sorts, and remembers it as F6's sort is."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hidden: set[str] = set()  # columns the user turned off
        # The decision's rows, in its order: lazy (engine Rows), a Row is made only for
        # the lines drawn and the skill asked about; any sequence of rows works.
        self.rows: Sequence[Row] = ()
        self.view: list[int] = []  # indices into rows: filtered and sorted, what is drawn
        self.filter_text = ""
        self.filtered_at = 0.0
        self.descriptions: Mapping[str, str] = {}  # id -> description, for the filter
        self.sort_key = "decision"
        self.sort_reverse = False
        self._followed: str | None = None  # the skill the user put the cursor on
        # Health: files that did not parse, listed greyed after every scored row.
        self.rejected: tuple[Problem, ...] = ()
        self.rejected_view: list[int] = []  # indices into rejected that pass the filter
        # skill id -> its file's warning: it routes, but was read with a recovery (⚠)
        self.warned: dict[str, str] = {}
        self._announced: str | None = None
        self._limits: Limits | None = None
        self._decision: Decision | None = None
        self._before: Mapping[str, Row] | None = None
        self._longest: tuple[Sequence[str] | None, int] = (None, 0)  # (library ids, longest)
        # (library ids, each one's place in alphabetical order): the sorts' tie-break.
        self._alphabetical: tuple[Sequence[str] | None, np.ndarray] = (None, np.zeros(0))
        self._moved: bool | None = None  # whether any row shows a delta: read once a show
        self._widths: dict[str, int] = {}
        self._kept: str | None = None  # the deciding column the layout was made to keep
        self._reasons: dict[str, Reason] = {}  # skill id -> its reason, for self._decision
        self.breakdown = True  # the hybrid column shows cos+kw+ph+file (False: too narrow)
        self._signed: set[str] = set()  # the numeric columns that print a minus sign
        self.drivers = True  # the p column names what moved p most (False: too narrow)
        self._lines: dict[int, Text] = {}  # view index -> its line, built when first drawn
        # Drawn lines, reused: view index -> (scroll_x, width, style) -> its strip.
        self._strips: dict[int, dict[tuple[int, int, Style], Strip]] = {}
        self._marked: int | None = None  # the view index whose kept line has the ▸

    # -- content -------------------------------------------------------------------------

    @property
    def columns(self) -> list[tuple[str, str]]:
        """The columns on screen: not hidden by the user, not dropped for width."""
        return [column for column in COLUMNS if column[0] in self._widths]

    def column_state(self, key: str) -> str:
        """What became of a column the user toggled: a column asked for may still be off
        screen, and the palette's toggle would otherwise seem to do nothing."""
        if key in self.hidden:
            return "hidden"
        if key in self._widths:
            return "shown"
        if key in self._content_widths():
            return "on, but this terminal is too narrow for it"
        return "on, but this decision has no numbers for it"

    def toggle_column(self, key: str) -> None:
        self.hidden ^= {key}
        self._relayout()

    def sort_by(self, key: str) -> None:
        """Sort by a column (the same key again reverses it); "decision" is the cascade's order."""
        if key == self.sort_key and key != "decision":
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key, self.sort_reverse = key, False
        self._rebuild_view()

    def set_health(
        self,
        rejected: tuple[Problem, ...],
        warned: Mapping[str, str] | None = None,
    ) -> None:
        warned = warned or {}
        if rejected == self.rejected and warned == self.warned:
            return
        self.rejected, self.warned = tuple(rejected), dict(warned)
        self._rebuild_view()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._rebuild_view()
        self.call_after_refresh(self._filtered)

    def _filtered(self) -> None:
        self.filtered_at = time.perf_counter()  # the filtered table's frame, for the bench

    def show(
        self,
        decision: Decision,
        limits: Limits,
        before: Mapping[str, Row] | None = None,
        *,
        keep_cursor: bool = False,
    ) -> None:
        """Replace the rows; `before` (the previous snapshot's rows) adds deltas.

        The cursor stays on the followed skill; with none, a new prompt starts at the top
        and a re-index or a threshold edit for the same prompt keeps the current skill. A
        new prompt shows the top rows when the followed skill is among them, so the winner
        is in view with it.
        """
        keep = self.followed or (self.current_id() if keep_cursor else None)
        self.rows = decision.rows
        self._decision = decision
        self._reasons = {}
        self._limits, self._before = limits, before
        self._moved = None
        self._rebuild_view(keep, top=not keep_cursor and self.followed is None)
        if not keep_cursor and self.cursor < self._rows_shown():
            self.scroll_to(y=0, animate=False)

    def _rebuild_view(self, keep: str | None = None, *, top: bool = False) -> None:
        """Filter and sort the rows again. The cursor stays on `keep`, else on the followed
        skill, else on the current one; with `top` (a new prompt, nothing followed) it goes
        to the first row."""
        keep = keep or self.followed or (None if top else self.current_id())
        view = list(range(len(self.rows)))
        rejected = list(range(len(self.rejected)))
        if self.filter_text.strip():
            all_ids, query, descriptions = self.ids(), self.filter_text, self.descriptions
            view = [i for i in view if matches(query, all_ids[i], descriptions.get(all_ids[i], ""))]
            rejected = [i for i in rejected if matches(query, *_rejected_name(self.rejected[i]))]
        self.rejected_view = rejected
        if self.sort_key != "decision":
            view = self._sorted(view)
        elif self.sort_reverse:
            view.reverse()
        self.view = view
        cursor = self._view_position(keep)
        self._relayout(self.id_at(view[cursor]) if view else None)
        if cursor == self.cursor:
            self.refresh()
        self.cursor = cursor
        if top and cursor == 0:
            self.scroll_to(y=0, animate=False)
        self._scroll_to_cursor()
        self._announce()

    @property
    def followed(self) -> str | None:
        """The skill the user put the cursor on, which it stays on from prompt to prompt."""
        return self._followed

    @followed.setter
    def followed(self, skill_id: str | None) -> None:
        if skill_id == self._followed:
            return
        # Its ▸ moves: the line that has it and the new one's are drawn again. The new
        # one is the cursor's (a jump elsewhere lays the table out anew); no search of
        # the view, which at 26,000 rows in a sorted table cost milliseconds a key.
        self._followed = skill_id
        for position in (self._marked, self.cursor if self.current_id() == skill_id else None):
            if position is not None:
                self._lines.pop(position, None)
                self._strips.pop(position, None)
        self._marked = None
        self.refresh()

    def _view_position(self, keep: str | None) -> int:
        """Where `keep` is in the view (0 when it is not there). By the decision's own index
        when there is one: at 26,000 rows a list of the view's ids and a scan of it cost
        tens of milliseconds of the event loop at every repaint."""
        if keep is None or not self.view:
            return 0
        if isinstance(self.rows, Rows) and len(self.view) == len(self.rows):
            at = self.rows.index_of(keep)
            if at is None:
                return 0
            for position in (at, len(self.view) - 1 - at):  # the decision's order, reversed
                if self.view[position] == at:
                    return position
        all_ids = self.ids()
        try:
            return [all_ids[i] for i in self.view].index(keep)
        except ValueError:
            return 0

    def ids(self) -> Sequence[str]:
        """Every row's skill id, in the decision's order, without making rows."""
        if isinstance(self.rows, Rows):
            return self.rows.ids
        return [row.id for row in self.rows]

    def id_at(self, position: int) -> str:
        """The skill id of row `position` in the decision's order. Not `ids()[position]`:
        a repaint reads a few ids, and a tuple of every row's (26,000, new with every
        decision) touched every id in memory, about 9 ms a repaint on the event loop."""
        if isinstance(self.rows, Rows):
            return self.rows.id_at(position)
        return self.rows[position].id

    def _longest_id(self) -> int:
        """The longest skill id's length, measured once per library (per snapshot), not
        per decision."""
        library = self.rows.library_ids if isinstance(self.rows, Rows) else self.ids()
        if library is not self._longest[0]:
            self._longest = (library, max(map(len, library), default=0))
        return self._longest[1]

    def column(self, name: str) -> np.ndarray:
        """One numeric field of every row, in the decision's order (NaN: no rerank)."""
        if name == "relevance":
            return self._probabilities()
        if isinstance(self.rows, Rows):
            return self.rows.column(name)
        if name == "rerank":
            return np.array([np.nan if r.rerank is None else r.rerank for r in self.rows])
        return np.array([float(getattr(row, name)) for row in self.rows], dtype=np.float64)

    def _probabilities(self) -> np.ndarray:
        """§9.12: each row's p, NaN where the relevance model saw no candidate; read from the
        decision's trace, so no row is made for it."""
        rows, trace = self.rows, self._decision.relevance if self._decision else None
        if not isinstance(rows, Rows) or trace is None:
            return np.array([np.nan if r.relevance is None else r.relevance for r in rows])
        values = np.full(len(rows), np.nan)
        ids = self._decision.channels.ids if self._decision else ()
        for position, p in zip(trace.candidates, trace.probabilities, strict=True):
            at = rows.index_of(ids[position])
            if at is not None:
                values[at] = float(p)
        return values

    def row_of(self, skill_id: str) -> Row | None:
        """The row of `skill_id` (made now if it was not drawn yet), or None."""
        if isinstance(self.rows, Rows):
            at = self.rows.index_of(skill_id)
            return None if at is None else self.rows[at]
        return next((row for row in self.rows if row.id == skill_id), None)

    def _sorted(self, view: list[int]) -> list[int]:
        """`view` by the sort column, best first, ties by id (a stable order).

        In numpy: at 26,000 rows Python's sort by (value, id) cost about 45 ms of the
        event loop at every keystroke of a sorted table."""
        values = None
        if self.sort_key != "skill":
            name = {"hybrid": "score", "overlap": "jaccard", "p": "relevance"}.get(
                self.sort_key, self.sort_key
            )
            values = self.column(name)
        return sort_view(view, self._alphabetical_ranks(), values, reverse=self.sort_reverse)

    def _alphabetical_ranks(self) -> np.ndarray:
        """Each row's id's place in alphabetical order, in the decision's order: ranked
        once per library (snapshot), only reordered for each decision."""
        if not isinstance(self.rows, Rows):
            return alphabetical_ranks(self.ids())
        library = self.rows.library_ids
        if library is not self._alphabetical[0]:
            self._alphabetical = (library, alphabetical_ranks(library))
        ranks: np.ndarray = self._alphabetical[1][self.rows.order]
        return ranks

    def on_resize(self) -> None:
        self._relayout()
        # A shorter table (F10, F9 back, F4, a smaller terminal) keeps the cursor's row in
        # view: Textual only clamps the scroll offset, which left it under the panels.
        self.call_after_refresh(self._scroll_to_cursor)

    def deciding(self, skill_id: str | None = None) -> str | None:
        """The column of the number that decided `skill_id`'s row (default: the cursor's)."""
        row = self.row_of(skill_id or self.current_id() or "")
        if row is None or (self._limits is not None and self._limits.loading):
            return None
        return self.reason_of(row).column

    def _relayout(self, skill_id: str | None = None) -> None:
        """Column widths from the content and the width on screen; then redraw."""
        content = self._content_widths()
        loading = self._limits is not None and self._limits.loading
        drop = LOADING_DROP_ORDER if loading else DROP_ORDER
        self._kept = self.deciding(skill_id)
        # The width beside the vertical scrollbar: columns over it made a horizontal
        # scrollbar appear, which took a row and hid the cursor's line behind it.
        room = self.scrollable_content_region.width or self.size.width or 120
        # The sort column stays on screen as the deciding one does: the order is read in it.
        keep = (self._kept, self.sort_key)
        self._widths = self._fit(content, room, self._score_width(), drop, keep=keep)
        self.breakdown = self._widths.get("hybrid", 0) >= content.get("hybrid", 0)
        self.drivers = self._widths.get("p", 0) >= content.get("p", 0)
        self._lines.clear()
        self._strips.clear()
        self._marked = None
        width = sum(w + GAP for w in self._widths.values())
        # + the header line, + the rejected files after the scored rows
        self.virtual_size = Size(width, len(self.view) + len(self.rejected_view) + 1)
        self.refresh()

    def _content_widths(self) -> dict[str, int]:
        """Each column as wide as its widest value could print, from the values' bounds."""
        rows, limits = self.rows, self._limits
        labels = dict(COLUMNS)
        wanted = {key: len(label) for key, label in COLUMNS if key not in self.hidden}
        if limits is not None and not limits.reranker:
            wanted.pop("rerank", None)  # no model loaded: a column of "off" says nothing
        loading = limits is not None and limits.loading
        if loading:
            wanted.pop("delta", None)  # no floor to be short of yet: a column of blanks
        trace = self._decision.relevance if self._decision is not None else None
        if trace is None or loading:
            wanted.pop("p", None)  # no relevance model decided: no probability to show
        if not rows:
            return wanted
        # From whole columns (numpy), so no row is made for a line that is never drawn.
        lo: dict[str, float] = {}
        hi: dict[str, float] = {}
        name = self._longest_id()
        name = max([name, *(len(skill_id) + len(WARNED) for skill_id in self.warned)])
        name = max([name, *(len(_rejected_name(p)[0]) for p in self.rejected)])
        verdict_set = rows.verdicts() if isinstance(rows, Rows) else {r.verdict for r in rows}
        verdict = max(len(found) for found in verdict_set)
        if loading:
            verdict = len(PENDING)  # the room goes to the lexical columns, which are real
        if self.rejected:
            verdict = max(verdict, len(REJECTED))
        for key in ("score", "cosine", "keyword", "phrase", "file", "bm25", "bm25_norm"):
            values = self.column(key)
            lo[key], hi[key] = _bounds(values)
        for key in ("project", "bm25_fused"):  # the breakdown's parts a row may add
            lo[key], hi[key] = _bounds(self.column(key))
        # A column that prints a minus sign somewhere prints a space where it has none,
        # so its decimal points stay in one line.
        self._signed = {key for key in ("score", "cosine") if format(lo[key], ".3f")[0] == "-"}
        logits = self.column("rerank")
        reranked = bool(np.isfinite(logits).any())
        logit = float(np.nanmax(np.abs(logits))) if reranked else 0.0
        channels = ("cosine", "keyword", "phrase", "file")
        parts = sum(_short_span(lo.get(k, 0.0), hi.get(k, 0.0)) for k in channels)
        for key in ("project", "bm25_fused"):  # "+.15": §3.5's boost, the §9 fused channel
            if lo.get(key) or hi.get(key):
                parts += 1 + _short_span(lo.get(key, 0.0), hi.get(key, 0.0))
        hybrid = _span(lo["score"], hi["score"], self._number_format("score")) + 1 + parts + 3
        if self._before is not None and self._any_delta():
            hybrid += 7  # " ▲0.123": a delta is never cut
        queries = len(str(rows[0].query_terms))
        content = {
            "delta": _delta_width(verdict_set, reranked, hi),
            "why": self._why_width(),
            "rank": len(str(len(rows))) + 1,  # + the follow mark
            "skill": name,
            "verdict": verdict,
            "hybrid": hybrid,
            "cosine": _span(lo["cosine"], hi["cosine"], self._number_format("cosine")),
            "bm25": len(format(hi.get("bm25", 0.0), ".2f"))
            + 1
            + _short_span(0.0, hi.get("bm25_norm", 0.0))
            + 2
            + len(str(len(rows))),
            "rerank": 1 + len(format(logit, ".2f")) + 5,
            "overlap": 2 * queries + 1 + 5,
            "p": max((len(self._p_text(row)) for row in range(len(trace.candidates))), default=1)
            if trace is not None
            else 1,
        }
        # The sorted column's header holds its mark too ("hybrid ▼  cos+kw+ph+file").
        marked = {self.sort_key: len(self.sort_mark()) + 1} if self.sort_key in wanted else {}
        return {key: max(len(labels[key]) + marked.get(key, 0), content[key]) for key in wanted}

    def _why_width(self) -> int:
        """The longest reason among the first rows of the view (as many as the table shows,
        at most WHY_SAMPLE), so short reasons leave room for more columns. Those rows are
        drawn anyway: no Row is made that would not be (lazy rows)."""
        if self._decision is None:
            return WHY_MAX
        rows = self.rows
        shown = min(WHY_SAMPLE, max(1, (self.size.height or WHY_SAMPLE) - 1))
        longest = max((len(self.why_text(rows[i])) for i in self.view[:shown]), default=0)
        return max(len("why"), min(WHY_MAX, longest))

    def _number_format(self, key: str) -> str:
        """How the score or cosine column prints: with a space for the sign when another
        row of it prints a minus, so its decimal points stay in one line."""
        return " .3f" if key in self._signed else ".3f"

    def _score_width(self) -> int:
        """The hybrid column without its breakdown: the score, and a delta when one shows."""
        if not self.rows:
            return len("hybrid")
        low, high = _bounds(self.column("score"))
        width = _span(low, high, self._number_format("score"))
        if self._before is not None and self._any_delta():
            width += 7
        return max(len("hybrid"), width)

    def _any_delta(self) -> bool:
        """Whether any row shows ▲/▼ or "new": a re-index that moved nothing adds no width.
        Once per decision shown: both widths read it, and at 26,000 rows it compares two
        whole columns on the event loop."""
        if self._moved is None:
            self._moved = self._compare_before()
        return self._moved

    def _compare_before(self) -> bool:
        before, rows = self._before or {}, self.rows
        if isinstance(before, RowsById):  # the previous decision's rows: whole columns
            if isinstance(rows, Rows):
                previous = before.scores_of(rows)
            else:
                previous = before.scores(self.ids())
            now = self.column("score")
            return bool(np.isnan(previous).any() or (np.abs(now - previous) >= DELTA_EPSILON).any())
        for row in self.rows:
            was = before.get(row.id)
            if was is None or abs(row.score - was.score) >= DELTA_EPSILON:
                return True
        return False

    @staticmethod
    def _fit(
        widths: dict[str, int],
        room: int,
        score: int = 0,
        drop: tuple[str, ...] = DROP_ORDER,
        *,
        keep: Collection[str | None] = (),
    ) -> dict[str, int]:
        """ "why" shortens first, to WHY_MIN cells; then the least telling columns go (in
        `drop`'s order; the "breakdown" step folds the hybrid column to `score` cells, the
        "drivers" step the p column to P_WIDTH) and names are cut until it has them; "why"
        takes what is left, up to its content. Numbers are never cut, and `keep` (the
        deciding column, the sort column) is never dropped: "why" shortens below WHY_MIN
        instead, and goes when not even WHY_SHORTEST are left. A column dropped on the way
        comes back when the ones dropped after it left room for it: dropping in order
        overshoots (a hidden "why" would give its room to p, not to the cos it pushed out)."""
        content = dict(widths)
        widths = dict(widths)
        why = widths.pop("why", None)

        def total() -> int:
            return sum(w + GAP for w in widths.values())

        wanted = min(why, WHY_MIN) + GAP if why is not None else 0
        dropped: list[str] = []
        short = total() + wanted - room
        if short > 0 and "skill" in widths:  # a name longer than NAME_KEEP goes first
            widths["skill"] = max(min(widths["skill"], NAME_KEEP), widths["skill"] - short)
        for key in drop:
            if total() + wanted <= room:
                break
            if key == "breakdown":
                if "hybrid" in widths and score:
                    widths["hybrid"] = min(widths["hybrid"], score)
            elif key == "drivers":
                if "p" in widths:
                    widths["p"] = min(widths["p"], P_WIDTH)
            elif key not in keep and key in widths:
                dropped.append(key)
                del widths[key]
        for key in reversed(dropped):  # the most telling first
            if total() + content[key] + GAP + wanted <= room:
                widths[key] = content[key]
        widths = {key: widths[key] for key in content if key in widths}  # in their order
        if why is not None and "skill" in widths:
            short = total() + min(why, WHY_MIN) + GAP - room
            if short > 0:
                widths["skill"] = max(MIN_NAME, widths["skill"] - short)
        if why is not None and total() + GAP + WHY_SHORTEST <= room:
            widths["why"] = min(why, room - total() - GAP)
        if total() > room and "skill" in widths:
            widths["skill"] = max(MIN_NAME, widths["skill"] - (total() - room))
        return widths

    def current_id(self) -> str | None:
        if 0 <= self.cursor < len(self.view):
            return self.id_at(self.view[self.cursor])
        return None

    def line_text(self, index: int) -> Text:
        """Line `index` of the view as text: what the screen shows (tests read it too)."""
        line = self._lines.get(index)
        if line is None and index >= len(self.view):
            line = self._lines[index] = self._rejected_line(index - len(self.view))
        if line is None:
            assert self._limits is not None
            position = self.view[index]
            cells = self._cells(position, self._limits, self._before)
            widths = [self._widths[key] for key, _ in self.columns]
            line = _join(cells, widths)
            if self.id_at(position) == self._followed:
                self._marked = index
            self._lines[index] = line
        return line

    def _rejected_line(self, number: int) -> Text:
        """A file that did not parse, greyed, with the reason in the why column."""
        problem = self.rejected[self.rejected_view[number]]
        name, _ = _rejected_name(problem)
        cells = {
            "rank": Text(" ✗", style="red"),
            "skill": one_line(name, 200),
            "verdict": Text(REJECTED, style="red"),
            "why": one_line(problem.message, 400),
        }
        line = _join([cells.get(key, Text("")) for key, _ in self.columns], self._widths_list())
        line.stylize("dim")
        return line

    def _widths_list(self) -> list[int]:
        return [self._widths[key] for key, _ in self.columns]

    def header_text(self) -> Text:
        labels = []
        for key, label in self.columns:
            if key == "hybrid" and not self.breakdown:
                label = "hybrid"
            if key == "p" and not self.drivers:
                label = "p"
            if key == self.sort_key:  # the mark stays whole: a narrow column cuts the label
                mark, width = f" {self.sort_mark()}", self._widths[key]
                # Beside the sorted number's own name ("hybrid ▼  cos+kw+ph+file", "p ▼
                # moved most"), not after the parts that follow it.
                head, gap, rest = label.partition("  ")
                if len(head) + len(mark) > width:
                    head = head[: max(width - len(mark) - 1, 0)] + "…"
                label = f"{head}{mark}{gap}{rest}"
                if len(label) > width:  # the parts after the name give way first
                    fits = width - 1 >= len(head) + len(mark)
                    label = label[: width - 1] + "…" if fits else head + mark
            elif key == "skill" and self.sort_key not in ("decision", *self._widths):
                # Sorted by a column not on screen: said where the eye looks first.
                label += f" · by {self.sort_key} {self.sort_mark()}"
            elif key == "why" and (winner := self.winner_above()) is not None:
                # The cursor follows a skill far down the ranking: the injected one is
                # scrolled off above, and the header says so (home in the table: back to it).
                label = f"{label}  ↑ INJECT {one_line(winner, 200).plain}"
            labels.append(Text(label))
        return _join(labels, [self._widths[key] for key, _ in self.columns])

    def winner_above(self) -> str | None:
        """The injected skill when its row is scrolled off above (the decision's order):
        a followed skill far down the ranking keeps the cursor, and the view, on itself."""
        decision, limits = self._decision, self._limits
        if decision is None or limits is None or limits.loading or not self.view:
            return None
        if self.sort_key != "decision" or self.sort_reverse or self.scroll_offset.y == 0:
            return None
        first = self.id_at(self.view[0])
        return first if first in decision.injected_ids else None

    def sort_mark(self) -> str:
        """The direction of the sort: ▼ best first for numbers (▲ reversed); names say
        A→Z or Z→A, since an arrow reads as "descending" there as often as not; the
        decision's own order has no direction to give."""
        if self.sort_key == "decision":
            return ""
        if self.sort_key == "skill":
            return "Z→A" if self.sort_reverse else "A→Z"
        return "▲" if self.sort_reverse else "▼"

    def cell_text(self, skill_id: str, key: str) -> str:
        """The plain text of one cell, by skill id and column key."""
        assert self._limits is not None
        position = list(self.ids()).index(skill_id)
        keys = [column[0] for column in self.columns]
        return self._cells(position, self._limits, self._before)[keys.index(key)].plain

    # -- drawing -------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("skills-table--header")
            return self._strip(self.header_text(), scroll_x, width, style)
        index = scroll_y + y - 1
        if index >= len(self.view) + len(self.rejected_view):
            return Strip.blank(width, self.rich_style)
        if index == self.cursor:
            style = self.get_component_rich_style("skills-table--cursor")
        elif index % 2:
            style = self.get_component_rich_style("skills-table--odd")
        else:
            style = self.rich_style
        kept = self._strips.setdefault(index, {})
        strip = kept.get((scroll_x, width, style))
        if strip is None:
            strip = self._strip(self.line_text(index), scroll_x, width, style)
            kept[(scroll_x, width, style)] = strip
        return strip

    def _strip(self, text: Text, scroll_x: int, width: int, style: Style) -> Strip:
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width).apply_style(style)

    # -- the cursor ----------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        deciding = self.deciding()
        if deciding != self._kept and deciding in dict(COLUMNS) and deciding not in self._widths:
            self._relayout()  # the new row's deciding column must be on screen
        self.refresh()
        self._scroll_to_cursor()
        if old != new:
            self._announce()

    def _scroll_to_cursor(self) -> None:
        if self.view:
            # Keep the cursor's row in view (line 0 is the header).
            top = self.scroll_offset.y
            visible = self._rows_shown()
            if self.cursor < top:
                self.scroll_to(y=self.cursor, animate=False)
            elif self.cursor >= top + visible:
                self.scroll_to(y=self.cursor - visible + 1, animate=False)

    def _rows_shown(self) -> int:
        """How many rows the table shows: its height less the header, and less the
        horizontal scrollbar when the columns are wider than the screen (the cursor was
        kept on the line under it, out of sight)."""
        return max(1, self.scrollable_content_region.height - 1)

    def _announce(self) -> None:
        skill_id = self.current_id()
        if skill_id is not None and skill_id != self._announced:
            self._announced = skill_id
            self.post_message(self.Highlighted(skill_id))

    def move(self, step: int) -> None:
        """Move the cursor by `step` rows (from the prompt too); the skill is then followed,
        but on the top row it is the top row that is followed, as after Home: up or page up
        back to the top left the next prompt's view on that skill, wherever it ranked.

        The rejected files under the scored rows are not skills the cursor can rest on:
        a step past the last row scrolls them into view instead, as a pager would."""
        if self.view:
            beyond = self.cursor + step - (len(self.view) - 1)
            self.cursor = min(max(self.cursor + step, 0), len(self.view) - 1)
            self.followed = self.current_id() if self.cursor else None
            if beyond > 0 and self.rejected_view:
                y = min(self.scroll_offset.y + beyond, self.max_scroll_y)
                self.scroll_to(y=y, animate=False)
            self.refresh()

    def go_to(self, skill_id: str) -> bool:
        """Put the cursor on `skill_id` and follow it; clears a filter that hides it."""
        ids = self.ids()
        if skill_id not in ids:
            return False
        self.followed = skill_id
        if skill_id not in (ids[i] for i in self.view):
            self.filter_text = ""
        self._rebuild_view(skill_id)
        if self.cursor < self._rows_shown():  # on the first page: the rows above it too
            self.scroll_to(y=0, animate=False)
        return True

    def action_cursor(self, step: int) -> None:
        self.move(step)

    def action_page(self, direction: int) -> None:
        self.move(direction * max(1, self._rows_shown() - 1))

    def action_cursor_to(self, index: int) -> None:
        if self.view:
            self.cursor = index % len(self.view)
            # Home: follow the top row again, whatever skill that is for the next prompt.
            self.followed = None if index == 0 else self.current_id()
            if index < 0 and self.rejected_view:  # End: the rejected files under it too
                self.scroll_to(y=self.max_scroll_y, animate=False)
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            self._click_header(event.x + self.scroll_offset.x)
            return
        index = self.scroll_offset.y + event.y - 1
        if 0 <= index < len(self.view):
            self.cursor = index
            self.followed = self.current_id()

    def _click_header(self, x: int) -> None:
        left = 0
        for key, _ in self.columns:
            right = left + self._widths[key] + GAP
            if left <= x < right:
                self.post_message(self.SortChosen("decision" if key == "rank" else key))
                return
            left = right

    def reason_of(self, row: Row) -> Reason:
        """The engine's reason for a row: the table, the panel and `why` say the same.
        Kept per decision: the why column's width and the drawn cell ask for the same."""
        if self._limits is not None and self._limits.loading:
            return Reason(PENDING, PENDING_WHY)  # the floor and margin quoted would be wrong
        if self._decision is None:
            return Reason(row.verdict, row.verdict)
        found = self._reasons.get(row.id)
        if found is None:
            found = self._reasons[row.id] = reason(self._decision, row)
        return found

    def why_text(self, row: Row) -> str:
        """The why cell: `reason_of`'s text, less a leading `p 0.00 < 0.59: ` while the p
        column is on screen to say it (Δ inject gives the gap), so a narrow cell keeps what
        moved p, not the p it repeats. The decision panel keeps the whole sentence."""
        why = self.reason_of(row)
        if why.unit == PROBABILITY and "p" in self._widths:
            return _P_COMPARISON.sub("", why.text, count=1)
        return why.text

    def _p_text(self, candidate: int) -> str:
        """`0.95 bm25 lead+1.5`: a candidate's p and the contribution that moved it most."""
        trace = self._decision.relevance if self._decision is not None else None
        if trace is None:
            return "—"
        (name, value), *_ = trace.top_contributions(candidate, 1)
        p = p_text(float(trace.probabilities[candidate]))
        return f"{p} {FEATURE_LABELS.get(name, name)}{value:+.1f}"

    def _p_cell(self, row: Row, injected: bool) -> Text:
        decision = self._decision
        task = decision.task_for(row.id) if decision is not None and injected else None
        if task is not None:  # a clause's p injected it; the whole prompt's may be ~0
            cell = Text(f"{task.p:.2f}", style="bold green")
            if self.drivers:
                cell.append(" task", style="dim")  # the decision panel names its drivers
            return cell
        trace = decision.relevance if decision is not None else None
        position = (decision.channels.positions or {}).get(row.id) if decision else None
        at = None if trace is None or position is None else trace.at(position)
        if trace is None or at is None:
            return Text("—", style="dim")
        p, driver = self._p_text(at).split(" ", 1)
        over = float(trace.probabilities[at]) >= trace.second_threshold
        cell = Text().append(p, style="bold green" if injected else ("yellow" if over else ""))
        if self.drivers:
            cell.append(f" {driver}", style="dim")
        return cell

    def _cells(self, position: int, limits: Limits, before: Mapping[str, Row] | None) -> list[Text]:
        row = self.rows[position]
        previous = before.get(row.id) if before is not None else None
        # Made without the dense model (still loading): only the lexical numbers are real,
        # and no colour says "passes" or "near" a floor the router will not use.
        pending = limits.loading
        injected = row.verdict is Verdict.INJECT and not pending
        over_floor = row.score >= limits.min_similarity and not pending
        near = row.score >= limits.min_similarity - limits.score_margin and not pending
        # Green means "injected", nothing else: a row over the floor that a later gate
        # (score_margin, max_skills, …) dropped is a near miss, yellow.
        if pending:
            verdict = Text(PENDING, style="dim")
        elif injected:
            verdict = Text("INJECT", style="bold reverse green")
        else:
            verdict = Text(row.verdict, style="red" if over_floor else "dim")
        score = format(row.score, self._number_format("score"))
        hybrid = _coloured(
            injected, over_floor or near, PENDING.ljust(len(score)) if pending else score
        )
        cosine = _coloured(
            injected,
            row.cosine >= limits.min_similarity - limits.score_margin and not pending,
            PENDING if pending else format(row.cosine, self._number_format("cosine")),
        )
        channels: tuple[float, ...] = (row.cosine, row.keyword, row.phrase, row.file)
        if row.project:  # §3.5, when a working directory (--cwd) implies the skill's ecosystem
            channels += (row.project,)
        if row.bm25_fused:  # the §9 fused channel, under a preset that has one
            channels += (row.bm25_fused,)
        if self.breakdown:
            shown = [_short(value) for value in channels]
            if pending:
                shown[0] = PENDING  # the cosine: 0 only because the model is not there yet
            parts = "+".join(shown)
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
        followed = row.id == self.followed
        why = self.reason_of(row)
        cells = {
            "delta": Text(
                why.delta_text().replace(" logit", "ℓ") if why.unit == LOGIT else why.delta_text(),
                style="yellow" if why.missing is not None and why.missing < 0.05 else "dim",
            ),
            "why": Text(
                self.why_text(row), style="green" if injected else ("" if over_floor else "dim")
            ),
            "rank": Text(
                f"{'▸' if followed else ' '}{position + 1}", style="bold" if followed else "dim"
            ),
            "skill": _name(row.id, row.id in self.warned),
            "verdict": verdict,
            "hybrid": hybrid,
            "cosine": cosine,
            "bm25": bm25,
            "rerank": rerank,
            "overlap": Text(
                f"{row.matched_terms}/{row.query_terms} {row.jaccard:.2f}",
                style="bold" if row.matched_terms else "dim",
            ),
            "p": self._p_cell(row, injected),
        }
        return [cells[key] for key, _ in self.columns]


# A relevance reason's opening comparison: "p 0.09 < 0.59: ", "p 0.70 < second skill's bar
# 0.99: ".
_P_COMPARISON = re.compile(r"^p [^:,]+: ")
WARNED = "⚠ "  # before a name: its SKILL.md is invalid (its YAML, say) but was recovered


def _name(skill_id: str, warned: bool) -> Text:
    """A row's skill cell: its id, marked when its file was read with a recovery."""
    name = one_line(skill_id, 200)
    return Text(WARNED, style="bold yellow") + name if warned else name


def _delta_width(verdicts: set[Verdict], reranked: bool, high: Mapping[str, float]) -> int:
    """The widest gap Δ inject can print, by the units its rows' gates use: the hybrid
    score (+0.041), a logit (+0.60 and the logit sign), p (+0.48 p) or BM25 (+11.53 bm25)."""
    width = len(f"+{high.get('score', 0.0):.3f}")
    if reranked:
        width = max(width, len("+0.60ℓ") + 1, len("+0.48 p"))  # a logit gap up to +99.99
    if Verdict.LEXICAL_DOMINANCE in verdicts:
        width = max(width, len(f"+{high.get('bm25', 0.0):.2f} bm25"))
    return width


def _bounds(values: np.ndarray) -> tuple[float, float]:
    """(min, max) of a column with 0 included; NaN ignored (it never printed wider)."""
    finite = values[~np.isnan(values)]
    if not len(finite):
        return 0.0, 0.0
    return min(float(finite.min()), 0.0), max(float(finite.max()), 0.0)
