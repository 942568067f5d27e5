"""No skill text reaches the terminal as control.

A hostile library puts every kind of terminal control into names, descriptions, bodies
and directory names: OSC 0 (window title), OSC 8 (hyperlink), OSC 52 (clipboard), CSI 2J
(clear screen), C1 CSI (0x9b), BEL, backspace, CR, a lone ESC, bidi overrides and rich
markup. route, why and lint run in-process by default and as subprocesses too when the
slow tests are selected (.ci/checks); watch as a subprocess; the explorer through the
Pilot. Output is checked by code point: a UTF-8 em dash has bytes 0x80-0x9f inside it, but
only a code point in C0/C1 is something a terminal acts on.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.terminal import is_safe, plain, render, table, visible
from tests.conftest import REPO

ESC = "\x1b"
CONTROLS = [
    f"{ESC}]0;pwned-title\x07",  # set the window title
    f"{ESC}]8;;https://evil.test/\x07click{ESC}]8;;\x07",  # a hyperlink
    f"{ESC}]52;c;ZWNobyBwd25lZA==\x07",  # write the clipboard
    f"{ESC}[2J{ESC}[H",  # clear the screen
    "\x9b31m",  # C1 CSI
    "\x07\x08\r",  # bell, backspace, carriage return
    f"lone{ESC}",
    "\u202edesrever",  # right-to-left override
    "[bold]markup[/bold] [link=https://evil.test]x[/link]",
]
HOSTILE = "".join(CONTROLS)


def unsafe_characters(text: str) -> list[str]:
    return sorted(
        {
            f"U+{ord(char):04X}"
            for char in text
            if (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F
        }
    )


def hostile_library(root: Path) -> Path:
    """Two good skills and three that carry every control: in the description, the name
    (YAML-escaped and raw) and the directory's name."""
    skills = {
        "pdf": "---\nname: pdf\ndescription: Use when merging or splitting PDF files.\n---\nB\n",
        "xlsx": "---\nname: xlsx\ndescription: Use when building spreadsheets.\n---\nB\n",
        "evil-desc": (
            f"---\nname: evil-desc\ndescription: Use when merging PDF files {HOSTILE}\n---\n"
            f"Body {HOSTILE}\n"
        ),
        f"evil{ESC}[2Jdir": (
            f"---\nname: evil-name{ESC}]0;title\x07\x9b\ndescription: Use when merging PDF "
            "reports.\n---\nB\n"
        ),
    }
    for directory, text in skills.items():
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory / "SKILL.md").write_bytes(text.encode("utf-8"))
    return root


def in_process(*argv: str) -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def as_subprocess(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "explorer", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=timeout,
        env=env,
    )


