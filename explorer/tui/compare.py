"""Compare: the current ranking beside a base one, as a diff (Quepid / Splainer style).

The base is the pinned prompt (ctrl+t) when one is pinned, else the same prompt on the
previous snapshot (the library before the last re-index). Each row: the skill's place now,
how it moved (↑3, ↓1, new, gone), its hybrid score and the change of every channel, and
its verdict then → now. The rows come from `engine.compare.ranking_diff`; this module
only lays them out, in fewer columns when the terminal is narrow.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from explorer.engine import Verdict
from explorer.engine.author import Channel, Entry, Move, RankingDiff
from explorer.engine.base import counted
from explorer.engine.qa import Shift
from explorer.engine.route import shown_against
from explorer.terminal import plain, visible

DEPTH = 25  # the top of each ranking that is compared: a skill entering it is "new"
WIDE = 100  # from this many columns, every channel has its own column
NARROW_ROOM = 64  # narrow: every column but the skill's, for most verdict changes (`_narrowest`)
NAME_MIN = 14  # the narrowest skill column the wide layout cuts names to
NAME_NARROWEST = 10  # and the narrow layout's, before it gives up a column

NOTHING_YET = (
    "Nothing to compare with yet. Pin a prompt with ctrl+t (then type another), or save a "
    "skill: the previous snapshot is compared then. f8 closes the comparison."
)


def _delta(channel: Channel, digits: int = 3) -> Text:
    change = channel.delta
    if change is None:
        if channel.current is None and channel.base is None:
            return Text("")
        return Text("n/a", style="dim")
    if abs(change) < 0.5 * 10**-digits:
        return Text("·", style="dim")
    return Text(f"{change:+.{digits}f}", style="green" if change > 0 else "red")


def _move(entry: Entry) -> Text:
    style = {
        Move.UP: "bold green",
        Move.DOWN: "bold red",
        Move.NEW: "bold cyan",
        Move.GONE: "bold magenta",
        Move.SAME: "dim",
    }[entry.move]
    return Text(entry.move_text, style=style)


def _verdict_name(verdict: Verdict | None) -> str:
    """A verdict in whole words (a presenter's screen reads "relevance", not "p")."""
    if verdict is None:
        return "—"
    return "INJECT" if verdict is Verdict.INJECT else str(verdict)


def _verdicts(entry: Entry, short: bool, with_numbers: bool = True) -> Text:
    now = _verdict_name(entry.verdict)
    style = "bold green" if entry.verdict is Verdict.INJECT else ""
    if not entry.verdict_changed:
        return Text(now, style=style or "dim")
    # The was-verdict dim as a span of its own: the now-verdict's colour is never dimmed.
    out = Text().append(_verdict_name(entry.base_verdict), style="dim")
    out.append("→" if short else " → ")
    out.append(now, style=style or "yellow")
    change = entry.shift
    if short and change is not None and None in (change.verdict_before, change.verdict_after):
        change = None  # new in, or gone from, the library: the move column says it
    if not with_numbers:
        change = None  # the narrowest layout: the move and the deltas beside it say them
    if change is not None and (change.before is not None or change.after is not None):
        # The cause: the deciding number on both sides, named (p, hybrid, logit or BM25).
        out.append(f" {_short_cause(change) if short else change.numbers()}", style="dim")
    return out


def _short_cause(change: Shift) -> str:
    """`p .85→.45`: the deciding number before → after. Where it held, the same two
    numbers would say nothing changed: the bar moved instead. `p .45 bar .48→.40` when a
    threshold edit moved it; `hybrid .071<.074` (the number against the bar it has now,
    with the decimals that tell them apart) when others rose past a skill in the rerank
    pool."""
    was, now = _compact(change.before), _compact(change.after)
    bar_was, bar_now = change.bars
    bar = bar_now if bar_now is not None else change.bar
    if was != now or change.after is None or bar is None:
        return f"{change.label} {was}→{now}"
    if bar_was is not None and bar_now is not None and _compact(bar_was) != _compact(bar_now):
        return f"{change.label} {now} bar {_compact(bar_was)}→{_compact(bar_now)}"
    value = change.after
    relation = "<" if value < bar else "≥"
    number, bar_text = _short(shown_against(value, bar)), _short(shown_against(bar, value))
    return f"{change.label} {number}{relation}{bar_text}"


def _compact(value: float | None) -> str:
    """0.49 as .49, -0.5 as -.50: a number a narrow column can hold; — for none."""
    return "—" if value is None else _short(f"{value:.2f}")


def _short(text: str) -> str:
    """A printed number without its leading zero: "0.49" as ".49"."""
    return text.replace("0.", ".", 1) if text.lstrip("-").startswith("0.") else text


def _columns(diff: RankingDiff, *, wide: bool, room: int) -> dict[str, list[Text]]:
    """The diff's columns, each a header and its cells, for a table of `room` cells."""
    entries = diff.entries
    reranked = any(
        entry.rerank.base is not None or entry.rerank.current is not None for entry in entries
    )
    # Narrow (80 columns): the verdict change in whole words with its numbers needs the
    # room of the hybrid score and Δcos, which the Δhybrid beside it stands for.
    columns: dict[str, list[Text]] = {
        "#": [Text("" if entry.rank is None else str(entry.rank)) for entry in entries],
        "move": [_move(entry) for entry in entries],
        "skill": _names(entries, 28 if wide else max(10, room + 2 - NARROW_ROOM)),
    }
    if wide:
        columns["hybrid"] = [
            Text("—" if e.hybrid.current is None else f"{e.hybrid.current:.3f}") for e in entries
        ]
    columns["Δhybrid"] = [_delta(entry.hybrid) for entry in entries]
    if any(entry.p.base is not None or entry.p.current is not None for entry in entries):
        columns["Δp"] = [_delta(entry.p, 2) for entry in entries]
    if wide:
        columns["Δcos"] = [_delta(entry.cosine) for entry in entries]
    columns["Δbm25"] = [_delta(entry.bm25, 2) for entry in entries]
    if wide:
        columns["Δboost"] = [_delta(entry.boosts) for entry in entries]
        if reranked:
            columns["Δrerank"] = [_delta(entry.rerank, 2) for entry in entries]
        columns["was #"] = [Text("—" if e.base_rank is None else str(e.base_rank)) for e in entries]
    columns["verdict (was → now)" if wide else "verdict"] = [
        _verdicts(entry, short=not wide) for entry in entries
    ]
    # Wide but not wide enough for all of them: the columns the others stand for go
    # first, so the verdict change keeps its numbers: the old rank (the move says it),
    # the boosts, the hybrid score (Δhybrid stays) and Δcos.
    for label in ("was #", "Δboost", "hybrid", "Δcos"):
        if _width(columns) <= room:
            break
        columns.pop(label, None)
    # Then the names give way, down to NAME_MIN cells, before the narrow layout's
    # shorter verdicts are needed.
    over = _width(columns) - room
    names_width = _column_width("skill", columns["skill"])
    if wide and over > 0 and names_width - over >= NAME_MIN:
        columns["skill"] = _names(entries, names_width - over)
    if not wide:
        _narrowest(columns, entries, room)
    return columns


def _narrowest(columns: dict[str, list[Text]], entries: Sequence[Entry], room: int) -> None:
    """The narrow layout when its longest verdict change does not fit either (at 80
    columns, `agreement_floor→min_similarity hybrid .09→.13` is 46 cells; a wider table
    would scroll sideways and cut a number): the names down to NAME_NARROWEST, then Δbm25
    goes, then Δp, then the verdicts' numbers (Δhybrid beside them keeps the direction)."""
    over = _width(columns) - room
    names_width = _column_width("skill", columns["skill"])
    if over > 0:
        columns["skill"] = _names(entries, max(NAME_NARROWEST, names_width - over))
    for label in ("Δbm25", "Δp"):
        if _width(columns) > room:
            columns.pop(label, None)
    if _width(columns) > room:
        columns["verdict"] = [_verdicts(entry, short=True, with_numbers=False) for entry in entries]


def _names(entries: Sequence[Entry], width: int) -> list[Text]:
    """Each skill's id, cut to `width` cells with …; struck through when it left."""
    names = []
    for entry in entries:
        name = visible(entry.skill_id)
        if len(name) > width:
            name = name[: width - 1] + "…"
        names.append(Text(name, style="strike dim" if entry.move is Move.GONE else ""))
    return names


def _column_width(label: str, cells: list[Text]) -> int:
    return max([len(label), *(cell.cell_len for cell in cells)])


def _width(columns: dict[str, list[Text]]) -> int:
    """The cells a table of these columns takes, with its padding of one cell each side."""
    return sum(_column_width(label, cells) + 2 for label, cells in columns.items())


def header_text(diff: RankingDiff, base_label: str) -> Text:
    """What is compared with what; one prompt said once when both sides decided it (the
    previous snapshot against this one), where it took two lines of an 80x24 screen."""
    out = Text()
    out.append("compare ", style="bold")
    out.append(f"{base_label} ", style="dim")
    was = f"{diff.base_stage}, inject {', '.join(diff.base_injected) or '—'}"
    now = f"{diff.stage}, inject {', '.join(diff.injected) or '—'}"
    if diff.base_prompt == diff.prompt:
        out.append_text(plain(repr(diff.prompt)))
        out.append_text(plain(f" ({was} → now {now})", style="dim"))
    else:
        out.append_text(plain(repr(diff.base_prompt)))
        out.append_text(plain(f" ({was})", style="dim"))
        out.append("\n     → now ", style="dim")
        out.append_text(plain(repr(diff.prompt)))
        out.append_text(plain(f" ({now})", style="dim"))
    # Each kind of move counted apart: the rows are the top now and those that left it,
    # so one count of every move ("44 moved" in a top 25) would read as impossible.
    counts = Counter(entry.move for entry in diff.entries)
    moves = [f"{counts[Move.UP] + counts[Move.DOWN]} moved"]
    moves += [f"{counts[kind]} {word}" for kind, word in ((Move.NEW, "new"), (Move.GONE, "left"))]
    changed = sum(1 for entry in diff.entries if entry.verdict_changed)
    # The places diffed: the depth, but never more than the library has, nor than it
    # shows now (the rows that left it are listed after).
    places = min(diff.depth or len(diff.entries), len(diff.entries) - counts[Move.GONE])
    out.append(
        f"\n     top {places}: {', '.join(moves)}; {counted(changed, 'verdict')} changed; "
        "f8 closes",
        style="dim",
    )
    return out


class CompareView(Vertical):
    """The ranking diff, in place of the skills table while it is open."""

    DEFAULT_CSS = """
    CompareView { height: 1fr; min-height: 6; }
    CompareView #compare-header { height: auto; padding: 0 1; }
    CompareView DataTable { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diff: RankingDiff | None = None  # what is shown (tests read it)
        self.base_label = ""
        self.highlighted: str | None = None
        self.laid_out_for = 0  # the width the table's columns were chosen for

    def compose(self) -> ComposeResult:
        yield Static(NOTHING_YET, id="compare-header")
        yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)

    def on_resize(self, event: events.Resize) -> None:
        """Another width chooses the columns anew (every channel from WIDE, the skill's
        room below it): the diff is not re-made, only laid out."""
        width = self.app.size.width
        if self.diff is not None and width != self.laid_out_for:
            self.show(self.diff, self.base_label, width, self.highlighted)

    def nothing(self, message: str = NOTHING_YET) -> None:
        self.diff = None
        self.query_one("#compare-header", Static).update(plain(message))
        self.query_one(DataTable).clear(columns=True)

    def show(
        self, diff: RankingDiff, base_label: str, width: int, highlighted: str | None = None
    ) -> None:
        self.diff, self.base_label, self.highlighted = diff, base_label, highlighted
        self.laid_out_for = width
        self.query_one("#compare-header", Static).update(header_text(diff, base_label))
        table = self.query_one(DataTable)
        table.clear(columns=True)
        room = width - 2  # the vertical scrollbar
        columns = _columns(diff, wide=width >= WIDE, room=room)
        if _width(columns) > room:  # even without the columns it can spare: the narrow one
            columns = _columns(diff, wide=False, room=room)
        for label, cells in columns.items():
            # Each column as wide as its widest cell, said to the table: a table rebuilt at
            # a resize measured nothing and kept its headers' widths (names cut to 5 cells).
            table.add_column(label, width=_column_width(label, cells))
        for row, entry in enumerate(diff.entries):
            table.add_row(*(cells[row] for cells in columns.values()), key=entry.skill_id)
        self.follow(highlighted)

    def rows_shown(self) -> int:
        """The diff table's height: a page of the prompt's page keys while it shows."""
        return self.query_one(DataTable).size.height

    def follow(self, skill_id: str | None) -> None:
        """Put the cursor on the skill the app has highlighted (up/down in the prompt move
        it here as they move the hidden table's)."""
        table = self.query_one(DataTable)
        if skill_id is None or self.diff is None:
            return
        try:
            row = table.get_row_index(skill_id)
        except Exception:  # not in the compared top: the cursor stays where it is
            return
        if row != table.cursor_row:
            table.move_cursor(row=row, animate=False)

    def move(self, step: int) -> str | None:
        """Move the diff's cursor `step` rows (up/down and the page keys in the prompt, while
        the diff shows in the table's place) and return the skill under it: its rows are
        not the hidden table's, so moving that one's cursor put it on skills not here."""
        table = self.query_one(DataTable)
        if self.diff is None or not table.row_count:
            return None
        row = min(max(table.cursor_row + step, 0), table.row_count - 1)
        table.move_cursor(row=row, animate=False)
        return table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Moving the cursor in the diff itself highlights that skill everywhere (F7, the
        panels), as moving it in the table does."""
        event.stop()
        table = self.query_one(DataTable)
        if table.has_focus and event.row_key.value is not None:
            go_to = getattr(self.app, "go_to_skill", None)
            if go_to is not None:
                go_to(event.row_key.value)
