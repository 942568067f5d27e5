"""The explorer's background work, each run in a worker thread by the app (explorer/tui/app.py).

Loading the library and its models, lint and the cases, the telemetry replay, one decision
and one ranking diff. None of them touches a widget: each hands its result to the UI
thread (call_from_thread, or a message when the UI must never be waited for), and a result
a newer run has made obsolete (its worker cancelled) is dropped, never shown.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from textual.worker import Worker, get_current_worker

from explorer.engine import (
    Config,
    Decision,
    Index,
    LiveIndex,
    decide,
    evaluate,
    open_engine,
    open_library,
)
from explorer.engine.author import lint_files, ranking_diff
from explorer.engine.base import (
    full_collections_deferred,
    give_back,
    hand_back_large_blocks,
    yielding,
)
from explorer.engine.host import pipeline_decider, read_events, replay_sessions, usage_report
from explorer.engine.index import Engine, open_cache
from explorer.engine.inference import assemble_models, sentence_attribution
from explorer.engine.qa import (
    CaseError,
    Comparison,
    EvalReport,
    FlipCause,
    compare,
    flip_causes,
    load_cases,
)
from explorer.engine.route import Session
from explorer.terminal import visible
from explorer.tui.compare import DEPTH
from explorer.tui.health import kept_finding, lint_errors
from explorer.tui.messages import EmbeddingProgress, IndexChanged, LiveReady, WatcherFailed
from explorer.tui.state import SnapshotFacts
from explorer.tui.strips import release_divided_strips

if TYPE_CHECKING:
    from explorer.tui.app import ExplorerApp
    from explorer.tui.screens.main import MainScreen


T = TypeVar("T")


class Handoff(Generic[T]):
    """A value a worker is started with, taken once by the task it runs.

    Textual keeps a worker's arguments for as long as the worker object lives, and a
    worker lives on after it ends, in a cycle with its context that only the collector
    frees; one that was running when the explorer froze the collector's generations
    (`MainScreen._drop_loading_snapshot`) is never freed. A snapshot in its arguments
    would stay for the whole session, and every save would make more of it that
    snapshot's own (the vector blocks and tables a later snapshot no longer shares).
    Taken, the snapshot lives only as long as the task's call."""

    __slots__ = ("_box",)

    def __init__(self, value: T) -> None:
        self._box = [value]

    def take(self) -> T:
        return self._box.pop()  # a second take is an IndexError


@dataclass
class Quality:
    """One run of lint and the cases, as the main screen shows it."""

    findings: dict[str, tuple[str, ...]]  # tuples: the collector stops tracking them
    run: tuple[Index, Config]  # the snapshot and config it ran on
    report: EvalReport | None = None
    problem: str | None = None  # the cases file could not be read
    comparison: Comparison | None = None  # against the run before
    causes: dict[str, FlipCause] = field(default_factory=dict)  # flipped prompt -> its cause
    lint_errors: int = 0  # among the findings: the status bar's count (F3 lists them)


class _Cancelled(Exception):
    """A background run stops between two steps: a newer snapshot waits for the replay,
    or the explorer is closing and would otherwise wait for the run to end."""


Start = Callable[[Handoff[Index], Config], "Worker[None] | None"]


class InTurn:
    """Background runs one at a time per group (lint and the cases; the history replay):
    a run asked for while one runs waits, and only the newest snapshot waits.

    A thread worker cannot be stopped once started. Cancelled runs went on to their end,
    each holding its snapshot: at 26,000 skills a lint takes ~40 s of CPU, and an author
    saving every few seconds had several of them beside each other, growing memory with
    every save and taking the cores the event loop needs for keystrokes."""

    def __init__(self, starts: Mapping[str, Start]) -> None:
        self._starts = dict(starts)
        self._running: dict[str, Worker[None]] = {}
        self._waiting: dict[str, tuple[Index, Config]] = {}

    def run(self, group: str, snapshot: Index, config: Config) -> None:
        """Start the group's run on this snapshot now, or when the one running ends."""
        running = self._running.get(group)
        if running is not None and not running.is_finished:
            self._waiting[group] = (snapshot, config)  # a replay sees it and stops early
            return
        self._waiting.pop(group, None)
        worker = self._starts[group](Handoff(snapshot), config)
        if isinstance(worker, Worker):
            self._running[group] = worker

    def finished(self, worker: Worker[object], *, start_next: bool = True) -> bool:
        """A worker ended (any state): the newest waiting run of its group starts. True
        when it was the last background run and none waits."""
        ended = False
        for group, running in list(self._running.items()):
            if running is worker and worker.is_finished:
                ended = True
                del self._running[group]
                waiting = self._waiting.pop(group, None)
                if waiting is not None and start_next:
                    self.run(group, *waiting)
        return ended and not self.busy

    def waits(self, group: str) -> bool:
        """Whether a newer snapshot waits for the group's run (read from its thread)."""
        return group in self._waiting

    @property
    def busy(self) -> bool:
        """Whether a run is going on or waiting, in any group."""
        return bool(self._waiting) or any(not w.is_finished for w in self._running.values())


