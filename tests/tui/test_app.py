"""The explorer driven by Textual's Pilot, over the real engine and a real live index."""

from __future__ import annotations

import io
import json
import threading
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import TabbedContent

from explorer.engine.base.config import Config
from explorer.engine.route.decision import Verdict
from explorer.engine.route.pipeline import decide
from explorer.terminal import render
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.screens import FieldList, ThresholdEditor
from explorer.tui.widgets.cases_panel import CasesPanel
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skill_panel import SkillPanel
from explorer.tui.widgets.skills_table import SkillsTable
from explorer.tui.widgets.status_bar import StatusBar
from explorer.tui.widgets.terms_panel import TermsPanel
from tests.conftest import write_skill

CONFIG = Config(model="bow", reranker="off", min_similarity=0.3, preset="reference")
WRITTEN_BY_HAND = """\
# our team's router settings
unknown_future_key = "kept"   # a newer version's key

[routing]
min_similarity = 0.4  # tuned on our cases
"""
SIZE = (120, 40)


def page_text(page: object, width: int = 200) -> str:
    """A page (F1's Group of tables) as the plain text a terminal `width` wide shows."""
    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(page)
    return console.export_text()


def make_app(root: Path, tmp_path: Path, **kwargs: object) -> ExplorerApp:
    history = PromptHistory(tmp_path / "history.txt")
    return ExplorerApp(
        [str(root)], CONFIG, cache_dir=str(tmp_path / "cache"), history=history, **kwargs
    )  # type: ignore[arg-type]


