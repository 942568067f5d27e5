"""What-if for a description (F7) and compare for real (F8), through Pilot over
the real engine, a real live index and real SKILL.md files in a tmp dir: the edited
scores and each flip with its cause (skill, gate, numbers), the diff with each changed
verdict's gate and numbers."""

from __future__ import annotations

import contextlib
import itertools
import stat
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TextArea

from explorer.engine.author.compare import Move
from explorer.engine.qa.flips import flip_cause
from explorer.engine.route.decision import Verdict
from explorer.engine.route.pipeline import decide
from explorer.terminal import render
from explorer.tui.app import ExplorerApp
from explorer.tui.compare import CompareView
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skills_table import SkillsTable
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, burst, enter, make_app, ready, settle, shown_for

PROMPT = "bake a sourdough loaf"
BODY = "# Docker\n\nKeep  these   spaces.\n\n- and this list\n"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(root, "docker", "Shrink Docker images and speed up container builds.", BODY)
    (root / "cases.toml").write_text(
        f'[[case]]\nprompt = "{PROMPT}"\nexpect = ["docker"]\nkind = "direct"\n'
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    return root


async def _open_whatif(pilot, app: ExplorerApp, skill: str, prompt: str) -> WhatIfScreen:  # type: ignore[no-untyped-def]
    await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
    await enter(pilot, app, prompt)
    app.go_to_skill(skill)
    await pilot.press("f7")
    await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
    screen = app.screen
    assert isinstance(screen, WhatIfScreen)
    await settle(pilot, lambda: screen.result is not None and screen.cases_done)
    return screen


def _text(screen: WhatIfScreen, selector: str) -> str:
    return render(screen.query_one(selector, Static).content)


@pytest.mark.slow  # tests/engine/test_whatif.py holds the scores and flips the screen shows
async def test_f7_shows_the_edited_scores_and_flips_before_saving_and_f4_saves(
    library: Path, tmp_path: Path
) -> None:
    path = library / "docker" / "SKILL.md"
    original = path.read_bytes()
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "docker", PROMPT)
        assert screen.query_one(TextArea).text == (
            "Shrink Docker images and speed up container builds."
        )
        before = screen.result.before  # type: ignore[union-attr]
        assert before is not None and before.verdict is not Verdict.INJECT
        assert "unchanged" in _text(screen, "#whatif-status")
        addition = " Also bakes sourdough loaf bread."
        await burst(pilot, *addition)  # the cursor starts at the end
        wanted = "Shrink Docker images and speed up container builds." + addition
        await settle(
            pilot,
            lambda: (
                screen.result is not None
                and screen.result.edit.description == wanted
                and screen.cases_done
                and bool(screen.result.causes)
            ),
        )
        result = screen.result
        assert result is not None and result.after is not None and result.patched is not None
        assert result.after.verdict is Verdict.INJECT and result.after.hybrid > before.hybrid
        scores = _text(screen, "#whatif-scores")
        assert f"{before.hybrid:.3f}" in scores and f"{result.after.hybrid:.3f}" in scores
        assert "INJECT" in scores
        # Each flip names the skill, the gate and its numbers: the same cause as the two
        # decisions say, by hand (docker took the case).
        cause = result.causes[PROMPT]
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
        assert "not saved" in _text(screen, "#whatif-status")
        assert path.read_bytes() == original  # nothing written before f4
        version = app.snapshot.version  # type: ignore[union-attr]
        await pilot.press("f4")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        saved = path.read_text(encoding="utf-8")
        assert f'description: "{wanted}"\n' in saved and saved.endswith(BODY)  # quotes kept
        assert (
            original.decode().replace("Shrink Docker images and speed up container builds.", wanted)
            == saved
        )  # the description's line and nothing else
        # The live index picks the save up: the row scores what the editor showed.
        await settle(
            pilot,
            lambda: (
                app.snapshot is not None
                and app.snapshot.version > version
                and shown_for(app, PROMPT)
                and app.decision.injected_ids == ("docker",)  # type: ignore[union-attr]
            ),
        )
        row = app.decision.row("docker")  # type: ignore[union-attr]
        assert row.score == pytest.approx(result.after.hybrid)
        assert row.bm25 == pytest.approx(result.after.bm25)