class LoopBeat:
    """Background work gives way while the event loop is late.

    A lint of 26,000 skills is a long Python loop on a worker thread; Python hands the
    GIL over only every switch interval, so the event loop got about half of it while a
    lint ran, and a repaint of 30 ms of work took 60 or more. While a background run goes
    on (`wanted`), the loop marks a beat every `PERIOD`; the worker's checkpoints
    (engine/base/turns.py) call `pause`, which sleeps while the last beat is older than
    `STALE`: the loop is busy (a repaint, a keystroke) or waits for the GIL, and gets it.
    It sleeps as well while a keystroke's decision is made (`foreground`) and while the
    live index turns a save into a snapshot (`urgent`): each runs on a thread of its
    own, which the loop's beat cannot see, and shared the GIL with lint half and half.
    Each pause is capped at `LONGEST`, so a worker still moves on while the loop is busy
    for long; no beat runs while nothing runs in the background (an idle explorer is
    never woken), and a pause without a beat returns at once."""

    PERIOD = 0.005
    STALE = 0.02  # a beat of an idle loop is ~5 ms old, one more switch interval at most
    STEP = 0.002
    LONGEST = 0.25

    def __init__(self, wanted: Callable[[], bool], urgent: Callable[[], bool]) -> None:
        self._wanted = wanted
        self._urgent = urgent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last = 0.0
        self._foreground = 0  # decisions being made for the screen (threads)
        self._lock = threading.Lock()
        self.running = False
        self.pauses = 0  # pauses that slept, for tests and the bench

    def start(self) -> None:
        """Beat from now until nothing is wanted (on the event loop's thread)."""
        if self.running:
            return
        self._loop = asyncio.get_running_loop()
        self.running = True
        self._beat()

    def stop(self) -> None:
        self.running = False

    def _beat(self) -> None:
        self._last = time.monotonic()
        if not self.running or not self._wanted():
            self.running = False
            return
        assert self._loop is not None
        self._loop.call_later(self.PERIOD, self._beat)

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """Within the block (on any thread), background work gives way as to a late loop."""
        with self._lock:
            self._foreground += 1
        try:
            yield
        finally:
            with self._lock:
                self._foreground -= 1

    def late(self) -> bool:
        """Whether the loop missed its beat (it is busy, or waits for the GIL), or work
        for the screen runs on another thread."""
        return self.running and (
            self._foreground > 0 or self._urgent() or time.monotonic() - self._last > self.STALE
        )

    def pause(self) -> None:
        """From a worker: sleep (the GIL released) while the loop is late, up to LONGEST."""
        if not self.late():
            return
        self.pauses += 1
        until = time.monotonic() + self.LONGEST
        while self.late() and time.monotonic() < until:
            time.sleep(self.STEP)


