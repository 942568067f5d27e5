"""Every key from every focus, F2 without side effects, resizing, the editor,
column widths, colours, and finding a skill (filter, go to, --skill, type and move at once).

Driven through Textual's Pilot over the real engine and a real live index.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input, TabPane

from explorer.engine.base.config import Config
from explorer.engine.route.decision import Row
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.keys import binding_ids, bindings, checked_keymap
from explorer.tui.screens import TextScreen, ThresholdEditor
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skills_table import (
    PENDING,
    PENDING_WHY,
    Limits,
    SkillsTable,
    matches,
)
from explorer.tui.widgets.status_bar import StatusBar
from tests.conftest import write_skill
from tests.tui.test_app import (
    CONFIG,
    SIZE,
    burst,
    enter,
    make_app,
    page_text,
    ready,
    settle,
    shown_for,
)

LONG_NAME = "a-very-long-skill-name-for-kubernetes-operators"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(root, "docker", "Shrink Docker images and speed up container builds.")
    write_skill(root, LONG_NAME, "Operate kubernetes clusters: pods, deployments, helm charts.")
    return root


typed = enter  # the prompt set in one step: these tests are about keys, not typing


# -- 1. every binding from every focus ----------------------------------------------------


async def test_pin_and_export_work_while_typing_and_no_widget_shadows_an_app_binding(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin and export from the prompt while typing. Then each app key resolves to the app's
    own action whichever widget has the focus (the bindings Textual would dispatch, read
    from `active_bindings`); the test below presses every key from every widget, 13 x 4
    presses at 40 ms or more each, in the slow set."""
    monkeypatch.chdir(tmp_path)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf")
        assert app.focused is app.query_one(PromptBar)
        await pilot.press("ctrl+t")
        assert app.state.pinned_prompt == "merge pdf"
        assert app.query_one(PromptBar).value == "merge pdf"  # not cut by the input
        await pilot.press("ctrl+r")
        exported = list(tmp_path.glob("skill-explorer-why-*.md"))
        assert len(exported) == 1
        text = exported[0].read_text("utf-8")
        assert "# Why: `merge pdf`" in text

        app.query_one("#filter", Input).display = True
        focusable = [w for w in app.screen.focus_chain if w.focusable]
        assert {"PromptBar", "SkillsTable", "FilterBar"} <= {type(w).__name__ for w in focusable}
        shadowed = []
        for widget in focusable:
            widget.focus()
            await pilot.pause()
            assert app.focused is widget
            active = app.active_bindings
            for binding in app.BINDINGS:
                key, action = binding.key, binding.action  # type: ignore[union-attr]
                if key not in active or active[key].binding.action != action:
                    shadowed.append((type(widget).__name__, key))
        assert shadowed == []


