"""The explorer app: a prompt in, every skill's channels, terms and gates out, live.

Threads: Textual's loop owns the screen. Loading, decide() and quality checks run in
workers and hand results back with call_from_thread. The live index's watcher thread
never waits on the UI: it posts IndexChanged and WatcherFailed messages and goes back
to watching. A result for an older prompt, config or snapshot is dropped, never shown.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.command import CommandPalette
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static, TabbedContent, TabPane, TextArea
from textual.worker import Worker, get_current_worker

from explorer.engine.cases import CaseError, load_cases
from explorer.engine.compare import RankingDiff, ranking_diff
from explorer.engine.config import PROJECT_CONFIG_NAME, Config
from explorer.engine.decision import Decision, Row
from explorer.engine.evaluate import Comparison, EvalReport, compare, evaluate
from explorer.engine.history import (
    Replay,
    UsageReport,
    pipeline_decider,
    replay_sessions,
    usage_report,
)
from explorer.engine.library import Engine, open_cache, open_engine, open_library
from explorer.engine.lint import lint
from explorer.engine.live import IndexChange, LiveIndex
from explorer.engine.models import assemble_models
from explorer.engine.pipeline import decide
from explorer.engine.rewrite import SaveError
from explorer.engine.session import Session
from explorer.engine.skills import Problem
from explorer.engine.snapshot import Index
from explorer.engine.telemetry import read_events
from explorer.report import markdown_report
from explorer.terminal import plain, visible
from explorer.tui.collisions import CollisionsScreen
from explorer.tui.commands import ExplorerCommands, SkillCommands
from explorer.tui.compare import DEPTH, CompareView
from explorer.tui.editor import open_in_editor
from explorer.tui.health import ProblemsScreen, issues, stale_reasons
from explorer.tui.history import PromptHistory, write_new_file
from explorer.tui.screens import INDEX_FIELDS, TextScreen, ThresholdEditor
from explorer.tui.state import PANEL_SIZES, UIState, load_state, save_state, state_path
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets.cases_panel import CasesPanel
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.footer import QuietFooter
from explorer.tui.widgets.history_panel import HistoryPanel
from explorer.tui.widgets.prompt_bar import FilterBar, PromptBar
from explorer.tui.widgets.skill_panel import SkillPanel
from explorer.tui.widgets.skills_table import SORT_KEYS, Limits, SkillsTable
from explorer.tui.widgets.status_bar import StatusBar
from explorer.tui.widgets.terms_panel import TermsPanel

DEBOUNCE_S = 0.01  # keystrokes during a running decision coalesce over this window
PANELS_DELAY_S = 0.08  # the decision, terms and skill panels catch up when typing pauses
NARROW_WIDTH = 110
RERANKER_HINT = "no reranker: set reranker = DIR"


class _Cancelled(Exception):
    """A newer replay started: this one stops between two prompts."""


class ExplorerApp(App[None]):
    """Skill Explorer: type a prompt, see why each skill triggers or not."""

    CSS_PATH = "explorer.tcss"
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, StatusBar, PromptBar"  # keep typing while maximised
    TITLE = "Skill Explorer"
    COMMANDS = App.COMMANDS | {ExplorerCommands}
    # Keys that no focused widget takes for itself: the prompt (an Input) owns ctrl+a/e/k/
    # u/w/x/c/v/d and the arrows, the table and the panels own the arrows and page keys.
    # tests/tui/test_bindings.py presses every one of these from every focusable widget.
    BINDINGS = [
        Binding("f1", "help", "Help", id="help"),
        Binding("f2", "thresholds", "Thresholds", id="thresholds"),
        Binding("f3", "errors", "Errors", id="errors"),
        Binding("f5", "reindex", "Re-index", id="reindex"),
        Binding("ctrl+f", "filter", "Filter", id="filter"),
        Binding("ctrl+g", "go_to", "Go to skill", id="go-to"),
        Binding("ctrl+t", "pin", "Pin prompt", id="pin"),
        Binding("ctrl+o", "open_in_editor", "Edit skill", id="open-in-editor"),
        Binding("ctrl+y", "copy_json", "Copy JSON", id="copy-json"),
        Binding("ctrl+r", "export_markdown", "Export MD", id="export-markdown"),
        Binding("f6", "cycle_sort", "Sort", id="sort"),
        Binding("f7", "whatif", "What-if", id="whatif"),
        Binding("f8", "compare", "Compare", id="compare"),
        Binding("ctrl+l", "collisions", "Collisions", id="collisions"),
        Binding("f9", "maximise", "Maximise panel", id="maximise"),
        Binding("f10", "panel_size", "Panel size", id="panel-size"),
        Binding("ctrl+s", "screenshot", "Screenshot", id="screenshot"),
        Binding("ctrl+q", "quit", "Quit", id="quit"),
    ]

    def __init__(
        self,
        roots: Sequence[str],
        config: Config,
        *,
        cache_dir: str | None = None,
        history: PromptHistory | None = None,
        initial_prompt: str = "",
        show_timings: bool = True,
        cases_path: str | None = None,
        cwd: str | None = None,
        cases_skill: str | None = None,
        history_log: str | None = None,
        initial_skill: str | None = None,
        config_layers: str = "",
        config_sources: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.config_layers = config_layers  # "config: defaults < ./skill-explorer.toml", shown
        self.config_sources = dict(config_sources or {})  # field -> the layer that set it (F2)
        self.cwd = cwd  # the working directory of the project channel (§3.5), like the hook's
        self.initial_skill = initial_skill  # --skill: the row to open focused on
        self.roots = [os.path.abspath(root) for root in roots]
        self.config = self.baseline = config
        self.cache_dir = cache_dir
        self.history = history or PromptHistory()
        # Where the layout is read and written, fixed at start: a save as the app closes
        # goes where the start read from, whatever the environment says by then.
        self.state_file = state_path()
        self.initial_prompt = initial_prompt
        self.show_timings = show_timings  # off for stable screenshots in tests
        self.cases_path = cases_path or _default_cases(self.roots)
        self.cases_skill = cases_skill  # the skill a skill-creator trigger eval set is about
        self.cases_report: EvalReport | None = None
        self.history_log = history_log  # a telemetry log to replay (§10); None: no History tab
        self.history_replay: Replay | None = None
        self._comparison: Comparison | None = None
        self.findings: dict[str, list[str]] = {}  # SKILL.md path -> lint findings
        self.snapshot: Index | None = None
        self.live: LiveIndex | None = None
        self.decision: Decision | None = None
        self.pinned_prompt: str | None = None
        self.previous_snapshot: Index | None = None  # before the last re-index: compare's base
        # The lexical-only snapshot shown while the models load: its ranking is provisional,
        # so a decision made on it neither keeps the cursor nor bases deltas (tuifix 2).
        self.loading_snapshot: Index | None = None
        self._decided_on: Index | None = None  # the snapshot of the decision on screen
        self._quality_for: tuple[tuple[object, ...], Config] | None = None  # last lint's input
        self.comparing = False  # f8: the ranking diff in place of the table
        self.highlighted: str | None = None
        self.loading = "starting…"
        self.last_change = "not yet re-indexed"
        self._delta_base: Mapping[str, Row] | None = None
        self._debounce: Timer | None = None
        self._panels_timer: Timer | None = None
        self._skill_timer: Timer | None = None
        self._decider: Worker[None] | None = None
        self.panels_shown: Decision | None = None  # the decision the panels show
        self._typing = False
        self._screen_message = ""
        self.ui_state = UIState()
        self.created_at = time.perf_counter()
        self.first_paint_ms: float | None = None  # construction to first frame, for the bench
        self.painted_at = 0.0  # when the last decision reached the screen, for the bench

    @property
    def main(self) -> Screen[None]:
        """The screen the explorer's widgets live on. App.query_one searches only the screen
        on top, so with F2, F3 or the palette open every update would miss its widget."""
        if not self.screen_stack:
            raise NoMatches("the app is shutting down")
        return self.screen_stack[0]

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield PromptBar(self.history, id="prompt")
        with Vertical(id="main"):
            yield Static(id="message")
            yield FilterBar(id="filter")
            yield SkillsTable(id="skills")
            yield CompareView(id="compare")
            with Horizontal(id="bottom"):
                with TabbedContent(id="details"):
                    with TabPane("Terms", id="terms-tab"):
                        yield TermsPanel(id="terms")
                    with TabPane("Skill", id="skill-tab"):
                        yield SkillPanel(id="skill")
                    with TabPane("Cases", id="cases-tab"):
                        yield CasesPanel(id="cases")
                    if self.history_log:
                        with TabPane("History", id="history-tab"):
                            yield HistoryPanel(id="history")
                yield DecisionPanel(id="decision")
        yield StatusBar(id="status")
        yield QuietFooter()

    def on_mount(self) -> None:
        if self.config.keymap:
            self.set_keymap(self.config.keymap)
        self.main.query_one(PromptBar).value = self.initial_prompt
        self.main.query_one(PromptBar).focus()
        self.main.query_one("#filter", Input).display = False
        self.main.query_one(CompareView).display = False
        self._layout_for(self.size.width)
        self._restore(load_state(self.state_file))
        self._set_message("Loading the library…")
        self._refresh_status()
        self.call_after_refresh(self._first_paint)
        self.load()

    def _first_paint(self) -> None:
        self.first_paint_ms = (time.perf_counter() - self.created_at) * 1000

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: self.size still holds the previous one while this runs.
        self._layout_for(event.size.width)

    def _layout_for(self, width: int) -> None:
        self.set_class(width < NARROW_WIDTH, "narrow")
        self._compare_width(width)

    # -- loading -------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", description="load the library")
    def load(self) -> None:
        """Lexical first (BM25 works at once), then the models, then the live index."""
        cache = open_cache(self.config, self.cache_dir)
        lexical_only = assemble_models(None, dense_error="loading the dense model…")
        first = open_library(self.roots, self.config, engine=Engine(cache, lexical_only))
        self.loading_snapshot = first
        self.call_from_thread(self._use_snapshot, first, "loading the dense model…")
        engine = open_engine(self.config, cache=cache)
        for warning in engine.warnings:
            self.call_from_thread(
                self.notify, visible(warning), severity="warning", timeout=10, markup=False
            )
        self.call_from_thread(self._set_loading, f"reading {len(first):,} skills' vectors…")
        # The embedding loop reports each chunk from this thread; a message keeps it from
        # ever waiting for the UI (post_message is thread-safe).
        live = LiveIndex(
            self.roots,
            self.config,
            engine.models,
            cache,
            progress=lambda done, total: self.post_message(self.EmbeddingProgress(done, total)),
        )
        # The watcher's thread only posts: it never waits for the UI to handle a change.
        live.subscribe(lambda change: self.post_message(self.IndexChanged(change)))
        live.on_failure(lambda message: self.post_message(self.WatcherFailed(message)))
        live.start()
        self.live = live
        # live.snapshot read on the UI thread: the watcher's first re-index may already
        # have been handled there, and a snapshot read here would then replace it with an
        # older one (the app waited for a change that had come and gone). A message, so it
        # comes after the embedding's progress messages, never before the last of them.
        self.post_message(self.LiveReady())

    def _set_loading(self, text: str) -> None:
        self.loading = text
        self._refresh_status()

    # -- cases and lint, re-run on every new snapshot ----------------------------------

    def quality(self, snapshot: Index, config: Config) -> None:
        """Lint and the cases for a new snapshot or config, unless the last run had the same
        files and config. The watcher's first full walk makes a new snapshot of the same
        files right after the start: linting it again cost ~40 s of CPU at 26,000 skills,
        and a second run (exclusive) cancelled the first one's result."""
        key = (*_content_key(snapshot), _stat_key(self.cases_path))
        if self._quality_for is not None and self._quality_for == (key, config):
            return
        self._quality_for = (key, config)
        self.run_quality(snapshot, config)

    @work(thread=True, exclusive=True, group="quality", description="cases and lint")
    def run_quality(self, snapshot: Index, config: Config) -> None:
        findings: dict[str, list[str]] = {}
        for finding in lint(self.roots, index=snapshot, config=config):
            findings.setdefault(finding.path, []).append(
                f"{finding.severity} {finding.rule}: {finding.message}"
            )
        report, problem = None, None
        if self.cases_path:
            try:
                cases = load_cases(self.cases_path, skill=self.cases_skill).cases
                report = evaluate(cases, snapshot, config, cwd=self.cwd)
            except CaseError as error:
                problem = str(error)
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show_quality, findings, report, problem)

    def _show_quality(
        self, findings: dict[str, list[str]], report: EvalReport | None, problem: str | None
    ) -> None:
        self.findings = findings
        try:
            panel = self.main.query_one(CasesPanel)
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down
        if problem is not None:
            panel.message(problem)
        elif report is not None:
            previous, self.cases_report = self.cases_report, report
            comparison = compare(previous, report) if previous is not None else None
            if comparison is not None and not comparison.flipped and not comparison.changed:
                # A re-index that changed no outcome (a second event for the same save,
                # say) keeps the last change on screen rather than hiding it.
                comparison = self._comparison
            self._comparison = comparison
            panel.show(report, comparison, self.cases_path or "")
        self._show_skill(self.highlighted)

    @work(thread=True, exclusive=True, group="history", description="history replay")
    def run_history(self, snapshot: Index, config: Config) -> None:
        """Re-read the telemetry log and decide its prompts again (a newer run cancels)."""
        if not self.history_log:
            return
        worker = get_current_worker()
        try:
            read = read_events([Path(self.history_log)])
        except OSError as error:
            self.call_from_thread(self._show_history, None, None, f"{self.history_log}: {error}")
            return
        decide_turn = pipeline_decider(snapshot, config)

        def decide_unless_cancelled(
            prompt: str, context: tuple[str, ...], ledger: Session
        ) -> Sequence[tuple[str, float]]:
            if worker.is_cancelled:
                raise _Cancelled
            return decide_turn(prompt, context, ledger)

        report = usage_report(read.events)
        try:
            result = replay_sessions(read.events, decide_unless_cancelled, config.context_depth)
        except _Cancelled:
            return
        if not worker.is_cancelled:
            self.call_from_thread(self._show_history, report, result, None)

    def _show_history(
        self, report: UsageReport | None, result: Replay | None, problem: str | None
    ) -> None:
        try:
            panel = self.main.query_one(HistoryPanel)
        except (NoMatches, ScreenStackError):
            return
        if problem is not None or report is None:
            panel.message(problem or "no telemetry log")
            return
        self.history_replay = result
        panel.show(report, result, self.history_log or "")

    def _use_snapshot(self, snapshot: Index, loading: str) -> None:
        # The library, models and widgets live as long as the app: moved out of the
        # collector's generations, they no longer make a collection pause a keystroke.
        gc.freeze()
        self.snapshot = snapshot
        self.loading = loading
        self._set_descriptions(snapshot)
        self._refresh_status()
        self._explain_library(snapshot)
        self.schedule_decide()
        if not loading:
            self.quality(snapshot, self.config)
            self.run_history(snapshot, self.config)

    class EmbeddingProgress(Message):
        """The live index's build embedded `done` of `total` descriptions (a cold cache)."""

        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done, self.total = done, total

    class LiveReady(Message):
        """The live index is built and watching (posted by the load worker)."""

    def on_explorer_app_live_ready(self) -> None:
        if self.live is not None:
            try:
                self._use_snapshot(self.live.snapshot, "")
            except (NoMatches, ScreenStackError):
                return  # the app is shutting down

    def on_explorer_app_embedding_progress(self, message: EmbeddingProgress) -> None:
        if not self.loading:
            return  # the live snapshot is in: a late message says nothing new
        done, total = message.done, message.total
        percent = 100 * done // total if total else 100
        text = f"embedding {done:,}/{total:,} descriptions ({percent}%)…"
        if done >= total:
            text = f"embedded {total:,} descriptions; building the index…"
        try:
            self._set_loading(text)
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down

    class IndexChanged(Message):
        """The live index swapped in a new snapshot (posted from the watcher's thread)."""

        def __init__(self, change: IndexChange) -> None:
            super().__init__()
            self.change = change

    class WatcherFailed(Message):
        """The watcher survived an error (posted from its thread); it joins the error list."""

        def __init__(self, failure: str) -> None:
            super().__init__()
            self.failure = failure

    # The watcher thread posts these whenever the disk changes, so one can arrive while the
    # app shuts down and its widgets go one by one: then there is nothing left to update.
    def on_explorer_app_index_changed(self, message: IndexChanged) -> None:
        try:
            self._index_changed(message.change)
        except (NoMatches, ScreenStackError):
            return

    def on_explorer_app_watcher_failed(self, message: WatcherFailed) -> None:
        try:
            self._refresh_status()
        except (NoMatches, ScreenStackError):
            return
        self.notify(visible(message.failure), severity="error", timeout=10, markup=False)

    def _index_changed(self, change: IndexChange) -> None:
        if self.live is None:
            return
        self.last_change = (
            f"re-indexed +{len(change.added)} -{len(change.removed)} ~{len(change.changed)}"
        )
        if self.show_timings:
            self.last_change += (
                f" at {time.strftime('%H:%M:%S')} in {change.timings_ms.get('total', 0.0):.0f} ms"
            )
        if self.decision is not None and not self._provisional():
            self._delta_base = self.decision.rows.mapping()  # lazy: rows made when drawn
        if change.added or change.removed or change.changed:  # compare's base (f8)
            self.previous_snapshot = self.snapshot
        self.snapshot = self.live.snapshot
        self._set_descriptions(self.snapshot)
        self._refresh_status()
        self._explain_library(self.snapshot)
        self.schedule_decide()
        self.quality(self.snapshot, self.config)
        self.run_history(self.snapshot, self.config)

    def _set_descriptions(self, snapshot: Index) -> None:
        """The table's filter matches descriptions too."""
        try:
            table = self.main.query_one(SkillsTable)
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down (widgets go one by one)
        table.descriptions = {skill.id: skill.description for skill in snapshot.skills}
        table.set_health(snapshot.rejected, stale_reasons(snapshot))  # greyed, with the reason

    # -- UI state, kept per user (tui/state.py) -----------------------------------------

    def _restore(self, state: UIState) -> None:
        table = self.main.query_one(SkillsTable)
        if state.sort_key in SORT_KEYS:
            table.sort_key, table.sort_reverse = state.sort_key, state.sort_reverse
        table.hidden = {key for key in state.hidden if key not in ("skill", "verdict")}
        self.ui_state = state
        self._size_panels(state.panel_size)
        if state.maximised:
            self.main.maximize(self.main.query_one(DecisionPanel), container=False)

    def _remember(self) -> None:
        try:
            table = self.main.query_one(SkillsTable)
        except (NoMatches, ScreenStackError):
            return
        state = self.ui_state
        state.sort_key, state.sort_reverse = table.sort_key, table.sort_reverse
        state.hidden = sorted(table.hidden)
        state.maximised = self.main.maximized is not None
        save_state(state, self.state_file)

    def _size_panels(self, percent: int) -> None:
        self.ui_state.panel_size = percent
        self.main.query_one("#bottom").styles.height = f"{percent}%"

    def action_maximise(self) -> None:
        """The decision panel fills the screen (the prompt stays); again: back."""
        if self.main.maximized is not None:
            self.main.minimize()
        else:
            self.main.maximize(self.main.query_one(DecisionPanel), container=False)
        self._remember()

    def action_panel_size(self) -> None:
        sizes = list(PANEL_SIZES)
        current = self.ui_state.panel_size
        self._size_panels(sizes[(sizes.index(current) + 1) % len(sizes)])
        self._remember()

    def on_unmount(self) -> None:
        self._remember()
        for timer in (self._debounce, self._panels_timer, self._skill_timer):
            if timer is not None:
                timer.stop()
        if self.live is not None:
            self.live.stop()

    # -- bad states, said on screen ------------------------------------------------------

    def _explain_library(self, snapshot: Index) -> None:
        if len(snapshot):
            self._set_message("")
            return
        missing = [p for p in snapshot.rejected if "does not exist" in p.message]
        if missing:
            text = "No skills: " + "; ".join(str(p) for p in missing)
        elif snapshot.rejected:
            text = f"No valid skills: {len(snapshot.rejected)} files rejected. Press F3 to see why."
        else:
            text = f"No SKILL.md files under {', '.join(snapshot.roots)}."
        self._set_message(text)

    def _set_message(self, text: str) -> None:
        self._screen_message = text
        message = self.main.query_one("#message", Static)
        message.update(plain(text))
        message.display = bool(text)

    def problems(self) -> list[Problem]:
        if self.snapshot is None:
            return []
        stale = [skill.stale for skill in self.snapshot.skills if skill.stale is not None]
        failures = (
            [Problem("(watcher)", failure) for failure in self.live.failures]
            if (self.live is not None)
            else []
        )
        return [*failures, *self.snapshot.rejected, *stale, *self.snapshot.warnings]

    def _refresh_status(self) -> None:
        snapshot = self.snapshot
        if snapshot is None:
            self.main.query_one(StatusBar).update(plain(f" {self.loading}"))
            return
        status = snapshot.models.status
        if self.loading:
            dense = "dense model loading"
        elif status.dense_error:
            dense = f"no dense model (BM25 + boosts only): {status.dense_error}"
        else:
            dense = f"dense {status.dense}"
        self.main.query_one(StatusBar).show(
            roots=", ".join(_readable(root) for root in snapshot.roots),
            skills=len(snapshot),
            dense=dense,
            reranker=f"reranker {status.reranker}" if status.reranker else RERANKER_HINT,
            last=self.last_change + _watch_note(self.live),
            errors=len(self.problems()),
            config=self.config_layers,
            loading=self.loading,
        )

    # -- deciding ------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.main.query_one(SkillsTable).set_filter(event.value)
            return
        if event.input.id != "prompt":
            return
        self._delta_base = None  # deltas compare snapshots for the same prompt only
        self._typing = True
        self.schedule_decide()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "prompt":
            self.history.add(event.value)
        elif event.input.id == "filter":
            self.main.query_one(SkillsTable).focus()  # the filter stays; Esc in the table: prompt

    def schedule_decide(self) -> None:
        """Leading-edge debounce: an idle app decides at once; keystrokes that arrive while
        a decision is computing coalesce into one more run after DEBOUNCE_S."""
        if self._debounce is not None:
            self._debounce.stop()
        if self._decider is not None and self._decider.is_running:
            self._debounce = self.set_timer(DEBOUNCE_S, self._decide_now)
        else:
            self._decide_now()

    def _decide_now(self) -> None:
        if self.snapshot is None:
            return
        try:
            prompt = self.main.query_one(PromptBar).value
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down
        self._decider = self.run_decide(prompt, self.pinned_prompt, self.snapshot, self.config)

    # A fixed description: by default Textual would repr the arguments, the Index included.
    @work(thread=True, exclusive=True, group="decide", description="decide")
    def run_decide(self, prompt: str, pinned: str | None, snapshot: Index, config: Config) -> None:
        decision = decide(prompt, snapshot, config, cwd=self.cwd)
        pinned_decision = (
            decide(pinned, snapshot, config, cwd=self.cwd) if pinned is not None else None
        )
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show, decision, pinned_decision, snapshot, config)

    def _show(
        self, decision: Decision, pinned: Decision | None, snapshot: Index, config: Config
    ) -> None:
        try:
            current = self.main.query_one(PromptBar).value
            table = self.main.query_one(SkillsTable)
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down (widgets go one by one)
        if decision.prompt != current or snapshot is not self.snapshot or config is not self.config:
            return  # computed for an older prompt, snapshot or config
        status = snapshot.models.status
        limits = Limits(
            min_similarity=decision.thresholds["min_similarity"],
            score_margin=decision.thresholds["score_margin"],
            rerank_min=decision.thresholds["rerank_min"],
            lexical_min=float(decision.tuning.get("lexical_min", 0.0)),
            reranker=status.reranker is not None,
            loading=snapshot is self.loading_snapshot,  # no dense model yet: numbers pending
        )
        # A decision on the loading snapshot ranked without the dense model: the first one
        # on the live snapshot starts at the top (or on --skill) like a new prompt does.
        same_prompt = (
            self.decision is not None
            and self.decision.prompt == decision.prompt
            and not (self._provisional() and snapshot is not self.loading_snapshot)
        )
        if self.initial_skill is not None and self.initial_skill in snapshot.positions:
            table.followed, self.initial_skill = self.initial_skill, None
        table.show(decision, limits, self._delta_base, keep_cursor=same_prompt)
        self.decision, self._decided_on = decision, snapshot
        self.highlighted = table.current_id()
        # The table follows every keystroke; the panels (long texts that re-lay out the
        # screen) follow once typing pauses, so they never delay the next keystroke.
        self.call_after_refresh(self._painted)
        if self._panels_timer is not None:
            self._panels_timer.stop()
        if not same_prompt or self._typing:
            self._panels_timer = self.set_timer(
                PANELS_DELAY_S, lambda: self._show_panels(decision, pinned)
            )
        else:  # a re-index or a threshold edit: no typing to keep up with
            self.call_after_refresh(self._show_panels, decision, pinned)

    def _provisional(self) -> bool:
        """Whether the decision on screen was made on the lexical-only loading snapshot."""
        return self._decided_on is not None and self._decided_on is self.loading_snapshot

    def _painted(self) -> None:
        self.painted_at = time.perf_counter()

    def _show_panels(self, decision: Decision, pinned: Decision | None) -> None:
        self._typing = False
        if decision is not self.decision:
            return
        try:
            self.main.query_one(DecisionPanel).show(
                decision, pinned, timings=self.show_timings, loading=self._provisional()
            )
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down
        if self.comparing and self._provisional():  # two lexical-only rankings: no diff
            self.main.query_one(CompareView).nothing(
                "dense model loading: compare once it is ready"
            )
        elif self.comparing:
            self.run_compare(decision, pinned, self.previous_snapshot, self.config)
        self._show_skill(self.highlighted)
        self.panels_shown = decision

    def on_cases_panel_case_chosen(self, event: CasesPanel.CaseChosen) -> None:
        """A failing case into the prompt: the table shows at once why it fails."""
        prompt = self.main.query_one(PromptBar)
        prompt.value = event.prompt
        prompt.cursor_position = len(event.prompt)
        prompt.focus()

    def on_tabbed_content_tab_activated(self) -> None:
        self._show_skill(self.highlighted)

    def on_skills_table_highlighted(self, event: SkillsTable.Highlighted) -> None:
        self.highlighted = event.skill_id
        # The panels (long texts that re-lay out the screen) follow once the cursor or
        # the filter pauses: a filter keystroke moved the cursor and paid for them at once.
        if self._skill_timer is not None:
            self._skill_timer.stop()
        self._skill_timer = self.set_timer(
            PANELS_DELAY_S, lambda: self._show_skill(self.highlighted)
        )
        if self.comparing:
            self.main.query_one(CompareView).follow(event.skill_id)

    def _show_skill(self, skill_id: str | None) -> None:
        snapshot, decision = self.snapshot, self.decision
        if snapshot is None or decision is None or skill_id not in snapshot.positions:
            return
        # The panels live on the main screen: query it, not whichever screen is on top (F2,
        # F3), and do nothing once it has been torn down (a late event at exit).
        tabs = self.screen_stack[0].query(TabbedContent) if self.screen_stack else None
        if not tabs:
            return
        position = snapshot.positions[skill_id]
        skill = snapshot.skills[position]
        main = self.screen_stack[0]
        table = main.query_one(SkillsTable)
        row = table.row_of(skill_id)
        if row is not None:
            main.query_one(DecisionPanel).show_reason(skill_id, table.reason_of(row))
        if tabs.first().active == "skill-tab":  # only the tab on screen
            main.query_one(SkillPanel).show(skill, snapshot.built_at, self.findings.get(skill.path))
        else:
            explain = snapshot.lexical.explain(decision.prompt, position)
            main.query_one(TermsPanel).show(skill, explain, row.matches if row else ())

    # -- thresholds ----------------------------------------------------------------------

    def action_thresholds(self) -> None:
        snapshot = self.snapshot
        loaded = snapshot is not None and snapshot is not self.loading_snapshot
        editor = ThresholdEditor(
            self.config,
            self.baseline,
            Path(PROJECT_CONFIG_NAME),
            sources=self.config_sources,
            status=snapshot.models.status if loaded and snapshot is not None else None,
            skills=len(snapshot) if snapshot is not None else 0,
        )
        self.push_screen(editor)

    def on_threshold_editor_edited(self, event: ThresholdEditor.Edited) -> None:
        if event.config == self.config:
            return  # nothing changed: no re-index, no re-run of lint and cases
        self.config = event.config
        if event.changed in INDEX_FIELDS and self.live is not None:
            self.live.config = event.config
            self.reindex()
        else:
            self.schedule_decide()
            if self.snapshot is not None and self.live is not None:
                self.quality(self.snapshot, self.config)
                self.run_history(self.snapshot, self.config)

    # -- commands ------------------------------------------------------------------------

    def action_reindex(self) -> None:
        self.reindex()

    @work(thread=True, exclusive=True, group="reindex", description="re-index")
    def reindex(self) -> None:
        if self.live is None:
            self.call_from_thread(self.notify, "still loading", severity="warning")
            return
        self.live.reindex_now()  # subscribers repaint

    def action_help(self) -> None:
        self.push_screen(TextScreen("Skill Explorer: keys and commands", self._help_text()))

    def _help_text(self) -> Text:
        out = Text()
        out.append("Type a prompt; every skill is scored as you type.\n\n")
        for binding in self.BINDINGS:
            if isinstance(binding, Binding):
                # The key in effect: the config's keymap, when it remaps this binding.
                key = self._keymap.get(binding.id or "", binding.key)
                out.append(visible(f"{key:<10}"), style="bold")
                out.append(f"{binding.description:<16}", style="")
                out.append(f" id: {binding.id}\n", style="dim")
        out.append(
            "\nIn the prompt: up/down and page up/down move the table's cursor while you type; "
            "alt+up/alt+down (or ctrl+up/ctrl+down) walk the prompt history.\nIn the table: "
            "/ filters, esc returns to the prompt, home follows the top row again; click a "
            "header to sort.\nTyping in the table, the tabs or a panel goes to the prompt "
            "(a panel's own keys, such as space in the decision panel, stay its own).\n"
            "The highlighted skill stays highlighted as the prompt changes. ctrl+p opens "
            "the command palette (toggle columns, sort, compare with the pinned prompt, …).\n"
            "In the editors (f2 thresholds, f7 what-if): f4 or ctrl+s saves, esc closes; "
            "ctrl+s takes a screenshot on the main screen only. The footer shows the keys "
            "that fit, most used first; this page lists them all.\nRemap any key by id in the "
            'config: keymap = { reindex = "ctrl+r" }.\n\nColumns: hybrid = cos + kw + ph + '
            "file (§3); bm25 raw (normalised) #rank; rerank logit (sigmoid), — when not "
            "reranked, off without a model; overlap matched/query terms and Jaccard.\n"
            "Verdict: INJECT, or the gate that dropped the skill.\nWhile the dense model "
            "loads, cos, hybrid and the verdict show … and the why column says so (only BM25 "
            "and overlap are final until then).\n",
        )
        return out

    def action_errors(self) -> None:
        failures = self.live.failures if self.live is not None else ()
        found = issues(self.snapshot, failures, self.findings)
        self.push_screen(ProblemsScreen(found, self.edit_file))

    def on_status_bar_errors_clicked(self) -> None:
        self.action_errors()

    def action_open_in_editor(self) -> None:
        if self.snapshot is None or self.highlighted not in self.snapshot.positions:
            self.notify("highlight a skill first", severity="warning")
            return
        self.edit_file(self.snapshot.skills[self.snapshot.positions[self.highlighted]].path)

    def edit_file(self, path: str, line: int | None = None) -> None:
        """Hand the terminal to $VISUAL/$EDITOR on `path`; a missing editor is a message."""
        open_in_editor(self, self.notify, path, name_file=True)

    def _still_loading(self, what: str) -> bool:
        """Say so and do nothing while the decision on screen is the lexical-only one: the
        JSON, the report and the what-if would quote thresholds the router will not use."""
        if self._provisional() or (
            self.snapshot is not None and self.snapshot is self.loading_snapshot
        ):
            self.notify(f"dense model loading: {what} once it is ready", severity="warning")
            return True
        return False

    def action_copy_json(self) -> None:
        if self._still_loading("copy the decision"):
            return
        if self.decision is not None:
            self.copy_to_clipboard(self.decision.to_json())
            self.notify("decision JSON copied to the clipboard")

    def action_export_markdown(self) -> None:
        if self.decision is None or self.snapshot is None or self._still_loading("export"):
            return
        text = markdown_report(self.decision, self.snapshot, self.highlighted)
        try:
            path = write_new_file("skill-explorer-why", ".md", text)
        except OSError as error:
            self.notify(visible(f"cannot export: {error}"), severity="error", markup=False)
            return
        self.notify(visible(f"explanation written to {path}"), markup=False)

    def action_pin(self) -> None:
        prompt = self.main.query_one(PromptBar).value
        self.pinned_prompt = None if self.pinned_prompt == prompt else prompt
        said = "unpinned" if self.pinned_prompt is None else f"pinned {prompt!r}"
        self.notify(visible(said), markup=False)
        self.schedule_decide()

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's action (same signature), but into the working directory, with a notice."""
        try:
            saved = self.save_screenshot(filename, path=path or os.getcwd())
        except OSError as error:
            message = visible(f"cannot save a screenshot: {error}")
            self.notify(message, severity="error", markup=False)
            return
        self.notify(visible(f"screenshot saved to {saved}"), markup=False)

    def toggle_column(self, key: str) -> None:
        self.main.query_one(SkillsTable).toggle_column(key)
        self._remember()

    # -- finding a skill -----------------------------------------------------------------

    def action_filter(self) -> None:
        field = self.main.query_one("#filter", Input)
        field.display = True
        field.focus()

    def action_focus_prompt(self) -> None:
        self.main.query_one(PromptBar).focus()

    def action_table_move(self, step: int) -> None:
        self.main.query_one(SkillsTable).move(step)

    def action_table_page(self, direction: int) -> None:
        table = self.main.query_one(SkillsTable)
        table.move(direction * max(1, table.size.height - 2))

    def on_key(self, event: events.Key) -> None:
        """A printable key that reached the app unhandled belongs to the prompt: typed there,
        and the prompt takes the focus. The focused widget (the table, a tab, a panel) had
        it first, and a binding anywhere in the focus chain (space in the decision panel, /
        in the table, the app's keys) keeps it: App._on_key runs after this and finds it."""
        if not (event.is_printable and event.character) or self.screen is not self.main:
            return
        if isinstance(self.focused, Input | TextArea) or event.key in self.active_bindings:
            return
        event.prevent_default()  # App._on_key (no binding for it) has nothing to do
        event.stop()
        prompt = self.main.query_one(PromptBar)
        prompt.focus()
        prompt.insert_text_at_cursor(event.character)

    def action_clear_filter(self) -> None:
        """Esc in the filter: every skill again, and back to the prompt."""
        field = self.main.query_one("#filter", Input)
        field.value = ""
        field.display = False
        self.main.query_one(SkillsTable).set_filter("")
        self.action_focus_prompt()

    def action_go_to(self) -> None:
        self.push_screen(CommandPalette(providers=[SkillCommands], placeholder="Go to skill…"))

    def go_to_skill(self, skill_id: str) -> None:
        """Put the cursor on a skill and keep it there as the prompt changes."""
        table = self.main.query_one(SkillsTable)
        if table.go_to(skill_id):
            if not table.filter_text:
                self.main.query_one("#filter", Input).value = ""
            self.highlighted = skill_id
            self._show_skill(skill_id)
        else:
            message = visible(f"no skill {skill_id!r} in the table yet")
            self.notify(message, severity="warning", markup=False)

    def sort_table(self, key: str) -> None:
        self.main.query_one(SkillsTable).sort_by(key)
        self._remember()

    def action_cycle_sort(self) -> None:
        table = self.main.query_one(SkillsTable)
        keys = list(SORT_KEYS)
        self.sort_table(keys[(keys.index(table.sort_key) + 1) % len(keys)])
        self.notify(f"sorted by {table.sort_key}", timeout=2)

    # -- what-if and compare (explorer/tui/whatif.py, compare.py) ------------------------

    def action_whatif(self) -> None:
        """F7: edit the highlighted skill's description and see its scores before saving."""
        snapshot = self.snapshot
        if snapshot is None or self.highlighted not in snapshot.positions:
            self.notify("highlight a skill first (up/down, or ctrl+g)", severity="warning")
            return
        if self._still_loading("what-if"):
            return
        report = self.cases_report
        try:
            screen = WhatIfScreen(
                snapshot,
                self.config,
                self.highlighted,
                self.decision.prompt if self.decision is not None else "",
                cases=[result.case for result in report.results] if report else None,
                cases_report=report,
                cases_source=os.path.basename(self.cases_path or ""),
                cwd=self.cwd,
            )
        except SaveError as error:
            self.notify(visible(str(error)), severity="error", markup=False, timeout=10)
            return
        self.push_screen(screen)

    def action_collisions(self) -> None:
        """ctrl+l: the pairs of skills that compete for the same prompts (tui/collisions.py)."""
        if self.snapshot is None or self._still_loading("the collision map"):
            return
        report = self.cases_report
        cases = [result.case for result in report.results] if report else []
        source = os.path.basename(self.cases_path or "")
        self.push_screen(CollisionsScreen(self.snapshot, self.config, cases, source))

    def action_compare(self) -> None:
        """F8: the ranking diff against the pinned prompt or the previous snapshot."""
        self.comparing = not self.comparing
        main = self.main
        main.query_one(SkillsTable).display = not self.comparing
        view = main.query_one(CompareView)
        view.display = self.comparing
        if self.comparing:
            view.nothing("comparing…")
            if self.decision is not None:
                self.schedule_decide()  # the panels, then the diff, follow the decision

    @work(thread=True, exclusive=True, group="compare", description="compare")
    def run_compare(
        self, decision: Decision, pinned: Decision | None, previous: Index | None, config: Config
    ) -> None:
        if pinned is not None:
            base, label = pinned, "pinned"
        elif previous is not None:
            base = decide(decision.prompt, previous, config, cwd=self.cwd)
            label = f"previous snapshot (v{previous.version})"
        else:
            self.call_from_thread(self._show_compare, None, "", decision)
            return
        diff = ranking_diff(base, decision, depth=DEPTH)
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show_compare, diff, label, decision)

    def _show_compare(self, diff: RankingDiff | None, label: str, decision: Decision) -> None:
        if decision is not self.decision or not self.comparing:
            return  # a newer decision's diff is on its way, or compare was closed
        try:
            view = self.main.query_one(CompareView)
        except (NoMatches, ScreenStackError):
            return
        if diff is None:
            view.nothing()
        else:
            view.show(diff, label, self.size.width, self.highlighted)

    def _compare_width(self, width: int) -> None:
        """The diff's columns follow the terminal's width."""
        try:
            view = self.main.query_one(CompareView)
        except (NoMatches, ScreenStackError):
            return
        if self.comparing and view.diff is not None:
            view.show(view.diff, view.base_label, width, self.highlighted)