class IdleCollections:
    """Full collections when no key waits, instead of whenever an allocation trips them.

    While the explorer is open the collector's full collections are off (the threshold of
    `full_collections_deferred`), and this makes them at moments of its choosing. Left
    to Python, a full collection starts in whichever allocation crosses the threshold,
    usually a repaint's on the event loop: at 2,289 skills they came every few seconds
    while a prompt was typed, 27-94 ms each, the longest stalls of the loop after the
    first lint. Here one runs, on the loop, once `DUE` younger collections have passed
    since the last (Python's own default threshold) and then only when no key has come
    for `QUIET` seconds, or, so that typing without a pause cannot keep garbage for
    good, once `OVERDUE` have passed; never while a background run goes on (those defer
    them anyway, and one runs when the last of them ends: `after_background`). Until the
    freeze, only once overdue: a full collection then walks every object of the library
    being loaded, twice over while the live index is built beside the lexical copy (at
    26,000 skills, five of them during the load took 55-143 ms each on the event loop).

    Once, the explorer also freezes what lives as long as the app (`freeze_when_quiet`),
    so that no later full collection walks the library. The freeze too waits for a quiet
    moment, `LATEST` seconds at most; at 26,000 skills, typed through, that moment falls
    among the keys of the first lint."""

    PERIOD = 0.5  # seconds between two looks
    QUIET = 1.0  # seconds since the last key
    DUE = 10  # collections of the middle generation since the last full one
    OVERDUE = 100
    LATEST = 30.0  # seconds a freeze waits for a quiet moment, at most

    def __init__(self, busy: Callable[[], bool]) -> None:
        self._busy = busy
        self._last_key = time.monotonic()
        self._deferral = ExitStack()
        self._freeze: tuple[float, Callable[[], None]] | None = None  # (latest, then)
        self.collections = 0  # full collections made here, for the tests
        self.frozen = False

    def start(self, app: ExplorerApp) -> None:
        """From the app's mount: full collections are this object's until `stop`, and the
        lines of each repaint do not wait for one (strips.py)."""
        release_divided_strips()
        self._deferral.enter_context(full_collections_deferred())
        app.set_interval(self.PERIOD, self.look)

    def stop(self) -> None:
        self._deferral.close()

    def key(self) -> None:
        self._last_key = time.monotonic()

    def freeze_when_quiet(self, then: Callable[[], None]) -> None:
        """Once, at the next quiet moment: the young generations collected, then every
        object left leaves the collector's generations (gc.freeze), then `then`.

        Not a full collection first: it walks the whole library (83-137 ms at 26,000
        skills, on the event loop), and what it would free there is small. Measured at the
        freeze, at 2,289 and 26,000 skills: 1,400-1,900 objects of about 0.1 MB, Textual's
        line caches and a few finished workers (their snapshots already handed off,
        `Handoff`), which stay frozen. A frozen object is never collected, so nothing
        that holds a snapshot may be garbage in a cycle by then: the loading snapshot
        goes by reference counting when it is dropped (a test holds it)."""
        if not self.frozen:
            self._freeze = (time.monotonic() + self.LATEST, then)

    def _quiet(self) -> bool:
        return time.monotonic() - self._last_key >= self.QUIET

    def due(self) -> bool:
        pending = gc.get_count()[2]
        return (
            pending >= self.OVERDUE or (pending >= self.DUE and self._quiet() and self.frozen)
        ) and not self._busy()

    def look(self) -> None:
        """On the event loop's thread, every PERIOD."""
        if self._freeze is not None:
            latest, then = self._freeze
            if self._quiet() or time.monotonic() >= latest:
                self._freeze, self.frozen = None, True
                gc.collect(1)
                gc.freeze()
                self.collections += 1
                then()
            return  # before the freeze, a full collection would walk the whole library
        if self.due():
            gc.collect()
            self.collections += 1

    def after_background(self) -> None:
        """The last background run ended: what it left for the collector (finished
        workers; at 26,000 skills 12-22 ms over a soak of 100 saves: docs/benchmarks.md,
        "Lines that hold themselves"), unless the freeze's collection, which waits for a
        quiet moment, is still to come."""
        if self._freeze is None:
            gc.collect()
            self.collections += 1


