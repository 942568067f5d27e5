"""The History tab (§10): a telemetry log recorded by the real hook, replayed against the
library the explorer has open; a saved description edit lists the prompts it changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import TabbedContent

from explorer.engine.host.hook import HookEvent, answer_hook
from explorer.tui.screens import ThresholdEditor
from explorer.tui.widgets.history_panel import HistoryPanel
from tests.conftest import write_skill
from tests.tui.test_app import CONFIG, SIZE, make_app, ready, settle

PDF_PROMPT = "merge two pdf files into one"
SHEET_PROMPT = "clean up the csv export"


def record(library: Path, state: Path, cache: Path) -> Path:
    """One session through the hook, with the explorer's own settings and telemetry on."""
    settings = [
        f"model={CONFIG.model}",
        f"reranker={CONFIG.reranker}",
        f"min_similarity={CONFIG.min_similarity}",
        f"preset={CONFIG.preset}",
        "telemetry=true",
        "telemetry_prompts=true",
    ]
    for event, fields in (
        (HookEvent.PROMPT, {"prompt": PDF_PROMPT}),
        (HookEvent.TOOL_USED, {"tool_name": "Skill", "tool_input": {"skill": "pdf"}}),
        (HookEvent.PROMPT, {"prompt": SHEET_PROMPT}),
    ):
        payload = {"hook_event_name": event.value, "session_id": "s1", **fields}
        answer_hook(
            json.dumps(payload),
            cli_roots=[str(library)],
            assignments=settings,
            use_ski_config=False,
            cache_dir=str(cache),
            state_dir=state,
        )
    return state / "telemetry.jsonl"


def body(app) -> str:  # type: ignore[no-untyped-def]
    return app.query_one(HistoryPanel).query_one("#history-body").render().plain


@pytest.mark.slow  # tests/engine/test_history.py holds the replay the tab lists
async def test_the_history_tab_lists_the_prompts_an_edit_changes(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    write_skill(library, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(library, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    log = record(library, tmp_path / "state", tmp_path / "cache")
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [event["injected"][0]["id"] for event in logged if event["kind"] == "recommend"] == [
        "pdf",
        "xlsx",
    ]
    app = make_app(library, tmp_path, history_log=str(log))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.history_replay is not None)
        app.query_one(TabbedContent).active = "history-tab"
        assert app.state.history_replay.replayed == 2 and app.state.history_replay.changes == ()
        assert "no logged prompt would inject differently" in body(app)
        version = app.snapshot.version
        write_skill(library, "pdf", "Bake bread and banana cakes at home.")  # saved on disk
        await settle(
            pilot,
            lambda: (
                app.snapshot.version > version
                and app.state.history_replay is not None
                and bool(app.state.history_replay.changes)
            ),
        )
        (change,) = app.state.history_replay.changes
        assert (change.prompt, change.before, change.after) == (PDF_PROMPT, ("pdf",), ())
        assert change.verdict == "worse"  # the model had loaded pdf after that prompt
        await settle(pilot, lambda: PDF_PROMPT in body(app))
        shown = body(app)
        assert "WORSE" in shown and "pdf → nothing" in shown and SHEET_PROMPT not in shown


@pytest.mark.slow  # opens the F2 editor (a second); a saved edit replays in the test above
async def test_a_threshold_edit_replays_the_log(tmp_path: Path) -> None:
    library = tmp_path / "skills"
    write_skill(library, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(library, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    log = record(library, tmp_path / "state", tmp_path / "cache")
    app = make_app(library, tmp_path, history_log=str(log))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.history_replay is not None)
        assert app.state.history_replay.changes == ()
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("min_similarity", "0.99")  # nothing clears it now
        await settle(
            pilot,
            lambda: (
                app.state.history_replay is not None and len(app.state.history_replay.changes) == 2
            ),
        )
        assert {change.after for change in app.state.history_replay.changes} == {()}