def _default_cases(roots: Sequence[str]) -> str | None:
    """A library's own cases.toml, when the explorer opens one root that has it."""
    if len(roots) == 1 and os.path.isfile(os.path.join(roots[0], "cases.toml")):
        return os.path.join(roots[0], "cases.toml")
    return None


def _content_key(snapshot: Index) -> tuple[object, ...]:
    """What lint and the cases read from a snapshot: every file's path and content hash,
    the stale marks, the rejected files and warnings, and whether vectors exist (the dense
    near-duplicate check). Two snapshots with the same key give the same findings."""
    return (
        snapshot.paths,
        tuple(skill.hash for skill in snapshot.skills),
        tuple(skill.stale for skill in snapshot.skills),
        snapshot.rejected,
        snapshot.warnings,
        snapshot.models.status.dense,
        snapshot.vectors is not None,
    )


def _stat_key(path: str | None) -> tuple[int, int] | None:
    """A file's size and mtime: an edited cases file re-runs the cases (F5)."""
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (stat.st_size, stat.st_mtime_ns)


def _readable(path: str) -> str:
    """A root as typed on the command line: relative when it is under the working directory."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _watch_note(live: object) -> str:
    """The live index's last note (an OS watch limit, polling), short enough for one line."""
    notes = getattr(live, "notes", None)
    if not notes:
        return ""
    note = notes[-1]
    command = note.split("Raise it with: ")[-1] if "Raise it with: " in note else note
    return f" │ ⚠ polling by stat; {command}"
