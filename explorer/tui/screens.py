"""Modal screens: the threshold editor, help, and the list of parse errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from explorer.engine.config import (
    FIELD_NAMES,
    MODEL_FIELDS,
    Config,
    ConfigError,
    coerce,
    read_value,
    toml_value,
    type_label,
)
from explorer.engine.ranges import range_error
from explorer.engine.skills import Problem
from explorer.engine.tomlfile import update_toml
from explorer.terminal import plain, visible

# Fields read when the index is built: editing them re-indexes instead of just re-deciding.
INDEX_FIELDS = frozenset({"bm25_k1", "bm25_b", "bm25_index_name_keywords"})
# Fields that choose models, roots or caches: saved, but they take effect on the next start.
RESTART_FIELDS = frozenset(
    {*MODEL_FIELDS, "roots", "cache_dir", "watch_debounce_ms", "watch_max_delay_ms", "keymap"}
)


def field_text(value: Any) -> str:
    """A field's value as the editor shows it: TOML, blank for 'follow the model'."""
    return "" if value is None else toml_value(value)


DEFAULTS = Config()


class ThresholdEditor(ModalScreen[None]):
    """Every config field, edited in place; each valid edit re-decides at once."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="editor-close"),
        # ctrl+s stays the app's screenshot key: one key, one meaning.
        Binding("f4", "save", "Save edits", id="editor-save"),
    ]

    class Edited(Message):
        def __init__(self, config: Config, changed: str) -> None:
            super().__init__()
            self.config = config
            self.changed = changed

    def __init__(self, config: Config, baseline: Config, save_path: Path) -> None:
        super().__init__()
        self.config = config
        self.baseline = baseline  # what the app started with: edits are marked against it
        self.opened = config  # what this screen started with: only edits made here are saved
        self.save_path = save_path

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="editor"):
            yield Static(
                Text.assemble(
                    ("Thresholds and settings", "bold"),
                    ("  edits apply as you type; ", "dim"),
                    ("f4", "bold"),
                    (f" saves the fields edited here to {self.save_path}; ", "dim"),
                    ("esc", "bold"),
                    (" closes", "dim"),
                ),
                id="editor-title",
            )
            for name in FIELD_NAMES:
                with Horizontal(classes="field-row"):
                    yield Label(name, id=f"label-{name}", classes="field-name")
                    default = getattr(DEFAULTS, name)
                    yield Input(
                        field_text(getattr(self.config, name)),
                        # Blank means the default, for every field; the placeholder says which.
                        placeholder="default: follow the model"
                        if default is None
                        else f"default: {field_text(default) or 'empty'}",
                        id=f"field-{name}",
                        classes="field-input",
                    )
                    yield Label(type_label(name), id=f"hint-{name}", classes="field-hint")
        self._mark_all()

    def _mark_all(self) -> None:
        for name in FIELD_NAMES:
            self._mark(name)

    def _mark(self, name: str, error: str | None = None) -> None:
        try:
            label = self.query_one(f"#label-{name}", Label)
            hint = self.query_one(f"#hint-{name}", Label)
        except Exception:  # not mounted yet
            return
        changed = getattr(self.config, name) != getattr(self.baseline, name)
        label.set_class(changed, "changed")
        if error:
            hint.update(plain(error))
            hint.add_class("error")
        else:
            note = type_label(name)
            if name in INDEX_FIELDS:
                note += " (re-indexes)"
            elif name in RESTART_FIELDS:
                note += " (next start)"
            hint.update(note)
            hint.remove_class("error")

    def on_mount(self) -> None:
        self._mark_all()
        self.query_one(".field-input", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        name = (event.input.id or "").removeprefix("field-")
        raw = event.value.strip()
        try:
            if not raw:
                value: Any = getattr(DEFAULTS, name)  # a cleared field is the default
            else:
                value = coerce(name, read_value(name, raw), "editor")
        except ConfigError as error:
            self._mark(name, str(error).removeprefix("editor: "))
            return
        problem = range_error(name, value)
        if problem is not None:
            self._mark(name, problem)
            return
        self._mark(name)
        if value == getattr(self.config, name):
            # Inputs post Changed when they mount, and retyping a value changes nothing:
            # no message, so no re-decide, re-index or re-run of lint and cases.
            return
        self.config = self.config.replace(**{name: value})
        self._mark(name)
        self.post_message(self.Edited(self.config, name))

    def action_save(self) -> None:
        """Write only the fields edited in this screen; the rest of the file stays as it is.

        Values from --set, the user's config or the reference's config are not edits made
        here, so they never leak into the project file.
        """
        edited = {
            name: getattr(self.config, name)
            for name in FIELD_NAMES
            if getattr(self.config, name) != getattr(self.opened, name)
        }
        if not edited:
            self.notify("nothing edited here: nothing saved", severity="warning")
            return
        try:
            written = update_toml(
                self.save_path, edited, header="# skill-explorer settings (saved by the explorer)\n"
            )
        except ConfigError as error:
            self.notify(visible(str(error)), severity="error", markup=False, timeout=10)
            return
        self.opened = self.config
        self.notify(
            visible(f"wrote {'; '.join(written)} to {self.save_path.resolve()}"),
            markup=False,
            timeout=8,
        )

    def action_close(self) -> None:
        self.dismiss()


class TextScreen(ModalScreen[None]):
    """A scrollable page of text (help, errors); any of esc, q, enter closes it."""

    BINDINGS = [
        Binding("escape,q,enter", "close", "Close", id="page-close"),
    ]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="page"):
            yield Static(Text(self.title_text, style="bold"), id="page-title")
            yield Static(self.body, id="page-body")

    def action_close(self) -> None:
        self.dismiss()


def errors_text(problems: list[Problem]) -> Text:
    out = Text()
    if not problems:
        out.append("No parse errors.", style="green")
    for problem in problems:
        out.append("• ", style="red")
        out.append_text(plain(str(problem)))
        out.append("\n")
    return out
