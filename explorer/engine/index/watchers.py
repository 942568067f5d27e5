"""One interface for the live index's file watcher, three backends, one factory.

Events are only hints (the live index re-reads the disk whatever they say), so a
backend's whole job is to say "this SKILL.md may have changed" or "walk everything
again", to watch what the skill walk lists, and to name what it cannot watch, which the
live index then polls by stat. Which backend runs, and why, is kept in a `WatcherChoice`
that `watch`, the status bar and `doctor` can show:

* inotify (Linux): one non-recursive watch per directory the walk lists (watcher.py);
* watchdog (elsewhere): its native recursive backends have no per-directory cost;
* poll: a stat of every directory and SKILL.md on a timer, when nothing else works.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from explorer.engine.discovery.skills import SKILL_FILE
from explorer.engine.index.watcher import Hint, InotifyWatcher, inotify_available

Identity = tuple[int, int] | None  # (st_dev, st_ino): a root replaced is a new root


class Backend(StrEnum):
    INOTIFY = "inotify"
    WATCHDOG = "watchdog"
    POLL = "poll"


@dataclass(frozen=True)
class WatcherChoice:
    """The backend that runs and the reason it was picked, for people to read."""

    backend: Backend
    reason: str


@dataclass(frozen=True)
class WatchPlan:
    """What the last skill walk listed: what a backend watches, and what it must name
    as unwatched (the live index polls those by stat)."""

    roots: Sequence[str]
    directories: Collection[str]  # every directory the walk listed
    files: Collection[str]  # every SKILL.md
    links: Sequence[str]  # symlinked directories the walk followed
    linked_files: Collection[str]  # SKILL.md files that are symlinks or have hard links


class Watcher(Protocol):
    """A source of hints: `hint(path)` for a SKILL.md that changed, `hint(None)` for
    "walk everything again". Calls `hint` from its own thread."""

    backend: Backend
    notes: list[str]  # for people: limits hit, what is polled instead
    overflows: int  # events the OS dropped (each one asked for a full walk)

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def sync(self, plan: WatchPlan) -> bool:
        """Watch what the walk listed; whether a new watch was added."""
        ...

    def unwatched(self, plan: WatchPlan) -> tuple[list[str], list[str]]:
        """The directories and SKILL.md files no watch covers."""
        ...

    def roots_moved(self, roots: Sequence[str]) -> bool:
        """A root deleted, re-created or replaced since the last sync."""
        ...


def identity(path: str) -> Identity:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class PollWatcher:
    """No watches at all: every directory and SKILL.md is polled by stat."""

    backend = Backend.POLL

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.overflows = 0
        self._root_ids: dict[str, Identity] = {}

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def sync(self, plan: WatchPlan) -> bool:
        self._root_ids = {root: identity(root) for root in plan.roots}
        return False

    def unwatched(self, plan: WatchPlan) -> tuple[list[str], list[str]]:
        return list(plan.directories), list(plan.files)

    def roots_moved(self, roots: Sequence[str]) -> bool:
        return any(identity(root) != self._root_ids.get(root) for root in roots)


class InotifyWatch(PollWatcher):
    """Linux inotify on exactly the directories the walk lists (watcher.InotifyWatcher);
    what the OS refuses to watch is polled."""

    backend = Backend.INOTIFY

    def __init__(self, hint: Hint, *, max_watches: int | None = None) -> None:
        super().__init__()
        self._hint = hint
        self.inotify = InotifyWatcher(self._heard, max_watches=max_watches)

    def _heard(self, path: str | None) -> None:
        if path is None:
            self.overflows = self.inotify.overflows
        self._hint(path)

    def start(self) -> None:
        self.inotify.start()

    def stop(self) -> None:
        self.inotify.stop()

    def sync(self, plan: WatchPlan) -> bool:
        super().sync(plan)
        added = self.inotify.sync(plan.directories)
        self.inotify.sync_files(plan.linked_files)
        for note in self.inotify.notes:
            if note not in self.notes:
                self.notes.append(note)
        return added

    def unwatched(self, plan: WatchPlan) -> tuple[list[str], list[str]]:
        if not self.inotify.limited:
            return [], []
        watched = self.inotify.watched_paths()
        dirs = [path for path in plan.directories if path not in watched]
        files = [path for path in plan.files if os.path.dirname(path) not in watched]
        watched_files = self.inotify.watched_files()
        files += [path for path in sorted(plan.linked_files) if path not in watched_files]
        return dirs, files


class _EventFilter(FileSystemEventHandler):
    """Turns watchdog events into hints: a SKILL.md path, or None for a full walk."""

    def __init__(self, hint: Hint) -> None:
        self._hint = hint

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [os.fsdecode(event.src_path)]
        if getattr(event, "dest_path", ""):
            paths.append(os.fsdecode(event.dest_path))
        if event.is_directory:
            # A directory came, went or moved: it may hold skills. A modified directory
            # only means its listing changed, which file events already report.
            if event.event_type != "modified":
                self._hint(None)
            return
        for path in paths:
            if os.path.basename(path) == SKILL_FILE:
                self._hint(path)


class WatchdogWatcher:
    """watchdog's recursive watch on each root and each symlinked directory outside them."""

    backend = Backend.WATCHDOG

    def __init__(self, hint: Hint) -> None:
        self.notes: list[str] = []
        self.overflows = 0
        self._hint = hint
        self._observer: BaseObserver = Observer()
        self._watches: dict[str, tuple[ObservedWatch, Identity]] = {}

    def start(self) -> None:
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)

    def sync(self, plan: WatchPlan) -> bool:
        wanted = [root for root in plan.roots if os.path.isdir(root)]
        real_roots = [os.path.realpath(root) for root in wanted]
        wanted += [
            link
            for link in plan.links
            if not any(link == real or link.startswith(real + os.sep) for real in real_roots)
        ]
        for path in list(self._watches):
            watch, known = self._watches[path]
            if path not in wanted or identity(path) != known:
                self._unschedule(watch)
                del self._watches[path]
        added = False
        for path in wanted:
            if path not in self._watches:
                try:
                    watch = self._observer.schedule(_EventFilter(self._hint), path, recursive=True)
                except OSError:
                    continue  # gone again already; the health check will retry
                self._watches[path] = (watch, identity(path))
                added = True
        return added

    def unwatched(self, plan: WatchPlan) -> tuple[list[str], list[str]]:
        # A watch does not hear a write to a SKILL.md under another name (a link).
        return [], sorted(plan.linked_files)

    def roots_moved(self, roots: Sequence[str]) -> bool:
        for root in roots:
            watched = self._watches.get(root)
            if identity(root) != (watched[1] if watched else None):
                return True
        return False

    def _unschedule(self, watch: ObservedWatch) -> None:
        # KeyError, OSError: its directory is gone, and the emitter with it.
        with contextlib.suppress(KeyError, OSError):
            self._observer.unschedule(watch)


