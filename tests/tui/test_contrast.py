"""Every colour pair the explorer draws reads at 4.5:1 or more (WCAG AA), in both its themes.

The screens are rendered as the terminal gets them (Textual's compositor, after its
filters: ANSI colours turned into the theme's, dim turned into a blend) and every cell
with text is measured against its own background. Box-drawing and block characters (rules,
scrollbars, borders) are decoration, not text: WCAG asks 3:1 of them, and they are left
out. Under the F7 editor, only the editor's own panel and footer count: the table beside
it is the page under a modal.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.color import blend_rgb
from rich.console import Console
from rich.terminal_theme import DEFAULT_TERMINAL_THEME
from textual.screen import ModalScreen
from textual.widgets import TabbedContent

from explorer.engine.base.config import Config
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.palette import ANSI_DARK, ANSI_LIGHT, DARK, DARK_THEME, LIGHT, LIGHT_THEME
from explorer.tui.widgets.prompt_bar import PromptBar
from explorer.tui.widgets.skills_table import SkillsTable
from tests.conftest import SAMPLE_SKILLS
from tests.tui.test_app import enter, ready, settle

AA = 4.5
PROMPT = "merge two report.pdf files into one"


def luminance(colour: tuple[int, int, int]) -> float:
    def channel(value: int) -> float:
        share = value / 255
        return share / 12.92 if share <= 0.03928 else ((share + 0.055) / 1.055) ** 2.4

    red, green, blue = colour
    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(first: tuple[int, int, int], second: tuple[int, int, int]) -> float:
    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _decoration(char: str) -> bool:
    return char.isspace() or "\u2500" <= char <= "\u259f"


def colour_pairs(app: ExplorerApp) -> dict[tuple[Any, Any], list[str]]:
    """(text colour, background) -> the texts drawn with it, over the screen on top."""
    screen = app.screen
    regions = None
    if isinstance(screen, ModalScreen) and screen.query("#whatif"):
        regions = [child.region for child in screen.children if child.region.area]
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(screen._compositor.render_update(full=True, screen_stack=[]))
    theme = DEFAULT_TERMINAL_THEME
    found: dict[tuple[Any, Any], list[str]] = {}
    x = y = 0
    for segment in console._record_buffer:
        text, style = segment.text, segment.style
        if text == "\n":
            x, y = 0, y + 1
            continue
        start, x = x, x + segment.cell_length
        if regions is not None and not any(
            r.y <= y < r.bottom and r.x <= start and x <= r.right for r in regions
        ):
            continue
        shown = "".join(char for char in text if not _decoration(char))
        if style is None or not shown:
            continue
        colour = style.color.get_truecolor(theme) if style.color else theme.foreground_color
        background = (
            style.bgcolor.get_truecolor(theme, foreground=False)
            if style.bgcolor
            else theme.background_color
        )
        if style.reverse:
            colour, background = background, colour
        if style.dim:
            colour = blend_rgb(colour, background, 0.4)
        found.setdefault((tuple(colour), tuple(background)), []).append(shown)
    return found


def below_aa(app: ExplorerApp, where: str) -> list[str]:
    return [
        f"{where}: {contrast(fg, bg):.2f} #{bytes(fg).hex()} on #{bytes(bg).hex()} {texts[:3]}"
        for (fg, bg), texts in colour_pairs(app).items()
        if contrast(fg, bg) < AA
    ]


def test_the_measure_is_wcag_s() -> None:
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((118, 118, 118), (255, 255, 255)) == pytest.approx(4.54, abs=0.01)


@pytest.mark.parametrize("ansi", [ANSI_DARK, ANSI_LIGHT], ids=["dark", "light"])
def test_every_ansi_colour_reads_on_every_background_of_its_theme(ansi: Any) -> None:
    """The colours of the explorer's texts against the backgrounds they are drawn on: the
    screen, its panels, the odd rows and the cursor row (focused or not)."""
    theme = DARK_THEME if ansi is ANSI_DARK else LIGHT_THEME
    variables = theme.to_color_system().generate()
    names = ("background", "surface", "panel", "primary-muted", "block-cursor-blurred-background")
    backgrounds = [variables[name] for name in names]
    colours = [ansi.ansi_colors[index] for index in range(1, 7)]  # red .. cyan
    for background in backgrounds:
        rgb = tuple(int(background.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
        for colour in colours:
            assert contrast(tuple(colour), rgb) >= AA, (theme.name, colour, background)


async def _open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theme: str, size: tuple[int, int]):  # type: ignore[no-untyped-def]
    work = tmp_path / "work"
    shutil.copytree(SAMPLE_SKILLS, work / "sample_skills")
    monkeypatch.chdir(work)
    return ExplorerApp(
        ["sample_skills"],
        Config(model="bow", reranker="off"),
        cache_dir=str(tmp_path / "cache"),
        history=PromptHistory(tmp_path / "history.txt"),
        show_timings=False,
        cases_path="sample_skills/cases.toml",
    )


@pytest.mark.slow  # a rendered-colour check, like the SVG snapshots
async def test_the_main_screen_reads_at_4_5_to_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both themes in one run: a theme change restyles every widget in place."""
    app = await _open(tmp_path, monkeypatch, DARK, (120, 40))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        await enter(pilot, app, PROMPT)
        await pilot.press("down")
        tabs = app.query_one(TabbedContent)
        first_tab = tabs.active
        bad: list[str] = []
        drawn: dict[str, set[tuple[Any, Any]]] = {}
        for theme in (DARK, LIGHT):
            app.theme = theme
            app.query_one(PromptBar).focus()
            tabs.active = first_tab
            await pilot.pause(0.3)
            drawn[theme] = set(colour_pairs(app))
            bad += below_aa(app, f"{theme}: prompt focused")
            app.query_one(SkillsTable).focus()  # the focused cursor row
            tabs.active = "cases-tab"
            await pilot.pause(0.3)
            bad += below_aa(app, f"{theme}: table focused, cases")
        assert drawn[DARK].isdisjoint(drawn[LIGHT])  # each theme was drawn, not the first twice
        assert not bad, "\n".join(bad)
        # The palette's theme picker offers these two, none of Textual's unmeasured ones.
        assert set(app.available_themes) == {DARK, LIGHT}


@pytest.mark.slow  # every screen in both themes at two sizes: 20-40 s
@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
@pytest.mark.parametrize("theme", [DARK, LIGHT])
async def test_every_screen_reads_at_4_5_to_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theme: str, size: tuple[int, int]
) -> None:
    app = await _open(tmp_path, monkeypatch, theme, size)
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        await enter(pilot, app, PROMPT)
        await pilot.press("down")
        bad = below_aa(app, "main")
        for tab in ("skill-tab", "cases-tab"):
            app.query_one(TabbedContent).active = tab
            await pilot.pause(0.3)
            bad += below_aa(app, tab)
        for key in ("f1", "f2", "f3", "f7"):
            await pilot.press(key)
            await settle(pilot, lambda: isinstance(app.screen, ModalScreen))
            await pilot.pause(0.5)
            bad += below_aa(app, key)
            await pilot.press("escape")
            await settle(pilot, lambda: not isinstance(app.screen, ModalScreen))
        await pilot.press("ctrl+t")
        await enter(pilot, app, "what year was the PDF format invented")
        await pilot.press("f8")
        await pilot.pause(0.8)
        bad += below_aa(app, "f8")
        assert not bad, "\n".join(bad)
