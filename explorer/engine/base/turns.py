"""Yield points in long loops, for a caller that must keep another thread responsive.

A long pure-Python loop on a worker thread (lint over 26,000 skills) shares the GIL with
the thread that draws the screen: Python hands the GIL over only every switch interval
(5 ms), so the screen's thread gets about half of it, and every wait of its event loop
costs up to one more interval to take it back. A caller that owns such a thread sets a
`pause` for the work it starts (`yielding`), and the loops here call `checkpoint()`
between two short steps; `pause` decides whether to give way (the explorer sleeps while
its event loop is late) and returns. Without a caller's pause a checkpoint does nothing.

Per thread (a context variable): a lint of the command line, or a test, beside an
explorer in the same process is not slowed by the explorer's pause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Pause = Callable[[], None]

_PAUSE: ContextVar[Pause | None] = ContextVar("explorer_pause", default=None)


def checkpoint() -> None:
    """A point between two short steps of a long loop: the caller's pause, if any."""
    pause = _PAUSE.get()
    if pause is not None:
        pause()


@contextmanager
def yielding(pause: Pause | None) -> Iterator[None]:
    """Within the block, this thread's checkpoints call `pause`."""
    token = _PAUSE.set(pause)
    try:
        yield
    finally:
        _PAUSE.reset(token)
