"""Explanations an author can act on, through Pilot over the real engine: every flip with its
cause (the Cases tab, F7 and F8), the deciding column at every width, contrast, exports
without escape codes, copy's fallback to a file, and warnings told from errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from explorer.engine.flips import flip_cause
from explorer.engine.pipeline import decide
from explorer.tui.widgets.cases_panel import CasesPanel
from tests.conftest import write_skill
from tests.tui.test_app import make_app, ready, settle
from tests.tui.test_whatif_compare import PROMPT, _open_whatif, _text, burst, library  # noqa: F401

SIZE = (120, 40)


async def test_f7_names_the_skill_the_gate_and_the_numbers_of_each_flip(
    library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "docker", PROMPT)
        await burst(pilot, *" Also bakes sourdough loaf bread.")
        await settle(pilot, lambda: screen.cases_done and bool(screen.result.causes))  # type: ignore[union-attr]
        result = screen.result
        assert result is not None and result.patched is not None
        cause = result.causes[PROMPT]
        # The same cause as the two decisions say, by hand: docker took the case.
        expected = flip_cause(
            decide(PROMPT, app.snapshot, app.config), decide(PROMPT, result.patched, app.config)
        )
        assert cause == expected
        (took,) = cause.shifts
        assert took.skill == "docker" and took.role == "took" and took.gate == "min_similarity"
        assert took.before is not None and took.after is not None and took.after > took.before
        shown = " ".join(_text(screen, "#whatif-cases").split())
        assert f"FIXED {PROMPT} (direct)" in shown
        assert (
            f"docker took it: min_similarity, hybrid {took.before:.3f} → {took.after:.3f} "
            f"(bar {took.bar:.3f})" in shown
        )


@pytest.mark.slow  # a save, a re-index and the cases re-run
async def test_the_cases_tab_says_who_lost_a_broken_case_and_by_how_much(
    library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    long_prompt = "merge two pdf files into one, " + "keeping the tables of each intact, " * 8
    (library / "cases.toml").write_text(
        f'[[case]]\nprompt = "{long_prompt.strip()}"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        before = app.snapshot
        assert app.state.cases_report.rates.recall == 1.0  # type: ignore[union-attr]
        write_skill(library, "pdf", "Bake bread and banana cakes at home.")
        await settle(pilot, lambda: bool(app.state.flip_causes), timeout=90)
        body = app.query_one(CasesPanel).query_one("#cases-body", Static).render().plain
        flat = " ".join(body.split())
        assert f"BROKE {long_prompt.strip()} (direct)" in flat  # the whole prompt, uncut
        (cause,) = app.state.flip_causes.values()
        (lost,) = cause.shifts
        expected = decide(long_prompt.strip(), before, app.config).row("pdf").score
        assert lost.skill == "pdf" and lost.role == "lost" and lost.before == expected
        assert f"pdf lost it: {lost.gate}, hybrid {lost.before:.3f} → {lost.after:.3f}" in flat


def test_a_prompt_is_cut_only_with_an_ellipsis() -> None:
    from explorer.tui.widgets.cases_panel import PROMPT_LIMIT, clip

    whole = "x" * PROMPT_LIMIT
    assert clip(whole) == whole
    assert clip(whole + "y") == "x" * (PROMPT_LIMIT - 1) + "…"


async def test_f8_gives_each_changed_verdict_its_gate_and_numbers(
    library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from textual.widgets import DataTable

    from explorer.tui.compare import CompareView
    from tests.tui.test_whatif_compare import _pin_then_enter, _show_compare

    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await _pin_then_enter(pilot, app)
        await _show_compare(pilot, view)
        assert isinstance(view, CompareView) and view.diff is not None
        pdf = next(entry for entry in view.diff.entries if entry.skill_id == "pdf")
        assert pdf.shift is not None and pdf.shift.gate == str(pdf.verdict)
        table = view.query_one(DataTable)
        cells = [str(cell) for cell in table.get_row(pdf.skill_id)]
        assert cells[-1] == f"INJECT → {pdf.verdict} {pdf.shift.numbers()}"
        assert f"{pdf.shift.before:.3f} → {pdf.shift.after:.3f}" in cells[-1]