def load_library(app: ExplorerApp) -> None:
    """Lexical first (BM25 works at once), then the models, then the live index."""
    options, state = app.options, app.state
    hand_back_large_blocks()  # open for hours: freed arrays leave the process (memory.py)
    cache = open_cache(state.config, options.cache_dir)
    lexical_only = assemble_models(None, dense_error="loading the dense model…")
    # Bodies on disk, as the live index holds them: the live index's first build, beside
    # it, then takes these very skills (its seed) instead of a second copy of each.
    first = open_library(
        options.roots, state.config, engine=Engine(cache, lexical_only), bodies_on_disk=True
    )
    app.call_from_thread(
        app.use_snapshot,
        first,
        "loading the dense model…",
        provisional=True,
        facts=SnapshotFacts.of(first),
    )
    engine = open_engine(state.config, cache=cache)
    for warning in engine.warnings:
        app.call_from_thread(
            app.notify, visible(warning), severity="warning", timeout=10, markup=False
        )
    app.call_from_thread(app.set_loading, f"reading {len(first):,} skills' vectors…")
    # The embedding loop reports each chunk from this thread; a message keeps it from
    # ever waiting for the UI (post_message is thread-safe).
    live = LiveIndex(
        options.roots,
        state.config,
        engine.models,
        cache,
        progress=lambda done, total: app.post_message(EmbeddingProgress(done, total)),
        seed=first,
    )
    # The watcher's thread only posts: it never waits for the UI to handle a change. It
    # reads what the UI needs from every skill first, so the event loop does not.
    live.subscribe(
        lambda change: app.post_message(IndexChanged(change, SnapshotFacts.of(live.snapshot)))
    )
    live.on_failure(lambda message: app.post_message(WatcherFailed(message)))
    live.start()
    give_back()  # what the first build decoded and dropped goes back (engine/base/memory.py)
    # Set here, once, before LiveReady: a change the watcher posts before LiveReady is
    # handled finds the live index it came from.
    state.live = live
    # live.snapshot is read on the UI thread: the watcher's first re-index may already
    # have been handled there, and a snapshot read here would then replace it with an
    # older one. A message, so it comes after the embedding's progress messages.
    app.post_message(LiveReady(SnapshotFacts.of(live.snapshot)))


def lint_and_cases(app: ExplorerApp, snapshot: Index, config: Config) -> None:
    """Lint findings per file, and the cases file run through decide(): compared with the
    run before, each flipped case with its cause (re-decided on both runs' snapshots).
    One run at a time (`InTurn`): lint's memo is this run's alone while it runs."""
    options, state = app.options, app.state
    previous, previous_run = state.cases_report, state.cases_run
    shown = state.findings  # the run before's: what a file still has keeps its strings
    findings: dict[str, tuple[str, ...]] = {}
    worker = get_current_worker()
    linted = False

    def give_way() -> None:
        # Textual cancels its workers as the explorer closes, and the app's exit waits for
        # a thread to end: at 26,000 skills this run would hold a quit up for half a minute.
        # Once lint is done (its memo must see a whole run), a run for a newer snapshot or
        # config that waits (`InTurn`) stops the cases: their answer would be replaced as
        # it is shown (an F2 value typed digit by digit asks for a run at each).
        if worker.is_cancelled or (linted and app.turns.waits("quality")):
            raise _Cancelled
        app.beat.pause()

    # Lint's and the cases' loops give way to the screen, and the objects they hold while
    # they run are never walked by a full collection on the screen's thread (memory.py).
    try:
        with yielding(give_way), full_collections_deferred():
            files = lint_files(options.roots, index=snapshot, config=config, memo=state.lint_memo)
            # A file at a time: its strings are made, compared with the ones on screen
            # and, where equal (most files, at every save), dropped at once for those,
            # rather than a second copy of every string kept to the end of the run (47 MB
            # at 26,000 skills, beside lint's own working set).
            for path, found in files:
                lines = tuple(kept_finding(f.severity, f.rule, f.message, f.line) for f in found)
                earlier = shown.get(path)
                findings[path] = earlier if earlier == lines else lines
            linted = True
            # Counted here, off the event loop: 170,000 findings at 26,000 skills take
            # tens of milliseconds to walk.
            quality = Quality(findings, (snapshot, config), lint_errors=lint_errors(findings))
            if options.cases_file:
                try:
                    cases = load_cases(options.cases_file, skill=options.cases_skill).cases
                    # Its cross-encoder remembers the pairs the runs before scored.
                    remembering = dataclasses.replace(
                        snapshot, models=state.logits.models(snapshot.models)
                    )
                    quality.report = evaluate(cases, remembering, config, cwd=options.cwd)
                except CaseError as error:
                    quality.problem = str(error)
            if quality.report is not None and previous is not None and previous_run is not None:
                quality.comparison = compare(previous, quality.report)
                if quality.comparison.flipped:
                    quality.causes = flip_causes(
                        previous, quality.report, previous_run, quality.run, cwd=options.cwd
                    )
    except _Cancelled:
        return
    give_back()  # lint's transient tables, back to the system (engine/base/memory.py)
    if not worker.is_cancelled:
        app.call_from_thread(app.on_main, lambda: app.main.show_quality(quality))


