"""Opening the explorer: where the cursor starts, how often lint runs, and the progress
of a cold build. Driven through Textual's Pilot over the real engine and a real live index.
"""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from explorer.engine.base import memory
from explorer.tui import tasks
from explorer.tui.app import ExplorerApp
from explorer.tui.compare import CompareView
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.skills_table import SkillsTable
from tests.conftest import write_skill
from tests.tui.test_app import SIZE, library, make_app, ready, settle, shown_for

__all__ = ["library"]  # the fixture, shared with test_app

PROMPT = "merge tables from documents"
FILLERS = 12


@pytest.fixture
def long_library(tmp_path: Path) -> Path:
    """More skills than an 80x24 table shows. The id-first skill shares no word with the
    prompt: without the dense model every score ties and it is row 1; with it (bow), it
    is near the end."""
    root = tmp_path / "skills"
    write_skill(root, "aaa-unrelated", "Bake sourdough bread and brew coffee at home.")
    for number in range(FILLERS):
        write_skill(root, f"filler-{number:02d}", f"Format tables number {number} for slides.")
    write_skill(root, "zz-combine", "Merge tables from PDF documents into one document.")
    return root


def _hold_the_models(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The dense model loads only once the returned event is set: the test sees the
    lexical-only snapshot's decision on screen first, as a large library does."""
    go = threading.Event()
    open_engine = tasks.open_engine

    def held(*args: object, **kwargs: object) -> object:
        assert go.wait(30)
        return open_engine(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "open_engine", held)
    return go


def _screen(app: ExplorerApp) -> str:
    """The table's lines and the decision panel, as the screen shows them."""
    table = app.query_one(SkillsTable)
    lines = [table.line_text(index).plain for index in range(len(table.view))]
    panel = app.query_one(DecisionPanel)
    texts = [
        str(panel.query_one(f"#decision-{part}", Static).render()) for part in ("reason", "body")
    ]
    return "\n".join([*lines, *texts])


async def _open_with_a_prompt(
    app: ExplorerApp,
    go: threading.Event,
    first: str = "aaa-unrelated",
    seen: list[str] | None = None,
) -> SkillsTable:
    """Open with the models held, then let them load; `seen` gets the screen (_screen) as
    it was with the lexical-only decision on it, and the notices ctrl+y gave then."""
    async with app.run_test(size=(80, 24)) as pilot:
        # The loading snapshot's decision first: its order is by id (no dense channel).
        await settle(pilot, lambda: shown_for(app, PROMPT))
        table = app.query_one(SkillsTable)
        if seen is not None:
            seen.append(_screen(app))
            await pilot.press("ctrl+y")  # the JSON of a lexical-only decision: not copied
            seen.extend(notice.message for notice in app._notifications)
            assert app.clipboard == ""
            await pilot.press("f8")  # nor a diff of two lexical-only rankings
            header = app.query_one(CompareView).query_one("#compare-header", Static)
            await settle(pilot, lambda: "compare once it is ready" in str(header.render()))
            await pilot.press("f8")
        go.set()
        assert table.current_id() == first
        await settle(pilot, lambda: ready(app) and shown_for(app, PROMPT))
        await pilot.pause()
        if seen is not None:
            seen.append(_screen(app))
        return table


# Behind test_a_prompt_and_a_skill_given_at_start_open_on_the_skill, which opens with --prompt.
@pytest.mark.slow
async def test_a_prompt_given_at_start_opens_at_the_top(
    long_library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--prompt`: the live snapshot's first decision starts on row 1, scrolled to the top,
    not on the skill the lexical-only ranking had first (now near the end)."""
    go = _hold_the_models(monkeypatch)
    app = make_app(long_library, tmp_path, initial_prompt=PROMPT)
    seen: list[str] = []
    table = await _open_with_a_prompt(app, go, seen=seen)
    assert app.decision is not None and app.decision.rows[0].id == "zz-combine"
    assert list(app.decision.rows.ids).index("aaa-unrelated") > 8  # off an 80x24 screen
    assert table.cursor == 0 and table.current_id() == "zz-combine"
    assert table.scroll_offset.y == 0
    assert app.state.highlighted == "zz-combine"
    assert "▲" not in table.cell_text("zz-combine", "hybrid")  # no delta against the loading one
    # While the dense model loaded, no floor, margin or verdict of the lexical-only decision
    # was shown (its floor is the no-model one); the live one replaced it, with no key pressed.
    loading, *notices, live = seen
    assert "< floor" not in loading and "min_similarity" not in loading and "INJECT" not in loading
    assert "dense model loading: lexical only" in loading
    assert "aaa-unrelated: dense model loading…" in loading  # the reason line of row 1
    # At 80 columns the real numbers, BM25's, keep their column (the breakdown goes first).
    assert " #1 " in next(line for line in loading.splitlines() if "zz-combine" in line)
    assert any("copy the decision once it is ready" in notice for notice in notices)
    assert "dense model loading" not in live and "floor" in live and "stage" in live


async def test_a_prompt_and_a_skill_given_at_start_open_on_the_skill(
    long_library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = _hold_the_models(monkeypatch)
    app = make_app(long_library, tmp_path, initial_prompt=PROMPT, initial_skill="filler-07")
    table = await _open_with_a_prompt(app, go, first="filler-07")
    assert table.current_id() == "filler-07"
    assert app.state.highlighted == "filler-07"


async def test_a_new_prompt_shows_the_top_rows_when_the_followed_skill_is_among_them(
    long_library: Path, tmp_path: Path
) -> None:
    """The table scrolled down; a new prompt that ranks the followed skill on the first
    page opens at the top, the winner in view beside it."""
    app = make_app(long_library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app))
        await pilot.press(*"bake bread")
        await settle(pilot, lambda: shown_for(app, "bake bread"))
        table = app.query_one(SkillsTable)
        app.go_to_skill("filler-00")
        down = table.max_scroll_y  # scrolled, as following F8's cursor leaves it
        table.scroll_to(y=down, animate=False)
        await settle(pilot, lambda: table.scroll_offset.y == down > 2)
        await pilot.press("ctrl+u", *"merge tables from pdf documents")
        await settle(pilot, lambda: shown_for(app, "merge tables from pdf documents"))
        await pilot.pause()
        assert table.current_id() == "filler-00" and 0 < table.cursor < down
        assert table.scroll_offset.y == 0  # row 1, zz-combine, in view


async def test_a_skill_given_at_start_that_is_not_there_is_said(
    library: Path, tmp_path: Path
) -> None:
    """--skill with an id the library lacks: a warning once the library is in, as `why
    --skill` says it, rather than opening on the top row in silence."""
    app = make_app(library, tmp_path, initial_prompt="merge pdf", initial_skill="PDFF")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.decision is not None)
        await settle(pilot, lambda: any("--skill 'PDFF'" in n.message for n in app._notifications))
        (said,) = [n.message for n in app._notifications if "--skill" in n.message]
        assert said == f"--skill 'PDFF': no such skill in {library} (did you mean 'pdf'?)"


# Waits for a lint; test_lint_runs_with_the_loop_beat_as_its_pause keeps it in the default run.
@pytest.mark.slow
async def test_lint_runs_once_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 26,000 skills one lint is ~40 s of CPU: the start lints the live snapshot once.
    The watcher's catch-up walk finds nothing new and keeps the snapshot."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    (root / "broken").mkdir()
    (root / "broken" / "SKILL.md").write_text("no frontmatter\n", encoding="utf-8")
    linted: list[int] = []
    full_thresholds: list[int] = []  # while lint runs: no full collection on any thread
    lint = tasks.lint_files

    def counted(*args: object, **kwargs: object) -> object:
        linted.append(len(kwargs["index"]))  # type: ignore[arg-type]
        full_thresholds.append(gc.get_threshold()[2])
        return lint(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "lint_files", counted)
    usual_full = gc.get_threshold()[2]
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.live.rescans >= 2)  # type: ignore[union-attr]
        idle = lambda: all(worker.is_finished for worker in app.workers)  # noqa: E731
        await settle(pilot, lambda: bool(app.state.findings) and idle())
        assert linted == [2]
        assert full_thresholds == [memory.DEFERRED_FULL]
        assert any("broken" in path for path in app.state.findings)  # the problems view has them
        # A real change lints again.
        write_skill(root, "docker", "Shrink Docker images and speed up container builds.")
        await settle(pilot, lambda: linted == [2, 3])
    # The explorer's own deferral (tasks.IdleCollections) ends with it.
    assert gc.get_threshold()[2] == usual_full


async def test_a_file_whose_findings_did_not_change_keeps_the_strings_on_screen(
    tmp_path: Path,
) -> None:
    """After a save lint runs again: a file whose findings are the same keeps the very
    tuple of strings on screen (a run makes no second copy of every finding to keep:
    47 MB at 26,000 skills), and the saved file shows its new findings."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and bool(app.state.findings))
        await settle(pilot, lambda: not app.background_busy)
        before = app.state.findings
        (xlsx,) = [path for path in before if path.endswith("xlsx/SKILL.md")]
        (pdf,) = [path for path in before if path.endswith("pdf/SKILL.md")]
        assert not any("spec/xml-tags" in line for line in before[pdf])
        write_skill(root, "pdf", "Merge <b>PDF</b> files and extract their tables.")
        await settle(
            pilot,
            lambda: any("spec/xml-tags" in line for line in app.state.findings.get(pdf, ())),
        )
        assert app.state.findings[xlsx] is before[xlsx]


async def test_saves_during_a_lint_wait_for_it_and_only_the_newest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lint cannot be stopped once started (a worker thread runs to its end): saves that
    come while one runs leave the newest snapshot waiting, and it runs next, alone. A lint
    per save beside the others held a snapshot each (at 26,000 skills ~40 s of CPU apiece,
    and memory that grew with every save)."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    lint = tasks.lint_files
    gate = threading.Event()
    running = threading.Semaphore(1)
    linted: list[int] = []

    def slow(*args: object, **kwargs: object) -> object:
        assert running.acquire(blocking=False), "two lints at once"
        try:
            if linted:  # the first one (at start) returns at once
                gate.wait(30)
            linted.append(kwargs["index"].version)  # type: ignore[attr-defined]
            return iter(list(lint(*args, **kwargs)))  # type: ignore[arg-type]
        finally:
            running.release()

    monkeypatch.setattr(tasks, "lint_files", slow)
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and len(linted) == 1 and not app.background_busy)
        versions = []
        for number in range(3):
            version = app.snapshot.version  # type: ignore[union-attr]
            write_skill(root, "pdf", f"Merge and split PDF files, edit {number}.")
            await settle(pilot, lambda v=version: app.snapshot.version > v)  # type: ignore[union-attr]
            versions.append(app.snapshot.version)  # type: ignore[union-attr]
        assert app.background_busy
        gate.set()
        await settle(pilot, lambda: not app.background_busy)
        # The lint that was running ran to its end, then only the newest snapshot's: the
        # saves in between never ran. (Which snapshot the running one took depends on when
        # its worker thread started: the first save's, or a later one if saves came first.)
        after_start = linted[1:]
        assert after_start[-1] == versions[-1]
        assert len(after_start) <= 2 and after_start == sorted(set(after_start))
        assert any("pdf" in path for path in app.state.findings)


async def test_the_loading_snapshot_goes_once_the_live_one_is_on_screen(
    tmp_path: Path,
) -> None:
    """The lexical-only copy of the library shown while the models load is dropped once a
    decision on the live snapshot is on screen: kept, it held a second library's memory
    for the whole session."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
        assert app.state.loading_snapshot is None
        assert not app.state.provisional() and not app.state.still_loading()


async def saved_and_settled(pilot: Pilot[None], app: ExplorerApp, root: Path, number: int) -> None:
    """Edit the `pdf` skill, and wait until the snapshot holding the edit is on screen and
    the background work it started has ended."""
    version = app.snapshot.version  # type: ignore[union-attr]
    write_skill(root, "pdf", f"Merge and split PDF files, edit {number}.")
    await settle(
        pilot,
        lambda: (
            app.snapshot.version > version  # type: ignore[union-attr]
            and app.state.painted_on is app.snapshot
            and not app.background_busy
        ),
    )


class _Cycle:
    """An object that refers to itself: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


async def test_the_collector_runs_when_background_work_ends(tmp_path: Path) -> None:
    """Lint and the cases defer full collections while they run, and an idle explorer
    allocates too little to start one: the cycles that a session's saves leave (Textual's
    rendered strips, finished workers) would stay until the next burst of work. With the
    automatic collector off, only the explorer's own collection can free this one."""
    import weakref

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
        await settle(pilot, lambda: not app.background_busy)
        gone = weakref.ref(_Cycle())
        assert gone() is not None
        gc.disable()
        try:
            await saved_and_settled(pilot, app, root, 1)
            # The save's lint can start just after the edit is painted: wait for its end.
            await settle(pilot, lambda: gone() is None, timeout=20.0)
        finally:
            gc.enable()


def test_a_strip_divided_at_its_end_does_not_hold_itself() -> None:
    """Textual memoises `Strip.divide`'s result in the strip, and for a single cut at the
    end that result is the strip itself: every line the compositor drops would then wait
    for a full collection. Other divisions are Textual's own."""
    import sys

    from rich.segment import Segment
    from textual.strip import Strip

    from explorer.tui.strips import release_divided_strips

    release_divided_strips()
    strip = Strip([Segment("merge "), Segment("pdfs")])
    held = sys.getrefcount(strip)
    assert strip.divide([10]) == [strip]
    assert strip.divide([10, 12]) == [strip]  # a cut past the end is dropped
    assert sys.getrefcount(strip) == held
    assert [part.text for part in strip.divide([3, 10])] == ["mer", "ge pdfs"]


def _holds_itself(start: object, depth: int = 5) -> bool:
    """Whether `start` is among what it refers to, `depth` references deep at most."""
    seen: set[int] = set()
    frontier = gc.get_referents(start)
    for _ in range(depth):
        if any(item is start for item in frontier):
            return True
        following: list[object] = []
        for item in frontier:
            if id(item) not in seen:
                seen.add(id(item))
                following.extend(gc.get_referents(item))
        frontier = following
    return False


async def test_the_lines_of_a_repaint_are_not_left_for_the_collector(tmp_path: Path) -> None:
    """Keys typed into a running explorer leave no rendered strip that refers to itself
    (docs/benchmarks.md, "Lines that hold themselves": at 26,000 skills they piled up
    over saves and one collection freed 43,522 objects in 88 ms on the event loop)."""
    from textual.strip import Strip

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
        await settle(pilot, lambda: not app.background_busy and app.collections.frozen)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept to look at
        try:
            for key in "merge pdf":
                await pilot.press("space" if key == " " else key)
            await settle(pilot, lambda: shown_for(app, "merge pdf"))
            await pilot.pause(0.2)
            gc.collect()
            strips = [item for item in gc.garbage if isinstance(item, Strip)]
            cycles = [strip for strip in strips if _holds_itself(strip)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert cycles == []


async def test_full_collections_wait_for_a_quiet_moment(tmp_path: Path) -> None:
    """While the explorer is open no allocation starts a full collection (one on a
    repaint stalled typing for up to 94 ms at 2,289 skills): the explorer makes them
    itself, once they are due, when no key has come for a while and nothing runs in the
    background; the threshold comes back when it closes."""
    from explorer.engine.base.memory import DEFERRED_FULL
    from explorer.tui.tasks import IdleCollections

    before = gc.get_threshold()
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
        await settle(pilot, lambda: app.state.loading_snapshot is None)
        await settle(pilot, lambda: not app.background_busy and app.collections.frozen)
        assert gc.get_threshold()[2] == DEFERRED_FULL
        idle = app.collections
        made = idle.collections
        await pilot.press("m")
        for _ in range(IdleCollections.DUE):
            gc.collect(1)  # each counts towards the next full collection
        assert not idle.due()  # a key just came
        await settle(pilot, lambda: idle.collections > made, timeout=5.0)
        assert gc.get_count()[2] < IdleCollections.DUE
        # Typing without a pause does not keep garbage for good.
        idle.key()
        for _ in range(IdleCollections.OVERDUE):
            gc.collect(1)
        assert idle.due()
    assert gc.get_threshold() == before


def test_before_the_freeze_a_full_collection_waits_until_overdue() -> None:
    """While the library loads, a full collection walks all of it, twice over (55-143 ms
    each at 26,000 skills): a quiet moment is not enough, only being overdue is."""
    from explorer.tui.tasks import IdleCollections

    idle = IdleCollections(lambda: False)
    idle._last_key = time.monotonic() - 10 * IdleCollections.QUIET
    with memory.full_collections_deferred():
        gc.collect()
        for _ in range(IdleCollections.DUE):
            gc.collect(1)
        assert not idle.due()  # quiet and due, but nothing is frozen yet
        idle.frozen = True
        assert idle.due()
        idle.frozen = False
        for _ in range(IdleCollections.OVERDUE - IdleCollections.DUE):
            gc.collect(1)
        assert idle.due()


async def test_the_freeze_waits_for_a_pause_in_typing(tmp_path: Path) -> None:
    """What lives as long as the app is frozen once the live library is on screen, after
    a full collection that walks all of it (140-200 ms at 2,289 skills): not while keys
    come, but at the first pause."""
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    quiet = app.collections.QUIET = 2.0  # ten times the gap between keys, on a busy machine too
    async with app.run_test(size=(80, 24)) as pilot:
        typed = 0
        while app.state.loading_snapshot is not None or not ready(app) or typed < 4:
            await pilot.press("m")  # typing from the start, a key every 0.2 s
            typed += 1
            await pilot.pause(0.2)
            assert typed < 200, "the live library never came"
        for _ in range(int(2 * quiet / 0.2)):
            assert not app.collections.frozen  # keys keep coming
            await pilot.press("m")
            await pilot.pause(0.2)
        await settle(pilot, lambda: app.collections.frozen, timeout=10.0)


async def test_the_freeze_makes_no_full_collection_and_frees_the_loading_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The freeze collects only the young generations before it freezes: a full
    collection walks the whole library (83-137 ms at 26,000 skills, on the event loop).
    Whatever is garbage in the old generation then stays frozen for good, so the loading
    snapshot, dropped just before, must go by reference counting alone."""
    import weakref

    from explorer.tui.screens.main import MainScreen

    calls: list[str] = []
    collect, freeze = gc.collect, gc.freeze
    monkeypatch.setattr(
        gc,
        "collect",
        lambda generation=2: calls.append(f"collect {generation}") or collect(generation),
    )
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze") or freeze())
    dropped: list[weakref.ref[object]] = []
    drop = MainScreen._drop_loading_snapshot

    def watched_drop(screen: MainScreen) -> None:
        dropped.append(weakref.ref(screen.state.loading_snapshot))
        drop(screen)

    monkeypatch.setattr(MainScreen, "_drop_loading_snapshot", watched_drop)
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.collections.frozen)
        assert "freeze" in calls
        assert calls[calls.index("freeze") - 1] == "collect 1"
        assert len(dropped) == 1 and dropped[0]() is None


@pytest.mark.slow  # waits on saves; test_snapshot_sharing.py holds what a save keeps
async def test_a_snapshot_replaced_by_saves_is_freed(tmp_path: Path) -> None:
    """The snapshots that saves replace are freed, the one on screen when the app froze
    the collector's generations too: the workers that held one are cycles only the
    collector frees, so neither may they be frozen holding it (frozen at every snapshot,
    each save's stayed for good) nor may a worker frozen while it ran keep its snapshot
    after its task has ended (`tasks.Handoff`)."""
    import gc
    import weakref

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
        await settle(pilot, lambda: not app.background_busy)
        replaced = []
        for number in range(6):
            snapshot = app.snapshot
            assert snapshot is not None
            replaced.append(weakref.ref(snapshot))
            del snapshot
            await saved_and_settled(pilot, app, root, number)

        # The last two replaced may still be held: compare's base (F8), and a message or a
        # decision cancelled by a newer one still on its way (seen under coverage's tracer).
        # The ones before go once the workers that held them have ended and the collector
        # has run; frozen at every snapshot, none of them would.
        def alive() -> list[str]:
            gc.collect()
            held = [ref() for ref in replaced[:-2]]
            return [
                f"v{snapshot.version} held by "
                + ", ".join(type(r).__name__ for r in gc.get_referrers(snapshot))
                for snapshot in held
                if snapshot is not None
            ]

        deadline = time.monotonic() + 20.0
        while alive() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert not alive(), alive()


async def test_a_lint_running_when_the_app_freezes_does_not_keep_its_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first lint still runs when the first live decision is on screen and the app
    freezes the collector's generations (at 26,000 skills it runs for half a minute):
    its worker, frozen while it runs, is never collected, and holding its snapshot it
    would keep one snapshot's vectors and tables for the whole session, more of them its
    own with every save."""
    import weakref

    gate = threading.Event()
    real_lint = tasks.lint_files
    linted: list[weakref.ref[object]] = []

    def held_lint(*args: object, **kwargs: object) -> object:
        linted.append(weakref.ref(kwargs["index"]))
        gate.wait(20.0)
        return real_lint(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "lint_files", held_lint)
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        try:
            await settle(pilot, lambda: ready(app) and app.state.painted_on is app.snapshot)
            await settle(pilot, lambda: app.collections.frozen)  # no key: at once
            assert app.state.loading_snapshot is None and app.background_busy  # frozen, linting
            first = linted[0]
        finally:
            gate.set()
        await settle(pilot, lambda: not app.background_busy)
        for number in range(2):  # the second moves compare's base past the first snapshot
            await saved_and_settled(pilot, app, root, number)
        deadline = time.monotonic() + 10.0
        while first() is not None and time.monotonic() < deadline:
            gc.collect()
            await pilot.pause(0.05)
        held = first()
        assert held is None, [type(r).__name__ for r in gc.get_referrers(held)]


@pytest.mark.slow  # tests/engine/test_live_progress.py holds the progress the screen shows
async def test_a_cold_build_shows_the_embeddings_progress_until_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No embedding cache: the status bar counts the descriptions embedded, chunk by chunk,
    as the real loop (cache.embed_with_cache) reports them, and the count goes once the
    live snapshot is in. The build runs in the load worker; the UI only gets messages."""
    from explorer.engine.inference import cache as cache_module
    from explorer.tui.widgets.status_bar import StatusBar

    root = tmp_path / "skills"
    for number in range(5):
        write_skill(root, f"skill-{number}", f"Describe thing number {number} for tests.")
    monkeypatch.setattr(cache_module, "CHUNK_TEXTS", 2)  # 5 descriptions: 3 chunks
    shown: list[str] = []
    app = make_app(root, tmp_path)  # tmp_path/cache: empty, so every vector is computed
    set_loading = app.set_loading

    def recording(text: str) -> None:
        shown.append(text)
        set_loading(text)

    monkeypatch.setattr(app, "set_loading", recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and not app.state.loading)
        embedding = [text for text in shown if "embed" in text]
        assert embedding == [
            "embedding 0/5 descriptions (0%)…",
            "embedding 2/5 descriptions (40%)…",
            "embedding 4/5 descriptions (80%)…",
            "embedded 5 descriptions; building the index…",
        ]
        status = str(app.query_one(StatusBar).render())
        assert "descriptions" not in status and "5 skills" in status
    # Warm: the same cache again computes nothing, and says nothing about embedding.
    shown.clear()
    again = make_app(root, tmp_path)
    monkeypatch.setattr(again, "set_loading", lambda text: shown.append(text))
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(again))
        assert not [text for text in shown if "embed" in text]


async def test_lint_runs_with_the_loop_beat_as_its_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer's lint worker runs lint's checkpoints against the app's loop beat, and
    the beat runs while it does: lint gives way to the event loop (tasks.LoopBeat)."""
    from explorer.engine.base import turns

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    lint = tasks.lint_files
    seen: list[tuple[object, bool]] = []

    def watched(*args: object, **kwargs: object) -> object:
        seen.append((turns._PAUSE.get(), app.beat.running))
        return lint(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tasks, "lint_files", watched)
    app = make_app(root, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: ready(app) and bool(seen) and not app.background_busy)
        pause, beat_running = seen[0]
        assert beat_running and callable(pause)
        paused: list[bool] = []
        monkeypatch.setattr(app.beat, "pause", lambda: paused.append(True))
        pause()  # lint's checkpoint: the beat's pause (its run was not cancelled)
        assert paused == [True]
        await settle(pilot, lambda: not app.beat.running)  # idle: no beat
