"""Suggested description edits in the explorer: `tune` for the what-if screen's skill.

ctrl+t on the what-if screen (whatif.py) runs `engine.tune.tune` on the loaded cases in a
worker thread, with a progress bar; this module's `SuggestScreen` lists the ranked
candidates, and the one chosen goes into the what-if editor, whose own scoring then shows
its flips. Saving is the what-if screen's (F4): nothing here writes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from explorer.engine.author import Candidate, Effect, Part, TuneResult
from explorer.engine.base import counted
from explorer.terminal import plain
from explorer.tui.keys import HELP_BINDING
from explorer.tui.widgets.footer import QuietFooter

DIALOG_WIDTH = 100  # columns, or the whole terminal when it is narrower
LIST_FRAME = 12  # the dialog's border and padding, the list's and its scrollbar, an indent
MIN_PROMPT = 24  # a flip's prompt keeps this much however long the skills it names


def diff_text(candidate: Candidate, context: int = 3) -> Text:
    """The word diff, changes coloured, a few unchanged words around each."""
    out = Text()
    pieces = candidate.diff
    for position, (op, words) in enumerate(pieces):
        if op == "-":
            out.append_text(plain(f"[-{words}-] ", style="red strike"))
            continue
        if op == "+":
            out.append_text(plain(f"{{+{words}+}} ", style="green"))
            continue
        split = words.split()
        first, last = position == 0, position == len(pieces) - 1
        if len(split) > 2 * context:
            if first:
                words = "… " + " ".join(split[-context:])
            elif last:
                words = " ".join(split[:context]) + " …"
            else:
                words = " ".join(split[:context]) + " … " + " ".join(split[-context:])
        out.append_text(plain(words + " ", style="dim"))
    return out


def candidate_text(
    number: int, candidate: Candidate, recommended: bool, width: int = DIALOG_WIDTH - LIST_FRAME
) -> Text:
    """One option: the figures, the survival with the lexical channels off, the steps
    that made it, the diff, and the first flips, each on one line `width` wide."""
    out = Text()
    out.append(f"#{number} ", style="bold")
    if recommended:
        out.append("RECOMMENDED ", style="bold green")
    if candidate.lexical_only:
        out.append("LEXICAL ONLY ", style="bold yellow")
    held = candidate.held_out
    out.append(
        f"held-out {held.passed}/{held.total} (net {candidate.part_net(Part.HELD_OUT):+d})  "
        f"tuning {candidate.tuning.passed}/{candidate.tuning.total}"
    )
    out.append(  # a line of its own: at 80 columns the figures fill one
        f"\n  fixes {candidate.fixes}"
        + (f" ({counted(candidate.releases, 'release')})" if candidate.releases else "")
        + f"  breaks {candidate.breaks}  steals {candidate.steals}"
    )
    if candidate.fixes:
        out.append(f"\n  lexical off: {candidate.remaining}", style="dim")
        if candidate.joint_fixes:
            joint = candidate.joint_fixes
            out.append(
                f"; {joint} more {'needs' if joint == 1 else 'need'} words and models together",
                style="dim",
            )
    out.append("\n  ")
    out.append_text(plain("; ".join(candidate.steps), style="italic"))
    out.append("\n  ")
    out.append_text(diff_text(candidate))
    for flip in candidate.flips[:4]:
        label = f"\n  {flip.effect.value.upper():7} {flip.part.value:8} "
        shared = ", shared" if flip.beside else ""  # its own skill still gets it
        whose = (
            f"  (expects {_expected(flip.case.expect)}{shared})" if flip.part is Part.OTHER else ""
        )
        most = width - len(label) - MIN_PROMPT  # what whose may take, the prompt's share kept
        if len(whose) > most:
            whose = whose[: max(most - 2, 0)] + "…)"
        room = width - len(label) - len(whose)
        prompt = flip.case.prompt.replace("\n", " ")
        if len(prompt) > room:
            prompt = prompt[: room - 1] + "…"
        style = "green" if flip.effect in (Effect.FIX, Effect.RELEASE) else "red"
        out.append(label, style=style)
        out.append_text(plain(prompt))
        out.append_text(plain(whose, "dim"))
    if len(candidate.flips) > 4:
        out.append(f"\n  … {len(candidate.flips) - 4} more", style="dim")
    return out


def _expected(skills: tuple[str, ...]) -> str:
    """Whose case another skill's was, short: "no skill", "pdf", "pdf +2"."""
    if not skills:
        return "no skill"
    return skills[0] + (f" +{len(skills) - 1}" if len(skills) > 1 else "")


