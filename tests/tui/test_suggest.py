"""Suggestions on the what-if screen (ctrl+t): `tune` off the event loop with a progress bar,
the ranked candidates, one chosen into the editor with its flips, F4 saves, and the table
and the Cases tab follow the save. Through Pilot over the real engine and live index."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import OptionList, ProgressBar, Static, TextArea

from explorer.engine.author import Effect, Part, TuneResult
from explorer.terminal import render
from explorer.tui.app import ExplorerApp
from explorer.tui.suggest import SuggestScreen, summary_text
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets.cases_panel import CasesPanel
from explorer.tui.widgets.footer import KeyCell, QuietFooter
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, enter, make_app, ready, settle, shown_for

PROMPT = "bake a sourdough loaf"
DOCKER = "Shrink Docker images and speed up container builds."
CASES = (
    (PROMPT, "docker"),
    ("feed my sourdough starter", "docker"),
    ("sourdough loaf crust too pale", "docker"),
    ("shape a sourdough loaf", "docker"),
    ("docker image too big", "docker"),
    ("merge two pdf files", "pdf"),
)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(root, "docker", DOCKER)
    (root / "cases.toml").write_text(
        "".join(
            f'[[case]]\nprompt = "{prompt}"\nexpect = ["{skill}"]\nkind = "direct"\n'
            for prompt, skill in CASES
        ),
        encoding="utf-8",
    )
    return root


def _suggestions_shown(app: ExplorerApp) -> bool:
    """The suggestions dialog is up and composed (it is pushed before its widgets mount,
    and the summary inside its notes may mount after the list)."""
    screen = app.screen
    return (
        isinstance(screen, SuggestScreen)
        and bool(screen.query(OptionList))
        and bool(screen.query("#suggest-summary"))
    )


def _text(screen: Screen[object], selector: str) -> str:
    return render(screen.query_one(selector, Static).content)


async def _whatif(pilot, app: ExplorerApp) -> WhatIfScreen:  # type: ignore[no-untyped-def]
    await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
    await enter(pilot, app, PROMPT)
    app.go_to_skill("docker")
    await pilot.press("f7")
    await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
    screen = app.screen
    assert isinstance(screen, WhatIfScreen)
    await settle(pilot, lambda: screen.result is not None and screen.cases_done)
    return screen


# A journey over three screens; test_tune.py holds the suggestions and
# test_suggest_without_cases_or_a_prompt_says_what_to_do the key.
@pytest.mark.slow
async def test_suggest_choose_and_save_updates_the_table_and_the_cases_tab(
    library: Path, tmp_path: Path
) -> None:
    path = library / "docker" / "SKILL.md"
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _whatif(pilot, app)
        assert app.decision is not None and app.decision.injected_ids != ("docker",)
        version = app.snapshot.version  # type: ignore[union-attr]
        await pilot.press("ctrl+t")
        await settle(pilot, lambda: _suggestions_shown(app))
        suggest = app.screen
        assert isinstance(suggest, SuggestScreen)
        bar = screen.query_one("#whatif-progress", ProgressBar)
        assert bar.total is not None and bar.total > 0  # the search reported its progress
        assert not bar.has_class("running")
        result = suggest.result
        assert result.candidates and screen.suggestions is result
        listing = suggest.query_one(OptionList)
        assert listing.option_count == len(result.candidates)
        assert "replaces your edit" not in _text(suggest, "#suggest-summary")  # none typed
        first = listing.get_option_at_index(0).prompt.plain  # type: ignore[union-attr]
        assert first.startswith("#1 ") and "held-out" in first and "lexical off" in first
        highlighted = listing.highlighted or 0
        await pilot.press("enter")  # the highlighted suggestion goes into the editor
        await settle(pilot, lambda: app.screen is screen)
        chosen = result.candidates[highlighted]
        assert screen.chosen is chosen
        assert screen.query_one(TextArea).text == chosen.description
        await settle(
            pilot,
            lambda: (
                screen.result is not None
                and screen.result.edit.description == chosen.description
                and screen.cases_done
            ),
        )
        flips = _text(screen, "#whatif-cases")
        assert "FIXED" in flips and PROMPT in flips  # its flips, before anything is written
        assert f"suggestion #{highlighted + 1}" in _text(screen, "#whatif-status")
        assert path.read_text(encoding="utf-8").count(DOCKER) == 1  # nothing written yet
        await pilot.press("f4")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        assert chosen.description in path.read_text(encoding="utf-8")
        # The live index picks the save up: the table injects docker for the prompt now and
        # the Cases tab re-runs its cases and says which were fixed.
        await settle(
            pilot,
            lambda: (
                app.snapshot is not None
                and app.snapshot.version > version
                and shown_for(app, PROMPT)
                and app.decision is not None
                and app.decision.injected_ids == ("docker",)
            ),
        )
        body = app.query_one(CasesPanel).query_one("#cases-body", Static)
        await settle(pilot, lambda: "FIXED" in render(body.content))
        assert PROMPT in render(body.content)
        # The heading says which run it is: a later re-index that changes no case keeps it.
        heading = "the last re-index or edit that changed a case:"
        assert heading in " ".join(render(body.content).split())


async def test_suggest_without_cases_or_a_prompt_says_what_to_do(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "docker", DOCKER)
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        app.go_to_skill("docker")
        await pilot.press("f7")
        await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await pilot.press("ctrl+t")
        await pilot.pause()
        (said,) = [n.message for n in app._notifications]
        assert "type a prompt the skill should take" in said and "--cases" in said
        assert isinstance(app.screen, WhatIfScreen)


@pytest.mark.slow
async def test_without_cases_the_prompt_typed_is_tuned_on(tmp_path: Path) -> None:
    """No cases file: the prompt the skill misses is the case to fix, and the summary says
    so; once the skill takes the prompt, there is nothing to tune on and it says why."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "docker", DOCKER)
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, PROMPT)
        assert app.decision is not None and "docker" not in app.decision.injected_ids
        app.go_to_skill("docker")
        await pilot.press("f7")
        await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        await pilot.press("ctrl+t")
        await settle(pilot, lambda: _suggestions_shown(app) or not screen.suggesting)
        assert screen.suggestions is not None, [n.message for n in app._notifications]
        assert [case.prompt for case in screen.suggestions.split.tuning] == [PROMPT]
        summary = " ".join(_text(app.screen, "#suggest-summary").split())
        assert "note: the prompt typed is a should-trigger case" in summary
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen is screen)
        screen.query_one(TextArea).load_text(f"{DOCKER} Use it to bake a sourdough loaf.")
        await settle(pilot, lambda: screen.result is not None and screen.edited)
        await pilot.press("ctrl+t")
        await settle(pilot, lambda: not screen.suggesting)
        assert any("takes the prompt typed already" in n.message for n in app._notifications)


