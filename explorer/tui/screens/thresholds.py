"""F2: every config field in one list, edited in place; each valid edit re-decides at once."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from explorer.engine import Config, ConfigError, LoadedConfig
from explorer.engine.base import (
    FIELD_NAMES,
    MODEL_FIELDS,
    coerce,
    read_value,
    toml_value,
    type_label,
    update_toml,
)
from explorer.engine.host import is_trusted
from explorer.engine.inference import ModelStatus
from explorer.engine.route import resolve
from explorer.terminal import plain, visible
from explorer.tui.health import short_path
from explorer.tui.keys import HELP_BINDING
from explorer.tui.provenance import Source, field_source
from explorer.tui.widgets.eager_input import EagerInput
from explorer.tui.widgets.footer import QuietFooter

# Fields read when the index is built: editing them re-indexes instead of just re-deciding.
INDEX_FIELDS = frozenset(
    {"bm25_k1", "bm25_b", "bm25_index_name_keywords", "dense_body_chars", "preset"}
)
# Fields that choose models, roots or caches: saved, but they take effect on the next start.
RESTART_FIELDS = frozenset(
    {*MODEL_FIELDS, "roots", "cache_dir", "watch_debounce_ms", "watch_max_delay_ms", "keymap"}
)


def field_text(value: Any) -> str:
    """A field's value as the editor shows it: TOML, blank for 'follow the model'."""
    return "" if value is None else toml_value(value)


DEFAULTS = Config()
SOURCE_WIDTH = 31  # the "where it comes from" column of the F2 list, at its narrowest
# What a wide list keeps for the type note after a widened source column ("a number"):
# where they compete the source wins, since the help line under the list gives the
# highlighted field's note whole.
NOTE_ROOM = 12
NAME_WIDTH, VALUE_WIDTH = 26, 19  # the field's name (after "* ") and its value