def replay_history(app: ExplorerApp, snapshot: Index, config: Config) -> None:
    """Re-read the telemetry log and decide its prompts again; it stops between two prompts
    when a newer snapshot waits for it (`InTurn`)."""
    log = app.options.history_log
    if not log:
        return
    worker = get_current_worker()
    try:
        read = read_events([Path(log)])
    except OSError as error:
        message = f"{log}: {error}"
        app.call_from_thread(app.on_main, lambda: app.main.show_history(None, None, message))
        return
    decide_turn = pipeline_decider(snapshot, config)

    def decide_unless_cancelled(
        prompt: str, context: tuple[str, ...], ledger: Session
    ) -> Sequence[tuple[str, float]]:
        if worker.is_cancelled or app.turns.waits("history"):
            raise _Cancelled
        app.beat.pause()
        return decide_turn(prompt, context, ledger)

    report = usage_report(read.events)
    try:
        result = replay_sessions(read.events, decide_unless_cancelled, config.context_depth)
    except _Cancelled:
        return
    if not worker.is_cancelled:
        app.call_from_thread(app.on_main, lambda: app.main.show_history(report, result, None))


def attribute_sentences(screen: MainScreen, snapshot: Index, prompt: str, skill_id: str) -> None:
    """The Skill tab's reranker attribution: one cross-encoder pair per sentence."""
    skill = snapshot.skills[snapshot.positions[skill_id]]
    reranker = snapshot.models.reranker
    found = sentence_attribution(reranker, prompt, skill.description, skill.body_head)
    if not get_current_worker().is_cancelled:
        app = screen.explorer
        app.call_from_thread(app.on_main, screen.show_attribution, skill_id, prompt, found)


def decide_prompt(
    app: ExplorerApp, prompt: str, pinned: str | None, snapshot: Index, config: Config
) -> None:
    """The decision for the prompt typed, and for the pinned one."""
    cwd = app.options.cwd
    # Lint and the replay wait (LoopBeat) while the decision is made and while the event
    # loop puts it on screen: each numpy call of the table's show releases the GIL, and a
    # background thread that took it then held it for a switch interval every time.
    with app.beat.foreground():
        decision = decide(prompt, snapshot, config, cwd=cwd)
        pinned_decision = decide(pinned, snapshot, config, cwd=cwd) if pinned is not None else None
        if not get_current_worker().is_cancelled:
            app.call_from_thread(app.show_decision, decision, pinned_decision, snapshot, config)


def compare_rankings(
    app: ExplorerApp,
    decision: Decision,
    pinned: Decision | None,
    previous: Index | None,
    config: Config,
) -> None:
    """F8: the ranking diff against the pinned prompt, else the previous snapshot."""
    if pinned is not None:
        base, label = pinned, "pinned"
    elif previous is not None:
        base = decide(decision.prompt, previous, config, cwd=app.options.cwd)
        label = f"previous snapshot (v{previous.version})"
    else:
        app.call_from_thread(app.on_main, lambda: app.main.show_compare(None, "", decision))
        return
    diff = ranking_diff(base, decision, depth=DEPTH)
    if not get_current_worker().is_cancelled:
        app.call_from_thread(app.on_main, lambda: app.main.show_compare(diff, label, decision))


def default_cases(roots: Sequence[str]) -> str | None:
    """Where a library's own cases.toml is, there or not yet, when the explorer opens one
    root that is a directory (Options.cases_file runs it while it is there)."""
    if len(roots) == 1 and os.path.isdir(roots[0]):
        return os.path.join(roots[0], "cases.toml")
    return None


def quality_key(app: ExplorerApp, snapshot: Index) -> tuple[object, ...]:
    """What lint and the cases read of a snapshot: two with the same files and the same
    cases file give the same findings and report."""
    return (*app.state.facts_of(snapshot).content, stat_key(app.options.cases_path))


def stat_key(path: str | None) -> tuple[int, int] | None:
    """A file's size and mtime (None: not there): a cases file saved, made or removed re-runs
    the cases."""
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (stat.st_size, stat.st_mtime_ns)
