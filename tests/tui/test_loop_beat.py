"""Background work gives way to the event loop (tasks.LoopBeat with the engine's
checkpoints): a worker's checkpoint sleeps while the loop misses its beat, and never
when no beat runs. Counted, not timed: the loop is held until the worker has paused."""

from __future__ import annotations

import asyncio
import threading
import time

from explorer.engine.base.turns import checkpoint, yielding
from explorer.tui.tasks import LoopBeat


def _spin(beat: LoopBeat, done: threading.Event) -> None:
    with yielding(beat.pause):
        while not done.is_set():
            checkpoint()


async def test_a_worker_pauses_while_the_loop_is_late_and_goes_on_after() -> None:
    beat = LoopBeat(lambda: True)
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


async def test_without_background_work_no_beat_runs_and_nothing_pauses() -> None:
    wanted = [True]
    beat = LoopBeat(lambda: wanted[0])
    beat.start()
    wanted[0] = False
    await asyncio.sleep(0.05)  # the next beat sees nothing wanted and stops
    assert not beat.running
    time.sleep(3 * LoopBeat.STALE)  # the last beat is old now
    with yielding(beat.pause):
        for _ in range(1000):
            checkpoint()
    assert beat.pauses == 0
