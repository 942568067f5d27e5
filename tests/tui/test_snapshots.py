"""SVG snapshots at a fixed size (pytest-textual-snapshot). Update: --snapshot-update.

The library is copied per test and opened by a relative path, and the model is the
bag-of-words lane, so the pictures are the same on every machine (and concurrent runs
share no files); timings and clock times are hidden.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input

from explorer.engine.base.config import Config
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.widgets.prompt_bar import PromptBar
from tests.conftest import SAMPLE_SKILLS
from tests.tui.test_app import ready, settle, shown_for

PROMPT = "merge two report.pdf files into one"
# Whole-screen pictures at 2-7 s each: run by .ci/checks, not by default. What each one
# shows (rows, verdicts, panels, the editor, widths) is asserted by a fast Pilot test in
# test_app.py and test_keys_and_layout.py.
pytestmark = pytest.mark.slow


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExplorerApp:
    # Relative roots: no absolute path reaches the picture, so each run has its own copy
    # (a shared fixed path let concurrent runs delete each other's library mid-test).
    work = tmp_path / "snapshot-root"
    shutil.copytree(SAMPLE_SKILLS, work / "sample_skills")
    monkeypatch.chdir(work)
    return ExplorerApp(
        ["sample_skills"],
        Config(model="bow", reranker="off"),
        cache_dir=str(tmp_path / "cache"),
        history=PromptHistory(tmp_path / "history.txt"),
        show_timings=False,
    )


async def _typed(pilot) -> None:  # type: ignore[no-untyped-def]
    app: ExplorerApp = pilot.app
    app.query_one(PromptBar).cursor_blink = False
    await settle(pilot, lambda: ready(app))
    await pilot.press(*PROMPT)
    await settle(pilot, lambda: shown_for(app, PROMPT))
    await pilot.pause(0.2)


def test_main_screen(snap_compare, app: ExplorerApp) -> None:
    assert snap_compare(app, terminal_size=(120, 40), run_before=_typed)


def test_terms_panel_for_a_losing_skill(snap_compare, app: ExplorerApp) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _typed(pilot)
        await pilot.press("tab", "down", "down")  # into the table, onto a skill that lost
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_threshold_editor(snap_compare, app: ExplorerApp) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _typed(pilot)
        await pilot.press("f2")
        await pilot.pause(0.2)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        pilot.app.screen.edit("min_similarity", "0.45")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_small_terminal(snap_compare, app: ExplorerApp) -> None:
    assert snap_compare(app, terminal_size=(80, 24), run_before=_typed)


def test_wide_terminal(snap_compare, app: ExplorerApp) -> None:
    """200 columns: every column at its content's width, no name cut."""
    assert snap_compare(app, terminal_size=(200, 50), run_before=_typed)
