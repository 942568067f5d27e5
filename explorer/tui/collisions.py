"""The collision map in the explorer (ctrl+l): the pairs of skills that compete for the same
prompts, from the loaded cases and from each description's own sentences
(`engine.collisions`), computed off the event loop with a progress bar. Enter on a pair
shows what they share, the cases that flip between them and every other prompt they
competed for; esc goes back to the list, then to the main screen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from explorer.engine import Config, Index
from explorer.engine.author import Collision, CollisionMap, collision_map
from explorer.terminal import one_line, plain
from explorer.tui.keys import HELP_BINDING
from explorer.tui.widgets.footer import QuietFooter

if TYPE_CHECKING:
    from explorer.engine.qa import Case

SHOWN = 50  # pairs listed
PROMPT_WIDTH = 70  # a prompt's cells in a pair's detail when the width is not known
PROMPT_FRAME = 10  # what the indent, "FLIP " and the scrollbar take of the detail's width


def pair_text(number: int, collision: Collision) -> Text:
    out = Text()
    out.append(f"#{number} ", style="bold")
    out.append_text(plain(collision.a, style="cyan"))
    out.append(" <> ")
    out.append_text(plain(collision.b, style="cyan"))
    out.append(
        f"  weight {collision.weight:.2f}  taken {collision.count('take')}  shared "
        f"{collision.count('share')}  near {collision.count('near')}",
        style="dim",
    )
    if collision.shared:
        out.append("\n   ")
        out.append_text(plain(", ".join(collision.shared), style="yellow"))
    return out


def detail_text(collision: Collision, width: int = 0) -> Text:
    """A pair's flips and every other prompt the two competed for, each prompt on one line
    of the `width` the detail has (the dialog's, not the screen's, which can be wider: a
    longer line would wrap)."""
    room = max(30, width - PROMPT_FRAME) if width else PROMPT_WIDTH
    out = Text()
    out.append_text(plain(f"{collision.a} <> {collision.b}\n", style="bold"))
    out.append("shared words: ", style="dim")
    out.append_text(plain(", ".join(collision.shared) or "(none: the models alone)"))
    out.append("\n")
    flips = collision.flips
    out.append(f"cases that flip between them ({len(flips)})\n", style="bold")
    for contest in flips:
        out.append("  FLIP ", style="bold red")
        out.append_text(one_line(contest.prompt, room))
        out.append_text(
            plain(f"\n       expects {contest.expected}, {contest.rival} took it", style="dim")
        )
        out.append("\n")
    others = [c for c in collision.contests if c not in flips]
    if others:
        out.append(f"other prompts they competed for ({len(others)})\n", style="bold")
    for contest in others:
        out.append(f"  {contest.kind:<5} ", style="yellow")
        out.append_text(one_line(contest.prompt, room))
        source = "a case" if contest.source == "case" else "a sentence of its own"
        said = f"{source} for {contest.expected}; rival {contest.rival}"
        out.append_text(plain(f"\n        {said}", style="dim"))
        out.append("\n")
    return out


class CollisionsScreen(ModalScreen[None]):
    """The ranked pairs, and one pair's detail."""

    DEFAULT_CSS = """
    CollisionsScreen { align: center middle; }
    #collisions { width: 110; max-width: 100%; height: 90%; background: $surface;
                  border: thick $primary; padding: 0 1; }
    #collisions-title { height: auto; }
    #collisions-progress { height: 1; }
    #collisions-list { height: 1fr; }
    #collisions-detail { height: 1fr; display: none; }
    #collisions-detail.open { display: block; }
    """
    BINDINGS = [Binding("escape", "back", "Back", id="collisions-back"), HELP_BINDING]

    def __init__(
        self,
        snapshot: Index,
        config: Config,
        cases: Sequence[Case] = (),
        source: str = "",
        *,
        known: CollisionMap | None = None,
        remember: Callable[[CollisionMap], None] | None = None,
    ) -> None:
        """`known`: the map already made for this snapshot, config and cases (shown at
        once: on 181 skills one takes half a minute); `remember` keeps a new one."""
        super().__init__()
        self.snapshot, self.config, self.cases, self.source = snapshot, config, cases, source
        self.known, self.remember = known, remember
        self.found: CollisionMap | None = None  # tests read it

    def compose(self) -> ComposeResult:
        with Vertical(id="collisions"):
            yield Static(self._title(), id="collisions-title")
            yield ProgressBar(id="collisions-progress", show_eta=False)
            yield OptionList(id="collisions-list")
            with VerticalScroll(id="collisions-detail"):
                yield Static(id="collisions-detail-text")
        yield QuietFooter()

    def _title(self) -> Text:
        out = Text("Collisions  ", style="bold")
        what = f"the cases of {self.source} and " if self.cases else ""
        out.append_text(
            plain(
                f"pairs of skills that compete for the same prompts ({what}each "
                "description's own sentences); enter: detail, esc: back",
                style="dim",
            )
        )
        return out

    def on_mount(self) -> None:
        if self.known is not None:
            self._show(self.known)
            return
        self.run_worker(self._work, thread=True, exclusive=True, description="collisions")

    def _work(self) -> None:
        def progress(done: int, total: int) -> None:
            if done % 8 == 0 or done == total:
                self.app.call_from_thread(self._progress, done, total)

        found = collision_map(self.snapshot, self.config, self.cases, progress=progress)
        self.app.call_from_thread(self._made, found)

    def _made(self, found: CollisionMap) -> None:
        if self.remember is not None:  # kept even if esc closed the screen meanwhile
            self.remember(found)
        self._show(found)

    def _progress(self, done: int, total: int) -> None:
        if self.is_attached:
            self.query_one(ProgressBar).update(total=max(total, 1), progress=done)

    def _show(self, found: CollisionMap) -> None:
        if not self.is_attached:
            return
        self.found = found
        self.query_one(ProgressBar).display = False
        listing = self.query_one("#collisions-list", OptionList)
        listing.clear_options()
        if not found.collisions:
            listing.add_option(
                Option(f"no pair competes over {found.prompts} prompts", disabled=True)
            )
        listing.add_options(
            Option(pair_text(number, collision), id=f"{number - 1}")
            for number, collision in enumerate(found.collisions[:SHOWN], 1)
        )
        if found.collisions:
            listing.highlighted = 0
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.found is None or event.option.id is None:
            return
        collision = self.found.collisions[int(event.option.id)]
        shown = detail_text(collision, self.query_one("#collisions").content_size.width)
        self.query_one("#collisions-detail-text", Static).update(shown)
        self.query_one("#collisions-detail").add_class("open")
        self.query_one("#collisions-list").display = False
        self.query_one("#collisions-detail").focus()

    def action_back(self) -> None:
        detail = self.query_one("#collisions-detail")
        if detail.has_class("open"):
            detail.remove_class("open")
            listing = self.query_one("#collisions-list")
            listing.display = True
            listing.focus()
            return
        self.dismiss(None)
