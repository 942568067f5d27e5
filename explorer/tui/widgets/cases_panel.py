"""The cases file, re-run on every re-index: what passes, and what flipped on the last save."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.engine.evaluate import Comparison, EvalReport
from explorer.terminal import plain, visible


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def cases_text(report: EvalReport, comparison: Comparison | None, source: str) -> Text:
    rates = report.rates
    out = Text()
    out.append(f"{len(report.results)} cases", style="bold")
    out.append_text(plain(f"  {source}", style="dim"))
    out.append("\n")
    out.append(
        f"recall {_rate(rates.recall)}  false-inject {_rate(rates.false_inject_rate)}  "
        f"host value {_rate(rates.host_value)}\n"
    )
    if comparison is not None:
        out.append("\nsince the last re-index: ", style="bold")
        if not comparison.flipped:
            out.append("no case changed outcome\n", style="dim")
        else:
            out.append("\n")
        for flip in comparison.flipped:
            fixed = flip.passed_b and not flip.passed_a
            out.append(
                "  FIXED  " if fixed else "  BROKE  ", style="bold green" if fixed else "bold red"
            )
            out.append_text(plain(f"{flip.prompt[:70]}  ({flip.kind})"))
            out.append("\n")
    failures = report.failures
    out.append(f"\nfailing ({len(failures)})\n", style="bold")
    for result in failures:
        expected = ", ".join(result.case.expect) or "(none)"
        got = ", ".join(result.injected) or "nothing"
        out.append("  ✗ ", style="red")
        out.append_text(plain(f"{result.case.prompt[:60]}"))
        out.append(visible(f"\n      expected {expected}, got {got}"), style="dim")
        if result.failure is not None and result.failure.gate:
            out.append(f" [{result.failure.gate}]", style="yellow")
        out.append("\n")
    return out


class CasesPanel(VerticalScroll):
    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("No cases file: start with --cases FILE (TOML or TSV).", id="cases-body")

    def show(self, report: EvalReport, comparison: Comparison | None, source: str) -> None:
        self.query_one("#cases-body", Static).update(cases_text(report, comparison, source))

    def message(self, text: str) -> None:
        self.query_one("#cases-body", Static).update(plain(text))
