"""Keys a user presses out of habit: letters typed while a panel has the focus, and ctrl+s
in an editor (F2's, with its list, in test_sources.py). Driven through Textual's Pilot over
the real engine and a real live index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input, TextArea

from explorer.engine.route import PROMPT_READ_CHARS, prompt_read
from explorer.tui.app import ExplorerApp
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skills_table import SkillsTable
from tests.tui.test_app import SIZE, enter, library, make_app, settle, shown_for

__all__ = ["library"]  # the fixture, shared with test_app


def _non_inputs(app: ExplorerApp) -> list[str]:
    """The focusable widgets of the main screen that do not edit text, by type."""
    chain = [w for w in app.screen.focus_chain if not isinstance(w, Input | TextArea)]
    return [type(widget).__name__ for widget in chain]


# Types in every panel; test_typing_shows_exactly_what_decide_returns keeps typing in the default
# run.
@pytest.mark.slow
async def test_letters_typed_in_any_panel_go_to_the_prompt(library: Path, tmp_path: Path) -> None:
    """From every focusable widget that does not edit text, a letter lands in the prompt,
    which takes the focus. A panel's own keys stay its own: space unfolds the skipped
    gates in the decision panel, / filters in the table (bindings are never typed)."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge")
        prompt = app.query_one(PromptBar)
        names = _non_inputs(app)
        assert {"SkillsTable", "DecisionPanel"} <= set(names), names
        assert len(names) >= 3  # the table, the tabs, the decision panel at least
        typed = "merge"
        for widget in [w for w in app.screen.focus_chain if not isinstance(w, Input | TextArea)]:
            widget.focus()
            await pilot.press("Y")
            typed += "Y"
            assert prompt.value == typed, type(widget).__name__
            assert app.focused is prompt  # the next key goes there directly
        panel = app.query_one(DecisionPanel)
        panel.focus()
        called: list[str] = []
        panel.action_toggle_skipped = lambda: called.append("space")  # type: ignore[method-assign]
        await pilot.press("space")
        assert called == ["space"] and prompt.value == typed
        app.query_one(SkillsTable).focus()
        await pilot.press("slash")
        assert app.focused is app.query_one("#filter", Input) and prompt.value == typed


# -- ctrl+s in an editor saves, as f4 does; on the main screen it stays the screenshot ----


def _footer_keys(screen: object) -> list[str]:
    """The keys the footer of `screen` shows, as shown."""
    from explorer.tui.widgets.footer import KeyCell

    return [key.key_display for key in screen.query(KeyCell)]  # type: ignore[attr-defined]


@pytest.mark.slow  # F7's own ctrl+s; test_rewrite.py holds the write that every save key makes
async def test_ctrl_s_in_the_whatif_editor_saves_like_f4(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = library / "xlsx" / "SKILL.md"
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "clean a csv")
        app.go_to_skill("xlsx")
        await pilot.press("f7")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        screen.query_one(TextArea).load_text("Clean up CSV exports and spreadsheet formulas.")
        # The footer's keys are mounted after the screen's first refresh.
        await settle(pilot, lambda: "f4/^s" in _footer_keys(screen))
        await pilot.press("ctrl+s")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        assert 'description: "Clean up CSV exports and spreadsheet formulas."' in path.read_text(
            encoding="utf-8"
        )
        assert list(tmp_path.glob("*.svg")) == []


async def test_keys_that_arrive_in_one_burst_act_in_their_order(
    library: Path, tmp_path: Path
) -> None:
    """A terminal hands a paste, a script's keys or a fast typist's as one read: the
    prompt's own editing keys act when they arrive, not after the keys behind them
    (ctrl+u then "abc" cleared the "abc"; "ab", left, "c" gave "abc")."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf files")
        bar = app.query_one(PromptBar)
        bar.focus()
        for burst, expected in (
            ([("ctrl+u", None), ("a", "a"), ("b", "b"), ("c", "c")], "abc"),
            ([("ctrl+u", None), ("a", "a"), ("b", "b"), ("left", None), ("c", "c")], "acb"),
        ):
            for key, character in burst:  # queued at once, as one read of the terminal
                app.post_message(events.Key(key, character))
            await settle(pilot, lambda: bar.value == expected, timeout=5)  # noqa: B023


async def test_a_pasted_prompt_keeps_every_line_and_what_the_router_reads(
    library: Path, tmp_path: Path
) -> None:
    """Input keeps a paste's first line: "Some context.\\nMerge these PDFs" was routed as
    "Some context.", where the hook routes the whole prompt. Every line is kept, shown as
    ⏎ and routed as a line break; a paste past what the router reads (routing.md §2.6) is
    cut to that, with a note: a 2 MB value cost seconds a key."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "")
        bar = app.query_one(PromptBar)
        bar.focus()
        app.post_message(events.Paste("Some context first.\r\nMerge these PDF files\nplease"))
        routed = "Some context first.\nMerge these PDF files\nplease"
        await settle(pilot, lambda: shown_for(app, routed))
        assert bar.value == "Some context first.⏎Merge these PDF files⏎please"
        assert app.decision is not None and app.decision.injected_ids == ("pdf",)
        bar.value = ""
        long = "merge the pdf " + "x" * PROMPT_READ_CHARS + " then clean the csv"
        app.post_message(events.Paste(long))
        await settle(pilot, lambda: shown_for(app, prompt_read(long)))
        assert len(bar.value) == PROMPT_READ_CHARS + 1
        notes = [n.message for n in app._notifications]
        assert any(
            n.startswith(f"pasted {len(long):,} characters: the router reads") for n in notes
        )
