"""What our inotify watcher makes of each kind of kernel event (explorer/engine/index/watcher.py):
fed event buffers as the kernel writes them, so every branch runs without waiting on the
filesystem. A hint is a SKILL.md path to re-read, or None for "walk again"."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.engine.index import watcher as watcher_module
from explorer.engine.index.watcher import (
    _EVENT,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVE_SELF,
    InotifyWatcher,
    inotify_available,
    limit_note,
    watch_limit,
)

pytestmark = pytest.mark.skipif(not inotify_available(), reason="Linux inotify only")


def event(wd: int, mask: int, name: str = "") -> bytes:
    raw = name.encode()
    padded = raw + b"\0" * (16 - len(raw) % 16) if raw else b""
    return _EVENT.pack(wd, mask, 0, len(padded)) + padded


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[InotifyWatcher, list[str | None], int, Path]]:
    hints: list[str | None] = []
    watcher = InotifyWatcher(hints.append)
    assert watcher.sync([str(tmp_path)])
    wd = watcher._by_path[str(tmp_path)]
    yield watcher, hints, wd, tmp_path
    watcher.stop()


def test_each_event_gives_its_hint(watched) -> None:  # type: ignore[no-untyped-def]
    watcher, hints, wd, root = watched
    (root / "link").symlink_to(root)
    watcher.handle(
        event(wd, IN_CLOSE_WRITE, "SKILL.md")  # written and closed: read it
        + event(wd, IN_CREATE, "SKILL.md")  # created empty: wait for its close
        + event(wd, IN_CREATE | IN_ISDIR, "new-skill")  # a directory came: walk
        + event(wd, IN_MODIFY | IN_ISDIR, "old-skill")  # a listing changed: nothing
        + event(wd, IN_CREATE, "link")  # a symlink appeared: walk
        + event(wd, IN_CLOSE_WRITE, "notes.md")  # not a skill file: nothing
        + event(wd + 1000, IN_CLOSE_WRITE, "SKILL.md")  # an unknown watch: nothing
        + event(wd, IN_DELETE_SELF)  # the directory itself went: walk
    )
    assert hints == [os.path.join(root, "SKILL.md"), None, None, None]


def test_a_moved_directory_and_an_ignored_watch(watched) -> None:  # type: ignore[no-untyped-def]
    watcher, hints, wd, root = watched
    watcher.handle(event(wd, IN_MOVE_SELF))
    assert hints == [None]
    watcher.handle(event(wd, IN_IGNORED))  # the kernel dropped the watch
    assert watcher.watched == 0 and str(root) not in watcher.watched_paths()
    watcher.handle(event(wd, IN_CLOSE_WRITE, "SKILL.md"))  # late events of that watch
    assert hints == [None]


def test_a_symlinked_directory_we_walked_through_going_away(tmp_path: Path) -> None:
    hints: list[str | None] = []
    watcher = InotifyWatcher(hints.append)
    try:
        (tmp_path / "target").mkdir()
        (tmp_path / "linked").symlink_to(tmp_path / "target", target_is_directory=True)
        watcher.sync([str(tmp_path), str(tmp_path / "linked")])
        wd = watcher._by_path[str(tmp_path)]
        watcher.handle(event(wd, IN_DELETE, "linked"))
        assert hints == [None]
    finally:
        watcher.stop()


def test_the_watch_limit_is_read_or_said_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = tmp_path / "max_user_watches"
    limit.write_text("8192\n")
    monkeypatch.setattr(watcher_module, "LIMIT_FILE", str(limit))
    assert watch_limit() == 8192
    assert "fs.inotify.max_user_watches = 8192" in limit_note(10, 300_000)
    assert "max_user_watches=600000" in limit_note(10, 300_000)  # twice what is wanted
    limit.write_text("not a number")
    assert watch_limit() is None and "max_user_watches = ?" in limit_note(10, 20)
    monkeypatch.setattr(watcher_module, "LIMIT_FILE", str(tmp_path / "absent"))
    assert watch_limit() is None
