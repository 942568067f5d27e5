"""Issue 15, for a skill author: what matched, named; health in the table and F3; the config
layers; the panel maximised; the gates that decided first; a failing case into the prompt;
UI state that persists. Driven through Textual's Pilot over the real engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.tui.app import ExplorerApp
from explorer.tui.widgets.terms_panel import TermsPanel
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, make_app, ready, settle, shown_for


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(
        root,
        "kubernetes-debugger",
        'Debug pods. Use when the user says "pod keeps crashing" or "kubectl logs".',
    )
    return root


async def typed(pilot, app: ExplorerApp, prompt: str) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot, lambda: ready(app))
    await pilot.press(*prompt)
    await settle(pilot, lambda: shown_for(app, prompt))


def terms(app: ExplorerApp) -> str:
    return app.query_one(TermsPanel).query_one("#terms-body").render().plain  # type: ignore[attr-defined]


async def test_the_terms_tab_names_what_matched(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge report.pdf")
        assert app.highlighted == "pdf"
        shown = terms(app)
        assert 'kw: "pdf" (name)' in shown and "+0.15" in shown
        assert "file: report.pdf → pdf" in shown and "+0.30" in shown
        await pilot.press("ctrl+u", *"my pod keeps crashing")
        await settle(pilot, lambda: shown_for(app, "my pod keeps crashing"))
        app.go_to_skill("kubernetes-debugger")
        await pilot.pause()
        assert 'ph: "pod keeps crashing"' in terms(app)  # the phrase as its author wrote it
        app.go_to_skill("xlsx")
        await pilot.pause()
        assert "no keyword, phrase or file matched" in terms(app)