@pytest.mark.slow  # escape is one key on the F7 screen the test above opens and edits
async def test_f7_reuses_the_cases_run_of_the_same_files_even_after_a_reindex(
    library: Path, tmp_path: Path
) -> None:
    """F5 with nothing changed makes a new snapshot of the same files, and the cases do not
    run again: their report is still this library's, so F7 takes it (and decides again
    only what the edit reaches); after a save whose cases still run, it does not."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        version = app.snapshot.version
        await pilot.press("f5")
        await settle(pilot, lambda: app.snapshot.version > version)
        await pilot.pause()
        screen = await _open_whatif(pilot, app, "docker", PROMPT)
        assert screen.cases_current and screen.cases_report is app.state.cases_report
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        app.state.quality_running = True  # as while the cases run for a save
        screen = await _open_whatif(pilot, app, "docker", PROMPT)
        assert not screen.cases_current


async def test_escape_twice_discards_the_edit(library: Path, tmp_path: Path) -> None:
    path = library / "pdf" / "SKILL.md"
    original = path.read_bytes()
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        await burst(pilot, *" and bread")
        await settle(pilot, lambda: "bread" in (screen.result.edit.description or ""))  # type: ignore[union-attr]
        await pilot.press("escape")  # once: it asks, and the edit stays
        await pilot.pause()
        assert app.screen is screen and "bread" in screen.text
        assert any("esc again discards" in n.message for n in app._notifications)
        await burst(pilot, *"s")  # typing again: the next esc asks again
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        assert any("discarded" in n.message for n in app._notifications)
        assert path.read_bytes() == original
        assert isinstance(app.focused, PromptBar)


async def test_an_emptied_description_says_the_cases_are_not_run(
    library: Path, tmp_path: Path
) -> None:
    """An edit that cannot be saved has no index to run the cases on: F7 says so, rather
    than "running…" for ever."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        screen.query_one(TextArea).load_text("")
        await settle(pilot, lambda: "not saveable" in _text(screen, "#whatif-status"))
        await settle(pilot, lambda: screen.cases_done)
        assert _text(screen, "#whatif-cases") == (
            "cases in cases.toml: not run while the edit cannot be saved"
        )


async def test_at_80x20_the_page_keys_bring_the_flips_into_view(
    library: Path, tmp_path: Path
) -> None:
    """The editor is as tall as its text, and its page keys page the results below while
    the text fits: at 80x20 the flips start below the fold, and the editor has the focus."""
    from textual.containers import VerticalScroll

    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 20)) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        editor, results = screen.query_one(TextArea), screen.query_one("#whatif-results")
        assert isinstance(results, VerticalScroll) and results.max_scroll_y > 0
        assert editor.outer_size.height == 3  # a one-line description: one line and a border
        editor.move_cursor((0, 0))
        await pilot.press("pagedown")
        await settle(pilot, lambda: results.scroll_y > 0)
        assert editor.has_focus and editor.cursor_location == (0, 0)  # the editor's stays
        await pilot.press("pageup")
        await settle(pilot, lambda: results.scroll_y == 0)


async def test_past_a_long_descriptions_end_the_page_keys_page_the_flips(
    library: Path, tmp_path: Path
) -> None:
    """A description taller than the editor (a loaded suggestion, say), shown from its
    start with the cursor at its end (as the editor opens): page down shows the rest of it
    first, and once its end is in view the next page down pages the flips; page up goes
    back through the description, then pages the flips back."""
    from textual.containers import VerticalScroll

    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        editor, results = screen.query_one(TextArea), screen.query_one("#whatif-results")
        assert isinstance(results, VerticalScroll)
        editor.load_text(" ".join(["Merge, split and extract tables from PDF files."] * 12))
        await settle(pilot, lambda: editor.max_scroll_y > 0 and results.max_scroll_y > 0)
        editor.move_cursor(editor.document.end)
        editor.scroll_home(animate=False)
        await settle(pilot, lambda: editor.scroll_y == 0)
        await pilot.press("pagedown")
        await settle(pilot, lambda: editor.scroll_y > 0)
        assert results.scroll_y == 0  # the rest of the description came first
        for _ in range(6):  # to the description's end, then one more page
            await pilot.press("pagedown")
        await settle(pilot, lambda: results.scroll_y > 0)
        assert editor.scroll_y == editor.max_scroll_y
        for _ in range(8):  # back to the description's start, then the flips' top
            await pilot.press("pageup")
        await settle(pilot, lambda: results.scroll_y == 0 and editor.scroll_y == 0)