def summary_text(result: TuneResult, from_edit: bool = False) -> Text:
    """The run's summary; `from_edit`: the run started from an unsaved edit in the editor,
    so its "before" figures are the edit's, not the file's."""
    out = Text()
    out.append("Suggestions ", style="bold")
    out.append_text(plain(result.skill_id, style="bold cyan"))
    out.append(
        f"\ncases: {len(result.split.tuning)} tuning, {len(result.split.held_out)} held out, "
        f"{len(result.split.others)} about other skills or none; before: tuning "
        f"{result.tuning}, held-out {result.held_out}; {result.others.total} other cases "
        f"near the skill, {result.others.passed} of them passing\n"
        f"{counted(result.evaluated, 'description')} scored in {result.seconds:.1f} s\n",
        style="dim",
    )
    for note in result.notes:
        out.append_text(plain(f"note: {note}\n", style="yellow"))
    if from_edit:
        out.append('made from your edit (not saved yet): "before" is the edited text\n', "cyan")
    if result.candidates:
        out.append("enter loads one into the editor (its flips show there); esc closes", "dim")
    else:  # the notes above say why, when the search knows
        out.append("No edit to suggest. ", style="bold")
        out.append("esc closes", "dim")
    return out


class Notes(VerticalScroll):
    """The summary's notes: they take tab's focus (and the footer names the key) only while
    they do not fit, which the layout decides."""

    can_focus = False

    def on_mount(self) -> None:
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def watch_virtual_size(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        self.can_focus = self.max_scroll_y > 0
        if not self.can_focus and self.has_focus:
            self.screen.focus_next()
        self.screen.refresh_bindings()


class SuggestScreen(ModalScreen[int | None]):
    """The ranked candidates of one `tune` run; dismissed with the chosen index (0-based)."""

    DEFAULT_CSS = """
    SuggestScreen { align: center middle; }
    #suggest { width: 100; max-width: 100%; height: 90%; background: $surface;
               border: thick $primary; padding: 0 1; }
    /* The candidates are what the dialog is for: the summary (its notes scroll, tab
       reaches them) takes at most a third of it, so at 80x24 a whole candidate, flips
       included, fits below. */
    #suggest-notes { height: auto; max-height: 33%; }
    #suggest-notes.-alone { max-height: 100%; }
    #suggest-summary { height: auto; }
    #suggest-list { height: 1fr; min-height: 8; }
    """
    # enter as the list's own: a priority binding, so that the footer shows it.
    BINDINGS = [
        Binding("enter", "choose", "Load into editor", priority=True, id="suggest-choose"),
        Binding("escape", "cancel", "Close", id="suggest-close"),
        # Shown only while the summary's notes do not fit (check_action).
        Binding("tab", "switch", "Notes ↔ list", id="suggest-switch"),
        HELP_BINDING,
    ]

    def __init__(self, result: TuneResult, from_edit: bool = False) -> None:
        super().__init__()
        self.result = result
        self.from_edit = from_edit

    def compose(self) -> ComposeResult:
        with Vertical(id="suggest"):
            summary = Static(summary_text(self.result, self.from_edit), id="suggest-summary")
            width = min(self.app.size.width, DIALOG_WIDTH) - LIST_FRAME
            options = [
                Option(
                    candidate_text(number, candidate, number - 1 == self.result.recommended, width)
                )
                for number, candidate in enumerate(self.result.candidates, 1)
            ]
            listing = OptionList(*options, id="suggest-list")
            listing.display = bool(options)
            with Notes(id="suggest-notes") as notes:
                notes.set_class(not options, "-alone")  # none: the summary's notes say why
                yield summary
            yield listing
        yield QuietFooter()

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.focus()
        if self.result.candidates:
            listing.highlighted = self.result.recommended or 0

    def action_switch(self) -> None:
        notes = self.query_one(Notes)
        (self.query_one(OptionList) if notes.has_focus else notes).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option_index)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "choose":
            return bool(self.result.candidates)
        if action == "switch":
            notes = self.query(Notes)
            return bool(notes) and notes.first().can_focus
        return True

    def action_choose(self) -> None:
        highlighted = self.query_one(OptionList).highlighted
        if highlighted is not None:
            self.dismiss(highlighted)

    def action_cancel(self) -> None:
        self.dismiss(None)