class FieldList(ScrollView):
    """Every config field as one drawn line (name, value, note): no widget per field, so
    F2 opens in the time of one frame whatever the number of fields (composing
    ~200 widgets takes 1-3 s)."""

    COMPONENT_CLASSES = {"field-list--cursor", "field-list--changed", "field-list--error"}
    DEFAULT_CSS = """
    FieldList > .field-list--cursor { background: $primary-muted; text-style: bold; }
    FieldList > .field-list--changed { color: $warning; text-style: bold; }
    FieldList > .field-list--error { color: $error; }
    """
    cursor: reactive[int] = reactive(0)

    class Chosen(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, editor: ThresholdEditor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.editor = editor
        self.virtual_size = Size(0, len(FIELD_NAMES))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width  # beside the scrollbar: … stays on screen
        if index >= len(FIELD_NAMES):
            return Strip.blank(width, self.rich_style)
        name = FIELD_NAMES[index]
        editor = self.editor
        error = editor.errors.get(name)
        line = Text(no_wrap=True, overflow="ellipsis")
        name_style = (
            self.get_component_rich_style("field-list--changed") if editor.changed(name) else ""
        )
        line.append(
            f"{'*' if editor.changed(name) else ' '} {name:<{NAME_WIDTH}}", style=name_style
        )
        source = editor.source(name)
        value = editor.texts[name] or source.value or "—"
        line.append_text(
            plain(
                f"{value[: VALUE_WIDTH - 1]:<{VALUE_WIDTH}}",
                style="" if editor.texts[name] else "dim",
            )
        )
        # The source before the type: a narrow editor (80 columns) gives it the rest of
        # the line and leaves the type to the help line under the list; a wide one makes
        # it as wide as the longest source while NOTE_ROOM cells are left for the type.
        if width >= 100:
            room = max(
                SOURCE_WIDTH, min(editor.longest_source() + 2, width - len(line) - NOTE_ROOM)
            )
        else:
            room = max(12, width - len(line) - 1)
        label = source.label
        if error:  # the typed text is refused: say which value still decides
            kept = getattr(editor.config, name)
            label = "refused; still " + ("unset" if kept is None else repr(kept))
        label = label if len(label) < room else label[: room - 2] + "…"
        line.append_text(plain(f"{label:<{room}}", style="italic dim"))
        if error:
            line.append(visible(error), style=self.get_component_rich_style("field-list--error"))
        elif width >= 100:
            line.append(editor.note(name), style="dim")
        line.truncate(max(width, 1), overflow="ellipsis", pad=True)
        style = (
            self.get_component_rich_style("field-list--cursor") if index == self.cursor else None
        )
        segments = list(line.render(self.app.console))
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        return strip.apply_style(style) if style is not None else strip

    def watch_cursor(self, old: int, new: int) -> None:
        self._cursor_in_view()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        # The editor opens on a field far down (relevance_threshold): before the first
        # layout the list has no height, and the cursor is brought into view here.
        self._cursor_in_view()

    def _cursor_in_view(self) -> None:
        top, height = self.scroll_offset.y, max(1, self.size.height)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(FIELD_NAMES):
            self.post_message(self.Chosen(index))


def saved_text(
    written: Sequence[str], path: Path, refused: Mapping[str, str], *, trusted: bool = True
) -> str:
    """The notice after a save: what was set, what was taken out, and the fields whose
    text was not valid, which kept their value and were not saved; and, for a project the
    user has not trusted, that the hook ignores the file until they do (a cloned
    repository's config must not steer the hook unasked, docs/hook.md)."""
    removed = [item.removesuffix(" removed") for item in written if item.endswith(" removed")]
    changed = [item for item in written if not item.endswith(" removed")]
    parts = [f"set {'; '.join(changed)}"] if changed else []
    if removed:
        parts.append(f"removed {', '.join(removed)} (the other layers decide it now)")
    text = f"{' and '.join(parts)} in {short_path(path)}"
    if refused:
        text += f"; not saved, not valid: {', '.join(refused)}"
    if not trusted:
        text += "; the explorer uses it now, the hook once you run `skill-explorer trust` here"
    return text


class ThresholdEditor(ModalScreen[None]):
    """Every config field, edited in place; each valid edit re-decides at once.

    One list draws every field; one input below edits the highlighted one. Up/down (and
    page up/down) choose the field while the input keeps the focus, as in the main screen.
    """

    BINDINGS = [
        Binding("escape", "close", "Close", id="editor-close"),
        HELP_BINDING,
        # F4 saves, and so does ctrl+s (what a user presses out of habit in an editor):
        # the app's ctrl+s screenshot is for the main screen.
        Binding("f4", "save", "Save edits", key_display="f4/^s", id="editor-save"),
        Binding("ctrl+s", "save", "Save edits", show=False, id="editor-save-ctrl-s"),
        Binding("up", "choose(-1)", "Previous field", show=False, id="editor-up"),
        Binding("down", "choose(1)", "Next field", show=False, id="editor-down"),
        Binding("pageup", "choose(-10)", "Page up", show=False, id="editor-page-up"),
        Binding("pagedown", "choose(10)", "Page down", show=False, id="editor-page-down"),
    ]

    class Edited(Message):
        def __init__(self, config: Config, changed: str) -> None:
            super().__init__()
            self.config = config
            self.changed = changed

    def __init__(
        self,
        config: Config,
        baseline: Config,
        save_path: Path,
        *,
        on_saved: Callable[[Config, dict[str, str]], None] | None = None,
        sources: Mapping[str, str] | None = None,
        status: ModelStatus | None = None,
        skills: int = 0,
        without_file: LoadedConfig | None = None,
    ) -> None:
        super().__init__()
        # Where each value comes from: the layers that set fields (load_config's sources),
        # and the models and library size that None fields follow.
        self.sources, self.status, self.skills = sources or {}, status, skills
        # Every layer but `save_path`: what a cleared field takes, its line leaving the file
        # on save (without it, the defaults).
        self.blank = without_file.config if without_file is not None else DEFAULTS
        self.blank_sources = without_file.sources if without_file is not None else {}
        self._sources: dict[str, Source] = {}  # for self._sources_for
        self._sources_for: Config | None = None
        self._longest_source = 0  # the longest of self._sources's labels (0: not measured)
        self.config = config
        # What the files hold: the config the app started with, or the one F2 last saved
        # (in this visit or an earlier one). Edits are marked against it, and F4 writes
        # every field that differs from it.
        self.baseline = baseline
        self.on_saved = on_saved
        self.save_path = save_path
        self.texts = {name: field_text(getattr(config, name)) for name in FIELD_NAMES}
        self.errors: dict[str, str] = {}
        # The field that decides opens first: the relevance model's bar where it decides
        # (§9.12), the floor (the first field) where the cascade does.
        deciding = status is not None and resolve(config, status, skills).relevance
        self.current = "relevance_threshold" if deciding else FIELD_NAMES[0]
        self.painted_at = 0.0

    # -- what the list shows ---------------------------------------------------------------

    def changed(self, name: str) -> bool:
        return bool(getattr(self.config, name) != getattr(self.baseline, name))

    def source(self, name: str) -> Source:
        """The value in force and where it comes from (provenance.py), kept until the
        config changes: the list asks for every line it draws."""
        if self._sources_for is not self.config:
            self._sources, self._sources_for, self._longest_source = {}, self.config, 0
        found = self._sources.get(name)
        if found is None:
            found = self._sources[name] = field_source(
                name,
                self.config,
                baseline=self.baseline,
                sources=self.sources,
                status=self.status,
                skills=self.skills,
            )
        return found

    def longest_source(self) -> int:
        """The longest source label of any field, for the list's source column (kept with
        the sources until the config changes)."""
        self.source(FIELD_NAMES[0])  # forgets what was kept if the config changed
        if not self._longest_source:
            self._longest_source = max(len(self.source(name).label) for name in FIELD_NAMES)
        return self._longest_source

    def placeholder(self, name: str) -> str:
        """What a blank field takes: the value the other layers give it (a file's, a
        --set's, the default, or what a None default follows)."""
        value = getattr(self.blank, name)
        if value is not None and name not in self.blank_sources:
            return f"blank = default {field_text(value) or 'empty'}"
        blank = field_source(
            name,
            self.config.replace(**{name: value}),
            sources=self.blank_sources,
            status=self.status,
            skills=self.skills,
        )
        shown = f" {blank.value}" if blank.value else ""
        return visible(f"blank = {blank.label}{shown}")

    def note(self, name: str) -> str:
        note = type_label(name)
        if name == "preset":
            note += " (re-indexes; another preset's dense model loads at the next start)"
        elif name in INDEX_FIELDS:
            note += " (re-indexes)"
        elif name in RESTART_FIELDS:
            note += " (next start)"
        return note

    def hint(self, name: str) -> str:
        """The note beside a field: its error when the last text was refused."""
        return self.errors.get(name) or self.note(name)

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="editor"):
            yield Static(
                Text.assemble(
                    ("Thresholds and settings", "bold"),
                    (
                        "  up/down choose a field, type to replace its value (right or end "
                        "to edit it; applied as you type; blank = what the other layers "
                        "give); ",
                        "dim",
                    ),
                    ("f4", "bold"),
                    (" or ", "dim"),
                    ("ctrl+s", "bold"),
                    (visible(f" saves the fields edited here to {self.save_path}; "), "dim"),
                    ("esc", "bold"),
                    (" closes", "dim"),
                ),
                id="editor-title",
            )
            yield FieldList(self, id="field-list")
            yield Static(id="field-help")
            yield EagerInput(
                self.texts[self.current],
                placeholder=self.placeholder(self.current),
                id="field-input",
            )
        yield QuietFooter()  # this screen's keys (the app's are not active over a modal)

    def on_mount(self) -> None:
        self.choose(self.current)
        self.query_one("#field-input", Input).focus()
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.painted_at = time.perf_counter()  # the first frame, for `bench --only ui`

    def _describe(self) -> None:
        name = self.current
        help_line = Text(no_wrap=True, overflow="ellipsis")
        help_line.append(name, style="bold")
        if name in self.errors:  # first: the reason a narrow help line must not cut off
            help_line.append("  ")
            help_line.append_text(plain(self.errors[name], style="bold red"))
        help_line.append_text(plain(f"  {self.note(name)}; {self.placeholder(name)}", "dim"))
        source = self.source(name)
        if self.texts[name]:
            help_line.append_text(plain(f"; now {source.label}", style="dim"))
        if source.note:
            help_line.append_text(plain(f"; {source.note}", style="dim"))
        self.query_one("#field-help", Static).update(help_line)

    # -- choosing and editing ----------------------------------------------------------

    def choose(self, name: str) -> None:
        """Make `name` the field the input edits (tests and the app call this too)."""
        self.current = name
        listing = self.query_one(FieldList)
        listing.cursor = FIELD_NAMES.index(name)
        field = self.query_one("#field-input", Input)
        field.placeholder = self.placeholder(name)
        field.value = self.texts[name]
        field.select_all()  # typing replaces the value, as in a form; right or end edits it
        self._describe()

    def edit(self, name: str, text: str) -> None:
        """Choose `name` and type `text` into it, as a user would."""
        self.choose(name)
        self.query_one("#field-input", Input).value = text

    def action_choose(self, step: int) -> None:
        index = FIELD_NAMES.index(self.current) + step
        self.choose(FIELD_NAMES[min(max(index, 0), len(FIELD_NAMES) - 1)])

    def on_field_list_chosen(self, event: FieldList.Chosen) -> None:
        self.choose(FIELD_NAMES[event.index])
        self.query_one("#field-input", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != event.input.value:
            return  # a stale event: the input has moved on (another field, more typing)
        self._apply(self.current, event.value)

    def _apply(self, name: str, text: str) -> None:
        self.texts[name] = text
        raw = text.strip()
        try:
            if not raw:
                value: Any = getattr(self.blank, name)  # as if its line were not in the file
            else:
                value = coerce(name, read_value(name, raw), "editor")
        except ConfigError as error:  # the type or the range, as a file or --set says it
            self._refused(name, str(error).removeprefix("editor: "))
            return
        self.errors.pop(name, None)
        self._redraw()
        if value == getattr(self.config, name):
            # Loading a field into the input posts Changed, and retyping a value changes
            # nothing: no message, so no re-decide, re-index or re-run of lint and cases.
            return
        self.config = self.config.replace(**{name: value})
        self._redraw()
        self.post_message(self.Edited(self.config, name))

    def _refused(self, name: str, error: str) -> None:
        self.errors[name] = error
        self._redraw()

    def _redraw(self) -> None:
        self.query_one(FieldList).refresh()
        self._describe()

    def action_save(self) -> None:
        """Write only the fields edited in this screen, and take the cleared ones out of
        the file; the rest of the file stays as it is.

        Values from --set, the user's config or the reference's config are not edits made
        here, so they never leak into the project file. A cleared field's line is removed
        rather than set to today's default: the field then follows the other layers.
        """
        edited: dict[str, Any] = {}
        for name in FIELD_NAMES:
            if not self.texts[name].strip():
                edited[name] = None  # removed if the file has it; nothing otherwise
            elif getattr(self.config, name) != getattr(self.baseline, name):
                edited[name] = getattr(self.config, name)
        written: list[str] = []
        if any(value is not None for value in edited.values()) or self.save_path.is_file():
            try:
                written = update_toml(
                    self.save_path,
                    edited,
                    header="# skill-explorer settings (saved by the explorer)\n",
                )
            except ConfigError as error:
                self.notify(visible(str(error)), severity="error", markup=False, timeout=10)
                return
        if not written:
            self.notify("nothing edited here: nothing saved", severity="warning")
            return
        # The saved fields now come from the project file, the removed ones from the
        # layers under it, and none of them is an edit any more.
        sources = dict(self.sources)
        for name, value in edited.items():
            if value is not None:
                sources[name] = str(self.save_path.resolve())
            elif name in self.blank_sources:
                sources[name] = self.blank_sources[name]
            else:
                sources.pop(name, None)
        self.baseline, self.sources = self.config, sources
        self._sources_for = None  # each field's source again, against the new baseline
        self.query_one(FieldList).refresh()
        if self.on_saved is not None:
            self.on_saved(self.config, sources)
        self.notify(
            visible(
                saved_text(
                    written,
                    self.save_path,
                    self.errors,
                    trusted=is_trusted(self.save_path.resolve().parent),
                )
            ),
            markup=False,
            timeout=8,
        )

    def action_close(self) -> None:
        self.dismiss()
