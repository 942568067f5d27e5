"""Messages the explorer's threads post to the UI: named types, one per event.

The load worker and the live index's watcher thread never wait for the UI: they post one
of these (post_message is thread-safe) and go on. A burst of re-indexes that arrives
while the UI is busy merges into one message (`can_replace`): the UI re-decides once, for
the newest snapshot, and the status bar counts every change of the burst.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from explorer.engine.index import IndexChange

if TYPE_CHECKING:
    from explorer.tui.state import SnapshotFacts


class EmbeddingProgress(Message):
    """The live index's build embedded `done` of `total` descriptions (a cold cache)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done, self.total = done, total


class LiveReady(Message):
    """The live index is built and watching (posted by the load worker), with the facts
    of its first snapshot, read on the load worker's thread."""

    def __init__(self, facts: SnapshotFacts | None = None) -> None:
        super().__init__()
        self.facts = facts


class IndexChanged(Message):
    """The live index swapped in a new snapshot (posted from the watcher's thread)."""

    def __init__(self, change: IndexChange, facts: SnapshotFacts | None = None) -> None:
        super().__init__()
        self.changes: tuple[IndexChange, ...] = (change,)
        self.facts = facts  # of the snapshot it swapped in, read on the watcher's thread

    def can_replace(self, message: Message) -> bool:
        """A queued IndexChanged right behind this one takes its changes and its place:
        the snapshot to show is the newest one either way (its facts are the newest's)."""
        if isinstance(message, IndexChanged):
            message.changes = (*self.changes, *message.changes)
            return True
        return False

    def counts(self) -> tuple[int, int, int]:
        """Skills added, removed and changed over every merged change."""
        return (
            sum(len(change.added) for change in self.changes),
            sum(len(change.removed) for change in self.changes),
            sum(len(change.changed) for change in self.changes),
        )

    def total_ms(self) -> float:
        return sum(change.timings_ms.get("total", 0.0) for change in self.changes)


class WatcherFailed(Message):
    """The watcher survived an error (posted from its thread); it joins the error list."""

    def __init__(self, failure: str) -> None:
        super().__init__()
        self.failure = failure
