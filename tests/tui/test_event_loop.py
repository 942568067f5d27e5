"""What keeps the explorer's event loop free: background work gives way to it
(tasks.LoopBeat with the engine's checkpoints: a worker's checkpoint sleeps while the loop
misses its beat, and never when no beat runs), and a panel drawn again with what it
shows is not laid out again. Counted, not timed: the loop is held until the worker has
paused."""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import nullcontext

import pytest

from explorer.engine.base.turns import checkpoint, yielding
from explorer.tui.tasks import LoopBeat


def _spin(beat: LoopBeat, done: threading.Event) -> None:
    with yielding(beat.pause):
        while not done.is_set():
            checkpoint()


async def test_a_worker_pauses_while_the_loop_is_late_and_goes_on_after() -> None:
    beat = LoopBeat(lambda: True, lambda: False)
    beat.start()
    done = threading.Event()
    worker = threading.Thread(target=_spin, args=(beat, done))
    worker.start()
    await asyncio.sleep(0.05)  # the loop beats: the worker checkpoints on
    # The loop held (as by a long repaint): the beat goes stale and the worker pauses.
    deadline = time.monotonic() + 30
    while beat.pauses == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert beat.pauses >= 1
    await asyncio.sleep(0.05)  # the loop beats again: the pause ends
    done.set()
    await asyncio.to_thread(worker.join, 30)
    assert not worker.is_alive()
    beat.stop()


@pytest.mark.parametrize("work", ["a decision", "a save"])
async def test_a_worker_pauses_while_other_threads_work_for_the_screen(work: str) -> None:
    """The loop keeps its beat, but a keystroke's decision and a save's re-index run on
    threads of their own: background work gives way to them too, and goes on after."""
    saving = [False]
    beat = LoopBeat(lambda: True, lambda: saving[0])
    beat.STALE = 3600.0  # a busy machine cannot make the loop late here: only the work
    beat.start()
    done = threading.Event()
    worker = threading.Thread(target=_spin, args=(beat, done))
    worker.start()
    await asyncio.sleep(0.05)
    assert beat.pauses == 0  # the loop beats: nothing to give way to
    with beat.foreground() if work == "a decision" else nullcontext():
        saving[0] = work == "a save"
        deadline = time.monotonic() + 30
        while beat.pauses == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # the loop keeps beating all along
        assert beat.pauses >= 1
        saving[0] = False
    await asyncio.sleep(0.1)  # the pause under way ends with the work
    pauses = beat.pauses
    await asyncio.sleep(0.1)  # the work done: the worker goes on without pausing
    assert beat.pauses == pauses
    done.set()
    await asyncio.to_thread(worker.join, 30)
    assert not worker.is_alive()
    beat.stop()


async def test_without_background_work_no_beat_runs_and_nothing_pauses() -> None:
    wanted = [True]
    beat = LoopBeat(lambda: wanted[0], lambda: False)
    beat.start()
    wanted[0] = False
    await asyncio.sleep(0.05)  # the next beat sees nothing wanted and stops
    assert not beat.running
    time.sleep(3 * LoopBeat.STALE)  # the last beat is old now
    with yielding(beat.pause):
        for _ in range(1000):
            checkpoint()
    assert beat.pauses == 0


async def test_a_panel_redrawn_with_what_it_shows_is_not_laid_out_again() -> None:
    """After a save the reason and terms panels are drawn again with the same text when
    lint ends; each update laid the whole screen out again (30-60 ms of the event loop)."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from explorer.tui.widgets import update_text

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Static(id="panel")

    app = One()
    async with app.run_test() as pilot:
        panel = app.query_one("#panel", Static)
        layouts: list[bool] = []
        refresh = panel.refresh

        def counted(*regions: object, **kwargs: bool) -> object:
            layouts.append(kwargs.get("layout", False))
            return refresh(*regions, **kwargs)  # type: ignore[arg-type]

        panel.refresh = counted  # type: ignore[method-assign]
        update_text(panel, Text("pdf: injected", style="bold"))
        update_text(panel, Text("pdf: injected", style="bold"))
        assert layouts.count(True) == 1
        update_text(panel, Text("pdf: not injected"))
        assert layouts.count(True) == 2
        await pilot.pause()
        assert str(panel.render()) == "pdf: not injected"
