"""Every skill for the current prompt: its channels, BM25, rerank, overlap and verdict."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from explorer.engine.decision import Decision, Row
from explorer.tui.safe import one_line

COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("skill", "skill"),
    ("verdict", "verdict"),
    ("hybrid", "hybrid  cos+kw+ph+file"),
    ("cosine", "cos"),
    ("bm25", "bm25 norm #"),
    ("rerank", "rerank σ"),
    ("overlap", "overlap J"),
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


def _coloured(value: float, good: bool, near: bool, text: str) -> Text:
    style = "bold green" if good else ("yellow" if near else "dim")
    return Text(text, style=style)


def _short(value: float) -> str:
    """0.47 as .47: the breakdown columns stay narrow enough for 120 columns."""
    text = f"{value:.2f}"
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


class SkillsTable(DataTable[Text]):
    """Rows in decision order; ▲/▼ against the previous snapshot for the same prompt."""

    class Highlighted(Message):
        def __init__(self, skill_id: str) -> None:
            super().__init__()
            self.skill_id = skill_id

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.hidden: set[str] = set()
        self._shown: list[str] = []

    def on_mount(self) -> None:
        self._set_columns()

    def _set_columns(self) -> None:
        self.clear(columns=True)
        self._shown = [key for key, _ in COLUMNS if key not in self.hidden]
        for key, label in COLUMNS:
            if key in self._shown:
                self.add_column(label, key=key)

    def toggle_column(self, key: str) -> None:
        self.hidden ^= {key}
        self._set_columns()

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
        keep = self._current_id() if keep_cursor else None
        self.clear()
        rows = [self._cells(row, limits, before) for row in decision.rows]
        for row, cells in zip(decision.rows, rows, strict=True):
            self.add_row(*cells, key=row.id)
        if keep is not None and keep in decision.channels.ids:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def _current_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:  # no cursor yet
            return None

    def _cells(self, row: Row, limits: Limits, before: dict[str, Row] | None) -> list[Text]:
        previous = before.get(row.id) if before is not None else None
        over_floor = row.score >= limits.min_similarity
        verdict = (
            Text("INJECT", style="bold reverse green")
            if row.verdict == "inject"
            else Text(row.verdict, style="red" if over_floor else "dim")
        )
        hybrid = _coloured(
            row.score,
            over_floor,
            row.score >= limits.min_similarity - limits.score_margin,
            f"{row.score:.3f}",
        )
        parts = "+".join(_short(value) for value in (row.cosine, row.keyword, row.phrase, row.file))
        hybrid.append(f" {parts}", style="dim")
        if before is not None:
            hybrid.append_text(_delta(row.score, previous.score if previous else None))
        bm25 = _coloured(
            row.bm25,
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
            rerank = _coloured(
                row.rerank, row.rerank >= limits.rerank_min, False, f"{row.rerank:+.2f}"
            )
            rerank.append(f" {_short(row.rerank_prob or 0.0)}", style="dim")
        cells = {
            "rank": Text(str(row.rank), style="dim"),
            "skill": one_line(row.id, 40),
            "verdict": verdict,
            "hybrid": hybrid,
            "cosine": _coloured(
                row.cosine,
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
        return [cells[key] for key in self._shown]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Highlighted(str(event.row_key.value)))
