"""The main screen: the prompt, the skills table (or the ranking diff), the tabs, the
decision panel and the status bar, drawn from the app's state (explorer/tui/state.py).

The widgets live here and nowhere else: the app reaches them through this screen's typed
accessors, so an update made while F2, F3 or the palette is on top still finds them (the
app's own query searches only the screen on top). Everything here runs on the UI thread.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Static, TabbedContent, TabPane, TextArea

from explorer.engine import Config, Decision, Index
from explorer.engine.author import CollisionMap, RankingDiff, SaveError
from explorer.engine.base import FIELD_NAMES, PROJECT_CONFIG_NAME, did_you_mean, give_back
from explorer.engine.host import Replay, UsageReport
from explorer.engine.inference import Attribution
from explorer.engine.route import room_text
from explorer.terminal import plain, visible
from explorer.tui import tasks
from explorer.tui.collisions import CollisionsScreen
from explorer.tui.compare import CompareView
from explorer.tui.exports import still_loading
from explorer.tui.health import short_path
from explorer.tui.history import PromptHistory
from explorer.tui.keys import prompt_editing_keys
from explorer.tui.screens.thresholds import ThresholdEditor
from explorer.tui.state import (
    BOTTOM_VIEWS,
    PANEL_SIZES,
    ExplorerState,
    Options,
    UIState,
    save_state,
)
from explorer.tui.tasks import Quality
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets import update_text
from explorer.tui.widgets.cases_panel import NO_CASES, CasesPanel, cases_status
from explorer.tui.widgets.decision_panel import DecisionPanel
from explorer.tui.widgets.footer import QuietFooter
from explorer.tui.widgets.history_panel import HistoryPanel
from explorer.tui.widgets.prompt_bar import FilterBar, PromptBar
from explorer.tui.widgets.skill_panel import SkillPanel
from explorer.tui.widgets.skills_table import SORT_KEYS, Limits, SkillsTable
from explorer.tui.widgets.status_bar import Status, StatusBar
from explorer.tui.widgets.terms_panel import TermsPanel

if TYPE_CHECKING:
    from explorer.tui.app import ExplorerApp

PROMPT_EDITING_KEYS = prompt_editing_keys()

PANELS_DELAY_S = 0.08  # the decision, terms and skill panels catch up when typing pauses
PROMPT_SETTLED_S = 2.0  # a prompt that stood this long is kept in the history once cleared
CASES_POLL_S = 1.0  # how often the cases file is looked at (one stat): no watcher sees it
NARROW_WIDTH = 110
RERANKER_HINT = "no reranker: set reranker = DIR"


class MainScreen(Screen[None]):
    """The explorer's one full screen; every other screen opens over it."""

    def __init__(self, state: ExplorerState, options: Options, history: PromptHistory) -> None:
        super().__init__()
        self.state, self.options, self.history = state, options, history
        self._panels_timer: Timer | None = None
        self._skill_timer: Timer | None = None
        self._settle_timer: Timer | None = None
        self._settled = ""  # the last prompt that stood a while: kept when the prompt is cleared
        # F4's view that F9 replaced to show the decision panel: back when F9 (or esc) ends
        self._view_under_maximised: str | None = None

    @property
    def explorer(self) -> ExplorerApp:
        return cast("ExplorerApp", self.app)

    # -- the widgets, typed ----------------------------------------------------------------

    @property
    def prompt(self) -> PromptBar:
        return self.query_one(PromptBar)

    @property
    def filter(self) -> FilterBar:
        return self.query_one(FilterBar)

    @property
    def table(self) -> SkillsTable:
        return self.query_one(SkillsTable)

    @property
    def compare_view(self) -> CompareView:
        return self.query_one(CompareView)

    @property
    def decision_panel(self) -> DecisionPanel:
        return self.query_one(DecisionPanel)

    @property
    def tabs(self) -> TabbedContent:
        return self.query_one(TabbedContent)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    # -- layout ----------------------------------------------------------------------------

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
                        yield CasesPanel(self.options.cases_file, id="cases")
                    if self.options.history_log:
                        with TabPane("History", id="history-tab"):
                            yield HistoryPanel(id="history")
                yield DecisionPanel(id="decision")
        yield StatusBar(id="status")
        yield QuietFooter()

    def on_mount(self) -> None:
        self.prompt.value = self.options.initial_prompt
        self.prompt.focus()
        self.filter.display = False
        self.compare_view.display = False
        self.layout_for(self.app.size.width)
        self.restore(self.state.ui)
        self.set_message("Loading the library…")
        self.refresh_status()
        self.explorer.load()  # once the screen that shows the library is there
        if self.options.cases_path:
            self.set_interval(CASES_POLL_S, self._cases_saved)

    def _cases_saved(self) -> None:
        """The cases file is no skill, so the live index does not watch it: a cases.toml
        made, edited or removed re-runs the cases as a saved SKILL.md does (quality() runs
        only when the file's size or time changed)."""
        snapshot = self.state.snapshot
        if snapshot is not None and self.state.live is not None:
            self.explorer.quality(snapshot, self.state.config)

    def on_resize(self, event: events.Resize) -> None:
        self.layout_for(event.size.width)

    def layout_for(self, width: int) -> None:
        self.app.set_class(width < NARROW_WIDTH, "narrow")
        self.show_bottom(narrow=width < NARROW_WIDTH)
        view = self.compare_view
        if self.state.comparing and view.diff is not None:  # the diff's columns follow the width
            view.show(view.diff, view.base_label, width, self.state.highlighted)

    def on_unmount(self) -> None:
        for timer in (self._panels_timer, self._skill_timer):
            if timer is not None:
                timer.stop()

    # -- the layout a user chose, kept per user (tui/state.py) -----------------------------

    def restore(self, state: UIState) -> None:
        table = self.table
        if state.sort_key in SORT_KEYS:
            table.sort_key, table.sort_reverse = state.sort_key, state.sort_reverse
        table.hidden = {key for key in state.hidden if key not in ("skill", "verdict")}
        self.size_panels(state.panel_size)
        if state.maximised:
            self._maximise_decision()

    def remember(self) -> None:
        if not self.is_attached:
            return
        state, table = self.state.ui, self.table
        state.sort_key, state.sort_reverse = table.sort_key, table.sort_reverse
        state.hidden = sorted(table.hidden)
        state.maximised = self.maximized is not None
        # While F9 shows the decision panel in the tabs' place, F4's own view is kept.
        under = self._view_under_maximised
        saved = state if under is None else dataclasses.replace(state, bottom=under)
        save_state(saved, self.options.state_file)

    def show_bottom(self, *, narrow: bool | None = None) -> None:
        """F4's choice below the table: on a narrow terminal one panel at a time."""
        narrow = self.app.has_class("narrow") if narrow is None else narrow
        view = self.state.ui.bottom
        if view == "auto":
            view = "tabs" if narrow else "both"
        bottom = self.query_one("#bottom")
        bottom.set_class(view == "tabs", "only-tabs")
        bottom.set_class(view == "decision", "only-decision")

    def next_bottom(self) -> None:
        """F4: narrow, the tabs and the decision in turn; wide, both, then each alone."""
        ui, narrow = self.state.ui, self.app.has_class("narrow")
        # Narrow, "auto" is the tabs: two presses come back to it, and a wide terminal
        # then shows both again.
        order = ("auto", "decision") if narrow else BOTTOM_VIEWS
        current = "auto" if narrow and ui.bottom == "tabs" else ui.bottom
        ui.bottom = order[(order.index(current) + 1) % len(order)]
        self._view_under_maximised = None  # chosen now: F9 has nothing to bring back
        self.show_bottom()
        self.remember()

    def next_tab(self) -> None:
        """ctrl+n: the next of the tabs below the table (Terms, Skill, Cases; History with a log),
        from the keyboard; a bottom panel showing only the decision shows the tabs."""
        if self.query_one("#bottom").has_class("only-decision"):
            self._view_under_maximised = None
            self.state.ui.bottom = "auto" if self.app.has_class("narrow") else "tabs"
            self.show_bottom()
            self.remember()
        tabs = self.tabs
        panes = [pane.id for pane in tabs.query(TabPane) if pane.id]
        if panes:
            at = panes.index(tabs.active) if tabs.active in panes else -1
            tabs.active = panes[(at + 1) % len(panes)]

    def size_panels(self, percent: int) -> None:
        self.state.ui.panel_size = percent
        self.query_one("#bottom").styles.height = f"{percent}%"

    def toggle_maximised(self) -> None:
        """The decision panel fills the screen (the prompt stays); again: back."""
        if self.maximized is not None:
            self.minimize()
        else:
            self._maximise_decision()
        self.remember()

    def _maximise_decision(self) -> None:
        if self.query_one("#bottom").has_class("only-tabs"):  # F4 had hidden it
            self._view_under_maximised = self.state.ui.bottom
            self.state.ui.bottom = "decision"
            self.show_bottom()
        self.maximize(self.decision_panel, container=False)

    def watch_maximized(self, _before: Widget | None, maximized: Widget | None) -> None:
        """Back from the maximised decision panel (F9 or esc), F4's view comes back too:
        the tabs it had hidden the decision panel for."""
        if maximized is None and self._view_under_maximised is not None:
            self.state.ui.bottom, self._view_under_maximised = self._view_under_maximised, None
            self.show_bottom()
            self.remember()  # esc ends it too, past toggle_maximised

    def next_panel_size(self) -> None:
        """F10: the next of the panels' heights that changes what is on screen; on a short
        terminal the panels' least height makes two of them one, and a press that moved
        nothing read as a key that does nothing."""
        sizes = list(PANEL_SIZES)
        at = sizes.index(self.state.ui.panel_size)
        following = [sizes[(at + step) % len(sizes)] for step in range(1, len(sizes))]
        now = self._panel_rows(sizes[at])
        chosen = next((size for size in following if self._panel_rows(size) != now), following[0])
        self.size_panels(chosen)
        self.remember()

    def _panel_rows(self, percent: int) -> int:
        """The rows the panels below the table take at `percent` of the height they share
        with it (`#bottom` in explorer.tcss: a percentage, and a least height)."""
        bottom = self.query_one("#bottom")
        share = bottom.parent.size.height if isinstance(bottom.parent, Widget) else 0
        least = bottom.styles.min_height
        return max(int(least.value) if least is not None else 0, share * percent // 100)

    def toggle_column(self, key: str) -> None:
        self.table.toggle_column(key)
        self.remember()
        self.notify(f"column {key}: {self.table.column_state(key)}", timeout=3)

    def sort_table(self, key: str) -> None:
        self.table.sort_by(key)
        self.remember()

    def on_skills_table_sort_chosen(self, event: SkillsTable.SortChosen) -> None:
        self.sort_table(event.key)

    def cycle_sort(self) -> None:
        table, keys = self.table, list(SORT_KEYS)
        self.sort_table(keys[(keys.index(table.sort_key) + 1) % len(keys)])
        self.notify(f"sorted by {table.sort_key} {table.sort_mark()}".rstrip(), timeout=2)

    # -- the library and its health --------------------------------------------------------

    def show_library(self, snapshot: Index) -> None:
        """A new snapshot: the filter's descriptions, the health marks, the status bar, and
        the notice over the table when there is nothing to score."""
        self.table.descriptions = _Descriptions(snapshot)
        # Rejected files greyed with the reason, recovered files marked ⚠.
        facts = self.state.facts_of(snapshot)
        self.table.set_health(snapshot.rejected, facts.warned_reasons)
        self.refresh_status()
        self.set_message(_library_message(snapshot))

    def set_message(self, text: str) -> None:
        self.state.message = text
        message = self.query_one("#message", Static)
        update_text(message, plain(text))
        message.display = bool(text)

    def refresh_status(self) -> None:
        state, snapshot = self.state, self.state.snapshot
        if snapshot is None:
            self.status.update(plain(f" {state.loading}"))
            return
        status = snapshot.models.status
        warnings = state.facts_of(snapshot).warnings
        if state.loading:
            dense = "dense model loading"
        elif status.dense_error:
            dense = f"no dense model (BM25 + boosts only): {status.dense_error}"
        else:
            dense = f"dense {status.dense}"
        first_run = bool(self.options.cases_file) and state.quality_running
        self.status.show(
            Status(
                roots=", ".join(short_path(root) for root in snapshot.roots),
                short_roots=_short_roots(snapshot.roots),
                skills=len(snapshot),
                dense=dense,
                reranker=f"reranker {status.reranker}" if status.reranker else RERANKER_HINT,
                last=state.last_change + _watch_note(state.live),
                errors=len(self.explorer.problems()) - len(warnings),
                warnings=len(warnings),
                lint_errors=state.lint_errors,
                config=self.state.layers.text,
                edits=", ".join(_edited(state)),
                loading=state.loading,
                cases=cases_status(
                    state.cases_report,
                    state.comparison,
                    first=first_run,
                    problem=state.cases_problem,
                ),
                cases_compact=cases_status(
                    state.cases_report,
                    state.comparison,
                    first=first_run,
                    compact=True,
                    problem=state.cases_problem,
                ),
                cases_running=state.quality_running,
            )
        )

    # -- the decision ----------------------------------------------------------------------

    def show_decision(self, decision: Decision, pinned: Decision | None, snapshot: Index) -> None:
        """The table at once; the panels once typing pauses."""
        state, table = self.state, self.table
        status = snapshot.models.status
        limits = Limits(
            min_similarity=decision.thresholds["min_similarity"],
            score_margin=decision.thresholds["score_margin"],
            rerank_min=decision.thresholds["rerank_min"],
            lexical_min=float(decision.tuning.get("lexical_min", 0.0)),
            reranker=status.reranker is not None,
            loading=snapshot is state.loading_snapshot,  # no dense model yet: numbers pending
        )
        # A decision on the loading snapshot ranked without the dense model: the first one
        # on the live snapshot starts at the top (or on --skill) like a new prompt does.
        same_prompt = (
            state.decision is not None
            and state.decision.prompt == decision.prompt
            and not (state.provisional() and snapshot is not state.loading_snapshot)
        )
        wanted = state.initial_skill
        if wanted is not None and wanted in snapshot.positions:
            table.followed, state.initial_skill = wanted, None
        elif wanted is not None and snapshot is not state.loading_snapshot:
            state.initial_skill = None  # the whole library is in, and it is not there
            hint = did_you_mean(wanted, snapshot.ids)
            roots = ", ".join(snapshot.roots)
            message = visible(f"--skill {wanted!r}: no such skill in {roots}{hint}")
            self.notify(message, severity="warning", markup=False, timeout=10)
        table.show(decision, limits, state.delta_base, keep_cursor=same_prompt)
        state.decision, state.decided_on = decision, snapshot
        if state.loading_snapshot is not None and snapshot is not state.loading_snapshot:
            self._drop_loading_snapshot()
        state.highlighted = table.current_id()
        self.call_after_refresh(self._painted, snapshot)
        # The table follows every keystroke; the panels (long texts that re-lay out the
        # screen) follow once typing pauses, so they never delay the next keystroke.
        if self._panels_timer is not None:
            self._panels_timer.stop()
        if not same_prompt or state.typing:
            self._panels_timer = self.set_timer(
                PANELS_DELAY_S, lambda: self.show_panels(decision, pinned)
            )
        else:  # a re-index or a threshold edit: no typing to keep up with
            self.call_after_refresh(self.show_panels, decision, pinned)

    def _painted(self, snapshot: Index) -> None:
        self.state.painted_at, self.state.painted_on = time.perf_counter(), snapshot

    def _drop_loading_snapshot(self) -> None:
        """The live library's first decision is on screen: the lexical-only copy of the
        library shown while the models loaded goes.

        Then, once, at the first quiet moment (tasks.IdleCollections), what lives as long
        as the app (the library, the models, the widgets) leaves the collector's
        generations, so a collection never walks it while a key waits, and what the copy
        held goes back to the system (a trim walks the heaps: off the event loop). Once
        only: frozen at every new snapshot, each save's snapshot stayed for good (5 MB a
        save at 2,289 skills)."""
        self.state.loading_snapshot = None
        self.explorer.collections.freeze_when_quiet(self._give_memory_back)

    def _give_memory_back(self) -> None:
        self.run_worker(give_back, thread=True, group="memory", description="give memory back")

    def show_panels(self, decision: Decision, pinned: Decision | None) -> None:
        state = self.state
        state.typing = False
        if decision is not state.decision or not self.is_attached:
            return
        loading = state.provisional()
        self.decision_panel.show(
            decision, pinned, timings=self.options.show_timings, loading=loading
        )
        if state.comparing and loading:  # two lexical-only rankings: no diff
            self.compare_view.nothing("dense model loading: compare once it is ready")
        elif state.comparing:
            self.explorer.run_compare(
                decision, pinned, tasks.Handoff(state.previous_snapshot), state.config
            )
        self.show_skill(state.highlighted)
        state.panels_shown = decision

    def show_skill(self, skill_id: str | None) -> None:
        """The highlighted skill's reason, and the tab on screen (Terms or Skill)."""
        snapshot, decision = self.state.snapshot, self.state.decision
        if snapshot is None or decision is None or skill_id not in snapshot.positions:
            return
        if not self.is_attached:
            return  # a late event at exit: the widgets are gone
        position = snapshot.positions[skill_id]
        skill = snapshot.skills[position]
        table = self.table
        row = table.row_of(skill_id)
        if row is not None:
            self.decision_panel.show_reason(
                skill_id, table.reason_of(row), room_text(decision, row)
            )
        if self.tabs.active == "skill-tab":  # only the tab on screen
            findings = self.state.findings.get(skill.path)
            panel = self.query_one(SkillPanel)
            panel.show(skill, snapshot.built_at, findings)
            panel.show_attribution(skill_id, None, "reranker: scoring each sentence…")
            work = partial(tasks.attribute_sentences, self, snapshot, decision.prompt, skill_id)
            self.run_worker(work, thread=True, exclusive=True, group="attribution")
        else:
            explain = snapshot.lexical.explain_terms(decision.query_terms, position)
            matches = row.matches if row else ()
            self.query_one(TermsPanel).show(skill, explain, matches, decision.prompt)

    def show_attribution(self, skill_id: str, prompt: str, found: Attribution | None) -> None:
        """A worker's sentence attribution, unless the cursor or the prompt moved on."""
        decision = self.state.decision
        if skill_id != self.state.highlighted or decision is None or decision.prompt != prompt:
            return
        note = "" if prompt.strip() else "type a prompt to see what each sentence adds"
        if found is not None:
            try:
                reranked = decision.row(skill_id).rerank is not None
            except KeyError:  # gone from the library since the worker started
                return
            found = dataclasses.replace(found, reranked=reranked)
        self.query_one(SkillPanel).show_attribution(skill_id, found, note)

    def show_compare(self, diff: RankingDiff | None, label: str, decision: Decision) -> None:
        if decision is not self.state.decision or not self.state.comparing:
            return  # a newer decision's diff is on its way, or compare was closed
        if diff is None:
            self.compare_view.nothing()
        else:
            self.compare_view.show(diff, label, self.app.size.width, self.state.highlighted)

    def toggle_compare(self) -> None:
        """F8: the ranking diff in place of the table, and back."""
        state = self.state
        state.comparing = not state.comparing
        self.table.display = not state.comparing
        view = self.compare_view
        view.display = state.comparing
        if state.comparing:
            view.nothing("comparing…")
            if state.decision is not None:
                self.explorer.schedule_decide()  # the panels, then the diff, follow

    # -- the editors that open over this screen ----------------------------------------------

    def open_thresholds(self) -> None:
        """F2: every config field, its value in force and where it comes from."""
        snapshot = self.state.snapshot
        loaded = snapshot is not None and snapshot is not self.state.loading_snapshot
        editor = ThresholdEditor(
            self.state.config,
            self.state.baseline,
            Path(PROJECT_CONFIG_NAME),
            on_saved=self._thresholds_saved,
            sources=self.state.layers.sources,
            status=snapshot.models.status if loaded and snapshot is not None else None,
            skills=len(snapshot) if snapshot is not None else 0,
            without_file=self.state.layers.without_project_file,
        )
        self.app.push_screen(editor)

    def _thresholds_saved(self, config: Config, sources: dict[str, str]) -> None:
        self.state.baseline = config
        self.state.layers = self.state.layers.saved(Path(PROJECT_CONFIG_NAME), sources)
        self.refresh_status()  # the saved fields are no longer live edits

    def open_collisions(self) -> None:
        """ctrl+l: the pairs of skills that compete for the same prompts (tui/collisions.py)."""
        state = self.state
        # The map reads the snapshot's dense vectors, not the decision on screen.
        loading = still_loading(self.app, state, "the collision map", decision=False)
        if state.snapshot is None or loading:
            return
        report = state.cases_report
        cases = [result.case for result in report.results] if report else []
        source = os.path.basename(self.options.cases_file or "")
        snapshot = state.snapshot
        made_for = (snapshot.roots, snapshot.version, state.config, tuple(cases))
        known = (
            state.collisions[1] if state.collisions and state.collisions[0] == made_for else None
        )

        def remember(found: CollisionMap) -> None:
            state.collisions = (made_for, found)

        screen = CollisionsScreen(
            snapshot, state.config, cases, source, known=known, remember=remember
        )
        self.app.push_screen(screen)

    def open_whatif(self) -> None:
        """F7: edit the highlighted skill's description and see its scores before saving."""
        state = self.state
        snapshot, decision, report = state.snapshot, state.decision, state.cases_report
        if snapshot is None or state.highlighted not in snapshot.positions:
            self.notify("highlight a skill first (up/down, or ctrl+g)", severity="warning")
            return
        if still_loading(self.app, state, "what-if"):
            return
        try:
            screen = WhatIfScreen(
                snapshot,
                state.config,
                state.highlighted,
                decision.prompt if decision is not None else "",
                cases=[result.case for result in report.results] if report else None,
                cases_report=report,
                # Of these files and config (no run goes on for newer ones): the edited
                # copy then decides only the cases the edit can reach (reach.py).
                cases_current=not state.quality_running
                and state.quality_for == (tasks.quality_key(self.explorer, snapshot), state.config),
                cases_source=os.path.basename(self.options.cases_file or ""),
                cwd=self.options.cwd,
                logits=state.logits,
            )
        except SaveError as error:
            self.notify(visible(str(error)), severity="error", markup=False, timeout=10)
            return
        self.app.push_screen(screen)

    # -- cases and history -------------------------------------------------------------------

    def show_quality(self, quality: Quality) -> None:
        panel, state = self.query_one(CasesPanel), self.state
        state.quality_running = self.explorer.turns.waits("quality")  # a newer run is next
        state.findings = quality.findings
        state.lint_errors = quality.lint_errors
        if quality.report is None:  # a cases file that does not read, or none any more
            state.cases_report = state.cases_run = None  # the status bar's recall with it
            state.comparison, state.flip_causes = None, {}
            state.cases_problem = quality.problem
            panel.message(quality.problem or NO_CASES)
        else:
            state.cases_problem = None
            state.cases_report, state.cases_run = quality.report, quality.run
            comparison = quality.comparison
            if comparison is None or comparison.flipped or comparison.changed:
                state.comparison, state.flip_causes = comparison, quality.causes
            # else: a re-index that changed no outcome (a second event for the same save,
            # say) keeps the last change on screen rather than hiding it.
            source = self.options.cases_file or ""
            panel.show(quality.report, state.comparison, source, state.flip_causes)
        self.refresh_status()  # lint's counts; the flips and recall, where a presenter looks
        self.show_skill(state.highlighted)

    def show_history(
        self, report: UsageReport | None, result: Replay | None, problem: str | None
    ) -> None:
        panel = self.query_one(HistoryPanel)
        if problem is not None or report is None:
            panel.message(problem or "no telemetry log")
            return
        self.state.history_replay = result
        panel.show(report, result, self.options.history_log or "")

    # -- events from the widgets -------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.set_filter(event.value)
        elif event.input.id == "prompt":
            self.state.delta_base = None  # deltas compare snapshots for the same prompt only
            self.state.typing = True
            self.explorer.schedule_decide()
            walked = self.prompt.walked_to == event.value
            self.prompt.walked_to = None
            self._keep_in_history(event.value, walked)

    def _keep_in_history(self, value: str, walked: bool) -> None:
        """The prompt history gets what was sent with enter, and also a prompt that stood
        a while (PROMPT_SETTLED_S) and was then cleared: the explorer routes as you type,
        so most prompts are never sent with enter. A value the history walk set is read,
        not typed: it is not kept again, and neither is one cleared by walking."""
        if self._settle_timer is not None:
            self._settle_timer.stop()
        if walked:
            self._settled = ""
            return
        if not value.strip():
            if self._settled:
                self.history.add(self._settled)
            self._settled = ""
            return

        def settled() -> None:
            self._settled = value

        self._settle_timer = self.set_timer(PROMPT_SETTLED_S, settled)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "prompt":
            self.history.add(event.value)
        elif event.input.id == "filter":
            self.table.focus()  # the filter stays; Esc in the table: the prompt

    async def on_key(self, event: events.Key) -> None:
        """A printable key that reached the screen unhandled belongs to the prompt: typed
        there, and the prompt takes the focus; so does one of the prompt's deleting keys
        (backspace, ctrl+u, …), which edits it there. The focused widget (the table, a
        tab, a panel) had it first, and a binding anywhere in the focus chain (space in
        the decision panel, / and end in the table, the app's keys) keeps it. Esc that
        nothing took returns to the prompt, as it does from the table."""
        printable = event.is_printable and event.character
        editing = None if printable else PROMPT_EDITING_KEYS.get(event.key)
        if isinstance(self.focused, Input | TextArea) or event.key in self.active_bindings:
            return
        if event.key == "escape":  # from a tab's strip or list, as from the table: back
            event.stop()
            self.prompt.focus()
            return
        if not printable and editing is None:
            return
        event.prevent_default()
        event.stop()
        prompt = self.prompt
        prompt.focus()
        if editing is not None:
            await prompt.run_action(editing)
        elif event.character:
            prompt.insert_text_at_cursor(event.character)

    def on_cases_panel_case_chosen(self, event: CasesPanel.CaseChosen) -> None:
        """A failing case into the prompt: the table shows at once why it fails, on the
        row of the skill it is about (not one the cursor last rested on)."""
        prompt = self.prompt
        prompt.value = event.prompt
        prompt.cursor_position = len(event.prompt)
        prompt.focus()
        snapshot = self.state.snapshot
        if event.skill is not None and snapshot is not None and event.skill in snapshot.positions:
            self.go_to_skill(event.skill)

    def on_tabbed_content_tab_activated(self) -> None:
        self.show_skill(self.state.highlighted)

    def on_skills_table_highlighted(self, event: SkillsTable.Highlighted) -> None:
        self.state.highlighted = event.skill_id
        # The panels (long texts that re-lay out the screen) follow once the cursor or
        # the filter pauses: a filter keystroke moved the cursor and paid for them at once.
        if self._skill_timer is not None:
            self._skill_timer.stop()
        self._skill_timer = self.set_timer(
            PANELS_DELAY_S, lambda: self.show_skill(self.state.highlighted)
        )
        if self.state.comparing:
            self.compare_view.follow(event.skill_id)

    def on_status_bar_errors_clicked(self) -> None:
        self.explorer.action_errors()

    # -- finding a skill (the prompt's, the filter's and the table's keys: screen.*) ----------

    def action_filter(self) -> None:
        self.filter.display = True
        self.filter.focus()

    def action_clear_filter(self) -> None:
        """Esc in the filter: every skill again, and back to the prompt."""
        self.filter.value = ""
        self.filter.display = False
        self.table.set_filter("")
        self.prompt.focus()

    def action_focus_prompt(self) -> None:
        self.prompt.focus()

    def action_table_move(self, step: int) -> None:
        self._move(step)

    def action_table_page(self, direction: int) -> None:
        # While F8 shows the diff in the table's place, a page is the diff's: the hidden
        # table has no height of its own to page by.
        rows = self.compare_view.rows_shown() if self.state.comparing else self.table.size.height
        self._move(direction * max(1, rows - 2))

    def _move(self, step: int) -> None:
        """The cursor of what is shown: the table's, or while F8 shows, the diff's, whose
        skill is then highlighted everywhere (F7 edits the skill under it)."""
        if not self.state.comparing:
            self.table.move(step)
            return
        skill_id = self.compare_view.move(step)
        if skill_id is not None:
            self.go_to_skill(skill_id)

    def go_to_skill(self, skill_id: str) -> None:
        """Put the cursor on a skill and keep it there as the prompt changes."""
        table = self.table
        if table.go_to(skill_id):
            if not table.filter_text:
                self.filter.value = ""
            self.state.highlighted = skill_id
            self.show_skill(skill_id)
        else:
            message = visible(f"no skill {skill_id!r} in the table yet")
            self.notify(message, severity="warning", markup=False)


class _Descriptions(Mapping[str, str]):
    """id -> description for the table's filter, read from the snapshot when the filter
    asks: a dict of them made after every save was a pass over the whole library on the
    event loop."""

    def __init__(self, snapshot: Index) -> None:
        self._snapshot = snapshot

    def __getitem__(self, skill_id: str) -> str:
        return self._snapshot.skills[self._snapshot.positions[skill_id]].description

    def __iter__(self) -> Iterator[str]:
        return iter(self._snapshot.ids)

    def __len__(self) -> int:
        return len(self._snapshot)


def _library_message(snapshot: Index) -> str:
    """What the screen says over an empty table: why there is nothing to score."""
    if len(snapshot):
        return ""
    missing = [p for p in snapshot.rejected if "does not exist" in p.message]
    if missing:
        return "No skills: " + "; ".join(str(p) for p in missing)
    if snapshot.rejected:
        return f"No valid skills: {len(snapshot.rejected)} files rejected. Press F3 to see why."
    return f"No SKILL.md files under {', '.join(snapshot.roots)}."


def _edited(state: ExplorerState) -> list[str]:
    """The config fields F2 changed and did not save: the numbers on screen come from them
    as well as from the files."""
    baseline = state.baseline
    return [name for name in FIELD_NAMES if getattr(state.config, name) != getattr(baseline, name)]


def _short_roots(roots: Sequence[str]) -> str:
    """The roots by their last names, for a narrow status bar; by as many more of their
    parts as it takes to tell them apart (/home/me/.claude/skills, /work/.claude/skills)."""
    parts = [Path(root).parts or (root,) for root in roots]
    for keep in range(1, max((len(p) for p in parts), default=1) + 1):
        names = [os.path.join(*p[-keep:]) for p in parts]
        if len(set(names)) == len(names):
            break
    return ", ".join(names)


def _watch_note(live: object) -> str:
    """The live index's last note (an OS watch limit, polling), short enough for one line."""
    notes = getattr(live, "notes", None)
    if not notes:
        return ""
    note = notes[-1]
    command = note.split("Raise it with: ")[-1] if "Raise it with: " in note else note
    return f" │ ⚠ polling by stat; {command}"
