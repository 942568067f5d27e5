"""Rendered lines freed when they are dropped, not by the collector's full collections.

`Strip.divide` (textual/strip.py) memoises its result in the strip's own cache, and when
the only cut is the strip's end that result is `[self]`: the strip then refers to itself.
The compositor divides every line of every widget so at each repaint (`_render_chops` in
textual/_compositor.py), so every line a repaint drops is a reference cycle, freed only
by a full collection. The explorer defers those while background work runs
(`tasks.IdleCollections`), and an author who saves faster than a lint of 26,000 skills
ends keeps it running: the lines of every repaint piled up until it stopped, and then
one collection freed them on the event loop (43,522 objects in 88 ms after 100 saves;
docs/benchmarks.md, "Lines that hold themselves").

`release_divided_strips` answers that trivial division without the cache, as Textual
would without it: a one-element list of the strip itself, which is cheap to make again.
Every other division goes to Textual's own method unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.strip import Strip

_textual_divide = Strip.divide


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    cuts = [cut for cut in cuts if cut <= self.cell_length]
    if cuts == [self.cell_length]:
        return [self]
    return _textual_divide(self, cuts)


def release_divided_strips() -> None:
    """From now on, in this process, a strip divided at its end alone does not hold
    itself. Idempotent."""
    setattr(Strip, "divide", _divide)  # noqa: B010 - mypy forbids assigning a method
