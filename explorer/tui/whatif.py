"""What-if: edit a skill's description beside the table and see, before saving, what it
would score for the current prompt and which cases would flip; F4 writes it to SKILL.md.

The numbers come from `engine.whatif.what_if`: the edited file parsed as the live index
will parse it, scored on a patched copy of the snapshot by the one `decide()`. Nothing is
written until F4, and then only the description's lines change (`engine.rewrite`); the
live index's watcher picks the save up like any other.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import ProgressBar, Static, TextArea

from explorer.engine import Config, Index, decide, tune
from explorer.engine.author import (
    Candidate,
    Edit,
    SaveError,
    Standing,
    TuneResult,
    WhatIf,
    WhatIfMemo,
    changed_on_disk,
    edit_description,
    patched_index,
    read_skill_text,
    save,
    typed_case,
    what_if,
    with_cases,
)
from explorer.engine.inference import LogitMemo
from explorer.engine.qa import Comparison
from explorer.terminal import Phrases, is_safe, plain, visible
from explorer.tui.editor import open_in_editor
from explorer.tui.health import short_path
from explorer.tui.keys import HELP_BINDING
from explorer.tui.suggest import SuggestScreen
from explorer.tui.widgets.cases_panel import Headline, with_flips
from explorer.tui.widgets.footer import QuietFooter

if TYPE_CHECKING:
    from collections.abc import Mapping

    from explorer.engine.qa import Case, EvalReport, FlipCause

TYPING_PAUSE_S = 0.12  # one embedding is ~10 ms: recompute once typing pauses this long


def initial_text(frontmatter_value: object, routed: str) -> str:
    """What the editor starts with: YAML's reading (keeps a `|` block's lines) when it
    says the same as the routing description, else the routing description."""
    if isinstance(frontmatter_value, str) and " ".join(frontmatter_value.split()) == " ".join(
        routed.split()
    ):
        return frontmatter_value.strip()
    return routed


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _delta(before: float | None, after: float | None, digits: int = 3) -> Text:
    if before is None or after is None:
        return Text("")
    change = after - before
    if abs(change) < 0.5 * 10**-digits:
        return Text("")
    return Text(f"{change:+.{digits}f}", style="green" if change > 0 else "red")


def _verdict(standing: Standing) -> Text:
    return Text(
        "INJECT" if standing.injected else str(standing.verdict),
        style="bold green" if standing.injected else "yellow",
    )


def scores_text(result: WhatIf) -> Text:
    """The skill now and as edited, channel by channel, for the current prompt."""
    out = Text()
    out.append("prompt ", style="dim")
    out.append_text(plain(repr(result.prompt) if result.prompt else "(blank: type one first)"))
    out.append("\n\n")
    before, after = result.before, result.after
    if after is None or before is None:  # the reason is on the status line above
        out.append_text(plain(_unscored(result), style="dim"))
        out.append("\n")
        return out
    out.append(f"{'':<12}{'now':>10}{'edited':>10}\n", style="bold")
    move = before.rank - after.rank
    rank_change = Text(
        "" if not move else f"{'↑' if move > 0 else '↓'}{abs(move)}",
        style="green" if move > 0 else "red",
    )
    rows: list[tuple[str, str, str, Text]] = [
        ("rank", f"#{before.rank}", f"#{after.rank}", rank_change),
        ("cosine", _num(before.cosine), _num(after.cosine), _delta(before.cosine, after.cosine)),
        ("bm25", _num(before.bm25, 2), _num(after.bm25, 2), _delta(before.bm25, after.bm25, 2)),
        ("boosts", _num(before.boosts), _num(after.boosts), _delta(before.boosts, after.boosts)),
        ("hybrid", _num(before.hybrid), _num(after.hybrid), _delta(before.hybrid, after.hybrid)),
    ]
    if before.rerank is not None or after.rerank is not None:
        rows.append(
            (
                "rerank",
                _num(before.rerank, 2),
                _num(after.rerank, 2),
                _delta(before.rerank, after.rerank, 2),
            )
        )
    if before.relevance is not None or after.relevance is not None:  # §9.12: what decides
        rows.append(
            (
                "p",
                _num(before.relevance, 2),
                _num(after.relevance, 2),
                _delta(before.relevance, after.relevance, 2),
            )
        )
    rows.append(("Δ to inject", before.missing_text or "—", after.missing_text or "—", Text("")))
    for label, now, edited, change in rows:
        out.append(f"{label:<12}", style="dim")
        out.append(f"{now:>10}{edited:>10}  ")
        out.append_text(change)
        out.append("\n")
    out.append(f"{'verdict':<12}", style="dim")
    out.append_text(_verdict(before))
    out.append(" → ")
    out.append_text(_verdict(after))
    out.append("\n")
    if result.unread_past is not None:
        out.append(
            f"the cross-encoder reads the first {result.unread_past:,} characters of the "
            "description beside this prompt; the edit starts past them, so its logit "
            "cannot move (an edit nearer the start can)\n",
            style="dim",
        )
    out.append("now     ", style="dim")
    out.append_text(plain(before.reason + "\n"))  # a reason can quote a skill's id
    out.append("edited  ", style="dim")
    out.append_text(plain(after.reason + "\n", style="green" if after.injected else "yellow"))
    return out


def _unscored(result: WhatIf) -> str:
    if result.edit.problem:
        return "no scores while the edit cannot be saved"
    return "no scores: the skill is not in the snapshot"


def cases_text(
    comparison: Comparison | None,
    report: EvalReport | None,
    pending: bool,
    source: str,
    causes: Mapping[str, FlipCause] | None = None,
) -> RenderableType:
    out = Text()
    if report is None and not pending:
        if source:  # the Cases tab has not run them yet (the library is still loading)
            out.append_text(
                plain(
                    f"the cases in {source} have not run yet (see the Cases tab); "
                    "reopen f7 once they have to see which would flip",
                    style="dim",
                )
            )
        else:
            out.append("no cases file: start with --cases FILE to see which flip", style="dim")
        return out
    out.append("cases ", style="bold")
    if pending or comparison is None:
        out.append_text(plain(f"{source}: running…", style="dim"))
        return out
    out.append_text(plain(f"{comparison.matched} in {source}: ", style="dim"))
    if not comparison.flipped:
        out.append("no case would flip\n", style="dim")
    else:
        out.append(f"{len(comparison.flipped)} would flip\n", style="bold")
    shown = []  # what the edit does to both sides of the cases: hits, and wrong injections
    for name, label in (("recall", "recall"), ("false_inject_rate", "false-inject")):
        delta = comparison.metrics.get(name, {})
        if delta.get("a") is not None and delta.get("b") is not None:
            shown.append(f"{label} {delta['a']:.3f} → {delta['b']:.3f}")
    tail = Text()
    if shown:
        tail.append("; ".join(shown) + "\n", style="dim")
    return with_flips(out, comparison.flipped, causes or {}, tail)


class DescriptionArea(TextArea):
    """The what-if editor. Its page keys page the scores and flips below it whenever the
    editor has nothing more to show that way: the description fits (the usual case), or
    its view is already at its end (page down) or its start (page up). So at 80x24,
    where the flips start below the fold, they are a key away, and past a long
    description (a loaded suggestion) they are the next page."""

    @dataclass
    class Paged(Message):
        down: bool

    def on_resize(self) -> None:
        # TextArea re-wraps on a resize but can keep painting the old wrap's lines until
        # the next key: a clause shown twice, or none.
        self.refresh()

    def _page(self, down: bool) -> bool:
        if (self.scroll_y < self.max_scroll_y) if down else (self.scroll_y > 0):
            return False  # the editor's own page: more of the description that way
        self.post_message(self.Paged(down))
        return True

    def action_cursor_page_down(self) -> None:
        if not self._page(down=True):
            super().action_cursor_page_down()

    def action_cursor_page_up(self) -> None:
        if not self._page(down=False):
            super().action_cursor_page_up()


class WhatIfScreen(ModalScreen[None]):
    """A side editor over the main screen: the description, the scores, the flips."""

    SCOPED_CSS = False  # `.narrow` is the app's class: a scoped rule would never match it
    DEFAULT_CSS = """
    WhatIfScreen { align: right top; }
    #whatif {
        width: 72; height: 100%;
        background: $surface; border-left: thick $primary; padding: 0 1;
    }
    .narrow #whatif { width: 100%; border-left: none; }
    #whatif-title { height: auto; }
    #whatif-text { height: auto; min-height: 3; max-height: 9; }
    #whatif-status { height: auto; }
    #whatif-results { height: 1fr; }
    #whatif-progress { display: none; height: 1; }
    #whatif-progress.running { display: block; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="whatif-cancel"),
        HELP_BINDING,
        # F4 saves, and so does ctrl+s (what a user presses out of habit in an editor):
        # the app's ctrl+s screenshot is for the main screen.
        Binding("f4", "save", "Save to SKILL.md", key_display="f4/^s", id="whatif-save"),
        Binding("ctrl+s", "save", "Save to SKILL.md", show=False, id="whatif-save-ctrl-s"),
        Binding("ctrl+o", "external_editor", "$EDITOR", id="whatif-editor"),
        # ctrl+t: `tune` on the loaded cases and the prompt (suggest.py); the main screen's
        # pin is not here.
        Binding("ctrl+t", "suggest", "Suggest edits", key_display="^t", id="whatif-suggest"),
    ]

    def __init__(
        self,
        snapshot: Index,
        config: Config,
        skill_id: str,
        prompt: str,
        *,
        cases: list[Case] | None = None,
        cases_report: EvalReport | None = None,
        cases_current: bool = False,
        cases_source: str = "",
        cwd: str | None = None,
        logits: LogitMemo | None = None,
    ) -> None:
        super().__init__()
        skill = snapshot.skills[snapshot.positions[skill_id]]
        self.snapshot, self.config, self.skill_id, self.prompt = snapshot, config, skill_id, prompt
        self.path = skill.path
        self.original = read_skill_text(skill.path)  # SaveError: the caller says so
        # Edited as shown: a control character in the description is its picture here, so
        # the editor never sends it to the terminal (a save writes the picture).
        self.start = visible(initial_text(skill.frontmatter.get("description"), skill.description))
        self.cases, self.cases_report, self.cases_source = cases, cases_report, cases_source
        self.cases_current = cases_current  # the report is of this snapshot and config
        self.cwd = cwd
        self.memo = WhatIfMemo(snapshot, config, logits)  # what one keystroke leaves the next
        self.result: WhatIf | None = None  # the latest computed what-if (tests read it)
        self.cases_done = False
        self._generation = 0
        self._timer: Timer | None = None
        self.suggestions: TuneResult | None = None  # the latest `tune` run (tests read it)
        self.chosen: Candidate | None = None  # the suggestion loaded into the editor
        self.suggesting = False
        self.discard_asked = False  # esc was pressed once over an edit: a second esc closes

    def compose(self) -> ComposeResult:
        with Vertical(id="whatif"):
            lead = Text("What-if ", style="bold")
            lead.append_text(plain(self.skill_id, style="bold cyan"))
            title = Headline(lead, self.path)  # a long path keeps its end, not cut mid-word
            keys = (
                ("f4/ctrl+s", "save to SKILL.md"),
                ("esc esc", "discard"),
                ("ctrl+o", "$EDITOR"),
                ("ctrl+t", "suggest edits"),
                ("pgdn/pgup", "scroll the scores and flips"),
            )
            # A narrow line wraps between keys, never between a key and what it does.
            phrases = [Text("edit the description;", style="dim")] + [
                Text.assemble((key, "bold"), (f" {what}", "dim")) for key, what in keys
            ]
            yield Static(Group(title, Phrases(phrases)), id="whatif-title")
            yield DescriptionArea(self.start, soft_wrap=True, id="whatif-text")
            yield Static(id="whatif-status")
            yield ProgressBar(id="whatif-progress", show_eta=False)
            with VerticalScroll(id="whatif-results"):
                yield Static("computing…", id="whatif-scores")
                yield Static(id="whatif-cases")
        yield QuietFooter()  # this screen's keys, over the main screen's (not active here)

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.focus()
        area.move_cursor(area.document.end)  # authors mostly add to a description
        # ...yet read it from its start: a description taller than the editor opened on its
        # last lines. Typing brings the cursor back into view.
        self.call_after_refresh(area.scroll_home, animate=False)
        self._compute()

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    @property
    def edited(self) -> bool:
        """The editor holds other words than the file (whitespace aside)."""
        return " ".join(self.text.split()) != " ".join(self.start.split())

    def on_description_area_paged(self, event: DescriptionArea.Paged) -> None:
        results = self.query_one("#whatif-results", VerticalScroll)
        if event.down:
            results.scroll_page_down()
        else:
            results.scroll_page_up()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if not is_safe(event.text_area.text):  # a paste: shown as pictures, as the start is
            event.text_area.text = visible(event.text_area.text)  # posts Changed again
            return
        self.discard_asked = False
        if self._timer is not None:
            self._timer.stop()
        self._generation += 1
        self.cases_done = False
        self._timer = self.set_timer(TYPING_PAUSE_S, self._compute)

    def _compute(self) -> None:
        self._generation += 1
        generation, text = self._generation, self.text
        self.run_worker(
            lambda: self._work(generation, text),
            thread=True,
            exclusive=True,
            group="whatif",
            description="what-if",
        )

    def _work(self, generation: int, text: str) -> None:
        try:
            result = what_if(
                self.snapshot,
                self.config,
                self.skill_id,
                text,
                self.prompt,
                original=self.original,
                cwd=self.cwd,
                memo=self.memo,
            )
        except Exception as error:  # a model that fails to run: say so, keep the editor
            self.app.call_from_thread(self._failed, generation, f"{type(error).__name__}: {error}")
            return
        self.app.call_from_thread(self._show, generation, result, False)
        if self.cases is None or result.patched is None:
            self.app.call_from_thread(self._cases_finished, generation)
            return
        if generation != self._generation:
            return  # typed on: the cases run for the newer text only
        before = self.cases_report if self.cases_current else None  # else: run again
        full = with_cases(
            result, self.snapshot, self.config, self.cases, before, cwd=self.cwd, memo=self.memo
        )
        self.app.call_from_thread(self._show, generation, full, True)

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.query_one("#whatif-scores", Static).update(plain(message, style="red"))

    def _cases_finished(self, generation: int) -> None:
        if generation == self._generation:
            self.cases_done = True

    def _show(self, generation: int, result: WhatIf, with_flips: bool) -> None:
        if generation != self._generation or not self.is_attached:
            return  # typed on since: a newer result is on its way
        self.result = result
        status = self.query_one("#whatif-status", Static)
        if result.edit.problem:
            line = plain(f"✗ not saveable: {result.edit.problem}", style="bold red")
            if result.edit.file_broken:
                line.append("  (esc, then ctrl+o on the main screen opens it)", style="dim")
            status.update(line)
        elif not self.edited:
            status.update(Text("unchanged", style="dim"))
        else:
            line = Text("edited, not saved: f4 (or ctrl+s) writes it", style="yellow")
            chosen = self.chosen
            if chosen is not None and " ".join(self.text.split()) == " ".join(
                chosen.description.split()
            ):
                number = self._chosen_number()
                line.append(f"  · suggestion #{number}", style="bold cyan")
            flips = result.comparison.flipped if result.comparison is not None else ()
            if flips:  # said here too: on a short terminal the list is below the fold
                fixed = sum(1 for flip in flips if flip.passed_b)
                line.append(f"  · cases: {fixed} fixed, {len(flips) - fixed} broke", style="bold")
            status.update(line)
        self.query_one("#whatif-scores", Static).update(scores_text(result))
        report = self.cases_report if self.cases is not None else None
        pending = self.cases is not None and not with_flips and result.patched is not None
        cases: RenderableType
        if self.cases is not None and result.patched is None:  # nothing to run them on
            cases = plain(
                f"cases in {self.cases_source}: not run while the edit cannot be saved", "dim"
            )
        else:
            cases = cases_text(result.comparison, report, pending, self.cases_source, result.causes)
        self.query_one("#whatif-cases", Static).update(cases)
        if with_flips:
            self.cases_done = True

    def action_save(self) -> None:
        if not self.edited:
            self.notify("the description is unchanged: nothing written", severity="warning")
            return
        edit = edit_description(self.path, self.original, self.text)
        if not edit.ok:
            message = visible(changed_on_disk(edit) or f"not written: {edit.problem}")
            self.query_one("#whatif-status", Static).update(plain(f"✗ {message}", style="bold red"))
            self.notify(message, severity="error", markup=False, timeout=10)
            return
        try:
            save(edit)
        except SaveError as error:
            self.notify(visible(str(error)), severity="error", markup=False, timeout=10)
            return
        self.notify(visible(f"saved {short_path(self.path)}: re-indexing"), markup=False)
        self.dismiss()

    # -- suggestions (suggest.py) ---------------------------------------------------------

    def action_suggest(self) -> None:
        """ctrl+t: `tune` for this skill on the loaded cases and the prompt typed (when the
        skill misses it: `typed_case`), off the event loop, starting from the description
        in the editor: an author asks for help with what they typed."""
        if self.suggesting:
            self.notify("still looking for suggestions", timeout=3)
            return
        if not self.cases and not self.prompt.strip():
            self.notify(
                "no cases to tune on: type a prompt the skill should take, or give the "
                "explorer cases (--cases FILE, or a cases.toml in the skills folder)",
                severity="warning",
            )
            return
        edit = edit_description(self.path, self.original, self.text) if self.edited else None
        if edit is not None and not edit.ok:
            message = visible(f"no suggestions for this edit: {edit.problem}")
            self.notify(message, severity="warning", markup=False, timeout=10)
            return
        self.suggesting = True
        bar = self.query_one("#whatif-progress", ProgressBar)
        bar.add_class("running")
        bar.update(total=None, progress=0)
        self.query_one("#whatif-status", Static).update(
            Text("suggesting: routing the cases…", style="bold cyan")
        )
        cases = list(self.cases or ())
        self.run_worker(
            lambda: self._suggest_work(cases, edit),
            thread=True,
            exclusive=True,
            group="suggest",
            description="suggest",
        )

    def _suggest_work(self, cases: list[Case], edit: Edit | None) -> None:
        """On the snapshot with `edit` in place, when there is one (what the editor holds)."""

        def progress(stage: str, done: int, total: int) -> None:
            self.app.call_from_thread(self._suggest_progress, stage, done, total)

        try:
            index, original = self.snapshot, self.original
            if edit is not None and edit.skill is not None and edit.text is not None:
                index, original = patched_index(index, edit.skill, self.config), edit.text
            prompt = self.prompt
            taken = decide(prompt, index, self.config, cwd=self.cwd).injected_ids if prompt else ()
            typed = typed_case(prompt, self.skill_id, cases, self.skill_id in taken)
            if typed is None and not cases:
                self.app.call_from_thread(
                    self._suggest_nothing,
                    f"{self.skill_id} takes the prompt typed already, and there are no cases "
                    "to tune on: give the explorer cases (--cases FILE, or a cases.toml in "
                    "the skills folder)",
                )
                return
            result = tune(
                index,
                self.config,
                self.skill_id,
                cases,
                original,
                progress=progress,
                must_fix=() if typed is None else (typed,),
            )
        except Exception as error:  # a model that fails to run: say so, keep the editor
            self.app.call_from_thread(self._suggest_failed, f"{type(error).__name__}: {error}")
            return
        self.app.call_from_thread(self._suggest_done, result)

    def _suggest_progress(self, stage: str, done: int, total: int) -> None:
        if not self.is_attached or not self.suggesting:
            return
        self.query_one("#whatif-progress", ProgressBar).update(total=max(total, 1), progress=done)
        self.query_one("#whatif-status", Static).update(
            Text(f"suggesting: {stage} ({done}/{total})", style="bold cyan")
        )

    def _suggest_stopped(self) -> None:
        self.suggesting = False
        if self.is_attached:
            self.query_one("#whatif-progress", ProgressBar).remove_class("running")

    def _suggest_failed(self, message: str) -> None:
        self._suggest_stopped()
        self.notify(visible(f"suggestions failed: {message}"), severity="error", markup=False)

    def _suggest_nothing(self, message: str) -> None:
        """Nothing to tune on: said as a warning, not a failure."""
        self._suggest_stopped()
        if self.is_attached:
            self.query_one("#whatif-status", Static).update(Text(message, style="yellow"))
        self.notify(visible(message), severity="warning", markup=False, timeout=10)

    def _suggest_done(self, result: TuneResult) -> None:
        self._suggest_stopped()
        if not self.is_attached:
            return
        self.suggestions = result
        found = len(result.candidates)
        self.query_one("#whatif-status", Static).update(
            Text(
                f"{found} suggestion{'s' if found != 1 else ''} in {result.seconds:.1f} s"
                if found
                else "no suggestion: " + ("; ".join(result.notes) or "nothing fixed a case"),
                style="cyan" if found else "yellow",
            )
        )
        from_edit = result.original_text != self.original  # the editor's text, as ctrl+t read it
        self.app.push_screen(SuggestScreen(result, from_edit), self._suggestion_chosen)

    def _suggestion_chosen(self, number: int | None) -> None:
        result = self.suggestions
        if number is None or result is None or not 0 <= number < len(result.candidates):
            return
        self.chosen = result.candidates[number]
        self.query_one(TextArea).load_text(visible(self.chosen.description))  # recomputes
        self.query_one(TextArea).focus()

    def _chosen_number(self) -> int:
        result, chosen = self.suggestions, self.chosen
        if result is None or chosen is None:
            return 0
        return next((n for n, c in enumerate(result.candidates, 1) if c is chosen), 0)

    def action_cancel(self) -> None:
        """esc closes. Over an edit (typed, or a suggestion loaded), the first esc says what
        it would lose and the second discards it: one stray key must not cost the work."""
        if self.edited and not self.discard_asked:
            self.discard_asked = True
            self.notify("unsaved edit: esc again discards it, f4 saves it", timeout=4)
            return
        if self.edited:
            self.notify("edit discarded: nothing written", timeout=3)
        self.dismiss()

    def action_external_editor(self) -> None:
        """The description alone, in $VISUAL or $EDITOR; what it saves comes back here."""
        handle, name = tempfile.mkstemp(prefix=f"{self.skill_id[:40]}-description-", suffix=".txt")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(self.text + "\n")
            if not open_in_editor(self.app, self.notify, name):
                return
            with open(name, encoding="utf-8", errors="replace") as file:
                edited = file.read().strip()
        finally:
            os.unlink(name)
        if edited != self.text:
            self.query_one(TextArea).text = visible(edited)  # posts Changed: recomputed