@pytest.mark.slow  # every key pressed from every widget: seconds (the test above is fast)
async def test_every_app_binding_works_from_every_focusable_widget(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf")
        await pilot.press("ctrl+f")  # the filter field is focusable once shown
        await pilot.press("escape")
        focusable = [w for w in app.screen.focus_chain if w.focusable]
        names = {type(w).__name__ for w in focusable}
        assert {"PromptBar", "SkillsTable"} <= names, names
        app.query_one("#filter", Input).display = True
        focusable = [w for w in app.screen.focus_chain if w.focusable]
        assert "FilterBar" in {type(w).__name__ for w in focusable}
        fired: list[str] = []
        for binding in app.BINDINGS:
            action = binding.action  # type: ignore[union-attr]
            monkeypatch.setattr(app, f"action_{action}", lambda action=action: fired.append(action))
        missed = []
        for widget in focusable:
            for binding in app.BINDINGS:
                widget.focus()
                await pilot.pause()
                fired.clear()
                await pilot.press(binding.key)  # type: ignore[union-attr]
                await pilot.pause()
                if fired != [binding.action]:  # type: ignore[union-attr]
                    missed.append((type(widget).__name__, binding.key))  # type: ignore[union-attr]
        assert missed == []


def test_markdown_escapes_pipes_only_in_tables(library: Path) -> None:
    from explorer.engine.index.snapshot import build_index
    from explorer.engine.inference.models import assemble_models
    from explorer.engine.route.pipeline import decide
    from explorer.report import markdown_report

    index = build_index([str(library)], CONFIG, assemble_models(None, dense_error="off"), None)
    text = markdown_report(decide("pdf | xlsx", index, CONFIG), index)
    assert "# Why: `pdf | xlsx`" in text
    gate_lines = [line for line in text.splitlines() if line.startswith("- `")]
    assert gate_lines and not any("\\|" in line for line in gate_lines)


# -- 2. F2 with no edit -------------------------------------------------------------------


async def test_arrow_keys_move_f2_s_field_and_f3_s_highlight_while_their_input_has_focus(
    library: Path, tmp_path: Path
) -> None:
    """The inputs took up and down as their own (Textual's scroll bindings) before the
    screens saw them: F2 could edit only its first field, F3 open only its first file."""
    from textual.widgets import OptionList

    from explorer.engine.base.config import FIELD_NAMES
    from explorer.tui.screens.problems import ProblemsScreen

    (library / "broken" / "SKILL.md").parent.mkdir()
    (library / "broken" / "SKILL.md").write_text("no frontmatter\n")
    (library / "worse" / "SKILL.md").parent.mkdir()
    (library / "worse" / "SKILL.md").write_text("none here either\n")
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf")
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, ThresholdEditor))
        editor = app.screen
        assert isinstance(editor, ThresholdEditor) and editor.current == FIELD_NAMES[0]
        await pilot.press("down", "down", "up")
        assert editor.current == FIELD_NAMES[1]
        await pilot.press("escape")
        await pilot.press("f3")
        await settle(pilot, lambda: isinstance(app.screen, ProblemsScreen))
        listing = app.screen.query_one("#problems-list", OptionList)
        first = listing.highlighted
        await pilot.press("down")
        assert listing.highlighted is not None and listing.highlighted != first


async def test_going_to_a_skill_on_the_first_page_shows_the_rows_above_it(
    tmp_path: Path,
) -> None:
    """ctrl+g to the second row, after the table had scrolled down, put that row at the
    top: the winner above it was out of sight though every row fitted."""
    from tests.conftest import SAMPLE_SKILLS

    app = make_app(SAMPLE_SKILLS, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "write a regex for order numbers")
        table = app.query_one(SkillsTable)
        last, second = (table.id_at(table.view[i]) for i in (-1, 1))
        app.go_to_skill(last)
        await pilot.pause()
        assert table.scroll_offset.y > 0
        app.go_to_skill(second)
        await pilot.pause()
        assert table.cursor == 1 and table.scroll_offset.y == 0


@pytest.mark.slow  # the F2 editor (every config field) costs about a second to open; test_app.py's
# test_editing_a_threshold_changes_the_decision opens it in the default set
async def test_f2_open_and_close_without_an_edit_changes_nothing(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf")
        calls: list[str] = []
        app.reindex = lambda: calls.append("reindex")  # type: ignore[method-assign]
        app.run_quality = lambda *a: calls.append("quality")  # type: ignore[method-assign]
        decision, config = app.decision, app.config
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, ThresholdEditor))
        await pilot.pause(0.3)
        await pilot.press("escape")
        await pilot.press("s")  # typed right after Esc: it belongs to the prompt
        assert not isinstance(app.screen, ThresholdEditor)
        assert app.query_one(PromptBar).value == "merge pdfs"
        assert calls == [] and app.config is config
        await settle(pilot, lambda: shown_for(app, "merge pdfs"))
        assert decision is not None


@pytest.mark.slow  # the F2 editor (every config field) costs about a second to open; test_app.py's
# test_editing_a_threshold_changes_the_decision opens it in the default set
async def test_f2_refuses_out_of_range_values_and_blank_means_default(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await typed(pilot, app, "merge pdf")
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, ThresholdEditor))
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        field = editor.query_one("#field-input", Input)
        assert field.size.width >= 60, field.size.width  # one input, the screen's width
        editor.edit("bm25_b", "5")
        await settle(pilot, lambda: "0 to 1" in editor.hint("bm25_b"))
        assert "0 to 1" in str(editor.query_one("#field-help").render())
        editor.edit("max_skills", "0")
        await settle(pilot, lambda: "out of range" in editor.hint("max_skills"))
        assert app.config.bm25_b == 0.75 and app.config.max_skills == 2
        editor.edit("max_skills", "4")
        await settle(pilot, lambda: app.config.max_skills == 4)
        editor.edit("max_skills", "")  # blank: the default
        await settle(pilot, lambda: app.config.max_skills == Config().max_skills)
        editor.edit("min_similarity", "")  # blank: follow the model
        await settle(pilot, lambda: app.config.min_similarity is None)