def choose_backend(requested: str = "auto") -> WatcherChoice:
    """The backend `requested` ("auto", "inotify", "watchdog" or "poll") resolves to,
    before any is started."""
    if requested == "auto":
        if inotify_available():
            return WatcherChoice(
                Backend.INOTIFY, "Linux inotify: one watch per directory the skill walk lists"
            )
        return WatcherChoice(Backend.WATCHDOG, "no inotify here: watchdog's native recursive watch")
    backend = Backend(requested)
    return WatcherChoice(backend, f"{backend.value}, as asked")


def start_watcher(
    choice: WatcherChoice, hint: Hint, *, max_watches: int | None = None
) -> tuple[Watcher, WatcherChoice]:
    """The chosen backend, started; inotify that the OS refuses falls back to polling,
    and the choice returned says so."""
    if choice.backend is Backend.INOTIFY:
        watch = InotifyWatch(hint, max_watches=max_watches)
        try:
            watch.start()
        except OSError as error:
            poll = PollWatcher()
            poll.notes.append(
                f"inotify unavailable ({error}); polling by stat. If the limit is "
                "fs.inotify.max_user_instances, raise it with: "
                "sudo sysctl fs.inotify.max_user_instances=1024"
            )
            return poll, WatcherChoice(Backend.POLL, f"inotify unavailable ({error})")
        return watch, choice
    started: Watcher = (
        WatchdogWatcher(hint) if choice.backend is Backend.WATCHDOG else PollWatcher()
    )
    started.start()
    return started, choice
