"""What fits at 80, 120 and 200 columns: the footer's keys and the table's columns.

Driven through Textual's Pilot over the real engine and a real live index.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from explorer.tui.widgets.footer import QuietFooter, fitting, key_width
from tests.tui.test_app import library, make_app, ready, settle

__all__ = ["library"]  # the fixture, shared with test_app

WIDTHS = (80, 120, 200)


def test_the_footer_keeps_the_screens_keys_then_the_apps_by_priority() -> None:
    from textual.binding import Binding

    items = [
        (Binding("ctrl+q", "quit", "Quit", id="quit"), "^q", True),
        (Binding("ctrl+y", "copy_json", "Copy JSON", id="copy-json"), "^y", True),
        (Binding("f1", "help", "Help", id="help"), "f1", True),
        (Binding("f4", "save", "Save edits", id="editor-save"), "f4/^s", False),
    ]
    assert key_width("f1", "Help") == len("f1 Help") + 1
    room = key_width("f4/^s", "Save edits") + key_width("f1", "Help") + key_width("^q", "Quit")
    assert fitting(items, room) == [0, 2, 3]  # copy-json goes first, the order stays
    assert fitting(items, room - 1) == [2, 3]  # then quit; the screen's own key stays


async def test_the_footer_keys_fit_the_width(library: Path, tmp_path: Path) -> None:
    """At 120 columns the footer ran off the right edge mid-key; now every key shown is
    whole and clear of the palette key, help is always there, and wider shows more."""
    app = make_app(library, tmp_path)
    shown: dict[int, list[str]] = {}
    async with app.run_test(size=(WIDTHS[0], 24)) as pilot:
        await settle(pilot, lambda: ready(app))
        for width in WIDTHS:
            await pilot.resize_terminal(width, 40)
            footer = app.query_one(QuietFooter)
            await settle(pilot, lambda w=width, f=footer: f.size.width == w)
            await pilot.pause()
            keys = [key for key in footer.query(FooterKey) if "-command-palette" not in key.classes]
            palette = footer.query_one(".-command-palette", FooterKey)
            assert keys and palette.region.right <= width
            for key in keys:
                assert key.region.right <= palette.region.x, (width, key.key_display)
                assert key.region.width == len(key.render().plain)  # drawn whole
            shown[width] = [key.description for key in keys]
    assert all("Help" in names for names in shown.values())
    assert len(shown[80]) < len(shown[120]) < len(shown[200])