# -- 3. resizing ---------------------------------------------------------------------------


@pytest.mark.slow  # two resizes and their layouts
async def test_layout_follows_every_resize(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: ready(app))
        assert not app.has_class("narrow")
        await pilot.resize_terminal(80, 30)
        await pilot.pause(0.1)
        assert app.has_class("narrow")
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.1)
        assert not app.has_class("narrow")


# Visits every tab; the bindings are held by test_pin_and_export's shadowing check.
@pytest.mark.slow
async def test_ctrl_n_walks_the_tabs_from_the_keyboard(library: Path, tmp_path: Path) -> None:
    """A presenter with no mouse reaches every tab (the README's demo points at the Cases
    tab); on an 80-column screen showing only the decision, ctrl+n brings the tabs back."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot, lambda: ready(app))
        tabs = app.main.tabs
        panes = [pane.id for pane in tabs.query(TabPane)]
        seen = [tabs.active]
        for _ in panes:
            await pilot.press("ctrl+n")
            seen.append(tabs.active)
        assert seen[0] == seen[-1] and set(seen) == set(panes) and len(panes) >= 3, seen
        await pilot.press("f4")  # narrow: the decision alone
        bottom = app.main.query_one("#bottom")
        assert bottom.has_class("only-decision")
        await pilot.press("ctrl+n")
        assert not bottom.has_class("only-decision") and tabs.active == seen[1]
        assert app.query_one(Input).has_focus  # the prompt keeps the keys


# -- 4. a missing editor -------------------------------------------------------------------


@pytest.mark.slow  # an edge case of ctrl+o
async def test_a_missing_editor_is_an_error_message_not_a_crash(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere --wait")
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf")
        await pilot.press("ctrl+o")
        await pilot.pause(0.1)
        messages = [n.message for n in app._notifications]
        assert any("no-such-editor-anywhere" in m and "not found" in m for m in messages)
        assert app.is_running


# -- 6. widths -------------------------------------------------------------------------------


@pytest.mark.slow  # a 200-column screen, a save and its re-index
async def test_names_deltas_and_jaccard_are_never_cut_at_200_columns(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await typed(pilot, app, "kubernetes pods keep crashing")
        table = app.query_one(SkillsTable)
        lines = [table.line_text(i).plain for i in range(len(table.view))]
        assert any(LONG_NAME in line for line in lines)
        assert all("…" not in line for line in lines)
        header = table.header_text().plain
        assert "overlap J" in header and "cos " in header
        # Deltas: the same prompt after a save.
        version = app.snapshot.version
        write_skill(library, "docker", "Kubernetes pods keep crashing: debug crashing pods.")
        await settle(pilot, lambda: app.snapshot.version > version and app.state.delta_base)
        await settle(pilot, lambda: "▲" in table.cell_text("docker", "hybrid"))
        line = next(
            table.line_text(i).plain
            for i in range(len(table.view))
            if "docker" in table.line_text(i).plain
        )
        assert "▲" in line and "…" not in line
        delta = line.split("▲")[1].split()[0]
        assert len(delta) == 5  # 0.123: three decimals, uncut


@pytest.mark.slow  # a layout check, like the SVG snapshots
async def test_columns_have_gaps_and_the_status_bar_keeps_the_error_count(
    library: Path, tmp_path: Path
) -> None:
    (library / "broken").mkdir()
    (library / "broken" / "SKILL.md").write_text("no frontmatter\n", encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await typed(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        for index in range(len(table.view)):
            line = table.line_text(index).plain
            # Every number is its own word: two numbers never touch.
            for word in line.split():
                assert word.count(".") <= 1 or "+" in word, (word, line)
        status = app.query_one(StatusBar)
        rendered = "".join(seg.text for seg in status.render_line(0))
        assert "1 error" in rendered


# -- 7. colours, the # column, F1 ----------------------------------------------------------


def _row(skill_id: str, rank: int, score: float, verdict: str) -> Row:
    return Row(
        id=skill_id,
        rank=rank,
        cosine=score,
        keyword=0.0,
        phrase=0.0,
        file=0.0,
        project=0.0,
        score=score,
        bm25=0.0,
        bm25_norm=0.0,
        bm25_rank=None,
        rerank=None,
        rerank_prob=None,
        pool=None,
        matched_terms=0,
        query_terms=3,
        jaccard=0.0,
        verdict=verdict,
        path=f"/x/{skill_id}",
    )


def test_green_means_injected_and_hash_is_the_row_order() -> None:
    table = SkillsTable()
    table.rows = [
        _row("reranked-first", 3, 0.61, "inject"),
        _row("top", 1, 0.90, "inject"),
        _row("margin-dropped", 2, 0.70, "score_margin"),
    ]
    limits = Limits(
        min_similarity=0.5, score_margin=0.1, rerank_min=-2.5, lexical_min=0.0, reranker=False
    )
    table._limits = limits
    table.view = [0, 1, 2]
    table._widths = table._fit(table._content_widths(), 200)
    dropped = table._cells(2, limits, None)
    keys = [key for key, _ in table.columns]
    hybrid = dropped[keys.index("hybrid")]
    assert "green" not in str(hybrid.style)
    assert [table._cells(i, limits, None)[0].plain.strip() for i in range(3)] == ["1", "2", "3"]


def test_the_hybrid_breakdown_has_room_for_the_project_boost() -> None:
    """A row the project channel boosted (§3.5) printed ".44+.00+.00+.00…": its "+.15" was
    cut, so the parts did not add up to the score."""
    table = SkillsTable()
    boosted = replace(_row("javascript-testing", 1, 0.593, "inject"), cosine=0.443, project=0.15)
    table.rows = [boosted, _row("other", 2, 0.3, "min_similarity")]
    limits = Limits(
        min_similarity=0.5, score_margin=0.1, rerank_min=-2.5, lexical_min=0.0, reranker=False
    )
    table._limits = limits
    table.view = [0, 1]
    table._widths = table._fit(table._content_widths(), 200)
    hybrid = table._cells(0, limits, None)[[key for key, _ in table.columns].index("hybrid")]
    assert hybrid.plain.split() == ["0.593", ".44+.00+.00+.00+.15"]
    assert table._widths["hybrid"] >= hybrid.cell_len


def test_a_decision_made_while_the_dense_model_loads_shows_no_cosine_floor_or_verdict() -> None:
    """The loading snapshot decides without the dense model: cosine 0 for every skill and
    the no-model floor (0.640 at 2,289 skills, where MiniLM's is 0.414). The cells the model
    moves say "pending"; the lexical ones keep their numbers."""
    lexical = replace(_row("git-commit", 1, 0.0, "min_similarity"), keyword=0.3, score=0.3)
    lexical = replace(lexical, bm25=8.18, bm25_norm=0.88, bm25_rank=1, matched_terms=2)
    table = SkillsTable()
    table.rows = [lexical]
    table.view = [0]
    limits = Limits(
        min_similarity=0.64, score_margin=0.12, rerank_min=-2.5, lexical_min=0.0, reranker=False
    )
    for loading, expected in ((False, "0.000"), (True, PENDING)):
        table._limits = replace(limits, loading=loading)
        table._widths = table._fit(table._content_widths(), 200)
        keys = [key for key, _ in table.columns]
        texts = [cell.plain.strip() for cell in table._cells(0, table._limits, None)]
        cells = dict(zip(keys, texts, strict=True))
        assert cells["cosine"] == expected
        if loading:
            assert cells["verdict"] == PENDING and cells["why"] == PENDING_WHY
            assert cells["hybrid"] == f"{PENDING}     {PENDING}+.30+.00+.00"
            assert "delta" not in cells  # no floor to be short of yet
            assert "0.640" not in " ".join(cells.values())
        else:
            assert cells["verdict"] == "min_similarity"
            assert cells["hybrid"] == "0.300 .00+.30+.00+.00"
        assert cells["bm25"] == "8.18 .88 #1" and cells["overlap"] == "2/3 0.00"


def _with_keymap(library: Path, tmp_path: Path, keymap: dict[str, str]) -> ExplorerApp:
    return ExplorerApp(
        [str(library)],
        CONFIG.replace(keymap=keymap),
        cache_dir=str(tmp_path / "c"),
        history=PromptHistory(tmp_path / "h.txt"),
    )


@pytest.mark.slow  # test_structure.py's palette and help check keeps F1's page in the default run
async def test_f1_shows_the_keys_in_effect_after_a_keymap(library: Path, tmp_path: Path) -> None:
    app = _with_keymap(library, tmp_path, {"reindex": "ctrl+b"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await settle(pilot, lambda: isinstance(app.screen, TextScreen))
        body = page_text(app.screen.body, width=SIZE[0])
        line = next(line for line in body.splitlines() if " reindex " in line)
        assert line.split()[:3] == ["ctrl+b", "Re-index", "reindex"]
        # The id stands before the prose, in a column of its own.
        tab = next(line for line in body.splitlines() if line.startswith("ctrl+n"))
        assert tab.split()[:4] == ["ctrl+n", "Next", "tab", "next-tab"]


def test_a_keymap_onto_a_taken_key_is_refused_and_said() -> None:
    """Textual would apply it silently, and one of the two commands would be lost."""
    kept, problems = checked_keymap({"reindex": "ctrl+r", "pin": "ctrl+b", "nope": "f12"})
    assert kept == {"pin": "ctrl+b"}
    assert problems == [
        "keymap: no key has the id 'nope' (F1 lists the main screen's)",
        "keymap: reindex = 'ctrl+r' not applied: ctrl+r already belongs to export-markdown; "
        "reindex stays on f5",
    ]
    # A key moved away may be taken; two bindings may swap; nothing takes the palette's.
    assert checked_keymap({"export-markdown": "ctrl+b", "reindex": "ctrl+r"}) == (
        {"export-markdown": "ctrl+b", "reindex": "ctrl+r"},
        [],
    )
    assert checked_keymap({"help": "f2", "thresholds": "f1"})[1] == []
    assert checked_keymap({"help": "f2"})[0] == {}
    assert "the command palette" in checked_keymap({"quit": "ctrl+p"})[1][0]
    # Two remaps onto one free key: the first keeps it.
    kept, problems = checked_keymap({"reindex": "ctrl+b", "pin": "ctrl+b"})
    assert kept == {"reindex": "ctrl+b"} and "belongs to reindex" in problems[0]
    # The prompt binds its editing keys before the app: a remap there is lost while typing.
    assert "belongs to the prompt (go to end)" in checked_keymap({"reindex": "ctrl+e"})[1][0]
    # Keys as Textual compares them; an empty one is said; other screens' ids pass on.
    assert checked_keymap({"reindex": " Ctrl+B "}) == ({"reindex": "ctrl+b"}, [])
    assert checked_keymap({"reindex": ""})[1] == ["keymap: reindex = '' names no key"]
    assert checked_keymap({"editor-save": "f6"}, binding_ids())[0] == {"editor-save": "f6"}


@pytest.mark.slow
async def test_a_clashing_keymap_leaves_both_commands_on_their_keys(
    library: Path, tmp_path: Path
) -> None:
    app = _with_keymap(library, tmp_path, {"reindex": "ctrl+r"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "reindex" not in app._keymap
        said = [notification.message for notification in app._notifications]
        assert any("reindex = 'ctrl+r' not applied" in message for message in said)
        keys = {binding.id: binding.key for binding in bindings(app)}
        assert keys["reindex"] == "f5" and keys["export-markdown"] == "ctrl+r"


# -- finding a skill; typing and moving at once ---------------------------------------------


def test_the_filter_is_fuzzy_over_the_id_and_a_substring_of_the_description() -> None:
    assert matches("pdfx", "pdf-extract", "")
    assert matches("tables", "pdf", "Extract tables from PDF files.")
    assert matches("pdf tables", "pdf", "Extract tables from PDF files.")
    assert not matches("docker", "pdf", "Extract tables from PDF files.")


@pytest.mark.slow  # the filter itself is the fast test above; this drives it through the app
async def test_filter_keeps_the_ranking_and_esc_clears_it(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        order = [row.id for row in table.rows]
        await pilot.press("ctrl+f")
        app.query_one("#filter", Input).value = "spread"
        await settle(pilot, lambda: len(table.view) == 1)
        assert [table.rows[i].id for i in table.view] == ["xlsx"]
        assert table.cell_text("xlsx", "rank").strip() == str(order.index("xlsx") + 1)
        await pilot.press("escape")
        assert len(table.view) == len(order) and app.focused is app.query_one(PromptBar)
        await pilot.press("tab")  # into the table: / opens the filter there
        assert app.focused is table
        await pilot.press("slash")
        assert app.focused is app.query_one("#filter")


# Behind test_typing_shows_exactly_what_decide_returns, which keeps the table in the default run.
@pytest.mark.slow
async def test_up_down_move_the_table_while_typing_and_the_row_gives_the_engines_reason(
    library: Path, tmp_path: Path
) -> None:
    """Up and down move the table while the prompt keeps the focus, and the highlighted
    skill stays as the prompt changes; a skill the gates dropped gives the engine's reason
    in its row and in the decision panel (200 columns: the why column is shown)."""
    from explorer.engine.route.reasons import reason
    from explorer.tui.widgets.decision_panel import DecisionPanel

    app = make_app(library, tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await typed(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        await pilot.press("down")
        row = app.decision.row(table.current_id())
        why = reason(app.decision, row)
        assert row.verdict != "inject" and "<" in why.text
        assert table.cell_text(row.id, "why") == why.text
        assert table.cell_text(row.id, "delta") == why.delta_text()
        await settle(
            pilot,
            lambda: (
                why.text in str(app.query_one(DecisionPanel).query_one("#decision-reason").render())
            ),
        )
        await pilot.press("down")
        assert app.focused is app.query_one(PromptBar)
        chosen = table.current_id()
        assert chosen == table.rows[2].id and app.state.highlighted == chosen
        await burst(pilot, *" now")
        await settle(pilot, lambda: shown_for(app, "merge two pdf files now"))
        assert table.current_id() == chosen  # the focused skill stays highlighted
        await pilot.press("tab")
        assert app.focused is table
        await pilot.press("x")  # typing in the table goes to the prompt
        assert app.focused is app.query_one(PromptBar)
        assert app.query_one(PromptBar).value.endswith("nowx")
        # So do the prompt's editing keys the table does not bind (end stays the table's).
        await pilot.press("tab", "backspace")
        assert app.focused is app.query_one(PromptBar)
        assert app.query_one(PromptBar).value.endswith("now")
        await pilot.press("tab", "end", "ctrl+u")
        assert table.cursor == len(table.view) - 1
        assert app.focused is app.query_one(PromptBar) and app.query_one(PromptBar).value == ""
        # Deleting keys only: a cut from the table would empty the clipboard.
        app.copy_to_clipboard("kept")
        await pilot.press("tab", "ctrl+x")
        assert app.focused is table and app.clipboard == "kept"
        await pilot.press("escape")
        assert app.focused is app.query_one(PromptBar)


async def test_one_row_is_marked_followed_as_the_cursor_moves(
    library: Path, tmp_path: Path
) -> None:
    """▸ marks the skill the cursor follows, and only it: each row's line is kept once
    drawn, so a move redraws the rows the mark leaves and reaches."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        table.focus()

        def marked() -> list[str]:
            drawn = ["".join(s.text for s in table.render_line(y)) for y in range(1, 12)]
            return [line.split()[1] for line in drawn if line.lstrip().startswith("▸")]

        for keys in (("down", "down"), ("pagedown",), ("up",)):
            await pilot.press(*keys)
            await pilot.pause()
            assert marked() == [table.current_id()], keys
        # Back on the top row, the top row is followed, as after Home: no skill is marked,
        # and the next prompt opens on its own top rows, not on this skill.
        for keys in (("pageup",), ("down", "up"), ("down", "home")):
            await pilot.press(*keys)
            await pilot.pause()
            assert table.cursor == 0 and marked() == [] and table.followed is None, keys


async def test_the_cursor_row_is_always_on_screen(tmp_path: Path) -> None:
    """The columns fit beside the vertical scrollbar, so no horizontal one takes a row
    and hides the cursor's line under it; End, page moves and arrows keep it in view."""
    root = tmp_path / "skills"
    for number in range(40):
        write_skill(root, f"skill-{number:02d}", f"Handle task {number} of merging PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge pdf files")
        table = app.query_one(SkillsTable)
        table.focus()
        for key in ("end", "pageup", "pagedown", "home", *["down"] * 30):
            await pilot.press(key)
            await pilot.pause()
            assert not table.show_horizontal_scrollbar
            top, rows = table.scroll_offset.y, table.scrollable_content_region.height - 1
            assert top <= table.cursor < top + rows, (key, table.cursor, top, rows)


async def test_a_table_made_shorter_keeps_the_cursor_row_in_view(tmp_path: Path) -> None:
    """F10 (or F9 back, F4, a smaller terminal) shortens the table: Textual only clamped
    its scroll offset, and the cursor's row, the one the decision panel describes, went
    under the panels with nothing on screen highlighted."""
    root = tmp_path / "skills"
    for number in range(40):
        write_skill(root, f"skill-{number:02d}", f"Handle task {number} of merging PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await typed(pilot, app, "merge pdf files")
        table = app.query_one(SkillsTable)
        table.focus()
        await pilot.pause()
        for _ in range(table._rows_shown() - 1):  # the last row on screen
            await pilot.press("down")
        rows_before = table._rows_shown()
        for _ in range(3):  # the bottom panels' heights, one of which is the tallest
            await pilot.press("f10")
            await pilot.pause()
            await pilot.pause()
            top, rows = table.scroll_offset.y, table._rows_shown()
            assert top <= table.cursor < top + rows, (table.cursor, top, rows)
            if rows < rows_before:
                break
        assert rows < rows_before  # the table did get shorter


async def test_the_why_header_names_the_injected_skill_a_followed_row_hides(
    tmp_path: Path,
) -> None:
    """The cursor follows a skill from prompt to prompt: far down the next prompt's ranking
    it keeps the view on itself, and the injected skill's row is off screen. The why
    header says which skill was injected."""
    root = tmp_path / "skills"
    for number in range(40):
        write_skill(root, f"skill-{number:02d}", f"Handle task {number} of merging PDF files.")
    write_skill(root, "kubernetes-debugger", "Debug kubernetes pods that keep crashing.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await typed(pilot, app, "merge pdf files")
        table = app.query_one(SkillsTable)
        app.go_to_skill(followed := "skill-39")
        await pilot.pause()
        assert table.current_id() == followed
        await typed(pilot, app, "my kubernetes pods keep crashing")
        assert app.decision is not None
        assert app.decision.injected_ids == ("kubernetes-debugger",)
        assert table.current_id() == followed and table.scroll_offset.y > 0
        assert "↑ INJECT kubernetes-" in table.header_text().plain  # cut to the column
        table.action_cursor_to(0)  # home: back to the top, where it shows itself
        await pilot.pause()
        assert "INJECT" not in table.header_text().plain


@pytest.mark.slow  # the command palette's search settles in fixed pauses: seconds
async def test_go_to_skill_jumps_and_follows(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge two pdf files")
        app.go_to_skill("docker")
        await pilot.pause()
        table = app.query_one(SkillsTable)
        assert table.current_id() == "docker" and app.state.highlighted == "docker"
        await pilot.press(*" fast")
        await settle(pilot, lambda: shown_for(app, "merge two pdf files fast"))
        assert table.current_id() == "docker"
        await pilot.press("ctrl+g")
        await pilot.pause(0.2)
        await pilot.press(*"xlsx")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot, lambda: table.current_id() == "xlsx")


@pytest.mark.slow  # sorting through the app and a header click
async def test_columns_sort_by_key_and_by_header_click(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await typed(pilot, app, "merge two pdf files")
        table = app.query_one(SkillsTable)
        app.sort_table("skill")
        await pilot.pause()
        ids = [table.rows[i].id for i in table.view]
        assert ids == sorted(ids) and "skill A→Z" in table.header_text().plain
        app.sort_table("skill")  # again: reversed
        assert [table.rows[i].id for i in table.view] == sorted(ids, reverse=True)
        assert "skill Z→A" in table.header_text().plain
        for key in ("p", "hybrid", "cosine", "bm25", "overlap"):  # the mark is never cut
            app.sort_table(key)
            await pilot.pause()
            header = table.header_text().plain
            assert " ▼" in header or f"by {key} ▼" in header, (key, header)
            if key in ("p", "hybrid"):  # beside the number's name, not after its parts
                assert f" {key} ▼ " in header, header
            if key == "hybrid":  # the column widens for its mark: the breakdown stays whole
                assert "hybrid ▼  cos+kw+ph+file" in header, header
        await pilot.click(SkillsTable, offset=(1, 0))  # the # header: the decision's order
        await pilot.pause()
        assert table.sort_key == "decision"
        assert app.main.state.ui.sort_key == "decision"  # remembered, as F6's sort is
        assert table.view == list(range(len(table.rows)))
        await pilot.press("f6")
        assert table.sort_key != "decision"
        # At 80 columns the column sorted by stays on screen, as the deciding one does.
        await pilot.resize_terminal(80, 24)
        await settle(pilot, lambda: table.size.width <= 80)
        app.sort_table("bm25")
        await pilot.pause()
        assert "bm25" in table._widths and "bm25" in table.header_text().plain
        # A column toggled on that the width leaves off says so, not nothing at all.
        app.toggle_column("cosine")
        assert table.column_state("cosine") == "hidden"
        app.toggle_column("cosine")
        await pilot.pause()
        assert table.column_state("cosine") == "on, but this terminal is too narrow for it"
        assert any("too narrow" in n.message for n in app._notifications)


async def test_an_export_notice_keeps_the_file_name_on_one_line_at_80_columns(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns Textual's notices are 40 cells wide, and the exported file's name
    (`./skill-explorer-why-20261206-075959.md`, 39) broke over two lines: copied from
    the screen it did not name the file."""
    from textual.widgets._toast import Toast

    monkeypatch.chdir(tmp_path)
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await typed(pilot, app, "merge pdf")
        await pilot.press("ctrl+r")
        (exported,) = tmp_path.glob("skill-explorer-why-*.md")
        # Laid out: a toast is mounted a frame before it has a size.
        await settle(pilot, lambda: any(t.content_region.width for t in app.screen.query(Toast)))
        (toast,) = app.screen.query(Toast)
        assert toast.content_region.width >= len(f"./{exported.name}")


def test_every_screen_over_the_main_one_has_f1() -> None:
    """A modal screen's bindings end Textual's chain, so the app's F1 does not reach it:
    each binds it itself (help's own page aside)."""
    from textual.screen import ModalScreen

    from explorer.tui.collisions import CollisionsScreen
    from explorer.tui.keys import HELP_BINDING
    from explorer.tui.screens import ProblemsScreen
    from explorer.tui.suggest import SuggestScreen
    from explorer.tui.whatif import WhatIfScreen

    screens = {CollisionsScreen, ProblemsScreen, ThresholdEditor, SuggestScreen, WhatIfScreen}
    assert screens | {TextScreen} >= _subclasses(ModalScreen)
    for screen in screens:
        assert HELP_BINDING in screen.BINDINGS, screen.__name__


def _subclasses(cls: type) -> set[type]:
    """Every subclass of `cls` defined in the explorer's own modules."""
    found = set()
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("explorer."):
            found.add(sub)
        found |= _subclasses(sub)
    return found


async def test_f1_in_the_what_if_opens_the_help(tmp_path: Path) -> None:
    from explorer.tui.whatif import WhatIfScreen

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "merge pdf")
        app.go_to_skill("pdf")
        await pilot.press("f7")
        await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await pilot.press("f1")
        await settle(pilot, lambda: isinstance(app.screen, TextScreen))
        assert isinstance(app.screen, TextScreen)
        assert "LEXICAL ONLY" in page_text(app.screen.body)
