"""For a skill author: what matched, named; health in the table and F3; the config
layers; the panel maximised; the gates that decided first; a failing case into the prompt;
UI state that persists. Driven through Textual's Pilot over the real engine."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from textual.widgets import OptionList, TabbedContent

from explorer.engine.base.config import PROJECT_CONFIG_NAME, Config, LoadedConfig
from explorer.engine.discovery import Problem
from explorer.terminal import render
from explorer.tui.app import ExplorerApp
from explorer.tui.health import BROKEN, issues, kept_finding, layers_text, lint_errors
from explorer.tui.screens import ProblemsScreen, ThresholdEditor
from explorer.tui.state import ConfigLayers, UIState, load_state, state_path
from explorer.tui.widgets.cases_panel import CasesPanel
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.footer import KeyCell, QuietFooter
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skills_table import SkillsTable
from explorer.tui.widgets.status_bar import Status, StatusBar
from explorer.tui.widgets.terms_panel import TermsPanel
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, burst, enter, make_app, ready, settle, shown_for


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


def terms(app: ExplorerApp) -> str:
    return app.query_one(TermsPanel).query_one("#terms-body").render().plain  # type: ignore[attr-defined]


@pytest.mark.slow  # tests/engine/test_reasons.py holds the terms and gates the tab shows
async def test_the_terms_tab_the_gates_and_the_columns_of_a_decision(
    library: Path, tmp_path: Path
) -> None:
    """One app over the library: the Terms tab names what matched; the decision panel lists
    the gates that ran first and folds the skipped ones; without a reranker the table has
    no rerank column, even with room for every column."""
    app = make_app(library, tmp_path)  # reranker = "off"
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge report.pdf")
        assert app.state.highlighted == "pdf"
        shown = terms(app)
        assert 'kw: "pdf" (name)' in shown and "+0.15" in shown
        assert "file: report.pdf → pdf" in shown and "+0.30" in shown
        await burst(pilot, "ctrl+u", *"my pod keeps crashing")
        await settle(pilot, lambda: shown_for(app, "my pod keeps crashing"))
        app.go_to_skill("kubernetes-debugger")
        await pilot.pause()
        assert 'ph: "pod keeps crashing"' in terms(app)  # the phrase as its author wrote it
        app.go_to_skill("xlsx")
        await pilot.pause()
        assert "no keyword, phrase or file matched" in terms(app)

        # The gates that ran come first, the skipped ones fold.
        await enter(pilot, app, "merge pdf")
        panel = app.query_one(DecisionPanel)
        body = panel.query_one("#decision-body").render().plain  # type: ignore[attr-defined]
        skipped = [gate.name for gate in app.decision.gates if gate.skipped]  # type: ignore[union-attr]
        ran = [gate.name for gate in app.decision.gates if not gate.skipped]  # type: ignore[union-attr]
        assert skipped and ran
        folded = next(line for line in body.splitlines() if line.startswith("· skipped"))
        assert folded.startswith(f"· skipped ({len(skipped)}): {', '.join(skipped)}")
        marks = [line for line in body.splitlines() if line[:2] in ("✓ ", "✗ ")]
        assert [line.split()[1] for line in marks] == ran  # in cascade order, before the fold
        assert body.index(marks[-1]) < body.index(folded)
        panel.focus()
        await pilot.press("space")  # unfolds: every skipped gate with its inputs
        body = panel.query_one("#decision-body").render().plain  # type: ignore[attr-defined]
        assert f"skipped ({len(skipped)}), in cascade order:" in body
        assert all(f"· {name}" in body for name in skipped)

        # The rerank column hides itself without a reranker, at a width that fits them all.
        table = app.query_one(SkillsTable)
        await pilot.resize_terminal(200, 40)
        await settle(pilot, lambda: table.size.width > SIZE[0])
        await pilot.pause()
        keys = [key for key, _ in table.columns]
        assert "rerank" not in keys and {"cosine", "bm25", "overlap"} <= set(keys)


# -- visible health ----------------------------------------------------------------------


@pytest.mark.slow  # tests/engine/test_rows_api.py holds the rows' states and reasons
async def test_rejected_files_are_greyed_rows_with_their_reason(
    library: Path, tmp_path: Path
) -> None:
    broken = library / "broken-one" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\nname: broken-one\n---\nno description\n", encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        table = app.query_one(SkillsTable)
        last = table.line_text(len(table.view)).plain  # after every scored row
        assert "broken-one" in last and "rejected" in last
        assert "missing or empty 'descr" in last
        assert table.line_text(len(table.view)).spans[-1].style == "dim"
        # pdf's file breaks: the hook would read it as it is and skip it, so the table
        # scores the others without it and lists the file with the rejected ones.
        (library / "pdf" / "SKILL.md").write_text("---\nname: pdf\n", encoding="utf-8")
        await settle(pilot, lambda: len(table.rejected) == 2)
        await settle(pilot, lambda: "pdf" not in table.ids())
        rejected = [table.line_text(len(table.view) + i).plain for i in range(2)]
        assert any("pdf" in line and "rejected" in line for line in rejected)
        await burst(pilot, "ctrl+f", *"broken")  # the filter finds rejected files too
        await pilot.pause()
        assert table.view == [] and len(table.rejected_view) == 1


async def test_the_keyboard_scrolls_to_rejected_files_under_the_scored_rows(
    library: Path, tmp_path: Path
) -> None:
    """The cursor rests on skills only, so a down past the last scored row, or End,
    scrolls the rejected files under it into view (they were out of reach)."""
    for number in range(12):
        broken = library / f"broken-{number:02}" / "SKILL.md"
        broken.parent.mkdir()
        broken.write_text(f"---\nname: broken-{number:02}\n---\nbody\n", encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "merge pdf")
        table = app.query_one(SkillsTable)
        await settle(pilot, lambda: len(table.rejected_view) == 12)
        table.focus()
        assert table.max_scroll_y > 0 and table.scroll_offset.y == 0
        await pilot.press(*["down"] * 4)  # two to the last skill, then two past it
        await pilot.pause()
        assert table.cursor == len(table.view) - 1 and table.scroll_offset.y == 2
        await pilot.press("end")
        await pilot.pause()
        assert table.scroll_offset.y == table.max_scroll_y
        assert "broken-11" in table.line_text(len(table.view) + 11).plain
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor == 0 and table.scroll_offset.y == 0


@pytest.mark.slow  # tests/engine/test_lint.py holds the findings F3 groups
async def test_f3_groups_problems_by_kind_filters_and_opens_the_file(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("broken-one", "broken-two"):
        path = library / name / "SKILL.md"
        path.parent.mkdir()
        path.write_text(f"---\nname: {name}\n---\n", encoding="utf-8")
    duplicate = library / "zz-copy" / "SKILL.md"
    duplicate.parent.mkdir()
    duplicate.write_text("---\nname: pdf\ndescription: a copy of pdf\n---\n", encoding="utf-8")
    app = make_app(library, tmp_path)
    opened: list[str] = []
    monkeypatch.setattr(app, "edit_file", lambda path, line=None: opened.append(path))
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        await pilot.press("f3")
        await settle(pilot, lambda: isinstance(app.screen, ProblemsScreen))
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        listing = screen.query_one(OptionList)
        headings = [
            str(listing.get_option_at_index(i).prompt)
            for i in range(listing.option_count)
            if listing.get_option_at_index(i).disabled
        ]
        assert headings[:2] == ["rejected: broken SKILL.md (2)", "rejected: duplicate name (1)"]
        # Paths from the library's root, which the title names: a long root wrapped them.
        lines = [render(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert any(line.startswith("  zz-copy/SKILL.md: ") for line in lines), lines
        assert f"paths from {library}" in str(screen.query_one("#problems-title").render())
        await burst(pilot, *"duplicate")  # the filter narrows as you type
        await pilot.pause()
        assert [issue.path for issue in screen.shown] == [str(duplicate)]
        await pilot.press("enter")
        assert opened == [str(duplicate)]
        await burst(pilot, *"zzz")  # nothing matches: the list says so, not a blank box
        await pilot.pause()
        assert screen.shown == []
        (line,) = [
            render(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)
        ]
        assert line.startswith("Nothing matches 'duplicatezzz'"), line
        await burst(pilot, "ctrl+u", *"broken-two")
        await pilot.pause()
        await pilot.press("ctrl+o")
        assert opened[-1] == str(library / "broken-two" / "SKILL.md")
        await pilot.press("escape")
        assert not isinstance(app.screen, ProblemsScreen)


def test_the_status_bar_counts_lint_s_findings_apart_from_broken_files() -> None:
    """F3 lists both, so the bar counts both: a broken file and a lint error apart. Its
    lint count is `skill-explorer lint`'s but for the rejected files (the bar's errors):
    invalid YAML that routes here is a lint error, as other hosts reject the file."""
    findings = {
        "/s/a/SKILL.md": (
            "error spec/description-length: the description has 1100 characters",
            "warning retrieval/no-trigger-language: no 'use when' sentence",
            "error parse/invalid-yaml (line 3): recovered by line reader",
        ),
        "/s/b/SKILL.md": ("error spec/reserved-word: 'claude' in the name",),
        "/s/c/SKILL.md": ("info claude-code/listing-budget: 99 characters",),
        "/s/d/SKILL.md": ("error parse/rejected: no frontmatter",),  # the bar's own error
    }
    assert lint_errors(findings) == 3  # warnings are F3's alone: most libraries have many
    # F3 lists the invalid YAML once, as a parse warning, and says that lint counts it.
    warned = Problem("/s/a/SKILL.md", "invalid YAML frontmatter (x); recovered", 3)
    snapshot = SimpleNamespace(rejected=(), skills=(), warnings=(warned,))
    (listed,) = [i for i in issues(snapshot, findings={}) if i.kind == "parse warning"]  # type: ignore[arg-type]
    assert listed.message.endswith("a lint error: other hosts' parsers reject the file")
    listed = {i.path: i.message for i in issues(snapshot, findings=findings) if "lint" in i.kind}  # type: ignore[arg-type]
    assert listed["/s/c/SKILL.md"] == "99 characters"
    # A link the walk did not follow is no broken SKILL.md: a group of its own, and the
    # table names it by itself, not by the skill folder it sits in ("✗ pdf rejected").
    from explorer.tui.widgets.skills_table import _rejected_name

    link = Problem("/s/pdf/top", "a link to /, a directory that holds it or the library: …")
    broken = Problem("/s/pdf/SKILL.md", "missing or empty 'description'")
    snapshot = SimpleNamespace(rejected=(link, broken), skills=(), warnings=())
    kinds = {i.path: i.kind for i in issues(snapshot)}  # type: ignore[arg-type]
    assert kinds == {link.path: "not walked: a directory or link", broken.path: BROKEN}
    assert [_rejected_name(problem)[0] for problem in (link, broken)] == ["top", "pdf"]
    shown = Status("skills", 1, "d", "r", last="", errors=0, lint_errors=2).text().plain
    assert "1 skill │ 0 errors · lint 2 errors (F3)" in shown
    assert "3 skills │ 0 errors │" in Status("skills", 3, "d", "r", last="", errors=0).text().plain


def test_the_status_bar_shows_false_injections_beside_recall_when_there_are_negatives() -> None:
    """An author wants a skill to trigger on the right prompts and on no others: with
    should-not-trigger cases, their false-inject rate is beside recall (the compact form
    for 80 columns keeps recall alone)."""
    from explorer.tui.widgets.cases_panel import cases_status

    def report(false_inject_rate: float | None) -> Any:
        return SimpleNamespace(
            rates=SimpleNamespace(recall=0.75, false_inject_rate=false_inject_rate)
        )

    assert cases_status(report(0.25), None).plain == "recall 0.750 false-inject 0.250"
    assert cases_status(report(0.25), None, compact=True).plain == "recall 0.750"
    assert cases_status(report(None), None).plain == "recall 0.750"  # no negatives


def test_a_narrow_status_bar_names_the_roots_by_their_last_names() -> None:
    """At 80 columns a long root took the room of the cases' recall: the roots shorten,
    only when the counts and the recall would not fit."""
    from rich.text import Text

    status = Status(
        "/home/someone/projects/team/skills",
        25,
        "dense skill-encoder",
        "reranker r",
        last="watching: no change yet",
        errors=0,
        warnings=1,
        lint_errors=2,
        cases=Text("recall 0.889"),
        short_roots="skills",
    )
    narrow = status.text(80)
    assert narrow.plain.startswith(" skills 25 skills │") and narrow.cell_len > 80
    assert "recall 0.889" in narrow.plain[:80]
    # Wide enough for the counts and the recall with the whole path: the path stays,
    # though the models at the end are cut.
    for width in (120, 300):
        shown = status.text(width)
        assert shown.plain.startswith(" /home/someone/projects/team/skills 25 skills")
    assert "recall 0.889" in status.text(120).plain[:120]
    # After a save that broke a case the cases say more: the counts go short too.
    broke = dataclasses.replace(status, cases=Text("BROKE 1 recall 0.875"))
    shown = broke.text(80).plain[:80]
    assert shown.startswith(" skills 25 skills │ 1 warning · lint 2 (F3) │ BROKE 1 recall 0.875 │")
    # With more flips and F2's edits beside them the short counts are not enough: the
    # flips become signs and "(F3)" goes, and the recall stays whole.
    flips = dataclasses.replace(
        status,
        cases=Text("BROKE 7 FIXED 17 recall 0.875"),
        cases_compact=Text("✗7 ✓17 recall 0.875"),
        edits="min_similarity",
    )
    shown = flips.text(80).plain[:80]
    assert shown.startswith(" skills 25 skills │ 1 warning · lint 2 │ ✗7 ✓17 recall 0.875 │ F2:"), (
        shown
    )
    # Lint's errors alone in short: no separator before them, nothing left blank.
    alone = dataclasses.replace(flips, warnings=0).text(80).plain
    assert alone.startswith(" skills 25 skills │ lint 2 │ ✗7 ✓17 recall 0.875 │"), alone


def test_short_roots_tell_roots_of_the_same_last_name_apart() -> None:
    from explorer.tui.screens.main import _short_roots

    assert _short_roots(["/tmp/team-skills/"]) == "team-skills"
    both = _short_roots(["/home/me/.claude/skills", "/work/app/.claude/skills"])
    assert both == "me/.claude/skills, app/.claude/skills"


def test_f3_opens_a_lint_finding_at_its_line() -> None:
    """A finding lint places (a frontmatter key's line) keeps its line through the
    explorer's strings, so F3's enter opens the editor there, not at line 1."""
    findings = {
        "/s/a/SKILL.md": (
            kept_finding("warning", "retrieval/no-trigger-language", "no 'use when': add one", 3),
            kept_finding("error", "spec/listing-budget", "(line 9) is not a line", None),
        )
    }
    found = {issue.kind: issue for issue in issues(None, findings=findings)}
    placed = found["lint warning: retrieval/no-trigger-language"]
    assert (placed.line, placed.message) == (3, "no 'use when': add one")
    assert placed.text() == "/s/a/SKILL.md:3: no 'use when': add one"
    assert found["lint error: spec/listing-budget"].line is None
    assert lint_errors(findings) == 1


def test_the_config_layers_are_named_lowest_first(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    user = home / ".config" / "skill-explorer" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("min_similarity = 0.4\n", encoding="utf-8")
    project = tmp_path / "work" / "skill-explorer.toml"
    project.parent.mkdir()
    project.write_text("max_skills = 2\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project.parent)
    loaded = LoadedConfig(Config(), {"score_margin": "--set"}, (), (str(user), str(project)))
    assert layers_text(loaded) == (
        "config: defaults < ~/.config/skill-explorer/config.toml < ./skill-explorer.toml < --set"
    )
    assert layers_text(LoadedConfig(Config(), {}, (), ())) == "config: defaults"


@pytest.mark.slow  # layers_text on screen; the test above is its fast check
async def test_the_status_bar_names_the_config_layers(library: Path, tmp_path: Path) -> None:
    app = make_app(
        library,
        tmp_path,
        layers=ConfigLayers(
            LoadedConfig(Config(), {}, (), (os.path.abspath(PROJECT_CONFIG_NAME),))
        ),
    )
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: ready(app))
        status = str(app.query_one(StatusBar).render())
        assert "config: defaults < ./skill-explorer.toml" in status


# -- layout ------------------------------------------------------------------------------


def test_a_failing_case_shows_the_skill_it_is_about() -> None:
    """A should-not-trigger case (skill-creator's `should_trigger: false`) is about the
    skill it rejects, not another one it rightly took."""
    from explorer.engine.qa.cases import Case
    from explorer.engine.qa.evaluate import CaseResult
    from explorer.engine.route.decision import Stage
    from explorer.tui.widgets.cases_panel import _skill_to_show

    def failed(case: Case, injected: tuple[str, ...]) -> CaseResult:
        return CaseResult(case, injected, False, Stage.RELEVANCE, None, None, (), None, 0.0)

    rejected = Case("merge pdf", (), "negative", reject=("pdf",))
    assert _skill_to_show(failed(rejected, ("docx", "pdf"))) == "pdf"
    assert _skill_to_show(failed(Case("merge pdf", (), "negative"), ("docx",))) == "docx"
    assert _skill_to_show(failed(Case("x", ("a", "b"), "direct"), ())) == "a"


LONG_PROMPT = "keep rebuilding " + "the whole image from scratch every time " * 6


@pytest.mark.slow  # tests/engine/test_evaluate.py holds the failing cases the tab lists
async def test_enter_on_a_failing_case_loads_it_into_the_prompt(
    library: Path, tmp_path: Path
) -> None:
    (library / "cases.toml").write_text(
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n'
        '[[case]]\nprompt = "tidy my spreadsheet columns"\nexpect = ["kubernetes-debugger"]\n'
        'kind = "direct"\n[[case]]\nprompt = "merge these pdf files"\nexpect = []\n'
        f'kind = "negative"\n[[case]]\nprompt = "{LONG_PROMPT}"\nexpect = ["docker"]\n'
        'kind = "direct"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        app.query_one(TabbedContent).active = "cases-tab"
        panel = app.query_one(CasesPanel)
        await settle(pilot, lambda: bool(panel.failures))
        prompts = [result.case.prompt for result in panel.failures]
        assert "tidy my spreadsheet columns" in prompts
        listing = panel.query_one("#cases-failures", OptionList)
        listing.focus()
        await pilot.pause()
        assert listing.highlighted == 0  # enter at once loads a case, without a down first
        # A prompt wider than the list is cut with …, not wrapped back under the ✗.
        drawn = [
            "".join(segment.text for segment in listing.render_line(y)).rstrip()
            for y in range(listing.size.height)
        ]
        assert not any(line and line[0] not in "✗ " for line in drawn), drawn
        assert any(line.startswith("✗ keep rebuilding") and line.endswith("…") for line in drawn)
        listing.highlighted = prompts.index("tidy my spreadsheet columns")
        app.go_to_skill("pdf")  # the cursor rested on another skill before
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot, lambda: shown_for(app, "tidy my spreadsheet columns"))
        assert app.focused is app.query_one(PromptBar)
        # The table follows the skill the case expects, not the one the cursor was on.
        table = app.query_one(SkillsTable)
        assert table.followed == table.current_id() == "kubernetes-debugger"
        # A prompt that should get nothing: the skill it wrongly injects.
        listing.focus()
        listing.highlighted = prompts.index("merge these pdf files")
        await pilot.press("enter")
        await settle(pilot, lambda: shown_for(app, "merge these pdf files"))
        assert table.followed == table.current_id() == "pdf"


@pytest.mark.slow  # two explorers in turn; the state file tests below are fast
async def test_f9_maximises_the_decision_panel_and_the_layout_is_remembered(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        footer_keys = {binding.key for binding in app.BINDINGS if binding.show}  # type: ignore[union-attr]
        assert {"f9", "f10"} <= footer_keys
        await pilot.press("f9")
        assert app.screen.maximized is app.query_one(DecisionPanel)
        await pilot.press(*"s")  # the prompt stays usable while maximised
        await settle(pilot, lambda: shown_for(app, "merge pdfs"))
        await pilot.press("f10")  # the bottom panels: 45% -> 60%
        app.sort_table("bm25")
        app.toggle_column("overlap")
    saved = json.loads(state_path().read_text(encoding="utf-8"))
    assert saved == {
        "sort_key": "bm25",
        "sort_reverse": False,
        "hidden": ["overlap"],
        "panel_size": 60,
        "maximised": True,
        "bottom": "auto",  # F4's choice below the table: unchanged here
    }
    again = make_app(library, tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(again))
        table = again.query_one(SkillsTable)
        assert (table.sort_key, table.hidden) == ("bm25", {"overlap"})
        assert again.screen.maximized is again.query_one(DecisionPanel)
        assert again.query_one("#bottom").styles.height.value == 60  # type: ignore[union-attr]
        await pilot.press("f9")
        assert again.screen.maximized is None


async def test_f9_twice_at_80_columns_brings_the_tabs_back(library: Path, tmp_path: Path) -> None:
    """Narrow, the tabs are shown alone; F9 shows the decision panel to maximise it, and F9
    again left the decision panel in the tabs' place."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "merge pdf")
        bottom = app.query_one("#bottom")
        assert bottom.has_class("only-tabs") and app.state.ui.bottom == "auto"
        await pilot.press("f9")
        assert app.screen.maximized is app.query_one(DecisionPanel)
        await pilot.press("f9")
        assert app.screen.maximized is None
        assert bottom.has_class("only-tabs") and app.state.ui.bottom == "auto"
        await pilot.press("f9")  # quit maximised: F4's own view is what is kept
    assert json.loads(state_path().read_text(encoding="utf-8"))["bottom"] == "auto"
    again = make_app(library, tmp_path)
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(again))
        assert again.screen.maximized is again.query_one(DecisionPanel)
        await pilot.press("f9")
        assert again.query_one("#bottom").has_class("only-tabs")


async def test_every_f10_changes_the_panels_height_at_80x24(library: Path, tmp_path: Path) -> None:
    """At 80x24 the panels' least height (8 rows) made 30 % and 45 % the same: one press
    of F10 in three changed nothing. F10 goes on to the next height that shows."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "merge pdf")
        bottom = app.query_one("#bottom")
        heights = [bottom.outer_size.height]
        for _ in range(4):
            await pilot.press("f10")
            await pilot.pause()
            heights.append(bottom.outer_size.height)
        assert all(a != b for a, b in itertools.pairwise(heights)), heights


@pytest.mark.parametrize(
    "content",
    ["{not json", "[1, 2]", '{"sort_key": 5, "hidden": "overlap", "panel_size": 7}', ""],
)
def test_a_bad_state_file_gives_the_defaults(content: str) -> None:
    state_path().parent.mkdir(parents=True, exist_ok=True)
    state_path().write_text(content, encoding="utf-8")
    assert load_state() == UIState()


async def test_over_a_bad_state_file_the_defaults_and_the_layout_saved_where_read(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer opens with the defaults over a state file it cannot read, and saves the
    layout where it read it from, whatever $XDG_STATE_HOME says by then."""
    read_from = state_path()
    read_from.parent.mkdir(parents=True, exist_ok=True)
    read_from.write_text('{"sort_key": 5, "hidden": "overlap"', encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        assert app.query_one(SkillsTable).sort_key == "decision"
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
        app.sort_table("bm25")
    assert load_state(read_from).sort_key == "bm25"
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.slow  # the F2 editor (every config field) costs about a second to open
async def test_the_footer_is_not_rebuilt_under_f2_and_is_on_return(
    library: Path, tmp_path: Path
) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        footer = app.query_one(QuietFooter)
        rebuilt: list[str] = []
        original = footer._rebuild  # a rebuild if the keys it would show changed

        async def counted() -> None:
            rebuilt.append(type(app.screen).__name__)
            await original()

        footer._rebuild = counted  # type: ignore[method-assign]
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, ThresholdEditor))
        await pilot.pause(0.3)
        assert rebuilt == []  # hidden under F2: nothing rebuilt
        await pilot.press("escape")
        await settle(pilot, lambda: bool(rebuilt))
        assert "ThresholdEditor" not in rebuilt
        await pilot.pause()
        shown = [(cell.key, cell.description) for cell in footer.query(KeyCell)]
        assert shown == [(cell.key, cell.description) for cell in footer._cells()]


