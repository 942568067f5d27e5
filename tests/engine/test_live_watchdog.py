"""The live index on the watchdog backend, the one used where our inotify watcher is not
(macOS, Windows): watchdog runs its own Linux observer here, so every path of the
watchdog side (event filter, watch scheduling, a root that goes and comes back) runs
against real events. explorer/engine/index/live.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from explorer.engine.index.live import LiveIndex
from explorer.engine.index.watchers import WatchdogWatcher
from tests.engine.test_live import CONFIG, MODELS, TIMEOUT, ids, same_as_disk, skill_text, write


def test_the_watchdog_backend_follows_creates_edits_moves_and_deletes(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / "pdf" / "SKILL.md", skill_text("pdf", "Merge and split PDF files."))
    with LiveIndex([root], CONFIG, MODELS, backend="watchdog") as live:
        assert live.backend == "watchdog" and isinstance(live.watcher, WatchdogWatcher)
        assert live.wait_for(lambda snap: same_as_disk(snap, root), TIMEOUT)
        write(root / "docx" / "SKILL.md", skill_text("docx", "Word documents."))
        (root / "pdf" / ".SKILL.md.swp").write_text("editor noise", "utf-8")
        assert live.wait_for(lambda snap: ids(snap) == {"pdf", "docx"}, TIMEOUT)
        write(root / "docx" / "SKILL.md", skill_text("docx", "Word documents and letters."))
        assert live.wait_for(lambda snap: same_as_disk(snap, root), TIMEOUT)
        (root / "docx").rename(root / "group")  # a directory moved: a walk finds it again
        assert live.wait_for(lambda snap: same_as_disk(snap, root), TIMEOUT)
        shutil.rmtree(root / "group")
        assert live.wait_for(lambda snap: ids(snap) == {"pdf"}, TIMEOUT)
        assert live.failures == []


@pytest.mark.slow  # real watcher waits; the backend's edits stay in the default run above
def test_the_watchdog_backend_rewatches_a_root_deleted_and_recreated(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root / "pdf" / "SKILL.md", skill_text("pdf", "Merge and split PDF files."))
    with LiveIndex([root], CONFIG, MODELS, backend="watchdog") as live:
        assert live.wait_for(lambda snap: same_as_disk(snap, root), TIMEOUT)
        shutil.rmtree(root)
        assert live.wait_for(lambda snap: ids(snap) == set(), TIMEOUT)
        write(root / "xlsx" / "SKILL.md", skill_text("xlsx", "Spreadsheets."))
        live.reindex_now()  # the health check notices the new root; a re-index walks it
        assert live.wait_for(lambda snap: ids(snap) == {"xlsx"}, TIMEOUT)
        write(root / "csv" / "SKILL.md", skill_text("csv", "Clean CSV files."))
        assert live.wait_for(lambda snap: ids(snap) == {"xlsx", "csv"}, TIMEOUT)  # watched again