async def settle(pilot, condition: Callable[[], bool], timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Pump the app until `condition` holds: a wait with a timeout, never a bare sleep."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the app did not get there in time"
        await pilot.pause(0.02)


async def enter(pilot, app: ExplorerApp, prompt: str) -> None:  # type: ignore[no-untyped-def]
    """The prompt set in one step once the index is ready, then shown: where typing is not
    what a test is about (test_typing_shows_exactly_what_decide_returns types key by key),
    this skips a decide and a repaint per keystroke."""
    await settle(pilot, lambda: ready(app))
    bar = app.query_one(PromptBar)
    bar.value = prompt
    bar.cursor_position = len(prompt)
    await settle(pilot, lambda: shown_for(app, prompt))


async def burst(pilot, *keys: str) -> None:  # type: ignore[no-untyped-def]
    """Typed characters delivered as one burst, then one wait for the app to go idle.

    Called like `pilot.press` (`burst(pilot, "ctrl+u", *"text")`), but `press` waits for
    idle twice after every key, tens of ms each. Characters in a row take the same path
    (the app's bindings, then the focused widget), in order, the way a fast typist or a
    paste arrives: the tests that are not about per-key timing type this way. A named key
    ("ctrl+u", "f7") may move the focus, so it is pressed on its own, after the burst.
    """
    for key in keys:
        if len(key) > 1:
            await pilot.pause()
            await pilot.press(key)
        elif key.isalnum():
            pilot.app.post_message(events.Key(key, key))
        else:  # " " is the key "space", "." the key "full_stop"
            name = unicodedata.name(key).lower().replace(" ", "_").replace("-", "_")
            pilot.app.post_message(events.Key(name, key))
    await pilot.pause()


def ready(app: ExplorerApp) -> bool:
    return app.live is not None and app.snapshot is app.live.snapshot


def shown_for(app: ExplorerApp, prompt: str) -> bool:
    """The table and the panels all show the decision for `prompt`, made on the snapshot
    the app has now (not one it had before the live index came in, or before a save)."""
    decision = app.decision
    return (
        decision is not None
        and decision.prompt == prompt
        and app.state.panels_shown is decision
        and app.state.decided_on is app.snapshot
    )


def table_rows(app: ExplorerApp) -> list[tuple[str, str]]:
    """(skill, verdict) as each line of the table shows them."""
    table = app.query_one(SkillsTable)
    return [
        (table.cell_text(row.id, "skill"), table.cell_text(row.id, "verdict")) for row in table.rows
    ]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(root, "docker", "Shrink Docker images and speed up container builds.")
    return root


async def test_typing_shows_exactly_what_decide_returns(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        prompt = "merge pdfs"  # typed key by key: each keystroke decides again
        await pilot.press(*prompt)
        await settle(pilot, lambda: shown_for(app, prompt))
        expected = decide(prompt, app.live.snapshot, app.config)
        verdicts = [("INJECT" if r.verdict is Verdict.INJECT else r.verdict) for r in expected.rows]
        assert table_rows(app) == list(zip([r.id for r in expected.rows], verdicts, strict=True))
        assert expected.injected_ids == ("pdf",)
        panel = app.query_one(DecisionPanel).query_one("#decision-body").render()
        assert "confident_winner" in str(panel) and "stage cosine" in str(panel)


async def test_saving_a_skill_updates_the_table_with_deltas(library: Path, tmp_path: Path) -> None:
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        prompt = "clean up a csv export"
        await enter(pilot, app, prompt)
        await settle(pilot, lambda: shown_for(app, prompt))
        version = app.snapshot.version
        before = app.decision.row("xlsx").score
        write_skill(library, "xlsx", "Clean up CSV export files: csv cleanup for every csv.")
        await settle(
            pilot,
            lambda: (
                app.snapshot.version > version
                and shown_for(app, prompt)
                and app.decision.row("xlsx").score != before
            ),
        )
        table = app.query_one(SkillsTable)
        hybrid = table.cell_text("xlsx", "hybrid")
        assert "▲" in hybrid  # the description now matches the prompt better
        assert "re-indexed +0 -0 ~1" in app.state.last_change


async def test_editing_a_threshold_changes_the_decision(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # f4 writes ./skill-explorer.toml
    (tmp_path / "skill-explorer.toml").write_text(WRITTEN_BY_HAND)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        prompt = "merge two pdf files"
        await enter(pilot, app, prompt)
        await settle(pilot, lambda: shown_for(app, prompt) and app.decision.injected_ids)
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        # Each line fits beside the list's scrollbar, so a cut one shows its "…".
        listing = editor.query_one(FieldList)
        shown = listing.scrollable_content_region.width
        assert shown < listing.size.width  # the scrollbar's cells
        lines = [
            "".join(segment.text for segment in listing.render_line(y))
            for y in range(listing.size.height)
        ]
        assert all(len(line) == shown for line in lines)
        assert any(line.rstrip().endswith("…") for line in lines)  # a note cut at the edge
        editor.edit("min_similarity", "0.99")
        await settle(
            pilot,
            lambda: (
                app.config.min_similarity == 0.99
                and shown_for(app, prompt)
                and app.decision.injected_ids == ()
            ),
        )
        assert editor.changed("min_similarity")
        editor.edit("min_similarity", "lots")  # a bad value is reported and changes nothing
        await pilot.pause(0.1)
        assert app.config.min_similarity == 0.99
        assert "min_similarity" in editor.errors
        # The reason comes right after the field's name: a narrow help line cuts its end.
        help_line = str(editor.query_one("#field-help").render())
        assert help_line.startswith(f"min_similarity  {editor.errors['min_similarity']}")
        assert (tmp_path / "skill-explorer.toml").read_text() == WRITTEN_BY_HAND
        # A field that shows a value: typing replaces it, as in a form; end then edits it.
        editor.choose("phrase_boost")
        await pilot.press(*"0.25")
        assert editor.texts["phrase_boost"] == "0.25" and app.config.phrase_boost == 0.25
        await pilot.press("end", "5")
        assert editor.texts["phrase_boost"] == "0.255"
        editor.edit("phrase_boost", "")  # back to the default: not saved below
        await pilot.pause()
        await pilot.press("f4")
        saved = (tmp_path / "skill-explorer.toml").read_text()
        # Only the field edited here; comments, sections and unknown keys byte for byte;
        # the app's one-off values (model = "bow", reranker = "off") are not written.
        assert saved == WRITTEN_BY_HAND.replace("min_similarity = 0.4", "min_similarity = 0.99")
        assert not list(tmp_path.glob(".skill-explorer.toml.*"))  # the temporary is gone
        await settle(
            pilot,
            lambda: any("set min_similarity = 0.99 in" in n.message for n in app._notifications),
        )
        # Saved: from the project file now, no longer an edit (F2's mark, the status bar).
        assert not editor.changed("min_similarity")
        assert editor.source("min_similarity").label == "./skill-explorer.toml"
        assert "F2:" not in str(app.query_one(StatusBar).render())
        await pilot.press("escape")
        assert not isinstance(app.screen, ThresholdEditor)
        # An edit left unsaved in one visit is saved by F4 in the next, with that visit's.
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("max_skills", "3")
        await pilot.press("escape")
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("lexical_min", "5")
        await pilot.press("f4")
        saved = (tmp_path / "skill-explorer.toml").read_text()
        assert "max_skills = 3" in saved and "lexical_min = 5" in saved
        assert "min_similarity = 0.99" in saved
        await pilot.press("escape")


async def test_markup_and_escapes_in_skills_are_shown_literally(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    hostile = (
        "Renders [bold]reports[/bold] with [link=https://x.test]links[/link] \x1b[31mred\x1b[0m."
    )
    write_skill(root, "report-writer", hostile)
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "reports")
        await settle(pilot, lambda: shown_for(app, "reports"))
        shown = app.query_one(TermsPanel).query_one("#terms-body").render().plain
        assert "[bold]reports[/bold]" in shown and "[link=https://x.test]" in shown
        assert "\x1b" not in shown and "␛[31m" in shown
        line = app.query_one(SkillsTable).line_text(0).plain
        # The name, literal; ⚠ before it: the file's control characters are a warning.
        assert line.split()[1:3] == ["⚠", "report-writer"]


async def test_bad_states_are_said_on_screen(tmp_path: Path) -> None:
    app = make_app(tmp_path / "nowhere", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        assert "does not exist" in app.state.message
    (tmp_path / "empty").mkdir()
    app = make_app(tmp_path / "empty", tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app))
        assert "No SKILL.md files" in app.state.message


@pytest.mark.slow  # test_prompt_history.py walks the same history without an app
async def test_history_walks_with_alt_up_and_down_and_keeps_the_draft(
    library: Path, tmp_path: Path
) -> None:
    history = PromptHistory(tmp_path / "history.txt")
    history.add("first prompt")
    history.add("second prompt")
    app = ExplorerApp([str(library)], CONFIG, cache_dir=str(tmp_path / "c"), history=history)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "half typed")
        await pilot.press("alt+up")
        assert app.query_one(PromptBar).value == "second prompt"
        await pilot.press("alt+up", "alt+up")
        assert app.query_one(PromptBar).value == "first prompt"
        await pilot.press("alt+down")
        assert app.query_one(PromptBar).value == "second prompt"
        await pilot.press("alt+down")  # past the newest entry: the unsubmitted draft is back
        assert app.query_one(PromptBar).value == "half typed"
    assert PromptHistory(tmp_path / "history.txt").entries == ["first prompt", "second prompt"]


STOOD_S = 0.8  # the test's PROMPT_SETTLED_S


async def test_a_prompt_that_stood_a_while_is_kept_in_the_history_when_cleared(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer routes as you type: most prompts are never sent with enter. One that
    stood a while and was then cleared is kept; one cleared at once (a typo) is not."""
    # Wide enough that "oops" then ctrl+u stays a typo on a loaded machine (at 0.2 s, two
    # key presses were once slower than that while the other core ran a benchmark).
    monkeypatch.setattr("explorer.tui.screens.main.PROMPT_SETTLED_S", STOOD_S)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await pilot.press(*"merge pdf files")
        await pilot.pause(STOOD_S * 1.5)
        await pilot.press("ctrl+u")
        await pilot.press(*"oops")
        await pilot.press("ctrl+u")
        await pilot.pause(STOOD_S * 1.5)
        assert app.main.history.entries == ["merge pdf files"]
        await pilot.press(*"fix my flexbox layout", "enter", "ctrl+u")
        # Reading an older entry a while, then walking back to the empty draft, keeps the
        # order: a walk is not typing.
        await pilot.press("alt+up", "alt+up")
        await pilot.pause(STOOD_S * 1.5)
        await pilot.press("alt+down", "alt+down")
        await pilot.pause(STOOD_S * 1.5)
    assert PromptHistory(tmp_path / "history.txt").entries == [
        "merge pdf files",
        "fix my flexbox layout",
    ]


@pytest.mark.slow  # a save, a re-index, a re-run; the Cases tab itself is tested below
async def test_cases_rerun_on_save_and_lint_shows_beside_the_skill(
    library: Path, tmp_path: Path
) -> None:
    (library / "cases.toml").write_text(
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n'
        '[[case]]\nprompt = "banana bread recipe"\nexpect = []\nkind = "negative"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        cases = app.query_one(CasesPanel).query_one("#cases-body")
        assert "2 cases" in render(cases.content)
        assert app.state.cases_report.rates.recall == 1.0
        version = app.snapshot.version
        write_skill(library, "pdf", "Bake bread and banana cakes at home.")  # breaks case 1
        await settle(
            pilot,
            lambda: (
                app.snapshot.version > version
                and app.state.cases_report is not None
                and app.state.cases_report.rates.recall == 0.0
            ),
        )
        shown = render(cases.content)
        assert "BROKE" in shown and "merge two pdf files" in shown
        await enter(pilot, app, "bread")
        await settle(pilot, lambda: shown_for(app, "bread"))
        app.query_one(TabbedContent).active = "skill-tab"
        app.state.highlighted = "pdf"
        await settle(
            pilot,
            lambda: "lint" in app.query_one(SkillPanel).query_one("#skill-body").render().plain,
        )


async def test_a_cases_toml_made_edited_broken_or_removed_while_the_app_runs_is_followed(
    library: Path, tmp_path: Path
) -> None:
    """The Cases tab says "add cases.toml to the library": one added while the app ran was
    never read, and an edit waited for F5. The status bar showed the last recall after the
    file stopped reading."""
    app = make_app(library, tmp_path)
    path = library / "cases.toml"
    one = '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n'
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        body = app.query_one(CasesPanel).query_one("#cases-body")
        status = app.query_one(StatusBar)
        assert "No cases: add cases.toml" in render(body.content)
        path.write_text(one, encoding="utf-8")
        await settle(pilot, lambda: "1 case" in render(body.content), timeout=20)
        await settle(pilot, lambda: "recall 1.000" in status.render().plain)
        path.write_text(one + one.replace("merge two", "split the"), encoding="utf-8")
        await settle(pilot, lambda: "2 cases" in render(body.content), timeout=20)
        path.write_text(one + "[[case]\n", encoding="utf-8")
        await settle(pilot, lambda: "invalid TOML" in render(body.content), timeout=20)
        await settle(pilot, lambda: "recall" not in status.render().plain)
        path.unlink()
        await settle(pilot, lambda: "No cases: add cases.toml" in render(body.content), timeout=20)


def hold_cases(library: Path, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """One case in the library's cases.toml, each run of the cases held until the event
    returned is set: the test looks at the screen while they run."""
    from explorer.tui import tasks

    (library / "cases.toml").write_text(
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    go_on = threading.Event()
    evaluate = tasks.evaluate

    def held(*args: Any, **kwargs: Any) -> Any:
        go_on.wait(30)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(tasks, "evaluate", held)
    return go_on


async def test_the_status_bar_says_while_the_cases_run_again_after_an_edit(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An F2 edit decides at once; the cases follow, and until they have, the recall
    the status bar shows is marked as the last run's."""
    go_on = hold_cases(library, monkeypatch)
    go_on.set()
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        status = app.query_one(StatusBar)
        assert "recall 1.000 │" in status.render().plain
        go_on.clear()
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("min_similarity", "0.99")
        await settle(pilot, lambda: shown_for(app, "") and app.config.min_similarity == 0.99)
        await pilot.pause()
        assert "recall 1.000 … │ F2: min_similarity" in status.render().plain
        go_on.set()
        await settle(pilot, lambda: "recall 0.000" in status.render().plain)
        assert "recall 0.000 │" in status.render().plain


async def test_a_cases_run_a_newer_one_waits_behind_stops(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two F2 values in a row: the cases of the first stop once the second waits (lint
    has finished by then), and only the second's report is shown."""
    from explorer.tui import tasks

    (library / "cases.toml").write_text(
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    go_on, finished = threading.Event(), []
    go_on.set()
    evaluate = tasks.evaluate

    def held(cases: Any, snapshot: Any, config: Config, **kwargs: Any) -> Any:
        go_on.wait(30)
        report = evaluate(cases, snapshot, config, **kwargs)
        finished.append(config.min_similarity)
        return report

    monkeypatch.setattr(tasks, "evaluate", held)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        finished.clear()
        go_on.clear()
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("min_similarity", "0.99")
        await settle(pilot, lambda: app.turns.busy)
        editor.edit("min_similarity", "0.98")
        await settle(pilot, lambda: app.turns.waits("quality"))
        go_on.set()
        await settle(pilot, lambda: not app.turns.busy and not app.state.quality_running)
        assert finished == [0.98]
        assert app.state.cases_run is not None and app.state.cases_run[1].min_similarity == 0.98


async def test_the_cases_tab_reads_a_trigger_eval_set(library: Path, tmp_path: Path) -> None:
    evals = tmp_path / "pdf-evals.json"
    evals.write_text(
        json.dumps(
            [
                {"query": "merge two pdf files", "should_trigger": True},
                {"query": "banana bread recipe", "should_trigger": False},
            ]
        ),
        encoding="utf-8",
    )
    app = make_app(library, tmp_path, cases_path=str(evals), cases_skill="pdf")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        assert app.state.cases_report is not None
        assert set(app.state.cases_report.by_kind) == {"should-trigger", "should-not-trigger"}
        assert "2 cases" in render(app.query_one(CasesPanel).query_one("#cases-body").content)
    # Without --skill the set cannot be read: the status bar says so, not the tab alone.
    app = make_app(library, tmp_path, cases_path=str(evals))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_problem is not None)
        assert "pass --skill ID" in render(
            app.query_one(CasesPanel).query_one("#cases-body").content
        )
        await settle(pilot, lambda: "cases unread" in app.main.status.shown.text().plain)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.slow  # test_keys_and_layout.py exports once in the default set
async def test_exports_never_overwrite_and_an_unwritable_place_is_said(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "merge pdf")
        await settle(pilot, lambda: shown_for(app, "merge pdf"))
        for _ in range(3):  # the same second: three files, none overwritten
            await pilot.press("ctrl+r")  # export works from the prompt too
        await pilot.pause(0.1)
        assert len(list(out.glob("skill-explorer-why-*.md"))) == 3
        # The notice names the file as the user would type it: a toast wraps a long
        # absolute path inside its words.
        written = [n.message for n in app._notifications if "explanation written" in n.message]
        assert written and all(m.startswith("explanation written to ./skill") for m in written)
        # /proc refuses new files even to root (a read-only mount does too, but needs setup)
        monkeypatch.chdir("/proc")
        await pilot.press("ctrl+r")
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        messages = [n.message for n in app._notifications]
        assert sum("cannot" in message for message in messages) == 2, messages
        assert app.is_running and shown_for(app, "merge pdf")


# Real watcher waits; test_saving_a_skill_updates_the_table_with_deltas keeps saves in the default
# run.
@pytest.mark.slow
async def test_the_watcher_never_waits_for_the_ui_and_its_failures_are_said(
    library: Path, tmp_path: Path
) -> None:
    """Two saves are indexed while the UI's loop is held: the watcher only posts messages.
    With call_from_thread the watcher's thread would sit in the first change's callback
    until the loop ran again, and the second save would not be indexed in time.

    Then a listener that raises: its failure reaches the status bar."""
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        live = app.live
        assert live is not None
        start = live.snapshot.version
        # From here until the settle below the test holds the loop (no await).
        write_skill(library, "pdf", "Merge PDF files, first save.")
        assert live.wait_for(lambda snap: snap.version > start, 10.0)
        middle = live.snapshot.version
        write_skill(library, "xlsx", "Spreadsheets, second save.")
        assert live.wait_for(lambda snap: snap.version > middle, 10.0)
        await settle(pilot, lambda: app.snapshot is live.snapshot)

        def broken(_change: object) -> None:
            raise RuntimeError("listener exploded")

        live.subscribe(broken)
        write_skill(library, "pdf", "Merge PDF files, saved again.")
        await settle(pilot, lambda: any("(watcher)" in str(p) for p in app.problems()))
        await pilot.pause(0.1)
        status = app.query_one(StatusBar)
        assert status.error_count == len(app.problems()) >= 1
        assert "listener exploded" in str(app.problems()[0])


@pytest.mark.slow
async def test_the_table_makes_rows_only_for_what_it_draws(tmp_path: Path) -> None:
    """Lazy rows: 400 skills, a prompt, a save (deltas) and a sort by cosine; the
    table never makes more Row objects than it drew lines (plus the followed skill), and
    its lines are those of the full decision."""
    root = tmp_path / "skills"
    topics = ("pdf tables", "csv cleanup", "docker images", "git commits", "sourdough bread")
    for number in range(400):
        write_skill(root, f"skill-{number:03d}", f"Help with {topics[number % 5]}, item {number}.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        prompt = "clean up a csv export"
        await burst(pilot, *prompt)
        await settle(pilot, lambda: shown_for(app, prompt))
        table = app.query_one(SkillsTable)
        screen_lines = SIZE[1]
        assert 0 < table.rows.made <= screen_lines  # type: ignore[attr-defined]
        expected = decide(prompt, app.live.snapshot, app.config).rows
        assert [table.line_text(i).plain.split()[1] for i in range(5)] == list(expected.ids[:5])
        version = app.snapshot.version
        write_skill(root, "skill-001", "Clean up CSV exports: csv cleanup for every csv file.")
        await settle(pilot, lambda: app.snapshot.version > version and shown_for(app, prompt), 30.0)
        assert app.query_one(SkillsTable).rows.made <= screen_lines  # type: ignore[attr-defined]
        table.sort_by("cosine")
        await pilot.pause(0.1)
        assert table.rows.made <= 2 * screen_lines  # type: ignore[attr-defined]
        cosines = table.column("cosine")
        shown = [table.view[i] for i in range(10)]
        assert [float(cosines[i]) for i in shown] == sorted(
            (float(value) for value in cosines), reverse=True
        )[:10]


async def test_while_the_first_cases_run_the_tab_and_the_status_bar_say_so(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,060 cases on a 188-skill library take minutes: all that time the Cases tab says
    they run (not "No cases: add cases.toml …"), and the status bar "cases …"."""
    go_on = hold_cases(library, monkeypatch)
    cases = library / "cases.toml"
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.quality_running)
        await pilot.pause()
        body = render(app.query_one(CasesPanel).query_one("#cases-body").content)
        status = app.query_one(StatusBar)
        assert body == f"Running the cases of {cases} (after lint)…"
        assert "│ cases … │" in status.render().plain
        go_on.set()
        await settle(pilot, lambda: app.state.cases_report is not None)
        await pilot.pause()
        assert "1 case " in render(app.query_one(CasesPanel).query_one("#cases-body").content)
        assert "│ recall 1.000 │" in status.render().plain


async def test_esc_from_a_tab_strip_or_a_list_returns_to_the_prompt(
    library: Path, tmp_path: Path
) -> None:
    """Esc returns to the prompt from the tabs' strip and the failing cases' list, as it
    does from the table."""
    from textual.widgets import OptionList, Tabs

    (library / "cases.toml").write_text(
        '[[case]]\nprompt = "tidy my spreadsheet"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        prompt = app.query_one(PromptBar)
        strip = app.query_one("#details", TabbedContent).query_one(Tabs)
        app.query_one(TabbedContent).active = "cases-tab"
        listing = app.query_one(CasesPanel).query_one("#cases-failures", OptionList)
        for widget in (strip, listing):
            widget.focus()
            await pilot.pause()
            assert app.focused is widget
            await pilot.press("escape")
            assert app.focused is prompt, widget
