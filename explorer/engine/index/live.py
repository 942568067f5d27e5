"""The live index: watch skill roots, re-index on change, never serve a half-built state.

Watcher events (watchers.py) are only hints. A burst of them (an editor's atomic save, a
`git checkout`) is coalesced into one re-index. The re-index works from the disk, not
from the events, so whatever the events were, the snapshot ends equal to what is on disk.
When only SKILL.md files changed, just those files are re-read; a directory event, a
root that vanished or a symlink change triggers a full walk. Unchanged files are never
re-parsed and unchanged descriptions are never re-embedded (content hashes decide).
Each re-index builds a new immutable Index and swaps it in with one assignment, so a
reader always holds one consistent snapshot.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from explorer.engine.base.config import Config
from explorer.engine.discovery.bodies import body_on_disk
from explorer.engine.discovery.skills import (
    RACY_NS,
    Discovery,
    Problem,
    Skill,
    assemble,
    find_skill_files,
    load_skill,
    load_skills,
    path_order,
)
from explorer.engine.index.incremental import patch_index
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.index.watchers import (
    Watcher,
    WatcherChoice,
    WatchPlan,
    choose_backend,
    start_watcher,
)
from explorer.engine.inference.cache import CachedSkills, EmbeddingCache, Progress
from explorer.engine.inference.models import Models

HEALTH_CHECK_S = 0.25  # how often roots are checked for deletion and re-creation
StatRow = tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode


def _stat_row(info: os.stat_result) -> StatRow:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


def poll_interval(paths: int) -> float:
    """Seconds between stat polls of what inotify cannot watch: about 2 % of a CPU."""
    return max(1.0, paths * 4e-5)


@dataclass(frozen=True)
class IndexChange:
    """What one re-index changed, for subscribers (the explorer, `watch`, tests)."""

    version: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    errors: tuple[Problem, ...]  # the files rejected, with paths
    full: bool  # a full walk, or only the touched SKILL.md files
    timings_ms: dict[str, float] = field(default_factory=dict)  # parse, embed, total

    @property
    def summary(self) -> str:
        return (
            f"v{self.version} +{len(self.added)} -{len(self.removed)} ~{len(self.changed)} "
            f"errors {len(self.errors)} {self.timings_ms.get('total', 0.0):.1f} ms"
        )


Subscriber = Callable[[IndexChange], object]  # what it returns is ignored


class _Memo:
    """A SkillMemo over the previous snapshot, backed by the persistent parse cache."""

    def __init__(self, by_path: dict[str, Skill | Problem], cache: EmbeddingCache | None):
        self._by_path = by_path
        self._cached = CachedSkills(cache) if cache is not None else None

    def prepare(self, paths: Sequence[str]) -> None:
        if self._cached is not None:
            self._cached.prepare([path for path in paths if path not in self._by_path])

    def recall_unchanged(self, path: str, stamp: str) -> Skill | None:
        return self._cached.recall_unchanged(path, stamp) if self._cached is not None else None

    def recall(self, path: str, digest: str, stamp: str | None) -> Skill | None:
        known = self._by_path.get(path)
        if isinstance(known, Skill) and known.hash == digest:
            return known
        return self._cached.recall(path, digest, stamp) if self._cached is not None else None

    def remember(self, skill: Skill, stamp: str | None) -> None:
        if self._cached is not None:
            self._cached.remember(skill, stamp)

    def flush(self) -> None:
        if self._cached is not None:
            self._cached.flush()


class LiveIndex:
    """An Index that follows the disk. Read `snapshot`; subscribe to hear of changes."""

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]],
        config: Config,
        models: Models,
        cache: EmbeddingCache | None = None,
        *,
        backend: str = "auto",
        max_watches: int | None = None,
        progress: Progress | None = None,
        seed: Index | None = None,
    ) -> None:
        """`backend`: "auto" (inotify on Linux, else watchdog), "inotify", "watchdog" or
        "poll"; `max_watches` caps inotify watches (tests simulate the OS limit with it).
        `progress(done, total)` hears the embedding of every build that computes vectors
        (a cold first build: 26,000 descriptions), from the building thread, after each
        chunk; it must return at once (the explorer posts a message).
        `seed`: an index of the same roots still in memory (the explorer's first,
        lexical-only one): the first build takes each of its skills whose file still has
        the content hash it was parsed from, instead of a second copy of every skill."""
        self.progress = progress
        self.roots = tuple(os.path.abspath(os.fspath(root)) for root in roots)
        self.config, self.models, self.cache = config, models, cache
        self.debounce_s = config.watch_debounce_ms / 1000
        self.max_delay_s = config.watch_max_delay_ms / 1000
        self._subscribers: list[Subscriber] = []
        self._work: queue.Queue[str | None] = queue.Queue()
        self._build_lock = threading.Lock()
        self._version_changed = threading.Condition()
        self._by_path: dict[str, Skill | Problem] = (
            {skill.path: skill for skill in seed.skills} if seed is not None else {}
        )
        self._order: list[str] | None = None  # the keys of _by_path in path order
        self._problems: tuple[Problem, ...] = ()
        self._links: tuple[str, ...] = ()
        # Which watcher runs and why (`watch`, the status bar); `start` may fall back.
        self.watcher_choice: WatcherChoice = choose_backend(backend)
        self.backend = self.watcher_choice.backend.value
        self._max_watches = max_watches
        self.watcher: Watcher | None = None  # from `start` on
        self._dir_stats: dict[str, StatRow] = {}  # every directory the last walk listed
        self._file_stats: dict[str, StatRow] = {}  # every SKILL.md, as last read
        # SKILL.md files that are symlinks or have other hard links: written under a name
        # no directory watch covers, so each is watched itself (watcher.FILE_MASK).
        self._linked_files: set[str] = set()
        self._next_poll = 0.0
        self._last_reindex_end = 0.0
        self.notes: list[str] = []  # for people: watch limits, fallbacks (status bar, `watch`)
        self.overflows = 0
        self.rescans = 0
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.reindex_count = 0
        # From the first event of a burst to the swap: a caller's background work can
        # give way meanwhile (the explorer's lint, so that a save reaches the screen).
        self.changing = False
        self.failures: list[str] = []  # the last few errors the watcher thread survived
        self._failure_listeners: list[Callable[[str], object]] = []
        first = self._build(full=True, touched=(), version=1)
        assert first is not None  # only a walk that may keep the snapshot returns None
        self.snapshot: Index = first[0]

    # -- reading and subscribing ---------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber` (from the watcher's thread) after every re-index."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def on_failure(self, listener: Callable[[str], object]) -> Callable[[], None]:
        """Call `listener(message)` (from the watcher's thread) for each error it survives.

        A listener must not block: the watcher waits for it. A front end posts a message
        and returns.
        """
        self._failure_listeners.append(listener)
        return lambda: self._failure_listeners.remove(listener)

    def _failed(self, message: str) -> None:
        self.failures.append(message)
        del self.failures[:-20]
        for listener in list(self._failure_listeners):
            try:
                listener(message)
            except Exception:  # a broken listener must not stop the watcher either
                continue

    def wait_for(self, predicate: Callable[[Index], bool], timeout: float) -> bool:
        """Block until the snapshot satisfies `predicate`, or the timeout passes."""
        deadline = time.monotonic() + timeout
        with self._version_changed:
            while not predicate(self.snapshot):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._version_changed.wait(remaining)
        return True

    # -- running -------------------------------------------------------------------------

    def start(self) -> LiveIndex:
        self.watcher, self.watcher_choice = start_watcher(
            self.watcher_choice, self._hint, max_watches=self._max_watches
        )
        self.backend = self.watcher_choice.backend.value
        self._sync_watches()
        self._work.put(None)  # catch up with anything that changed since the first build
        self._thread = threading.Thread(target=self._loop, name="live-index", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._work.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.watcher is not None:
            self.watcher.stop()

    def __enter__(self) -> LiveIndex:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def reindex_now(self) -> IndexChange:
        """A full re-index, right now, in the caller's thread ("re-index now" in the UI):
        a new snapshot, and a change for every subscriber, even when nothing changed."""
        change = self._reindex(full=True, touched=())
        assert change is not None
        return change

    # -- the coalescing loop -------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                first = self._work.get(timeout=HEALTH_CHECK_S)
            except queue.Empty:
                if self._roots_moved() or self._poll_found_change():
                    self._work.put(None)
                continue
            if self._stopping.is_set():
                return
            self.changing = True
            try:
                touched, full = self._collect(first)
                # A walk of the watcher's own (start's catch-up, a lost event, a root
                # moved) that finds the library as served keeps the snapshot: at 26,000
                # skills a new one re-decided the prompt and re-ran lint for nothing, and
                # a keystroke's decision in flight was thrown away for it (about 1 s).
                full = self._roots_moved() or full
                self._reindex(full=full, touched=touched, keep_unchanged=full)
            except Exception as error:  # keep watching: the next event retries from disk
                self._failed(f"re-index failed: {type(error).__name__}: {error}")
            finally:
                self.changing = False
            self._last_reindex_end = time.monotonic()

    def _collect(self, first: str | None) -> tuple[set[str], bool]:
        """Drain the burst: wait until `debounce` passes with no event, at most `max_delay`.

        Inside a storm (the last re-index ended less than `max_delay` ago), the quiet time
        is `max_delay` too: a writer that stalls for more than 25 ms on a busy machine
        must not turn one burst into a re-index per stall.
        """
        touched: set[str] = set()
        full = first is None
        if first is not None:
            touched.add(first)
        started = time.monotonic()
        in_storm = started - self._last_reindex_end < self.max_delay_s
        debounce = self.max_delay_s if in_storm else self.debounce_s
        quiet_until = started + debounce
        while True:
            now = time.monotonic()
            wait = min(quiet_until, started + self.max_delay_s) - now
            if wait <= 0:
                return touched, full
            try:
                item = self._work.get(timeout=wait)
            except queue.Empty:
                return touched, full
            if item is None:
                full = True
            else:
                touched.add(item)
            quiet_until = time.monotonic() + debounce

    def _reindex(
        self, *, full: bool, touched: Iterable[str], keep_unchanged: bool = False
    ) -> IndexChange | None:
        """Build and swap in a new snapshot, then tell the subscribers; None (nothing
        swapped, nobody told) when `keep_unchanged` and a full walk found the library as
        the snapshot serves it."""
        with self._build_lock:
            if full:
                self._sync_watches()  # watch first, then walk: nothing slips between
            built = self._build(
                full=full,
                touched=touched,
                version=self.snapshot.version + 1,
                keep_unchanged=keep_unchanged,
            )
            if full and self._sync_watches():
                self._work.put(None)  # a newly linked directory: walk it once it is watched
            if built is None:
                with self._version_changed:
                    self._version_changed.notify_all()  # a walk ended: `wait_for` looks again
                return None
            index, change = built
            with self._version_changed:
                self.snapshot = index  # the swap: one reference assignment
                self.reindex_count += 1
                self._version_changed.notify_all()
        for subscriber in list(self._subscribers):
            try:
                subscriber(change)
            except Exception as error:  # one broken subscriber must not stop the others
                self._failed(f"subscriber failed: {type(error).__name__}: {error}")
        return change

    # -- building ------------------------------------------------------------------------

    def _build(
        self, *, full: bool, touched: Iterable[str], version: int, keep_unchanged: bool = False
    ) -> tuple[Index, IndexChange] | None:
        started = time.perf_counter()
        previous: Index | None = getattr(self, "snapshot", None)
        touched_paths = list(touched)
        memo = _Memo(self._by_path, self.cache)
        if full or previous is None:
            listed = self._problems, self._links
            results = self._scan_by_stat(memo)
            if keep_unchanged and previous is not None and self._as_served(results, listed):
                memo.flush()
                return None
        else:
            results = dict(self._by_path)
            for path in touched_paths:
                if os.path.isfile(path):
                    self._record_stat(path)
                    results[path] = load_skill(path, memo)
                else:
                    results.pop(path, None)
                    self._file_stats.pop(path, None)
        memo.flush()
        in_place = None
        if not full and previous is not None:
            in_place = self._edited_in_place(previous, results, touched_paths)
        if in_place is not None:
            found, positions = in_place
        else:
            found, positions = self._assemble(results, full, touched_paths), None
        parsed = time.perf_counter()
        patched = (
            patch_index(
                previous,
                found,
                self.config,
                self.models,
                self.cache,
                version=version,
                changed=positions,
            )
            if previous is not None
            else None
        )
        index = patched or index_skills(
            found,
            self.roots,
            self.config,
            self.models,
            self.cache,
            version=version,
            previous=previous,
            progress=self.progress,
        )
        index.timings_ms.update(
            parse=(parsed - started) * 1000, total=(time.perf_counter() - started) * 1000
        )
        return index, _diff(previous, index, full)

    def _assemble(
        self, results: dict[str, Skill | Problem], full: bool, touched_paths: list[str]
    ) -> Discovery:
        """The library from every path's result, de-duplicated."""
        # Bodies stay on disk (bodies.py): the live index holds every other field.
        results = {
            path: body_on_disk(result) if isinstance(result, Skill) else result
            for path, result in results.items()
        }
        self._by_path = results
        if self._order is None or len(self._order) != len(results) or full:
            self._order = sorted(results, key=path_order)
        elif any(path not in results for path in touched_paths):
            self._order = sorted(results, key=path_order)  # a path came or went
        return assemble(results, self._problems, self._links, order=self._order)

    def _edited_in_place(
        self, previous: Index, results: dict[str, Skill | Problem], touched: list[str]
    ) -> tuple[Discovery, list[int]] | None:
        """A save that edited skills in place, the common case: each touched path held a
        skill the index serves and holds a valid one with the same id now. The library is
        the previous one with those skills replaced, at the positions returned, with no
        pass over every path (at 26,000 skills the passes of `_assemble` cost ~0.3 s a
        save). None when anything else happened: `_assemble` decides then."""
        skills = list(previous.skills)
        positions: list[int] = []
        for path in dict.fromkeys(touched):
            old, new = self._by_path.get(path), results.get(path)
            if not (isinstance(old, Skill) and isinstance(new, Skill)):
                return None
            at = previous.positions.get(old.id)
            if new.id != old.id or at is None or skills[at] is not old:
                return None
            skills[at] = results[path] = body_on_disk(new)
            positions.append(at)
        self._by_path = results
        return Discovery(tuple(skills), previous.rejected, self._links), sorted(positions)

    def _as_served(
        self,
        results: dict[str, Skill | Problem],
        listed: tuple[tuple[Problem, ...], tuple[str, ...]],
    ) -> bool:
        """Whether a walk's `results` are what the snapshot was built from: the same paths,
        each holding the very skill object served (its stat did not move, or its bytes
        hash the same) or the same problem, and the walk listed the same problems and
        links (`listed`: the previous walk's)."""
        if (self._problems, self._links) != listed:
            return False
        served = self._by_path
        return results.keys() == served.keys() and all(
            result is served[path] or (isinstance(result, Problem) and result == served[path])
            for path, result in results.items()
        )

    def _scan_by_stat(self, memo: _Memo) -> dict[str, Skill | Problem]:
        """A full walk in which a file whose stat did not move is not read again.

        This is the answer to a lost event (queue overflow, a watch the OS refused): at
        26,000 skills it costs a directory walk and a stat per file, not 26,000 reads.
        """
        visited: list[tuple[str, os.stat_result]] = []
        linked: list[str] = []
        paths, problems = find_skill_files(self.roots, linked, visited)
        self._problems, self._links = tuple(problems), tuple(dict.fromkeys(linked))
        self._dir_stats = {path: _stat_row(info) for path, info in visited}
        fresh_after = time.time_ns() - RACY_NS
        results: dict[str, Skill | Problem] = {}
        to_read: list[str] = []
        stats: dict[str, StatRow] = {}
        linked_files: set[str] = set()
        for path in paths:
            try:
                info = os.stat(path)
            except OSError:
                to_read.append(path)
                continue
            row = stats[path] = _stat_row(info)
            if info.st_nlink > 1 or os.path.islink(path):
                linked_files.add(path)
            known = self._by_path.get(path)
            if known is not None and self._file_stats.get(path) == row and row[0] < fresh_after:
                results[path] = known
            else:
                to_read.append(path)
        results.update(load_skills(to_read, memo, keep=body_on_disk))
        self._file_stats = stats
        self._linked_files = linked_files
        self.rescans += 1
        return dict(sorted(results.items()))

    def _record_stat(self, path: str) -> None:
        try:
            self._file_stats[path] = _stat_row(os.stat(path))
        except OSError:
            self._file_stats.pop(path, None)

    def _hint(self, path: str | None) -> None:
        """From the watcher's thread: a SKILL.md that changed, or None for a full re-scan."""
        if path is None and self.watcher is not None:
            self.overflows = self.watcher.overflows
        self._work.put(path)

    def _unwatched(self) -> tuple[list[str], list[str]]:
        """Directories and SKILL.md files no watch covers (all of them when polling)."""
        if self.watcher is None:
            return [], []
        return self.watcher.unwatched(self._watch_plan())

    def _poll_found_change(self) -> bool:
        """Polling fallback: has any unwatched directory or file changed its stat?"""
        now = time.monotonic()
        if now < self._next_poll:
            return False
        dirs, files = self._unwatched()
        self._next_poll = now + poll_interval(len(dirs) + len(files))
        for table, paths in ((self._dir_stats, dirs), (self._file_stats, files)):
            for path in paths:
                try:
                    row = _stat_row(os.stat(path))
                except OSError:
                    return True
                if row != table.get(path):
                    return True
        return False

    # -- watches -------------------------------------------------------------------------

    def _watch_plan(self) -> WatchPlan:
        return WatchPlan(
            self.roots, self._dir_stats, self._file_stats, self._links, self._linked_files
        )

    def _sync_watches(self) -> bool:
        """Watch what the last walk listed; returns whether a new watch was added."""
        if self.watcher is None:
            return False
        added = self.watcher.sync(self._watch_plan())
        for note in self.watcher.notes:
            if note not in self.notes:
                self.notes.append(note)
        return added

    def _roots_moved(self) -> bool:
        """A root deleted, re-created or replaced: re-watch it and walk again."""
        return self.watcher is not None and self.watcher.roots_moved(self.roots)


def _diff(previous: Index | None, index: Index, full: bool) -> IndexChange:
    if previous is not None and previous.ids == index.ids:
        # The same skills in the same places (a save): only objects that were replaced
        # can differ, so the comparison skips the rest instead of two dicts of all.
        pairs = zip(previous.skills, index.skills, strict=True)
        replaced = [(old, new) for old, new in pairs if old is not new]
        before = {old.id: old for old, _ in replaced}
        after = {new.id: new for _, new in replaced}
    else:
        before = {skill.id: skill for skill in previous.skills} if previous else {}
        after = {skill.id: skill for skill in index.skills}
    changed = tuple(
        skill_id
        for skill_id, skill in after.items()
        if skill_id in before
        and (before[skill_id].hash != skill.hash or before[skill_id].path != skill.path)
    )
    return IndexChange(
        version=index.version,
        added=tuple(skill_id for skill_id in after if skill_id not in before),
        removed=tuple(skill_id for skill_id in before if skill_id not in after),
        changed=changed,
        errors=index.rejected,
        full=full,
        timings_ms={
            key: index.timings_ms[key]
            for key in ("parse", "embed", "total")
            if key in index.timings_ms
        },
    )
