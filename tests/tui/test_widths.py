"""What fits at 80, 120 and 200 columns: the footer's keys and the table's columns.

Driven through Textual's Pilot over the real engine and a real live index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text

from explorer.engine.base.config import Config
from explorer.terminal import Hanging, Phrases, render
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.widgets.footer import KeyCell, QuietFooter, fitting, key_width
from explorer.tui.widgets.skills_table import GAP, P_WIDTH, WHY_MIN, SkillsTable
from tests.conftest import SAMPLE_SKILLS
from tests.tui.test_app import enter, library, make_app, settle

__all__ = ["library"]  # the fixture, shared with test_app

WIDTHS = (80, 120, 200)


def test_the_footer_keeps_the_screens_keys_then_the_apps_by_priority() -> None:
    from textual.binding import Binding

    items = [
        (Binding("ctrl+q", "quit", "Quit", id="quit"), "^q", True),
        (Binding("ctrl+y", "copy_json", "Copy JSON", id="copy-json"), "^y", True),
        (Binding("f1", "help", "Help", id="help"), "f1", True),
        (Binding("f4", "save", "Save edits", id="editor-save"), "f4/^s", False),
    ]
    assert key_width("f1", "Help") == len("f1 Help") + 1
    room = key_width("f4/^s", "Save edits") + key_width("f1", "Help") + key_width("^q", "Quit")
    assert fitting(items, room) == [0, 2, 3]  # copy-json goes first, the order stays
    assert fitting(items, room - 1) == [2, 3]  # then quit; the screen's own key stays


# -- the table: "why" fits, the rest degrades in order ---------------------------------

CONTENT = {
    "rank": 3,
    "skill": 24,
    "verdict": 14,
    "delta": 7,
    "hybrid": 22,
    "cosine": 5,
    "bm25": 11,
    "rerank": 9,
    "overlap": 9,
    "why": 41,  # "0.979 < cut-off 1.023 = top 1.143 - 0.120"
}


def test_why_shortens_first_then_columns_drop_in_order() -> None:
    """The table's own width is the terminal's less its scrollbar (2 cells). "why" gives way
    first (to WHY_MIN), then columns go in DROP_ORDER."""
    wide = SkillsTable._fit(CONTENT, 198, score=6)
    assert wide == {**CONTENT}  # 200 columns: every column, "why" whole
    mid = SkillsTable._fit(CONTENT, 118, score=6)  # 120 columns
    # Dropping bm25 left room for overlap (11 cells), dropped before it: it comes back.
    assert set(CONTENT) - set(mid) == {"cosine", "rerank", "bm25"}
    assert list(mid) == [key for key in CONTENT if key in mid]  # in their order
    assert mid["hybrid"] == 22 and mid["delta"] == 7 and mid["skill"] == 24
    assert WHY_MIN <= mid["why"] < CONTENT["why"]  # shortened, not a column kept out for it
    narrow = SkillsTable._fit(CONTENT, 78, score=6)  # 80 columns
    assert list(narrow) == ["rank", "skill", "verdict", "hybrid", "why"]
    assert narrow["hybrid"] == 6  # the score alone
    assert narrow["why"] >= WHY_MIN and narrow["skill"] >= 16  # names cut, with an ellipsis
    long_names = SkillsTable._fit({**CONTENT, "skill": 60}, 198, score=6)
    assert long_names == {**CONTENT, "skill": 60, "why": 38}  # "why" gives the 3 cells
    for widths, room in ((wide, 198), (mid, 118), (narrow, 78), (long_names, 198)):
        assert sum(width + GAP for width in widths.values()) <= room


def test_the_deciding_column_stays_at_every_width() -> None:
    """rerank for rerank_min, bm25 for the fast path, p for the relevance model: whatever
    the width, the highlighted row's deciding column is kept; "why" shortens instead."""
    content = {**CONTENT, "p": 18}
    for keep in ("rerank", "bm25", "cosine", "p", "delta"):
        for room in (78, 118, 198):
            widths = SkillsTable._fit(content, room, score=6, keep=(keep,))
            assert keep in widths, (keep, room)
            if keep == "p":  # the probability whole; what moved it may fold away
                assert widths[keep] in (content[keep], P_WIDTH)
            else:
                assert widths[keep] == content[keep]  # whole: numbers are never cut
            assert sum(width + GAP for width in widths.values()) <= room
    # At 80 columns p's "moved most" folds away before "why" is starved: p decided, and
    # the reason says by how much, and needs WHY_MIN cells to say it.
    narrow = SkillsTable._fit(content, 78, score=6, keep=("p",))
    assert narrow["p"] == P_WIDTH and narrow["why"] >= WHY_MIN
    assert SkillsTable._fit(content, 118, score=6, keep=("p",))["p"] == content["p"]
    # The sort column is kept beside the deciding one: the order is read in it.
    both = SkillsTable._fit(content, 78, score=6, keep=("p", "bm25"))
    assert both["bm25"] == content["bm25"] and "p" in both
    hidden_why = {key: value for key, value in CONTENT.items() if key != "why"}
    # "why" hidden: its room goes to the columns; only what cannot fit goes (4 cells: cos).
    assert SkillsTable._fit(hidden_why, 122, score=6) == hidden_why
    assert set(hidden_why) - set(SkillsTable._fit(hidden_why, 118, score=6)) == {"cosine"}
    # With p's 18 cells, dropping in order pushed bm25 out after cos, and bm25's 13 left
    # room for cos's 7: it comes back rather than leave the cells empty.
    with_p = {**hidden_why, "p": 18}
    assert set(with_p) - set(SkillsTable._fit(with_p, 108, score=6)) == {
        "bm25",
        "overlap",
        "rerank",
    }


