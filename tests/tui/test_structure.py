"""The explorer's rooms: a small app class, a main screen reached by type, one table of keys
behind the bindings, the palette and F1, and the watcher's bursts merged into one message."""

from __future__ import annotations

import ast
from pathlib import Path

from explorer.engine.index.live import IndexChange
from explorer.tui.app import ExplorerApp
from explorer.tui.commands import ExplorerCommands
from explorer.tui.keys import HELP_NOTES, KEYS, help_text
from explorer.tui.messages import EmbeddingProgress, IndexChanged
from explorer.tui.screens import MainScreen
from tests.tui.test_app import SIZE, library, make_app, page_text, ready, settle  # noqa: F401

TUI = Path(__file__).resolve().parents[2] / "explorer" / "tui"


def test_the_app_class_stays_small() -> None:
    tree = ast.parse((TUI / "app.py").read_text(encoding="utf-8"))
    app = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ExplorerApp")
    assert app.end_lineno is not None and app.end_lineno - app.lineno + 1 < 400


def test_no_module_reaches_the_main_screen_through_the_stack() -> None:
    users = [p.name for p in TUI.rglob("*.py") if "screen_stack[" in p.read_text("utf-8")]
    assert not users, users


def test_a_burst_of_reindexes_merges_into_one_message() -> None:
    def change(version: int, changed: tuple[str, ...]) -> IndexChange:
        return IndexChange(version, (), (), changed, (), False, {"total": 10.0})

    first, second = IndexChanged(change(2, ("pdf",))), IndexChanged(change(3, ("xlsx", "pdf")))
    assert first.can_replace(second)  # the queued one takes the first's place
    assert second.counts() == (0, 0, 3) and second.total_ms() == 20.0
    assert not first.can_replace(EmbeddingProgress(1, 2))  # another kind is never merged


async def test_every_key_is_in_the_palette_and_in_help(library: Path, tmp_path: Path) -> None:  # noqa: F811
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        assert isinstance(app.main, MainScreen) and app.main is app.screen
        names = [name for name, _, _ in ExplorerCommands(app.screen)._commands()]
        page = page_text(help_text(app, HELP_NOTES))
        for _key, _action, description, tooltip, _id in KEYS:
            assert description in names
            assert description in page and tooltip in page
        assert len(ExplorerApp.BINDINGS) == len(KEYS)
        # The app's own commands alone: Textual's Quit and Screenshot doubled the app's, and
        # its Keys and Maximize panels hid the table; the theme stays, as the app's.
        assert set(ExplorerApp.COMMANDS) == {ExplorerCommands} and "Theme" in names
        assert len(names) == len(set(names))


def test_go_to_lists_each_skill_on_two_lines_whatever_its_description() -> None:
    """ctrl+g: a 1,000-character description is cut at a word to one line under the id,
    so a library's skills can be scanned; a short one is shown whole."""
    from textual.content import Content

    from explorer.tui.commands import ABOUT_CHARS, listing

    long = listing(Content("auditor"), "Audits web pages for accessibility problems. " * 20)
    name, about = long.plain.split("\n")
    assert name == "auditor" and len(about) <= ABOUT_CHARS + 1 and about.endswith("for…")
    assert listing(Content("pdf"), "Merge PDFs.").plain == "pdf\nMerge PDFs."
