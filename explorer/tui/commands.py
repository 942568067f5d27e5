"""Command palette entries (ctrl+p): everything a key does, and a few things no key does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from explorer.tui.widgets.skills_table import COLUMNS

if TYPE_CHECKING:
    from explorer.tui.app import ExplorerApp


class ExplorerCommands(Provider):
    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app: ExplorerApp = self.app  # type: ignore[assignment]
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
            ("Edit thresholds", "every config field, applied as you type", app.action_thresholds),
            ("Show parse errors", "rejected files, stale skills, warnings", app.action_errors),
            (
                "Save a screenshot (SVG)",
                "of this screen, to the current directory",
                app.action_screenshot,
            ),
        ]
        for key, label, _ in COLUMNS[2:]:
            commands.append(
                (
                    f"Toggle column: {label}",
                    "show or hide it",
                    lambda key=key: app.toggle_column(key),
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