async def test_a_long_description_opens_at_its_start_with_the_cursor_at_its_end(
    library: Path, tmp_path: Path
) -> None:
    """Authors mostly add to a description, so the cursor starts at its end; they read it
    first, so the editor shows its first lines. Typing brings the cursor into view."""
    long = " ".join(f"Clause {number} of the manual." for number in range(40))
    write_skill(library, "manual", long)
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_whatif(pilot, app, "manual", "merge pdf")
        editor = screen.query_one(TextArea)
        await settle(pilot, lambda: editor.max_scroll_y > 0)
        assert editor.cursor_location == editor.document.end and editor.scroll_y == 0
        await pilot.press("x")
        await settle(pilot, lambda: editor.scroll_y == editor.max_scroll_y > 0)


async def test_the_editor_shows_its_text_rewrapped_after_a_resize(
    library: Path, tmp_path: Path
) -> None:
    """Widening the editor (the window narrowed to 80 columns: the side editor takes the
    whole width) rewraps the description on screen at once, not at the next key: lines of
    the old wrap left drawn show a clause twice, or none."""
    import io

    from rich.console import Console

    def drawn_lines(screen: WhatIfScreen) -> list[str]:
        console = Console(width=80, file=io.StringIO(), record=True, legacy_windows=False)
        console.print(screen._compositor.render_update(full=True, screen_stack=[]))
        framed = [line for line in console.export_text().splitlines() if "▊" in line]
        inside = [line.strip(" ▊▎") for line in framed]  # the editor's lines, no border
        return [line for line in inside if line and not set(line) <= set("▔▁")]

    text = " ".join(["Merge, split and extract the tables of many PDF files."] * 4)
    write_skill(library, "pdf", text)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        await pilot.resize_terminal(80, 24)
        await settle(pilot, lambda: screen.query_one(TextArea).size.width > 72)
        await pilot.pause()
        width = screen.query_one(TextArea).wrap_width
        lines = drawn_lines(screen)
        assert " ".join(lines) == text
        for line, after in itertools.pairwise(lines):  # each line as full as fits
            assert len(line) + 1 + len(after.split()[0]) >= width, (line, after)


@pytest.mark.slow  # test_rewrite.py holds the refusal to rewrite bad YAML
async def test_a_file_with_bad_yaml_is_reported_and_never_written(
    library: Path, tmp_path: Path
) -> None:
    path = library / "broken" / "SKILL.md"
    path.parent.mkdir()
    broken = "---\nname: broken\ndescription: Fix broken yaml files\nkeywords: [a, b\n---\nbody\n"
    path.write_text(broken, encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "broken", "fix yaml")
        await burst(pilot, *" today")
        await settle(pilot, lambda: "today" in (screen.result.edit.description or ""))  # type: ignore[union-attr]
        status = _text(screen, "#whatif-status")
        assert "not saveable" in status and "not valid YAML" in status
        # ctrl+o here opens the description alone: the file is fixed from the main screen.
        assert status.rstrip().endswith("(esc, then ctrl+o on the main screen opens it)")
        assert "no scores while the edit cannot be saved" in _text(screen, "#whatif-scores")
        await pilot.press("f4")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)  # stays open: the edit is not lost
        assert any("not written" in n.message for n in app._notifications)
        assert path.read_text(encoding="utf-8") == broken
        # Fixed on disk meanwhile: the refusal says so, not the old file's problem.
        fixed = "---\nname: broken\ndescription: Fix broken yaml files\n---\nbody\n"
        path.write_text(fixed, encoding="utf-8")
        await pilot.press("f4")
        await pilot.pause()
        assert any("changed on disk since the editor" in n.message for n in app._notifications)
        assert path.read_text(encoding="utf-8") == fixed


