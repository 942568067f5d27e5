"""Every screen of the explorer, opened over a library whose names, descriptions, paths and
prompt carry terminal controls and Textual markup: nothing reaches the terminal as control,
and no text from outside is parsed as markup (a markup error would stop the app, and the
Pilot re-raises it when the test leaves `run_test`).

One walk through the screens, in one app: pin (ctrl+t) and compare (f8), the editor with
no editor installed (ctrl+o), what-if (f7), the Markdown export (ctrl+r), the go-to palette
(ctrl+g, listed and searched), the filter (ctrl+f), and with the slow tests the rest: both
hostile skills, the command palette, the Skill, Cases and History tabs (a cases.toml and a
telemetry log with hostile prompts and ids), the maximised decision panel (f9), help (f1),
thresholds (f2) and the problems (f3). Names and descriptions carry zero-width and bidi
marks too (`p\u200bdf` must not look like `pdf`). Every frame is read as the compositor
would send it, toasts included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import TabbedContent
from textual.widgets._toast import Toast  # what a notification draws

from explorer.terminal import is_safe, visible
from explorer.tui.app import ExplorerApp
from explorer.tui.compare import CompareView
from explorer.tui.screens import TextScreen, ThresholdEditor
from explorer.tui.whatif import WhatIfScreen
from explorer.tui.widgets.prompt_bar import PromptBar
from tests.hostile.test_terminal_safety import screen_text
from tests.tui.test_app import SIZE, make_app, ready, settle, shown_for

ESC = "\x1b"
OSC52 = f"{ESC}]52;c;ZWNobyBwd25lZA==\x07"  # writes the clipboard, through tmux too
MARKUP = "[/tmp] [/] [bold]b[/bold] [link=https://evil.test]x[/link] [@click=app.quit]q[/]"
EVIL_NAME = f"pdf-evil{OSC52}[/tmp][bold]"
PROMPT = f"merge pdf files [/] [bold] {OSC52}"
ZERO_WIDTH = "p\u200bdf-\u200e\u202etxt.exe\u2066"  # looks like "pdf-exe.txt" when sent raw


def unsafe(text: str) -> list[str]:
    """Every code point of `text` that the sanitiser would not let through."""
    return sorted({f"U+{ord(char):04X}" for char in text if not is_safe(char)})


def toasts(app: ExplorerApp) -> str:
    """The notifications on screen, as drawn, each on one line."""
    return "\n".join(" ".join(toast.render().plain.split()) for toast in app.screen.query(Toast))


def write(root: Path, directory: str, name: str, description: str) -> None:
    (root / directory).mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {name}\ndescription: {description}\n---\nBody {MARKUP} {OSC52}\n"
    (root / directory / "SKILL.md").write_bytes(text.encode("utf-8"))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write(root, "pdf", "pdf", "Use when merging or splitting PDF files.")
    write(root, "pdf [old]", "pdf-[/tmp]", f"Use when merging PDF files {MARKUP} {OSC52}")
    write(root, f"evil{ESC}[2J", EVIL_NAME, f"Use when merging PDF reports {OSC52}{ESC}[2J")
    write(root, "xlsx", "xlsx", f"Use when building spreadsheets [/] {MARKUP}")
    write(root, "zw", ZERO_WIDTH, "Use when merging p\u200bdf files \u202egnitirw\u202c [/]")
    cases = [
        {"prompt": f"merge the pdf reports {OSC52} [/tmp]", "expect": [EVIL_NAME, "pdf-[/tmp]"]},
        {"prompt": "merge p\u200bdf files [bold]", "expect": ["xlsx"]},  # failing: listed
    ]
    (root / "cases.toml").write_text(
        "".join(
            f"[[case]]\nprompt = {json.dumps(case['prompt'])}\nexpect = "
            f'{json.dumps(case["expect"])}\nkind = "direct"\n\n'
            for case in cases
        ),
        encoding="utf-8",
    )
    return root


def history_log(tmp_path: Path) -> Path:
    """A telemetry log (kept prompts) whose prompts and skill ids are hostile."""
    log = tmp_path / "telemetry.jsonl"
    events = [
        {
            "ts": 1,
            "kind": "recommend",
            "session": f"s{OSC52}",
            "prompt": PROMPT,
            "stage": "relevance",
            "considered": [{"id": EVIL_NAME, "score": 0.9}],
            "injected": [{"id": EVIL_NAME, "confidence": 0.9}],
        },
        {"ts": 2, "kind": "use", "session": f"s{OSC52}", "skill": ZERO_WIDTH, "via": "skill"},
        {
            "ts": 3,
            "kind": "recommend",
            "session": "s2",
            "prompt": "merge p\u200bdf [/]",
            "stage": "relevance",
            "considered": [],
            "injected": [{"id": "pdf-[/tmp]", "confidence": 0.7}],
        },
    ]
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return log


# Every screen at once; test_app.py's markup test keeps hostile text in the default run.
@pytest.mark.slow
@pytest.mark.parametrize(
    "everything",
    [False, pytest.param(True, marks=pytest.mark.slow)],  # about 4 s, and 8 s for every screen
    ids=["hostile-screens", "every-screen"],
)
async def test_every_screen_shows_hostile_text_literally(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, everything: bool
) -> None:
    monkeypatch.chdir(tmp_path)  # ctrl+r writes the export here
    monkeypatch.setenv("VISUAL", str(tmp_path / "no-such-editor"))
    app = make_app(library, tmp_path, history_log=str(history_log(tmp_path)))
    seen: dict[str, str] = {}

    async def look(until: str = "") -> None:
        """Keep the frame once it is drawn (and shows `until`)."""
        await pilot.pause()
        try:
            await settle(pilot, lambda: until in screen_text(app))
        except AssertionError as error:  # say what was on the screen instead
            raise AssertionError(f"{until!r} not shown in:\n{screen_text(app)}") from error
        seen[f"{len(seen)} {type(app.screen).__name__}"] = screen_text(app)

    async def close(screen_type: type) -> None:
        await pilot.press("escape")
        await settle(pilot, lambda: not isinstance(app.screen, screen_type))

    async with app.run_test(size=SIZE, notifications=True) as pilot:  # toasts drawn too
        await settle(pilot, lambda: ready(app))
        bar = app.main.query_one(PromptBar)
        bar.value = PROMPT  # as a paste would: the prompt holds the pictures, not ESC
        pinned = bar.value
        assert pinned == visible(PROMPT)
        await settle(pilot, lambda: shown_for(app, pinned))
        await pilot.press("ctrl+t")  # pin: the prompt is said in a notification
        await look("pinned")
        assert "[/] [bold] ␛]52" in toasts(app)
        prompt = pinned + " [/tmp]"
        bar.value = prompt
        await settle(pilot, lambda: shown_for(app, prompt))
        assert set(app.decision.injected_ids) & {"pdf-[/tmp]", EVIL_NAME}
        await look()

        await pilot.press("f8")  # compare with the pinned prompt
        view = app.main.query_one(CompareView)
        await settle(pilot, lambda: view.diff is not None)
        await look()
        await pilot.press("f8")

        for skill in ("pdf-[/tmp]", EVIL_NAME):
            app.go_to_skill(skill)
            if everything or skill == "pdf-[/tmp]":
                await pilot.press("ctrl+o")  # no editor: the message names the file
                await look("not found")
            if skill == "pdf-[/tmp]":  # the whole path, `[old]` included, not read as a tag
                assert "skills/pdf [old]/SKILL.md" in toasts(app)
            if not everything and skill != EVIL_NAME:
                continue
            await pilot.press("f7")  # what-if on the hostile skill
            await settle(pilot, lambda: isinstance(app.screen, WhatIfScreen))
            whatif = app.screen
            assert isinstance(whatif, WhatIfScreen)
            await settle(pilot, lambda: whatif.result is not None)  # noqa: B023
            await look()
            await close(WhatIfScreen)

        await pilot.press("ctrl+r")  # the Markdown export
        await settle(pilot, lambda: bool(list(tmp_path.glob("skill-explorer-why-*.md"))))
        exported = next(tmp_path.glob("skill-explorer-why-*.md")).read_text("utf-8")
        assert unsafe(exported) == [], exported
        assert "␛]52" in exported
        await look()

        await pilot.press("ctrl+g")  # the go-to palette: every skill, then a search
        await settle(pilot, lambda: isinstance(app.screen, CommandPalette))
        await look("Use when building spreadsheets")
        await pilot.press(*"evil")
        await look("Use when merging PDF reports")
        await close(CommandPalette)
        await pilot.press("ctrl+f")  # the filter, typed with markup
        await pilot.press(*"[/]")
        await look()
        await pilot.press("escape")
        if not everything:
            return await check(app, seen)
        app.go_to_skill(ZERO_WIDTH)
        for tab, shows in (
            ("skill-tab", "p\\u200bdf-\\u200e\\u202etxt.exe\\u2066"),
            ("cases-tab", "merge p\\u200bdf files [bold]"),
            ("history-tab", ""),
            ("terms-tab", ""),
        ):
            app.main.query_one(TabbedContent).active = tab
            await look(shows)
        await pilot.press("f9")  # the decision panel, maximised
        await look()
        await pilot.press("f9")
        await pilot.press("ctrl+p")
        await settle(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"go")
        await look("Go to skill")
        await close(CommandPalette)

        for key, screen_type in (("f1", TextScreen), ("f2", ThresholdEditor)):
            await pilot.press(key)
            await settle(pilot, lambda: isinstance(app.screen, screen_type))  # noqa: B023
            await look()
            await close(screen_type)
        await pilot.press("f3")
        await settle(pilot, lambda: app.screen is not app.main)
        await look()
        await close(type(app.screen))
    await check(app, seen)


async def check(app: ExplorerApp, seen: dict[str, str]) -> None:
    """Every frame kept: the hostile text is there, shown, and nothing unsafe is sent."""
    text = "\n".join(seen.values())
    assert "pdf-[/tmp]" in text and "␛]52" in text and "[bold]" in text
    assert "p\\u200bdf" in text  # the zero-width space shown, not hidden
    assert {where: unsafe(shown) for where, shown in seen.items() if unsafe(shown)} == {}
