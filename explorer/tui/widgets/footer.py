"""The key footer: the keys that fit, most useful first, and without the work nobody sees.

Textual's Footer lays every shown binding out in one row and lets the terminal cut the
rest: at 120 columns the explorer's keys ran off the right edge mid-word. This footer
is compact and keeps, for the width it has, the screen's own keys first (an editor's
save and cancel), then the app's in `PRIORITY` order; the rest stay in F1 help and the
command palette, and the keys shown keep their order on screen.

Textual's Footer also rebuilds its keys whenever its screen's bindings change, and
opening F2 or F3 moves the focus off the main screen, which changes them: ~20 keys
rebuilt and styled under an opaque screen, a third of F2's opening time at 2,300 skills.
While another screen is on top this footer skips that; the focus coming back on close
changes the bindings again, and it rebuilds then. A change of bindings that leaves the
keys it shows as they are (most focus moves between panels) rebuilds nothing.

It is built on Textual's public API only (a widget, the screen's `active_bindings` and
its `bindings_updated_signal`), with its own key cell, so a Textual release that reworks
its Footer's internals changes nothing here; the look is Footer's compact one, from the
theme's `footer-*` variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

# The app's keys by binding id, the ones a new skill author needs first. Ids not listed
# come after these, in the order the app declares them.
PRIORITY = (
    "help",
    "quit",
    "whatif",
    "panels",
    "thresholds",
    "errors",
    "compare",
    "go-to",
    "filter",
    "pin",
    "open-in-editor",
    "reindex",
    "sort",
    "screenshot",
    "maximise",
    "panel-size",
    "copy-json",
    "export-markdown",
)
PALETTE_ROOM = 14  # "^p palette" docked right, with its border and padding


def key_width(key_display: str, description: str) -> int:
    """Cells one compact key takes: "f1 Help" and the one-cell gap after it."""
    return len(key_display) + (1 + len(description) if description else 0) + 1


def fitting(items: list[tuple[Binding, str, bool]], room: int) -> list[int]:
    """Indices of `items` (binding, key as shown, is the app's) that fit in `room` cells:
    the screen's own keys first, then the app's by PRIORITY; returned in screen order."""

    def rank(index: int) -> tuple[int, int, int]:
        binding, _, is_app = items[index]
        if not is_app:
            return (0, 0, index)
        wanted = PRIORITY.index(binding.id) if binding.id in PRIORITY else len(PRIORITY)
        return (1, wanted, index)

    chosen: list[int] = []
    used = 0
    for index in sorted(range(len(items)), key=rank):
        binding, shown, _ = items[index]
        width = key_width(shown, binding.description)
        if used + width <= room:
            chosen.append(index)
            used += width
    return sorted(chosen)


@dataclass(frozen=True)
class Cell:
    """What one key cell shows: compared before a rebuild, to skip one that changes nothing."""

    key: str
    key_display: str
    description: str
    classes: str = ""
    disabled: bool = False
    tooltip: str = ""


class KeyCell(Widget):
    """One key in the footer, "f1 Help": the key, then what it does. A click presses it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-cell--key", "key-cell--description"}
    DEFAULT_CSS = """
    KeyCell {
        width: auto;
        height: 1;
        margin-right: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .key-cell--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-cell--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-command-palette {
            dock: right;
            border-left: vkey $foreground 20%;
        }
    }
    """

    def __init__(
        self,
        key: str,
        key_display: str,
        description: str,
        *,
        disabled: bool = False,
        tooltip: str = "",
        classes: str = "",
    ) -> None:
        super().__init__(classes=f"{classes} -disabled" if disabled else classes)
        self.key = key
        self.key_display = key_display
        self.description = description
        self.inactive = disabled  # shown dim; a click rings the bell instead
        self.set_reactive(Widget.shrink, False)
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key = (self.key_display, self.get_component_rich_style("key-cell--key"))
        if not self.description:
            text = Text.assemble(key)
        else:
            style = self.get_component_rich_style("key-cell--description")
            text = Text.assemble(key, (" " + self.description, style))
        text.stylize_before(self.rich_style)
        return text

    def on_mouse_down(self) -> None:
        if self.inactive:
            self.app.bell()
        else:
            self.app.simulate_key(self.key)


class QuietFooter(Widget, can_focus=False, can_focus_children=False):
    DEFAULT_CSS = """
    QuietFooter {
        layout: horizontal;
        color: $footer-foreground;
        background: $footer-background;
        dock: bottom;
        height: 1;
    }
    """
    ALLOW_SELECT = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._laid_out_for = 0
        self._bindings_ready = False  # no keys until the screen has said which are active
        self._shown_cells: tuple[Cell, ...] = ()

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and self.app.screen is not self.screen:
            return  # hidden under another screen: rebuilt when the focus returns
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._rebuild)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._laid_out_for and self._bindings_ready:
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        """Recompose only when the keys it would show differ from those on screen: most
        binding changes (a focus move between panels) leave the footer's keys as they
        are, and a rebuild mounts and styles every key and lays the screen out again."""
        if self.is_attached and self._cells() != self._shown_cells:
            await self.recompose()

    def shown(self) -> list[tuple[Binding, str, bool]]:
        """Every binding the footer could show: one per action (the first, as Textual's
        Footer does), with its key as displayed and whether it is the app's."""
        seen: set[str] = set()
        items: list[tuple[Binding, str, bool]] = []
        palette = self.app.COMMAND_PALETTE_BINDING
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if not binding.show or binding.action in seen or key == palette:
                continue
            seen.add(binding.action)
            items.append((binding, self.app.get_key_display(binding), active.node is self.app))
        return items

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self._laid_out_for = self.size.width or self.app.size.width
        self._shown_cells = self._cells()
        for cell in self._shown_cells:
            yield KeyCell(
                cell.key,
                cell.key_display,
                cell.description,
                classes=cell.classes,
                disabled=cell.disabled,
                tooltip=cell.tooltip,
            )

    def _cells(self) -> tuple[Cell, ...]:
        """The keys the footer shows at its width, in order, as plain values."""
        if not self._bindings_ready:
            return ()
        width = self.size.width or self.app.size.width
        active = self.screen.active_bindings
        items = self.shown()
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        room = width - (PALETTE_ROOM if palette is not None else 0)
        cells = [
            Cell(
                binding.key,
                shown,
                binding.description,
                disabled=not (active[binding.key].enabled if binding.key in active else True),
                tooltip=binding.tooltip,
            )
            for binding, shown, _ in (items[index] for index in fitting(items, room))
        ]
        if palette is not None and self.app.ENABLE_COMMAND_PALETTE:
            cells.append(
                Cell(
                    palette.binding.key,
                    self.app.get_key_display(palette.binding),
                    palette.binding.description,
                    classes="-command-palette",
                    disabled=not palette.enabled,
                    tooltip=palette.binding.tooltip or palette.binding.description,
                )
            )
        return tuple(cells)