@pytest.fixture(
    params=[in_process, pytest.param(as_subprocess, marks=pytest.mark.slow)],
    ids=["in-process", "subprocess"],
)
def cli(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A command's runner: main() in-process by default; a real child in the slow set."""
    return request.param


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return hostile_library(tmp_path / "skills")


def test_the_sanitiser_shows_every_control_and_keeps_the_rest() -> None:
    shown = visible(HOSTILE + "\nnext\tline — ✓ é")
    assert unsafe_characters(shown) == [] and is_safe(shown)
    assert shown.endswith("\nnext\tline — ✓ é")
    assert "␛]0;pwned-title␇" in shown and "\\x9b31m" in shown and "\\u202e" in shown
    assert not is_safe(HOSTILE)
    assert render(table(["id"], [[HOSTILE]])).count("[bold]markup[/bold]") == 1
    assert plain("[bold]x[/bold]").plain == "[bold]x[/bold]"


# Zero-width marks and the bidi marks, embeddings, overrides and isolates: none has a
# glyph, so `p<U+200B>df` would look like `pdf`, and a mark can reorder what follows it.
INVISIBLE = [
    *(chr(code) for code in range(0x200B, 0x2010)),  # ZWSP, ZWNJ, ZWJ, LRM, RLM
    *(chr(code) for code in range(0x202A, 0x202F)),  # LRE, RLE, PDF, LRO, RLO
    *(chr(code) for code in range(0x2066, 0x206A)),  # LRI, RLI, FSI, PDI
    "\u061c",  # ARABIC LETTER MARK
    "\ufeff",  # ZERO WIDTH NO-BREAK SPACE (a BOM inside text)
]


@pytest.mark.parametrize("mark", INVISIBLE, ids=[f"U+{ord(mark):04X}" for mark in INVISIBLE])
def test_invisible_marks_are_shown(mark: str) -> None:
    shown = visible(f"p{mark}df")
    assert shown == f"p\\u{ord(mark):04x}df" and not is_safe(f"p{mark}df") and is_safe(shown)
    assert plain(f"p{mark}df").plain == shown


def test_visible_text_around_the_marks_is_kept() -> None:
    # Arabic letters, a combining accent, CJK, an emoji and a no-break space are text.
    text = "عربي — \u00e9\u0301 ✓ 漢字 \U0001f600 a\u00a0b"
    assert visible(text) == text and is_safe(text)


@pytest.mark.parametrize(
    "argv",
    [
        ["route", "merge pdf files"],
        ["why", "merge pdf files", "--top", "10"],
        ["why", "merge pdf files", "--skill", "evil-desc"],
        ["lint"],
    ],
    ids=["route", "why", "why-skill", "lint"],
)
def test_cli_output_carries_no_control(
    cli, library: Path, warm_cache_dir: Path, argv: list[str]
) -> None:
    """Through the run's warm cache (the reranker's optimised graph is made once, not per
    command): what is tested is the output, not the cache."""
    where = [str(library)] if argv[0] == "lint" else ["--skills", str(library)]
    argv = [*argv, *where]
    done = cli(*argv, "--set", "model=bow", "--cache-dir", str(warm_cache_dir))
    assert done.returncode in (0, 1), done.stderr
    assert "evil-desc" in done.stdout + done.stderr
    assert unsafe_characters(done.stdout) == []
    assert unsafe_characters(done.stderr) == []


def test_route_json_stays_exact(cli, library: Path, warm_cache_dir: Path) -> None:
    done = cli(
        "route", "merge pdf files", "--skills", str(library), "--json",
        "--set", "model=bow", "--cache-dir", str(warm_cache_dir),
    )  # fmt: skip
    assert done.returncode == 0 and unsafe_characters(done.stdout) == []
    data = json.loads(done.stdout)
    ids = {row["id"] for row in data["skills"]}
    assert f"evil-name{ESC}]0;title\x07\x9b" in ids  # the exact text, escaped by JSON


@pytest.mark.slow  # over 7 s here; .ci/run runs it
def test_watch_output_carries_no_control(library: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "explorer", "watch", str(library), "--set", "model=bow",
         "--cache-dir", str(tmp_path / "cache")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        # Ctrl+C as a terminal delivers it: a test run started in the background inherits
        # SIGINT ignored, and Python keeps an ignored SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    streams: dict[str, list[bytes]] = {"out": [], "err": []}
    readers = [
        threading.Thread(target=lambda k=key, s=stream: streams[k].extend(s), daemon=True)
        for key, stream in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()

    def printed(needle: bytes, timeout: float = 60.0) -> None:
        """Wait until the watch has printed `needle` (a wait, not a fixed sleep)."""
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in list(streams["out"])):
            assert process.poll() is None and time.monotonic() < deadline, streams
            time.sleep(0.05)

    try:
        printed(b"watching")  # the first build is printed; then a change under watch
        (library / f"new{ESC}]0;x\x07").mkdir()
        (library / f"new{ESC}]0;x\x07" / "SKILL.md").write_text(
            f"---\nname: new-one{ESC}[2J\ndescription: Use when {HOSTILE}\n---\nB\n"
        )
        (library / "broken").mkdir()
        (library / "broken" / "SKILL.md").write_text(f"no frontmatter {HOSTILE}\n")
        printed(b"new-one")  # the new skill, and the broken file's error
        printed(b"broken")
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        for reader in readers:
            reader.join(timeout=20)
    text = b"".join(streams["out"]).decode("utf-8", "surrogateescape")
    err = b"".join(streams["err"]).decode("utf-8", "surrogateescape")
    assert "new-one" in text, (text, err[-2000:])
    assert unsafe_characters(text) == []
    assert unsafe_characters(err) == []


def screen_text(app) -> str:  # type: ignore[no-untyped-def]
    """Every segment the compositor would send for the current screen, as one string."""
    update = app.screen._compositor.render_update(full=True)
    return "\n".join("".join(segment.text for segment in strip) for strip in update.strips)


@pytest.mark.slow  # every row in every tab at 160x60: seconds; test_app.py's markup test
async def test_explorer_renders_no_control(library: Path, tmp_path: Path) -> None:
    from textual.widgets import TabbedContent

    from explorer.engine.base.config import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory
    from explorer.tui.widgets.skills_table import SkillsTable
    from tests.tui.test_app import enter

    app = ExplorerApp(
        [str(library)],
        Config(model="bow", reranker="off", min_similarity=0.05, score_margin=1.0),
        cache_dir=str(tmp_path / "cache"),
        history=PromptHistory(tmp_path / "history.txt"),
    )
    async with app.run_test(size=(160, 60)) as pilot:
        await enter(pilot, app, "merge pdf files")
        await pilot.pause(0.2)
        assert {"evil-desc", "evil-name"} & {i[:9] for i in app.decision.injected_ids}
        seen = [screen_text(app)]
        table = app.query_one(SkillsTable)
        await pilot.press("tab")
        for _ in range(len(table.rows)):
            await pilot.press("down")
            for tab in ("terms-tab", "skill-tab", "cases-tab"):
                app.query_one("#details", TabbedContent).active = tab
                await pilot.pause(0.05)
                seen.append(screen_text(app))
        await pilot.press("f3")  # the errors screen: paths and reasons
        await pilot.pause(0.2)
        seen.append(screen_text(app))
    text = "\n".join(seen)
    assert "evil-desc" in text and "evil-name" in text
    assert unsafe_characters(text) == []