async def test_a_new_run_shows_the_cases_summary_not_the_first_failing_case(
    library: Path, tmp_path: Path
) -> None:
    """The first failing case is highlighted for enter; below a summary taller than the
    tab, scrolling it into view hid the recall and the flips each time a run came in."""
    kinds = ("direct", "indirect", "confusable")  # a line of the summary each
    (library / "cases.toml").write_text(
        "".join(
            f'[[case]]\nprompt = "tidy spreadsheet {k}"\nexpect = ["docker"]\nkind = "{k}"\n'
            for k in kinds
        )
        + '[[case]]\nprompt = "bake bread"\nexpect = []\nkind = "negative"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=(40, 10)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        app.query_one(TabbedContent).active = "cases-tab"
        panel = app.query_one(CasesPanel)
        await settle(pilot, lambda: len(panel.failures) >= 3)
        report = app.state.cases_report
        assert report is not None
        panel.show(report, None, "cases.toml")  # as a run after a save is shown
        listing = panel.query_one("#cases-failures", OptionList)
        await settle(pilot, lambda: panel.max_scroll_y > 0)  # laid out: the case is below
        assert listing.highlighted == 0 and panel.scroll_offset.y == 0

        def in_view() -> bool:
            top = listing.virtual_region.y + listing.gutter.top
            return panel.scroll_offset.y <= top < panel.scroll_offset.y + panel.size.height

        listing.focus()  # as tab brings a user there: the highlighted case comes into view
        await settle(pilot, in_view)  # the scroll is animated


async def test_the_cases_summary_comes_back_when_the_failing_list_is_left(
    library: Path, tmp_path: Path
) -> None:
    """Focusing the failing cases scrolls the tab down to them; the tab cannot take the
    focus itself, so leaving the list scrolls the summary (recall, the flips) back."""
    cases = "".join(
        f'[[case]]\nprompt = "tidy spreadsheet number {n}"\nexpect = ["docker"]\nkind = "direct"\n'
        for n in range(12)
    )
    (library / "cases.toml").write_text(cases, encoding="utf-8")
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        app.query_one(TabbedContent).active = "cases-tab"
        panel = app.query_one(CasesPanel)
        await settle(pilot, lambda: len(panel.failures) == 12)
        listing = panel.query_one("#cases-failures", OptionList)
        for _ in range(8):  # as a user gets there: tab by tab
            if app.focused is listing:
                break
            await pilot.press("tab")
        await pilot.press(*["down"] * 11)
        await pilot.pause()
        assert panel.scroll_offset.y > 0  # the list is in view, the summary above it not
        # One scrollbar, the tab's: the list is as tall as its cases (it scrolled inside the
        # scrolling tab, two bars side by side), and the last case, highlighted, is in view.
        assert listing.highlighted == 11 and not listing.show_vertical_scrollbar
        assert listing.scroll_offset.y == 0 and panel.max_scroll_y - panel.scroll_offset.y <= 1
        await pilot.press(*["up"] * 11)
        await pilot.pause()
        top = listing.virtual_region.y + listing.gutter.top  # the first case's line, in the tab
        assert panel.scroll_offset.y <= top < panel.scroll_offset.y + panel.size.height
        app.query_one(PromptBar).focus()
        await pilot.pause()
        assert panel.scroll_offset.y == 0
