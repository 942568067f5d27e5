"""One watcher interface, chosen by a factory that says why (explorer/engine/index/watchers.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from explorer.engine.index.live import LiveIndex
from explorer.engine.index.watcher import InotifyWatcher, inotify_available
from explorer.engine.index.watchers import (
    Backend,
    InotifyWatch,
    PollWatcher,
    WatchdogWatcher,
    WatchPlan,
    choose_backend,
    start_watcher,
)
from tests.engine.test_live import CONFIG, MODELS, TIMEOUT, ids, skill_text, write


def test_auto_picks_inotify_where_the_os_has_it_and_says_why() -> None:
    choice = choose_backend("auto")
    if inotify_available():
        assert choice.backend is Backend.INOTIFY and "inotify" in choice.reason
    else:
        assert choice.backend is Backend.WATCHDOG and "no inotify" in choice.reason
    assert choose_backend("poll").backend is Backend.POLL
    with pytest.raises(ValueError):
        choose_backend("fsevents")


@pytest.mark.parametrize("backend", list(Backend))
def test_each_backend_starts_and_stops_behind_the_one_interface(
    backend: Backend, tmp_path: Path
) -> None:
    if backend is Backend.INOTIFY and not inotify_available():
        pytest.skip("Linux inotify only")
    heard: list[str | None] = []
    watcher, choice = start_watcher(choose_backend(backend.value), heard.append)
    expected = {
        Backend.INOTIFY: InotifyWatch,
        Backend.WATCHDOG: WatchdogWatcher,
        Backend.POLL: PollWatcher,
    }[backend]
    try:
        assert isinstance(watcher, expected) and watcher.backend is choice.backend is backend
        plan = WatchPlan([str(tmp_path)], [str(tmp_path)], [], [], [])
        watcher.sync(plan)
        assert not watcher.roots_moved([str(tmp_path)])
        unwatched = watcher.unwatched(plan)
        assert unwatched == (([str(tmp_path)], []) if backend is Backend.POLL else ([], []))
    finally:
        watcher.stop()


def test_inotify_refused_falls_back_to_polling_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: InotifyWatcher) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(InotifyWatcher, "start", refused)
    root = tmp_path / "skills"
    write(root / "pdf" / "SKILL.md", skill_text("pdf", "Merge and split PDF files."))
    with LiveIndex([root], CONFIG, MODELS, backend="inotify") as live:
        assert live.backend == "poll" and isinstance(live.watcher, PollWatcher)
        assert "inotify unavailable" in live.watcher_choice.reason
        assert any("max_user_instances" in note for note in live.notes), live.notes
        write(root / "docx" / "SKILL.md", skill_text("docx", "Word documents."))
        assert live.wait_for(lambda snap: ids(snap) == {"pdf", "docx"}, TIMEOUT)
