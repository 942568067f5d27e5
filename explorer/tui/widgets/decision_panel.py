"""The cascade in order: each gate's inputs, thresholds and verdict; the stage; the text."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.engine import Decision, Verdict
from explorer.engine.route import Gate, Reason, bar_text
from explorer.report import format_value, thresholds_text
from explorer.terminal import plain, visible
from explorer.tui.widgets import update_text


def gate_text(gate: Gate) -> Text:
    if gate.skipped:
        mark, style = "·", "dim"
    elif gate.passed:
        mark, style = "✓", "green"
    else:
        mark, style = "✗", "red"
    line = Text()
    line.append(f"{mark} ", style=f"bold {style}")
    line.append(f"{gate.name:<18}", style="bold" if not gate.skipped else "dim")
    line.append(f" §{gate.section}\n", style="dim")
    if gate.inputs:
        line.append("    ")
        line.append_text(plain(" ".join(f"{k}={format_value(v)}" for k, v in gate.inputs.items())))
        line.append("\n")
    if gate.thresholds:
        line.append("    ")
        line.append(thresholds_text(gate), style="cyan")
        line.append("\n")
    if gate.note:
        line.append("    ")
        line.append_text(plain(gate.note, style="italic dim"))
        line.append("\n")
    return line


def decision_text(
    decision: Decision,
    pinned: Decision | None = None,
    *,
    timings: bool = True,
    unfold: bool = False,
) -> Text:
    out = Text()
    out.append("stage ", style="dim")
    out.append(decision.stage, style="bold magenta")
    out.append(" ")
    if decision.injected:
        out.append("  inject ", style="dim")
        for item in decision.injected:
            out.append(visible(f"{item.id} "), style="bold green")
            out.append(f"{item.confidence:.2f} {item.band} ({item.mode})  ", style="green")
    else:
        out.append("  nothing injected", style="yellow")
    out.append("\n\n")
    # The gates that ran (and so decided) first, in cascade order; the skipped ones fold
    # into one line, since "not applicable" is rarely why a skill lost.
    ran = [gate for gate in decision.gates if not gate.skipped]
    skipped = [gate for gate in decision.gates if gate.skipped]
    for gate in ran:
        out.append_text(gate_text(gate))
    if skipped and unfold:
        out.append(f"skipped ({len(skipped)}), in cascade order:\n", style="dim")
        for gate in skipped:
            out.append_text(gate_text(gate))
    elif skipped:
        out.append(f"· skipped ({len(skipped)}): ", style="dim")
        out.append(", ".join(gate.name for gate in skipped), style="dim")
        out.append("  (space unfolds)\n", style="dim italic")
    out.append_text(relevance_text(decision))
    if timings:
        spent = "  ".join(f"{name} {value:.1f}" for name, value in decision.timings_ms.items())
        out.append(f"\ntimings (ms): {spent}\n", style="dim")
    if pinned is not None:
        out.append("\npinned prompt ", style="bold")
        out.append_text(plain(repr(pinned.prompt)))
        out.append_text(
            plain(f"\n  stage {pinned.stage}, inject {', '.join(pinned.injected_ids) or '—'}\n")
        )
        now, then = set(decision.injected_ids), set(pinned.injected_ids)
        if now != then:
            out.append_text(
                plain(
                    f"  only now: {', '.join(sorted(now - then)) or '—'}; "
                    f"only pinned: {', '.join(sorted(then - now)) or '—'}\n",
                    style="yellow",
                )
            )
    out.append("\nthe hook would inject:\n", style="bold")
    if decision.text:
        out.append_text(plain(decision.text))
    else:
        out.append("(nothing: the hook prints no output)", style="dim")
    return out


def relevance_text(decision: Decision, count: int = 6) -> Text:
    """§9.12: the best candidates' probabilities, each with what moved it most."""
    trace = decision.relevance
    out = Text()
    if trace is None:
        return out
    out.append(
        f"\nrelevance: p = {trace.formula}, s = bias {trace.bias:+.2f} + contributions; inject at "
        f"p ≥ {bar_text(trace.threshold)}, a second at p ≥ {bar_text(trace.second_threshold)}\n",
        style="bold",
    )
    order = sorted(range(len(trace.candidates)), key=lambda row: -trace.probabilities[row])
    for row in order[:count]:
        skill_id = decision.channels.ids[trace.candidates[row]]
        p = float(trace.probabilities[row])
        out.append(f"  {p:.2f} ", style="bold green" if p >= trace.threshold else "dim")
        out.append_text(plain(skill_id))
        out.append(f"  {trace.drivers(row, 4)}\n", style="dim")
    return out


def loading_text() -> Text:
    """What the panel says while the dense model loads, in place of the cascade: the gates
    of a lexical-only decision quote the no-model floor (0.640 where MiniLM's is 0.414),
    c1=0.000 and a top skill picked by id, none of which the router will use."""
    out = Text()
    out.append("dense model loading: lexical only\n", style="bold yellow")
    out.append(
        "The gates, the floor, the margin and what the hook would inject show once the "
        "model is ready. BM25 and overlap are final already.\n",
        style="dim",
    )
    return out


class DecisionPanel(VerticalScroll, can_focus=True):
    """The highlighted skill's reason, then the cascade; space unfolds the skipped gates."""

    ALLOW_MAXIMIZE = True
    BINDINGS = [
        Binding("space", "toggle_skipped", "Skipped gates", id="decision-unfold"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.unfold = False
        self._shown: tuple[Decision, Decision | None, bool, bool] | None = None

    def action_toggle_skipped(self) -> None:
        self.unfold = not self.unfold
        if self._shown is not None:
            decision, pinned, timings, loading = self._shown
            self.show(decision, pinned, timings=timings, loading=loading)

    def compose(self) -> ComposeResult:
        yield Static(id="decision-reason")
        yield Static(id="decision-body")

    def show_reason(self, skill_id: str, why: Reason, room: str = "") -> None:
        """The highlighted skill's reason: the same sentence as its row's "why" cell, and
        under the relevance model's bar, the channels with the most room (room_text)."""
        line = Text()
        line.append_text(plain(skill_id, style="bold"))
        line.append(": ")
        line.append(why.text, style="green" if why.gate == Verdict.INJECT else "yellow")
        if why.gap_text():  # gap to win: what would pass the gate
            line.append(f"  ({why.gap_text()} to pass {why.gate})", style="dim")
        if room:
            line.append(f"\n  room (a channel at its strongest): {room}", style="dim")
        line.append("\n")
        update_text(self.query_one("#decision-reason", Static), line)

    def show(
        self,
        decision: Decision,
        pinned: Decision | None = None,
        *,
        timings: bool = True,
        loading: bool = False,
    ) -> None:
        """The cascade of `decision`; with `loading` (made while the dense model loads),
        a notice in its place: the trace would quote thresholds the router will not use."""
        self._shown = (decision, pinned, timings, loading)
        self.query_one("#decision-body", Static).update(
            loading_text()
            if loading
            else decision_text(decision, pinned, timings=timings, unfold=self.unfold)
        )
