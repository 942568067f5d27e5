"""The explorer app: a prompt in, every skill's channels, terms and gates out, live.

Rooms: the state is one plain object (explorer/tui/state.py); the widgets live on the main
screen (explorer/tui/screens/main.py), reached through its typed accessors; the background
work is explorer/tui/tasks.py; the messages the threads post are explorer/tui/messages.py.
This class holds them together: the keys, the workers, and what each event changes.

Threads: Textual's loop owns the screen. Loading, decide() and quality checks run in
workers and hand results back with call_from_thread. The live index's watcher thread
never waits on the UI: it posts IndexChanged and WatcherFailed and goes back to watching.
A result for an older prompt, config or snapshot is dropped, never shown. Lint with the
cases, and the history replay, run one at a time each (tasks.InTurn): the newest
snapshot waits for the run before it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from textual import events, work
from textual.app import App, ScreenStackError
from textual.command import CommandPalette
from textual.css.query import NoMatches
from textual.reactive import Reactive
from textual.timer import Timer
from textual.worker import Worker

from explorer.engine import Config, Decision, Index, LiveIndex
from explorer.engine.discovery import Problem
from explorer.terminal import visible
from explorer.tui import exports, palette, tasks
from explorer.tui.commands import ExplorerCommands, SkillCommands
from explorer.tui.editor import open_in_editor
from explorer.tui.health import issues
from explorer.tui.history import PromptHistory
from explorer.tui.keys import HELP_NOTES, KEYS, apply_keymap, bindings_of, help_text
from explorer.tui.messages import EmbeddingProgress, IndexChanged, LiveReady, WatcherFailed
from explorer.tui.screens import (
    INDEX_FIELDS,
    MainScreen,
    ProblemsScreen,
    TextScreen,
    ThresholdEditor,
)
from explorer.tui.state import ConfigLayers, ExplorerState, Options, SnapshotFacts, load_state

DEBOUNCE_S = 0.01  # keystrokes during a running decision coalesce over this window


class ExplorerApp(App[None]):
    """Skill Explorer: type a prompt, see why each skill triggers or not."""

    CSS_PATH = "explorer.tcss"
    # Readable in both themes: every colour pair at 4.5:1 or more (explorer/tui/palette.py).
    ansi_theme_dark = Reactive(palette.ANSI_DARK, init=False)
    ansi_theme_light = Reactive(palette.ANSI_LIGHT, init=False)
    ALLOW_IN_MAXIMIZED_VIEW = "QuietFooter, StatusBar, PromptBar"  # keep typing while maximised
    TITLE = "Skill Explorer"
    COMMANDS = {ExplorerCommands}  # commands.py: the app's, and no system commands
    BINDINGS = bindings_of(KEYS)

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
        layers: ConfigLayers | None = None,
    ) -> None:
        super().__init__()
        roots = tuple(os.path.abspath(root) for root in roots)
        self.options = Options(
            roots=roots,
            cache_dir=cache_dir,
            initial_prompt=initial_prompt,
            show_timings=show_timings,
            cases_path=cases_path or tasks.default_cases(roots),
            cases_given=bool(cases_path),
            cases_skill=cases_skill,
            cwd=cwd,
            history_log=history_log,
        )
        palette.use_measured_themes(self)
        self.state = ExplorerState(
            config, config, layers=layers or ConfigLayers(), initial_skill=initial_skill
        )
        self.state.ui = load_state(self.options.state_file)
        self._main = MainScreen(self.state, self.options, history or PromptHistory())
        self._debounce: Timer | None = None
        self._decider: Worker[None] | None = None
        self.turns = tasks.InTurn({"quality": self.run_quality, "history": self.run_history})
        self.beat = tasks.LoopBeat(  # background work gives way
            lambda: self.turns.busy, lambda: self.live is not None and self.live.changing
        )
        self.collections = tasks.IdleCollections(lambda: self.turns.busy)
        self.created_at = time.perf_counter()

    # The state read most from outside (tests, the benchmarks, the demo script).
    @property
    def config(self) -> Config:
        return self.state.config

    @property
    def snapshot(self) -> Index | None:
        return self.state.snapshot

    @property
    def decision(self) -> Decision | None:
        return self.state.decision

    @property
    def live(self) -> LiveIndex | None:
        return self.state.live

    @property
    def main(self) -> MainScreen:
        """The screen the explorer's widgets live on, whichever screen is on top."""
        if not self._main.is_attached:
            raise NoMatches("the main screen is not mounted")
        return self._main

    def get_default_screen(self) -> MainScreen:
        return self._main

    def on_mount(self) -> None:
        self.collections.start(self)
        if self.state.config.keymap:
            apply_keymap(self, self.state.config.keymap)
        self.call_after_refresh(self._first_paint)

    def _first_paint(self) -> None:
        self.state.first_paint_ms = (time.perf_counter() - self.created_at) * 1000

    def on_main(self, draw: Callable[..., None], *args: Any) -> None:
        """Draw on the main screen unless the app is closing and its widgets are gone. A worker
        passes `lambda: app.main.show_...(...)`, so `app.main` is read inside this guard."""
        try:
            draw(*args)
        except (NoMatches, ScreenStackError):
            return

    def on_unmount(self) -> None:
        self.beat.stop()
        self.collections.stop()
        self._main.remember()
        if self._debounce is not None:
            self._debounce.stop()
        if self.state.live is not None:
            self.state.live.stop()

    # -- background work (explorer/tui/tasks.py) -----------------------------------------

    @work(thread=True, exclusive=True, group="load", description="load the library")
    def load(self) -> None:
        tasks.load_library(self)

    # Not exclusive: a thread cannot be stopped, so a cancelled run would go on beside the
    # new one. `self.turns` starts the next run when this one ends.
    @work(thread=True, group="quality", description="cases and lint")
    def run_quality(self, snapshot: tasks.Handoff[Index], config: Config) -> None:
        tasks.lint_and_cases(self, snapshot.take(), config)

    @work(thread=True, group="history", description="history replay")
    def run_history(self, snapshot: tasks.Handoff[Index], config: Config) -> None:
        tasks.replay_history(self, snapshot.take(), config)

    # A fixed description: by default Textual would repr the arguments, the Index included.
    @work(thread=True, exclusive=True, group="decide", description="decide")
    def run_decide(
        self, prompt: str, pinned: str | None, snapshot: tasks.Handoff[Index], config: Config
    ) -> None:
        tasks.decide_prompt(self, prompt, pinned, snapshot.take(), config)

    @work(thread=True, exclusive=True, group="compare", description="compare")
    def run_compare(
        self,
        decision: Decision,
        pinned: Decision | None,
        previous: tasks.Handoff[Index | None],
        config: Config,
    ) -> None:
        tasks.compare_rankings(self, decision, pinned, previous.take(), config)

    @work(thread=True, exclusive=True, group="reindex", description="re-index")
    def reindex(self) -> None:
        if self.state.live is None:
            self.call_from_thread(self.notify, "still loading", severity="warning")
            return
        self.state.live.reindex_now()  # subscribers repaint

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.collections.key()
        await super().on_event(event)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self.turns.finished(event.worker, start_next=self.is_running):
            self.collections.after_background()

    @property
    def background_busy(self) -> bool:
        """Whether lint and the cases, or the history replay, run or wait."""
        return self.turns.busy

    def quality(self, snapshot: Index, config: Config) -> None:
        """Lint and the cases for a new snapshot or config, unless the last run had the same
        files and config: "re-index now" makes a new snapshot of the same files, and
        linting it again cost ~40 s of CPU at 26,000 skills."""
        key = tasks.quality_key(self, snapshot)
        if self.state.quality_for == (key, config):
            return
        self.state.quality_for = (key, config)
        self.turns.run("quality", snapshot, config)
        self.beat.start()
        self.state.quality_running = True  # the status bar's recall is the last run's
        self.main.refresh_status()

    def replay(self, snapshot: Index, config: Config) -> None:
        """Replay the telemetry log on this snapshot, unless the last replay had the same
        files and config."""
        key = (self.state.facts_of(snapshot).content, config)
        if self.options.history_log and key != self.state.history_for:
            self.state.history_for = key
            self.turns.run("history", snapshot, config)
            self.beat.start()

    # -- the library: loading, then every change on disk -----------------------------------

    def set_loading(self, text: str) -> None:
        self.state.loading = text
        self.main.refresh_status()

    def use_snapshot(
        self,
        snapshot: Index,
        loading: str,
        *,
        provisional: bool = False,
        facts: SnapshotFacts | None = None,
    ) -> None:
        if provisional:
            self.state.loading_snapshot = snapshot
        self.state.facts_of(snapshot, facts)  # made off the loop when the caller could
        self.state.snapshot, self.state.loading = snapshot, loading
        self.main.show_library(snapshot)
        self.schedule_decide()
        if not loading:
            self.quality(snapshot, self.state.config)
            self.replay(snapshot, self.state.config)

    def on_live_ready(self, message: LiveReady) -> None:
        if self.state.live is not None:
            use = partial(self.use_snapshot, facts=message.facts)
            self.on_main(use, self.state.live.snapshot, "")

    def on_embedding_progress(self, message: EmbeddingProgress) -> None:
        if not self.state.loading:
            return  # the live snapshot is in: a late message says nothing new
        done, total = message.done, message.total
        text = (
            f"embedding {done:,}/{total:,} descriptions ({100 * done // total if total else 100}%)…"
        )
        if done >= total:
            text = f"embedded {total:,} descriptions; building the index…"
        self.on_main(self.set_loading, text)

    def on_index_changed(self, message: IndexChanged) -> None:
        self.on_main(self._index_changed, message)

    def on_watcher_failed(self, message: WatcherFailed) -> None:
        self.on_main(lambda: self.main.refresh_status())
        self.notify(visible(message.failure), severity="error", timeout=10, markup=False)

    def _index_changed(self, message: IndexChanged) -> None:
        state = self.state
        if state.live is None:
            return
        added, removed, changed = message.counts()
        state.last_change = f"re-indexed +{added} -{removed} ~{changed}"
        if self.options.show_timings:
            state.last_change += f" at {time.strftime('%H:%M:%S')} in {message.total_ms():.0f} ms"
        if state.decision is not None and not state.provisional():
            state.delta_base = state.decision.rows.mapping()  # lazy: rows made when drawn
        if added or removed or changed:  # compare's base (f8)
            state.previous_snapshot = state.snapshot
        self.use_snapshot(state.live.snapshot, "", facts=message.facts)

    def problems(self) -> list[Problem]:
        snapshot, live = self.state.snapshot, self.state.live
        if snapshot is None:
            return []
        facts = self.state.facts_of(snapshot)
        failures = [Problem("(watcher)", failure) for failure in live.failures] if live else []
        return [*failures, *snapshot.rejected, *facts.warnings]

    # -- deciding ------------------------------------------------------------------------

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
        state = self.state
        if state.snapshot is None:
            return
        try:
            prompt = self.main.prompt.routed
        except NoMatches:
            return  # the app is shutting down
        self._decider = self.run_decide(
            prompt, state.pinned_prompt, tasks.Handoff(state.snapshot), state.config
        )

    def show_decision(
        self, decision: Decision, pinned: Decision | None, snapshot: Index, config: Config
    ) -> None:
        """A worker's decision onto the screen, unless it is for an older prompt, snapshot
        or config."""
        state = self.state
        try:
            current = self.main.prompt.routed
            if (
                decision.prompt != current
                or snapshot is not state.snapshot
                or config is not state.config
            ):
                return
            self.main.show_decision(decision, pinned, snapshot)
        except (NoMatches, ScreenStackError):
            return  # the app is shutting down (widgets go one by one: the prompt or the table)

    # -- the editors and pages over the main screen --------------------------------------

    def action_thresholds(self) -> None:
        self.main.open_thresholds()

    def on_threshold_editor_edited(self, event: ThresholdEditor.Edited) -> None:
        state = self.state
        if event.config == state.config:
            return  # nothing changed: no re-index, no re-run of lint and cases
        state.config = event.config
        self.main.refresh_status()  # names the live edit
        if event.changed in INDEX_FIELDS and state.live is not None:
            state.live.config = event.config
            self.reindex()
            return
        self.schedule_decide()
        if state.snapshot is not None and state.live is not None:
            self.quality(state.snapshot, state.config)
            self.replay(state.snapshot, state.config)

    def action_help(self) -> None:
        self.push_screen(
            TextScreen("Skill Explorer: keys and symbols", help_text(self, HELP_NOTES))
        )

    def action_errors(self) -> None:
        failures = self.state.live.failures if self.state.live is not None else ()
        found = issues(self.state.snapshot, failures, self.state.findings)
        snapshot = self.state.snapshot
        self.push_screen(ProblemsScreen(found, self.edit_file, snapshot.roots if snapshot else ()))

    def action_whatif(self) -> None:
        self.main.open_whatif()

    def action_collisions(self) -> None:
        self.main.open_collisions()

    def action_copy_json(self) -> None:
        exports.copy_decision(self)

    def action_export_markdown(self) -> None:
        exports.export_markdown(self)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's action (same signature), but into the working directory, with a notice."""
        exports.screenshot(self, filename, path)

    def action_open_in_editor(self) -> None:
        snapshot, skill_id = self.state.snapshot, self.state.highlighted
        if snapshot is None or skill_id not in snapshot.positions:
            self.notify("highlight a skill first", severity="warning")
            return
        self.edit_file(snapshot.skills[snapshot.positions[skill_id]].path)

    def edit_file(self, path: str, line: int | None = None) -> None:
        """Hand the terminal to $VISUAL/$EDITOR on `path`; a missing editor is a message."""
        open_in_editor(self, self.notify, path, name_file=True)

    # -- keys that act on the main screen ---------------------------------------------------

    def action_pin(self) -> None:
        prompt = self.main.prompt.routed
        state = self.state
        state.pinned_prompt = None if state.pinned_prompt == prompt else prompt
        said = "unpinned" if state.pinned_prompt is None else f"pinned {prompt!r}"
        self.notify(visible(said), markup=False)
        self.schedule_decide()

    def action_compare(self) -> None:
        self.main.toggle_compare()

    def action_reindex(self) -> None:
        self.reindex()

    def action_go_to(self) -> None:
        self.push_screen(CommandPalette(providers=[SkillCommands], placeholder="Go to skill…"))

    def go_to_skill(self, skill_id: str) -> None:
        self.main.go_to_skill(skill_id)

    def toggle_column(self, key: str) -> None:
        self.main.toggle_column(key)

    def sort_table(self, key: str) -> None:
        self.main.sort_table(key)

    def action_cycle_sort(self) -> None:
        self.main.cycle_sort()

    def action_maximise(self) -> None:
        self.main.toggle_maximised()

    def action_panels(self) -> None:
        self.main.next_bottom()

    def action_next_tab(self) -> None:
        self.main.next_tab()

    def action_panel_size(self) -> None:
        self.main.next_panel_size()

    def action_filter(self) -> None:
        self.main.action_filter()
