"""The collision map in the explorer (ctrl+l): computed off the event loop, the heaviest
pair first, enter shows what it shares and the cases that flip, esc goes back."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from explorer.tui.collisions import CollisionsScreen
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, make_app, ready, settle


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(
        root, "pdf", "Extract text and tables from PDF files. Merge and split PDF documents."
    )
    write_skill(
        root,
        "pdf-tables",
        "Extract tables from PDF files into spreadsheets. Reads scanned PDF tables.",
    )
    write_skill(root, "docker", "Shrink Docker images and speed up container builds.")
    (root / "cases.toml").write_text(
        '[[case]]\nprompt = "extract the tables from this pdf file"\nexpect = ["pdf"]\n'
        'kind = "direct"\n',
        encoding="utf-8",
    )
    return root


@pytest.mark.slow  # tests/engine/test_collisions.py holds the ranking the view shows
async def test_ctrl_l_ranks_the_pairs_and_shows_one(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        # The map reads the live snapshot, not the decision on screen: it opens even while
        # that decision is still the one made before the models came in.
        state = app.state
        state.loading_snapshot = state.decided_on = copy.copy(state.snapshot)
        assert state.still_loading()
        await pilot.press("ctrl+l")
        await settle(pilot, lambda: isinstance(app.screen, CollisionsScreen))
        screen = app.screen
        assert isinstance(screen, CollisionsScreen)
        await settle(pilot, lambda: screen.found is not None)
        found = screen.found
        assert found is not None and found.cases == 1 and found.collisions
        top = found.collisions[0]
        assert {top.a, top.b} == {"pdf", "pdf-tables"}
        listing = screen.query_one("#collisions-list", OptionList)
        first = listing.get_option_at_index(0).prompt.plain  # type: ignore[union-attr]
        assert first.startswith("#1 pdf <> pdf-tables")
        assert listing.highlighted == 0  # the heaviest pair, ready for enter
        await pilot.press("enter")
        detail = screen.query_one("#collisions-detail-text", Static).render().plain  # type: ignore[union-attr]
        assert "shared words:" in detail and "pdf" in detail
        await pilot.press("escape")  # back to the list
        assert isinstance(app.screen, CollisionsScreen) and listing.display
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, CollisionsScreen))
        # Opened again on the same snapshot, config and cases: the map made is shown at
        # once (it took half a minute at 181 skills), not made again.
        await pilot.press("ctrl+l")
        await settle(pilot, lambda: isinstance(app.screen, CollisionsScreen))
        again = app.screen
        assert isinstance(again, CollisionsScreen) and again is not screen
        await settle(pilot, lambda: again.found is not None)
        assert again.found is found and again.known is found


def test_a_long_prompt_in_a_pair_s_detail_ends_in_an_ellipsis() -> None:
    """Cut mid-word with no mark, it read as the prompt itself."""
    from explorer.engine.author.collisions import Collision, Contest
    from explorer.tui.collisions import PROMPT_WIDTH, detail_text

    prompt = "rather than copying existing artists' work, design an original poster " * 3
    contests = [
        Contest(prompt, "case", "canvas-design", "brand-guidelines", "take"),
        Contest(prompt, "sentence", "canvas-design", "brand-guidelines", "near"),
    ]
    shown = detail_text(Collision("canvas-design", "brand-guidelines", contests)).plain
    cut = prompt[: PROMPT_WIDTH - 1] + "…"
    assert shown.count(cut) == 2 and prompt.strip() not in shown
    # Another prompt they competed for names the skill that should have won it.
    assert "a sentence of its own for canvas-design; rival brand-guidelines" in shown
    # A wide screen shows more of a prompt; never less than 30 cells.
    assert prompt[:189] + "…" in detail_text(Collision("a", "b", contests), 200).plain