@pytest.mark.slow  # the editor hand-over itself is tests/tui/test_editor.py's
async def test_ctrl_o_edits_the_description_in_the_external_editor(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = tmp_path / "fake-editor"
    editor.write_text("#!/bin/sh\nprintf 'Written in the editor.\\n' > \"$1\"\n", encoding="utf-8")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("VISUAL", str(editor))
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_whatif(pilot, app, "pdf", "merge pdf")
        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # no terminal in a test
        await pilot.press("ctrl+o")
        await settle(pilot, lambda: screen.query_one(TextArea).text == "Written in the editor.")
        monkeypatch.setenv("VISUAL", "no-such-editor-anywhere")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert any("not found" in n.message for n in app._notifications)
        assert isinstance(app.screen, WhatIfScreen)


async def _pin_then_enter(pilot, app: ExplorerApp) -> CompareView:  # type: ignore[no-untyped-def]
    """'merge pdf' pinned (ctrl+t), then 'spreadsheet formulas' as the current prompt."""
    await enter(pilot, app, "merge pdf")
    await pilot.press("ctrl+t")
    await enter(pilot, app, "spreadsheet formulas")
    return app.query_one(CompareView)


async def _show_compare(pilot, view: CompareView) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("f8")
    await settle(
        pilot, lambda: view.diff is not None and view.diff.prompt == "spreadsheet formulas"
    )


@pytest.mark.slow  # tests/engine/test_compare.py holds the diff the screen shows
async def test_f8_diffs_the_pinned_prompt_against_the_current_one(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await _pin_then_enter(pilot, app)
        assert not view.display
        await _show_compare(pilot, view)
        assert view.display and not app.query_one(SkillsTable).display
        diff = view.diff
        assert diff is not None and diff.base_prompt == "merge pdf"
        moves = {entry.skill_id: entry for entry in diff.entries}
        assert moves["xlsx"].move is Move.UP and moves["pdf"].move is Move.DOWN
        assert moves["pdf"].base_verdict is Verdict.INJECT
        assert moves["xlsx"].verdict is Verdict.INJECT
        table = view.query_one(DataTable)
        # Each changed verdict gives its gate and numbers.
        pdf = moves["pdf"]
        assert pdf.shift is not None and pdf.shift.gate == str(pdf.verdict)
        cells = [str(cell) for cell in table.get_row(pdf.skill_id)]
        assert cells[-1] == f"INJECT → {pdf.verdict} {pdf.shift.numbers()}"
        assert f"{pdf.shift.before:.3f} → {pdf.shift.after:.3f}" in cells[-1]
        labels = [str(column.label) for column in table.columns.values()]
        assert labels[:3] == ["#", "move", "skill"] and "Δcos" in labels and "Δbm25" in labels
        first = [str(cell) for cell in table.get_row_at(0)]
        assert first[1].startswith("↑") and first[2] == "xlsx"
        header = view.query_one("#compare-header", Static).render().plain
        assert "pinned 'merge pdf'" in header
        # A narrower terminal lays the same diff out anew, and a wider one back.
        await pilot.resize_terminal(80, 24)
        await settle(pilot, lambda: view.laid_out_for == 80)
        narrow = [str(column.label) for column in table.columns.values()]
        assert "Δcos" not in narrow and narrow[-1] == "verdict" and view.diff is diff
        await pilot.resize_terminal(*SIZE)
        await settle(pilot, lambda: view.laid_out_for == SIZE[0])
        assert [str(column.label) for column in table.columns.values()] == labels
        # The diff follows the prompt as it changes.
        await enter(pilot, app, "docker images")
        await settle(pilot, lambda: view.diff is not None and view.diff.prompt == "docker images")
        await pilot.press("f8")
        assert not view.display and app.query_one(SkillsTable).display


@pytest.mark.slow  # the F8 diff is the pinned test above; this is its other source
async def test_without_a_pin_f8_diffs_the_previous_snapshot(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "bake bread")
        await pilot.press("f8")
        view = app.query_one(CompareView)
        header = view.query_one("#compare-header", Static)
        await settle(pilot, lambda: "Nothing to compare" in header.render().plain)
        version = app.snapshot.version  # type: ignore[union-attr]
        write_skill(library, "docker", "Bake bread and sourdough loaves.")
        await settle(
            pilot,
            lambda: app.snapshot.version > version and view.diff is not None,  # type: ignore[union-attr]
        )
        assert view.diff is not None
        shown = header.render().plain
        assert "previous snapshot" in shown
        assert shown.count("'bake bread'") == 1 and " → now " in shown  # one prompt, once
        docker = next(entry for entry in view.diff.entries if entry.skill_id == "docker")
        assert docker.cosine.delta is not None and docker.cosine.delta > 0
        assert docker.move is Move.UP or docker.base_rank == 1


@pytest.mark.slow  # two layouts and a resize; tests/tui/test_widths.py is the fast check of widths
async def test_compare_fits_80_columns_and_follows_the_resize(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await _pin_then_enter(pilot, app)
        await _show_compare(pilot, view)
        table = view.query_one(DataTable)
        await pilot.pause()
        narrow = [str(column.label) for column in table.columns.values()]
        assert "was #" not in narrow and narrow[-1] == "verdict"
        assert sum(column.get_render_width(table) for column in table.columns.values()) <= 80
        cells = {str(table.get_row_at(i)[2]): str(table.get_row_at(i)[-1]) for i in range(3)}
        verdicts, _, numbers = cells["xlsx"].partition(" ")  # "floor→INJECT p .00→.53"
        # The change, then its numbers with their name.
        assert verdicts.endswith("→INJECT") and "→" in numbers
        assert numbers.split(" ")[0] in ("p", "hybrid", "logit", "BM25")
        await pilot.resize_terminal(200, 50)
        await settle(pilot, lambda: "was #" in [str(c.label) for c in table.columns.values()])
        # Laid out anew at each width, each column holds its widest cell: names and
        # numbers whole (a real terminal going 120 -> 200 kept the headers' widths). At
        # 120 the old rank gives its room to the verdict change, which stays whole.
        for size in ((120, 40), (200, 50)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            for number, column in enumerate(table.columns.values()):
                cells = [str(table.get_row_at(i)[number]) for i in range(table.row_count)]
                assert column.get_render_width(table) >= max(map(len, cells)), column.label
            widths = [column.get_render_width(table) for column in table.columns.values()]
            assert sum(widths) <= size[0] - 2  # beside the scrollbar: nothing scrolls
            labels = [str(column.label) for column in table.columns.values()]
            assert labels[-1] == "verdict (was → now)" and ("was #" in labels) == (size[0] == 200)
        await pilot.resize_terminal(80, 24)
        await settle(pilot, lambda: "was #" not in [str(c.label) for c in table.columns.values()])


@pytest.mark.slow  # F8 then F7 over one another: both screens have their own fast test
async def test_in_compare_the_cursor_follows_up_down_and_f7_edits_that_skill(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await _pin_then_enter(pilot, app)
        await _show_compare(pilot, view)
        table = view.query_one(DataTable)
        assert isinstance(app.focused, PromptBar)
        await pilot.press("down")  # from the prompt, as in the table view
        await settle(pilot, lambda: table.cursor_row == 1)
        second = view.diff.entries[1].skill_id
        assert app.state.highlighted == second
        await pilot.press("f7")
        await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        assert app.screen.skill_id == second  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, WhatIfScreen))
        table.focus()
        await pilot.press("down")  # in the diff itself: that skill is highlighted everywhere
        third = view.diff.entries[2].skill_id
        await settle(pilot, lambda: app.state.highlighted == third)
        # The prompt's page keys page the diff, by the diff's height.
        app.query_one(PromptBar).focus()
        await pilot.press("pageup")
        await settle(pilot, lambda: table.cursor_row == 0)
        await pilot.press("pagedown")
        await settle(pilot, lambda: table.cursor_row == table.row_count - 1 > 1)
        # The diff's order, not the hidden table's: sorted another way, the table's next
        # row was a skill elsewhere in the diff, or not in it.
        rows = [entry.skill_id for entry in view.diff.entries]
        for _ in range(4):
            await pilot.press("f6")  # the table sorted by another column, then another
            await pilot.press("pageup")
            await settle(pilot, lambda: table.cursor_row == 0)
            for row in range(1, len(rows)):
                await pilot.press("down")
                await settle(pilot, lambda: app.state.highlighted == rows[row])  # noqa: B023
                assert table.cursor_row == row


@pytest.mark.slow  # a timing edge of F7 (the cases still running)
async def test_f7_before_the_cases_have_run_says_so(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        await enter(pilot, app, "merge pdf")
        app.state.cases_report = None  # as while a large library is still loading
        app.go_to_skill("pdf")
        await pilot.press("f7")
        await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        await settle(pilot, lambda: screen.result is not None and screen.cases_done)
        text = _text(screen, "#whatif-cases")
        assert "cases.toml have not run yet" in text and "--cases" not in text


@pytest.mark.slow  # the default preset's models, where p is what decides
def test_the_what_if_shows_p_over_the_bar_and_the_case_it_breaks(warm_cache_dir: Path) -> None:
    """docs/explorer.md's F7 walk: appending a sentence to productivity-helper moves p
    over the bar for its prompt, and the preview says so, p row included; the one case of
    the library it flips is the negative the walk names, at the p it quotes."""
    from explorer.engine.author.rewrite import read_skill_text
    from explorer.engine.author.whatif import what_if
    from explorer.engine.base.config import Config
    from explorer.engine.index.opening import open_engine, open_library
    from explorer.engine.qa.cases import load_cases
    from explorer.engine.route.pipeline import decide
    from explorer.tui.whatif import scores_text
    from tests.conftest import REPO, SAMPLE_SKILLS

    config = Config()
    index = open_library([SAMPLE_SKILLS], config, engine=open_engine(config, warm_cache_dir))
    skill = index.skills[index.positions["productivity-helper"]]
    cases = load_cases(str(SAMPLE_SKILLS / "cases.toml")).cases

    added = "Turns a pile of to-dos into a prioritised plan for the week."
    description = f"{skill.description} {added}"
    prompt = "help me prioritise my to-do list for this week"
    original = read_skill_text(skill.path)
    result = what_if(index, config, skill.id, description, prompt, original=original, cases=cases)
    shown = scores_text(result).plain
    assert result.before is not None and result.after is not None
    before, after = result.before.relevance, result.after.relevance
    assert before is not None and after is not None
    p_row = ["p", f"{before:.2f}", f"{after:.2f}", f"{after - before:+.2f}"]
    assert p_row in [line.split() for line in shown.splitlines()], shown
    assert result.after.injected and not result.before.injected
    assert result.comparison is not None
    assert result.comparison.matched
    (flip,) = result.comparison.flipped
    assert flip.prompt == "any good productivity apps for iphone" and flip.kind == "negative"
    assert flip.injected_b == ("productivity-helper",) and not flip.passed_b
    assert result.patched is not None
    taken = decide(flip.prompt, result.patched, config).row("productivity-helper").relevance
    walk = " ".join((REPO / "docs" / "explorer.md").read_text(encoding="utf-8").split())
    assert f"`{flip.prompt}`" in walk and f"now gets at p {taken:.2f}" in walk


def test_the_flips_block_gives_recall_and_false_injections_before_and_after() -> None:
    from types import SimpleNamespace
    from typing import Any

    from explorer.tui.whatif import cases_text

    def comparison(false_injections: dict[str, float | None]) -> Any:
        metrics = {"recall": {"a": 0.5, "b": 1.0}, "false_inject_rate": false_injections}
        return SimpleNamespace(matched=4, flipped=(), metrics=metrics)

    report: Any = SimpleNamespace()
    shown = render(cases_text(comparison({"a": 0.0, "b": 0.5}), report, False, "cases.toml"))
    assert "recall 0.500 → 1.000; false-inject 0.000 → 0.500" in shown
    shown = render(cases_text(comparison({"a": None, "b": None}), report, False, "cases.toml"))
    assert "recall 0.500 → 1.000" in shown and "false-inject" not in shown  # no negatives
