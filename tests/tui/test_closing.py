"""A worker whose result comes in while the explorer closes draws nothing and fails
nothing: the main screen is looked up on the event loop, inside `ExplorerApp.on_main`'s
guard, never on the worker's own thread where a screen already gone would raise."""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from textual.css.query import NoMatches
from textual.worker import WorkerState

from explorer.engine.route.pipeline import decide
from explorer.tui import tasks
from explorer.tui.app import ExplorerApp
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, make_app, ready, settle


def _lint(app: ExplorerApp) -> Callable[[], None]:
    return partial(tasks.lint_and_cases, app, app.live.snapshot, app.state.config)  # type: ignore[union-attr]


def _replay(app: ExplorerApp) -> Callable[[], None]:
    return partial(tasks.replay_history, app, app.live.snapshot, app.state.config)  # type: ignore[union-attr]


def _compare(app: ExplorerApp) -> Callable[[], None]:
    decision = decide("merge two pdf files", app.live.snapshot, app.state.config)  # type: ignore[union-attr]
    return partial(tasks.compare_rankings, app, decision, None, None, app.state.config)


def _gone(app: ExplorerApp) -> None:
    raise NoMatches("the main screen is not mounted")


@pytest.mark.parametrize("task", [_lint, _replay, _compare], ids=["lint", "replay", "compare"])
async def test_a_result_that_comes_in_as_the_screen_goes_is_dropped(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    task: Callable[[ExplorerApp], Callable[[], None]],
) -> None:
    library = tmp_path / "skills"
    write_skill(library, "pdf", "Merge, split and extract tables from PDF files.")
    # A log that is not there: the replay shows its error, the quickest of its results.
    app = make_app(library, tmp_path, history_log=str(tmp_path / "no-such-log.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        work = task(app)
        with monkeypatch.context() as patch:
            patch.setattr(ExplorerApp, "main", property(_gone))
            worker = app.run_worker(work, thread=True, exit_on_error=False)
            await settle(pilot, lambda: worker.is_finished)
        assert worker.state is WorkerState.SUCCESS, worker.error


async def test_the_cases_run_stops_between_two_cases_when_the_explorer_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's exit waits for its thread workers: a cases run that went on to its end
    would hold the quit up (half a minute at 26,000 skills). Cancelled, as Textual cancels
    every worker when the app closes, it stops at its next case and draws nothing."""
    evaluate_module = importlib.import_module("explorer.engine.qa.evaluate")
    library = tmp_path / "skills"
    write_skill(library, "pdf", "Merge, split and extract tables from PDF files.")
    cases = tmp_path / "cases.toml"
    cases.write_text(
        "".join(
            f'[[case]]\nprompt = "merge pdf number {n}"\nexpect = ["pdf"]\nkind = "direct"\n\n'
            for n in range(200)
        )
    )
    app = make_app(library, tmp_path, cases_path=str(cases))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await settle(pilot, lambda: not app.background_busy)
        decided: list[str] = []
        first = threading.Event()

        def slow_decide(prompt: str, *args: object, **kwargs: object) -> object:
            decided.append(prompt)
            first.set()
            time.sleep(0.01)
            return decide(prompt, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(evaluate_module, "decide", slow_decide)
        shown: list[object] = []
        monkeypatch.setattr(app.main, "show_quality", shown.append)
        run, ended = _lint(app), threading.Event()

        def work() -> None:  # the thread's own end: a cancelled worker is "finished" at once
            try:
                run()
            finally:
                ended.set()

        worker = app.run_worker(work, thread=True, exit_on_error=False)
        await settle(pilot, first.is_set)
        worker.cancel()
        await settle(pilot, ended.is_set)
        assert 1 <= len(decided) < 20 and not shown