# Three terminal sizes; test_the_deciding_column_shows_at_every_width keeps widths in the default
# run.
@pytest.mark.slow
async def test_the_table_and_the_footer_fit_80_120_and_200_columns(
    library: Path, tmp_path: Path
) -> None:
    """Every table line fits; "why" is always there with its header whole; the breakdown
    and Δ inject show whenever the reasons leave room for them. At 120 columns the footer
    ran off the right edge mid-key: now every key shown is whole and clear of the palette
    key, help is always there, and wider shows more."""
    app = make_app(library, tmp_path)
    shown: dict[int, list[str]] = {}
    async with app.run_test(size=(WIDTHS[0], 24)) as pilot:
        await enter(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        footer = app.query_one(QuietFooter)
        for width in WIDTHS:
            await pilot.resize_terminal(width, 40)
            await settle(pilot, lambda w=width: table.size.width in (w, w - 2))
            await settle(pilot, lambda w=width: footer.size.width == w)
            await pilot.pause()
            header = table.header_text().plain
            assert header.rstrip().endswith(" why"), (width, header)
            reasons = [table.reason_of(row).text for row in table.rows]
            for index in range(len(table.view)):
                line = table.line_text(index).plain.rstrip()
                assert len(line) <= table.size.width, (width, line)
                why = table.cell_text(table.ids()[table.view[index]], "why")
                assert why in reasons or why.endswith("…"), (width, why)
            if width >= 120:
                assert "cos+kw+ph+file" in header and "Δ inject" in header
                assert all("…" not in table.cell_text(row.id, "why") for row in table.rows)
            keys = [key for key in footer.query(KeyCell) if "-command-palette" not in key.classes]
            palette = footer.query_one(".-command-palette", KeyCell)
            assert keys and palette.region.right <= width
            for key in keys:
                assert key.region.right <= palette.region.x, (width, key.key_display)
                assert key.region.width == len(key.render().plain)  # drawn whole
            shown[width] = [key.description for key in keys]
    assert all("Help" in names for names in shown.values())
    assert len(shown[80]) < len(shown[120]) < len(shown[200])


def _sample_app(tmp_path: Path, warm_cache_dir: Path) -> ExplorerApp:
    """The explorer on sample_skills with the default preset and its models."""
    return ExplorerApp(
        [str(SAMPLE_SKILLS)],
        Config(),
        cache_dir=str(warm_cache_dir),
        history=PromptHistory(tmp_path / "history.txt"),
    )


@pytest.mark.slow  # the default preset's models: a cosine can be negative only there
async def test_a_negative_score_keeps_the_decimal_points_in_line(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """A hybrid score or a cosine below zero prints its minus sign where the others print a
    space, so the column's decimal points line up; a channel that rounds to zero shows no
    minus in the breakdown."""
    app = _sample_app(tmp_path, warm_cache_dir)
    async with app.run_test(size=(200, 50)) as pilot:
        await enter(pilot, app, "make a poster for our jazz night")
        table = app.query_one(SkillsTable)
        scores = [table.rows[i].score for i in table.view]
        assert min(scores) < 0 < max(scores)  # the prompt the test is about
        for key in ("hybrid", "cosine"):
            cells = [table.cell_text(table.ids()[i], key) for i in table.view]
            assert len({cell.index(".") for cell in cells}) == 1, (key, cells)
            assert all(" -.00" not in cell and "+-.00" not in cell for cell in cells), cells


def test_the_diff_gives_way_column_by_column_then_names_before_going_narrow() -> None:
    """F8 between its layouts: the spare columns go, then the skill names are cut (to
    NAME_MIN), and only then the short verdicts of the narrow layout."""
    from explorer.engine.author.compare import ranking_diff
    from explorer.engine.index.opening import open_library
    from explorer.engine.route.pipeline import decide
    from explorer.tui import compare

    config = Config(model="bow", reranker="off")
    index = open_library([str(SAMPLE_SKILLS)], config)
    diff = ranking_diff(
        decide("fix the formulas in my spreadsheet", index, config),
        decide("write release notes from the last 20 commits", index, config),
    )
    roomy = compare._columns(diff, wide=True, room=10_000)
    spare = ("was #", "Δboost", "hybrid", "Δcos")
    kept = {label: cells for label, cells in roomy.items() if label not in spare}
    names = compare._column_width("skill", roomy["skill"])
    room = compare._width(kept) - 5  # five cells short of the wide layout's essentials
    cut = compare._columns(diff, wide=True, room=room)
    assert list(cut) == list(kept) and compare._width(cut) == room
    assert compare._column_width("skill", cut["skill"]) == names - 5
    tight = compare._width(kept) - (names - compare.NAME_MIN) - 1  # past NAME_MIN
    assert compare._width(compare._columns(diff, wide=True, room=tight)) > tight


def test_a_problem_that_wraps_hangs_under_its_first_line() -> None:
    """F3 lists each problem as one option; one longer than the list wraps four cells in,
    under its own first line (two in), not back at the edge where the next one starts."""
    message = "pdf/SKILL.md:3: invalid YAML frontmatter (mapping values are not allowed here)"
    lines = render(Hanging(Text(message)), width=40).splitlines()
    assert lines[0].startswith("  pdf/SKILL.md:3:") and len(lines) >= 3
    assert all(line.startswith("    ") and line[4] != " " for line in lines[1:])
    assert " ".join(" ".join(lines).split()) == message
    assert render(Hanging(Text("short")), width=40) == "  short"


def test_key_phrases_wrap_between_keys_never_inside_one() -> None:
    """The what-if title's keys: at 60 columns "esc" stays beside "discard" (it wrapped
    between them at 120 with the path's line above)."""
    keys = [("f4/ctrl+s", "save to SKILL.md"), ("esc", "discard"), ("ctrl+o", "$EDITOR")]
    phrases = [Text("edit the description;")] + [Text(f"{k} {w}") for k, w in keys]
    lines = render(Phrases(phrases), width=60).splitlines()
    assert lines == [
        "edit the description;  f4/ctrl+s save to SKILL.md",
        "esc discard  ctrl+o $EDITOR",
    ]
    assert render(Phrases(phrases), width=200).count("\n") == 0


@pytest.mark.slow  # the default preset's models: only the relevance model routes tasks
async def test_a_skill_a_task_injected_shows_the_task_s_p(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """The p column showed the whole prompt's p beside INJECT (0.35 here, 0.00 in longer
    prompts); a skill one clause injected shows that clause's p, marked."""
    app = _sample_app(tmp_path, warm_cache_dir)
    prompt = "my pod keeps crashing in kubernetes. then shrink the dockerfile image"
    async with app.run_test(size=(200, 50)) as pilot:
        await enter(pilot, app, prompt)
        decision = app.decision
        assert decision is not None
        task = decision.task_for("dockerfile-optimizer")
        assert task is not None and "dockerfile-optimizer" in decision.injected_ids
        table = app.query_one(SkillsTable)
        assert table.cell_text("dockerfile-optimizer", "p").split()[:2] == [f"{task.p:.2f}", "task"]


@pytest.mark.slow  # the default preset's models: only there does the relevance model decide
async def test_f2_opens_on_the_field_that_decides(tmp_path: Path, warm_cache_dir: Path) -> None:
    """Under the relevance model F2 opened on min_similarity, which decides nothing there;
    it opens on relevance_threshold, its value ready to be typed over, its line in view
    at 80x24 (the list had no height yet when the cursor was set)."""
    from textual.widgets import Input

    from explorer.tui.screens import ThresholdEditor
    from explorer.tui.screens.thresholds import FieldList

    app = _sample_app(tmp_path, warm_cache_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "merge two report.pdf files")
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, ThresholdEditor))
        editor = app.screen
        assert isinstance(editor, ThresholdEditor) and editor.current == "relevance_threshold"
        assert editor.query_one("#field-input", Input).value == editor.texts["relevance_threshold"]
        await pilot.pause()
        listing = editor.query_one(FieldList)
        top, height = listing.scroll_offset.y, listing.size.height
        assert top <= listing.cursor < top + height, (top, listing.cursor, height)


def test_the_narrow_diff_fits_80_columns_with_the_longest_verdict_changes() -> None:
    """At 80 columns a change such as `min_similarity→score_margin hybrid .21→.19` left
    the narrow layout wider than the screen: the table scrolled sideways and cut a
    number. The names shrink, then Δbm25 goes, then the verdicts' numbers."""
    from explorer.engine.author.compare import ranking_diff
    from explorer.engine.index.opening import open_library
    from explorer.engine.route.pipeline import decide
    from explorer.tui import compare

    config = Config(model="bow", reranker="off", preset="reference")
    index = open_library([str(SAMPLE_SKILLS)], config)
    diff = ranking_diff(
        decide("when was the PDF format invented", index, config),
        decide("fix the formulas in my spreadsheet", index, config),
    )
    room = 78  # 80 columns less the vertical scrollbar
    columns = compare._columns(diff, wide=False, room=room)
    assert compare._width(columns) <= room
    assert "Δbm25" not in columns and "Δhybrid" in columns
    assert any("→." in cell.plain for cell in columns["verdict"])  # numbers kept here
    tighter = compare._columns(diff, wide=False, room=60)
    assert compare._width(tighter) <= 60
    assert not any(" hybrid " in cell.plain for cell in tighter["verdict"])


def test_a_narrow_verdict_change_whose_number_held_sets_it_against_its_bar() -> None:
    """relevance→rerank_top_k, the skill's hybrid score unchanged and others risen past
    it, read "hybrid .07→.07", as if nothing had moved: it reads its number against the
    pool's bar now, with the decimals that tell them apart."""
    import dataclasses

    from explorer.engine.qa import Shift
    from explorer.tui import compare

    held = Shift(
        skill="xlsx",
        role="moved",
        verdict_before="relevance",
        verdict_after="rerank_top_k",
        gate="rerank_top_k",
        unit="score",
        before=0.0712,
        after=0.0712,
        bar=0.0745,
    )
    assert compare._short_cause(held) == "hybrid .071<.074"
    assert compare._short_cause(dataclasses.replace(held, bar=0.05)) == "hybrid .07≥.05"
    assert compare._short_cause(dataclasses.replace(held, before=0.09)) == "hybrid .09→.07"
    # A threshold edit moved the bar past a p that held: the skill took the case, and the
    # bar's move says why (its bar is the old side's, where it was not injected).
    took = dataclasses.replace(
        held, unit="p", before=0.45, after=0.45, bar=0.48, bars=(0.48, 0.40), role="took"
    )
    assert compare._short_cause(took) == "p .45 bar .48→.40"


def test_the_cases_head_line_keeps_the_file_name_whole() -> None:
    """A long cases path folded at the panel's edge, mid-word: the head line keeps to one
    line, the path's end from a "/" on, so the file's name is whole."""
    from explorer.engine.index.opening import open_library
    from explorer.engine.qa.cases import Case
    from explorer.engine.qa.evaluate import evaluate
    from explorer.terminal import render
    from explorer.tui.widgets.cases_panel import cases_text, fit_path

    config = Config(model="bow", reranker="off", preset="reference")
    index = open_library([str(SAMPLE_SKILLS)], config)
    report = evaluate([Case("merge two pdf files", ("pdf",), "direct")], index, config)
    source = "/home/author/evaluation-suites/sample-library-v2/routing-cases.toml"
    first = render(cases_text(report, None, source), width=50).splitlines()[0]
    assert first == "1 case  …/sample-library-v2/routing-cases.toml"
    assert render(cases_text(report, None, source), width=120).splitlines()[0].endswith(source)
    assert fit_path("/a/very-long-file-name.toml", 12) == "…e-name.toml"  # the name cut too
    # The what-if screen's title line: its skill, then the SKILL.md's path, never split
    # mid-word ("…/SKI" over "LL.md").
    from rich.text import Text

    from explorer.tui.widgets.cases_panel import Headline

    path = "/home/author/skills/multi-reviewer-patterns/SKILL.md"
    title = render(Headline(Text("What-if multi-reviewer-patterns"), path), width=60)
    assert title == "What-if multi-reviewer-patterns  …/SKILL.md"


@pytest.mark.slow  # the default preset's models: its cross-encoder scores the cases
async def test_the_cases_run_leaves_its_logits_for_the_next_run_and_the_what_if(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """The Cases tab's run routes through the app's LogitMemo (the run after a save, and
    F7's first keystroke, then ask the model only for pairs they have not seen)."""
    from tests.tui.test_app import ready, settle

    app = _sample_app(tmp_path, warm_cache_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        assert app.state.logits.pairs > 0


def test_the_cases_tab_says_when_a_case_names_a_skill_the_library_lacks() -> None:
    """A case expecting a skill the library lacks can never pass: eval warns, and so does
    the Cases tab, under the rates it lowers."""
    from explorer.engine.index.opening import open_library
    from explorer.engine.qa.cases import Case
    from explorer.engine.qa.evaluate import evaluate
    from explorer.terminal import render
    from explorer.tui.widgets.cases_panel import cases_text

    config = Config(model="bow", reranker="off", preset="reference")
    index = open_library([str(SAMPLE_SKILLS)], config)
    cases = [
        Case("merge two pdf files", ("pdf",), "direct"),
        Case("a gantt chart", ("gantt",), "direct"),
    ]
    report = evaluate(cases, index, config)
    shown = " ".join(render(cases_text(report, None, "cases.toml"), width=200).split())
    assert "⚠ expected skill 'gantt' is not in the library; a case that expects only it" in shown
