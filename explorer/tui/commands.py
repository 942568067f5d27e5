"""Command palette entries (ctrl+p): everything a key does, and a few things no key does."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from explorer.terminal import visible
from explorer.tui.widgets.skills_table import COLUMNS, SORT_KEYS

if TYPE_CHECKING:
    from explorer.tui.app import ExplorerApp


class ExplorerCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast("ExplorerApp", self.app)  # Provider.app is App[Any]
        commands: list[tuple[str, str, Callable[[], object]]] = [
            ("Re-index now", "walk the roots again and rebuild the snapshot", app.action_reindex),
            (
                "Open the highlighted skill in $EDITOR",
                "edit its SKILL.md",
                app.action_open_in_editor,
            ),
            ("Copy the decision JSON", "the same JSON as `route --json`", app.action_copy_json),
            (
                "Export the explanation as Markdown",
                "written to the current directory",
                app.action_export_markdown,
            ),
            ("Pin the current prompt", "compare it with the prompt being typed", app.action_pin),
            ("Go to skill…", "jump to a skill's row and keep it highlighted", app.action_go_to),
            (
                "What-if: edit the highlighted skill's description",
                "see its scores and the cases' flips before saving",
                app.action_whatif,
            ),
            (
                "Compare with the pinned prompt or the previous snapshot",
                "a ranking diff: moves, channel deltas, verdicts (toggle)",
                app.action_compare,
            ),
            ("Filter the table", "fuzzy over id and description", app.action_filter),
            ("Edit thresholds", "every config field, applied as you type", app.action_thresholds),
            ("Show parse errors", "rejected files, stale skills, warnings", app.action_errors),
            (
                "Save a screenshot (SVG)",
                "of this screen, to the current directory",
                app.action_screenshot,
            ),
        ]
        for key, label in COLUMNS[2:]:
            commands.append(
                (
                    f"Toggle column: {label}",
                    "show or hide it",
                    partial(app.toggle_column, key),
                )
            )
        for key in SORT_KEYS:
            commands.append(
                (
                    f"Sort by: {key}",
                    "the same again reverses; decision = the cascade's order",
                    partial(app.sort_table, key),
                )
            )
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


def listing(name: Content, description: str) -> Content:
    """The id, and the description dimmed under it: what the palette's `help` would show,
    without reading the description as markup."""
    about = skill_line(description)
    return name + Content("\n") + Content(about).stylize("dim") if about else name
