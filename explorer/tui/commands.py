"""Command palette entries (ctrl+p): every key of the app (explorer/tui/keys.py), the columns
to toggle, the sorts, the theme, and every skill to go to (ctrl+g). Textual's own system
commands are not offered: its Quit and Screenshot doubled the app's (its Screenshot
failed), and its Keys and Maximize panels contradicted F1 and hid the table."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from explorer.terminal import visible
from explorer.tui.keys import bindings
from explorer.tui.widgets.skills_table import COLUMNS, SORT_KEYS

if TYPE_CHECKING:
    from explorer.tui.app import ExplorerApp


class ExplorerCommands(Provider):
    """Every key of the app, by its binding (its description the name, its tooltip the help,
    the key in effect beside it), then the columns to toggle and the sorts: a new binding
    is in the palette, and in F1's help, without a line here."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast("ExplorerApp", self.app)  # Provider.app is App[Any]
        commands: list[tuple[str, str, Callable[[], object]]] = []
        for binding in bindings(app):
            key = visible(app.get_key_display(binding))
            help_text = f"{binding.tooltip} ({key})" if binding.tooltip else key
            action = partial(app.run_action, binding.action)
            commands.append((binding.description, help_text, action))
        for key, label in COLUMNS[2:]:
            commands.append(
                (f"Toggle column: {label}", "show or hide it", partial(app.toggle_column, key))
            )
        for key in SORT_KEYS:
            commands.append(
                (
                    f"Sort by: {key}",
                    "the same again reverses; decision = the cascade's order",
                    partial(app.sort_table, key),
                )
            )
        commands.append(("Theme", "explorer-dark or explorer-light", app.action_change_theme))
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


class SkillCommands(Provider):
    """ "Go to skill": every skill of the library by id, with its description under it.

    Ids and descriptions are a stranger's text: each hit is built as `Content`, never as
    markup (the palette reads a plain string and `help` as markup, and `[/tmp]` in a
    description stopped the app), through the sanitiser, so an escape sequence in a name
    is shown, not sent.
    """

    def _skills(self) -> list[tuple[str, str]]:
        app = cast("ExplorerApp", self.app)  # Provider.app is App[Any]
        if app.snapshot is None:
            return []
        return [(skill.id, skill.description) for skill in app.snapshot.skills]

    async def discover(self) -> Hits:
        app = cast("ExplorerApp", self.app)  # Provider.app is App[Any]
        for skill_id, description in self._skills():
            shown = skill_line(skill_id)
            yield DiscoveryHit(
                listing(Content(shown), description),
                lambda skill_id=skill_id: app.go_to_skill(skill_id),
                text=shown,
            )

    async def search(self, query: str) -> Hits:
        app = cast("ExplorerApp", self.app)  # Provider.app is App[Any]
        matcher = self.matcher(query)
        for skill_id, description in self._skills():
            shown = skill_line(skill_id)
            score, offsets = matcher.fuzzy_search.match(matcher.query, shown)
            if score > 0:
                name = Content(shown)
                for offset in offsets:
                    if not shown[offset].isspace():
                        name = name.stylize(matcher.match_style, offset, offset + 1)
                yield Hit(
                    score,
                    listing(name, description),
                    lambda skill_id=skill_id: app.go_to_skill(skill_id),
                    text=shown,
                )


def skill_line(text: str) -> str:
    """A skill's id or description on one line, every control made visible."""
    return " ".join(visible(text).split())


ABOUT_CHARS = 72  # a description's share of a hit: one line at 80 columns


def listing(name: Content, description: str) -> Content:
    """The id, and the start of the description dimmed under it, on one line: whole, a
    1,000-character description made one skill a screenful and a list of them unscannable.
    Not read as markup, as the palette's `help` would be."""
    about = skill_line(description)
    if len(about) > ABOUT_CHARS:  # cut at a word's end
        cut = about.rfind(" ", 0, ABOUT_CHARS)
        about = about[: cut if cut > 0 else ABOUT_CHARS].rstrip(" ,;:.") + "…"
    return name + Content("\n") + Content(about).stylize("dim") if about else name