@pytest.mark.slow
async def test_suggestions_start_from_the_unsaved_edit(library: Path, tmp_path: Path) -> None:
    """The author asks for help with what they typed: the run starts from the editor's
    description (they were made from the saved one, and choosing one threw the typed
    sentence away); an edit that cannot be read is refused with its reason."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _whatif(pilot, app)
        area = screen.query_one(TextArea)
        area.load_text("")
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert any("no suggestions for this edit" in n.message for n in app._notifications)
        assert app.screen is screen and not screen.suggesting
        area.load_text(f"{DOCKER} Bakes sourdough loaves.")
        await pilot.press("ctrl+t")
        await settle(pilot, lambda: _suggestions_shown(app))
        assert screen.suggestions is not None
        assert screen.suggestions.original == f"{DOCKER} Bakes sourdough loaves."
        summary = _text(app.screen, "#suggest-summary")
        assert 'made from your edit (not saved yet): "before" is the edited text' in summary


async def test_at_80x24_a_long_summary_leaves_a_whole_candidate_in_view(tmp_path: Path) -> None:
    """At 80x24 a summary of four notes takes at most a third of the dialog (it scrolls):
    the list below shows a whole candidate, its flips included, each flip on one line."""
    import dataclasses

    from textual.app import App

    from explorer.engine.qa.cases import Case
    from tests.engine.test_tune import OWN, _run

    cases = [Case(prompt, ("invoice-maker",) if fits else (), "direct") for prompt, fits in OWN]
    result = _run(tmp_path / "skills", cases)
    assert result.candidates
    long = dataclasses.replace(result, notes=(("a note that wraps onto a second line " * 3),) * 4)
    # Flips of long prompts, and of cases that expect several skills.
    wordy = "please " * 30
    flips = [
        dataclasses.replace(flip, case=dataclasses.replace(flip.case, prompt=wordy))
        for flip in long.candidates[0].flips
    ]
    other = dataclasses.replace(
        flips[0],
        part=Part.OTHER,
        effect=Effect.STEAL,
        case=Case(wordy, ("a-" + "very-" * 12 + "long-skill-name", "pdf"), "direct"),
    )
    first = dataclasses.replace(long.candidates[0], flips=(other, *flips))
    long = dataclasses.replace(long, candidates=(first, *long.candidates[1:]))

    class Host(App[None]):
        def __init__(self, shown: TuneResult) -> None:
            super().__init__()
            self.shown = shown

        def on_mount(self) -> None:
            self.push_screen(SuggestScreen(self.shown))

    async with Host(long).run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        listing = pilot.app.screen.query_one(OptionList)
        # A whole candidate, its flips included, fits under a summary with long notes; no
        # flip's line wraps at the list's width (the diff may).
        width = listing.scrollable_content_region.width
        console = Console(width=width, file=io.StringIO())
        labels = tuple(f"  {effect.value.upper()} " for effect in Effect)
        for number in range(listing.option_count):
            option = listing.get_option_at_index(number).prompt
            rows = console.render_lines(option, pad=False)  # type: ignore[arg-type]
            assert len(rows) <= listing.size.height
            flips = [line for line in str(option).splitlines() if line.startswith(labels)]
            assert flips and all(len(line) <= width for line in flips)
        assert listing.display
        # The notes that do not fit are reached by tab, which the footer names, and scroll.
        notes = pilot.app.screen.query_one("#suggest-notes", VerticalScroll)
        await settle(pilot, lambda: ("tab", "Notes ↔ list") in _footer(pilot.app))
        assert notes.max_scroll_y > 0
        await pilot.press("tab")
        assert notes.has_focus
        await pilot.press("end")
        # The scroll is animated; under load it lands later than the next frame.
        await settle(pilot, lambda: notes.scroll_y == notes.max_scroll_y > 0)
        await pilot.press("tab")
        assert listing.has_focus
    # None found: the dialog says so, rather than a box with nothing in it, and the notes
    # that say why have the whole dialog.
    empty = dataclasses.replace(result, candidates=(), recommended=None, notes=())
    summary = render(summary_text(empty))
    assert "No edit to suggest." in summary and "enter loads" not in summary
    async with Host(dataclasses.replace(long, candidates=(), recommended=None)).run_test(
        size=(80, 24)
    ) as pilot:
        await pilot.pause()
        shown = pilot.app.screen.query_one("#suggest-summary", Static)
        console = Console(width=shown.size.width, file=io.StringIO())
        lines = console.render_lines(shown.content, pad=False)  # type: ignore[arg-type]
        assert shown.size.height >= len(lines) > 7  # every note in view, more than a third


def _footer(app: App[None]) -> list[tuple[str, str]]:
    cells = app.screen.query_one(QuietFooter).query(KeyCell)
    return [(cell.key, cell.description) for cell in cells]


async def test_the_suggestions_footer_names_enter_where_there_is_one_to_load(
    tmp_path: Path,
) -> None:
    """The footer named esc alone: enter, which loads the highlighted suggestion into the
    editor, is there while there are suggestions, and picks the highlighted one."""
    import dataclasses

    from textual.app import App

    from explorer.engine.qa.cases import Case
    from tests.engine.test_tune import OWN, _run

    cases = [Case(prompt, ("invoice-maker",) if fits else (), "direct") for prompt, fits in OWN]
    result = _run(tmp_path / "skills", cases)
    assert result.candidates
    chosen: list[int | None] = []

    class Host(App[None]):
        def __init__(self, shown: TuneResult) -> None:
            super().__init__()
            self.shown = shown

        def on_mount(self) -> None:
            self.push_screen(SuggestScreen(self.shown), chosen.append)

    async with Host(result).run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert ("enter", "Load into editor") in _footer(pilot.app)
        assert ("tab", "Notes ↔ list") not in _footer(pilot.app)  # its notes fit
        pilot.app.screen.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
    assert chosen == [1]
    empty = dataclasses.replace(result, candidates=(), recommended=None, notes=())
    async with Host(empty).run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert [key for key, _ in _footer(pilot.app)] == ["escape", "f1"]


def test_a_shared_steal_says_so_beside_the_skill_it_expects(tmp_path: Path) -> None:
    """A steal whose own skill keeps the case shows no flip in the what-if: the dialog's
    line says the two share it."""
    import dataclasses

    from explorer.engine.qa.cases import Case
    from explorer.tui.suggest import candidate_text
    from tests.engine.test_tune import OWN, _run

    cases = [Case(prompt, ("invoice-maker",) if fits else (), "direct") for prompt, fits in OWN]
    candidate = _run(tmp_path / "skills", cases).candidates[0]
    steal = dataclasses.replace(
        candidate.flips[0],
        part=Part.OTHER,
        effect=Effect.STEAL,
        case=Case("log my hours", ("timesheet",), "direct"),
    )
    for beside, shown in ((True, "(expects timesheet, shared)"), (False, "(expects timesheet)")):
        flipped = dataclasses.replace(candidate, flips=(dataclasses.replace(steal, beside=beside),))
        assert shown in str(candidate_text(1, flipped, recommended=False))
